"""roofline: an analytical roofline calculator for LLM inference.

The Python API is the pure core every command calls (SI units in, frozen dataclasses out; scalars
or numpy arrays broadcast). docs/API.md walks through each with runnable examples.

    >>> from roofline import load_catalog, Deployment, request
    >>> cat = load_catalog()
    >>> r = request(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), 1, 4096, 256)
    >>> round(float(r.decode.arithmetic_intensity), 1)
    1.1

By command:
    catalog, models, hardware   load_catalog, Catalog.model / .accelerator / .tier,
                                model_from_config (a config.json or a cached Hugging Face repo)
    analyze                     prefill, decode, request (PhaseResult, RequestResult)
    kv                          kv_footprint, compare_attention, allocation_waste, eviction_gain
    capacity                    plan_memory, max_batch, kv_bytes_per_token, kv_bytes_per_sequence
    bytes                       byte_traffic, evaluate_levers
    speculate                   speculate, alpha_from_tau, crossover_batch
    tiers                       spill, max_batch_with_tier, reload_prefix
    offload, edge               roofline.offload.offload, most_gpu_layers,
                                default_wired_limit_bytes
    cliff                       StepModel, simulate
    plan, disagg                plans, disaggregate
    sweep                       Grid, run_sweep
    check, validate             run_checks, Limits, load_cases, evaluate, summarize
"""

import importlib
from typing import Any

# name -> module: the API is imported on first use, so `roofline` (and the command line, which
# needs only a few modules per command) starts fast
_API = {
    "reload_prefix": "roofline.tiers",
    "crossover_batch": "roofline.speculative",
    "alpha_from_tau": "roofline.acceptance",
    "most_gpu_layers": "roofline.offload",
    "default_wired_limit_bytes": "roofline.hardware",
    "Accelerator": "roofline.hardware",
    "Catalog": "roofline.catalog",
    "CatalogError": "roofline.errors",
    "Deployment": "roofline.ops",
    "Layout": "roofline.layout",
    "DoesNotFitError": "roofline.errors",
    "ENGINES": "roofline.memory",
    "Efficiency": "roofline.hardware",
    "Grid": "roofline.sweep",
    "InputError": "roofline.errors",
    "KV_FORMATS": "roofline.precision",
    "Limits": "roofline.checks",
    "MemoryPlan": "roofline.memory",
    "ModelArch": "roofline.model",
    "PhaseResult": "roofline.phases",
    "RequestResult": "roofline.phases",
    "RooflineError": "roofline.errors",
    "StepModel": "roofline.serving.steps",
    "Tier": "roofline.hardware",
    "WEIGHT_FORMATS": "roofline.precision",
    "allocation_waste": "roofline.kvcache",
    "byte_traffic": "roofline.flows",
    "compare_attention": "roofline.kvcache",
    "decode": "roofline.phases",
    "disaggregate": "roofline.serving.disagg",
    "engine": "roofline.memory",
    "evaluate": "roofline.cases.evaluate",
    "evaluate_levers": "roofline.levers",
    "eviction_gain": "roofline.kvcache",
    "kv_bytes_per_sequence": "roofline.memory",
    "kv_bytes_per_token": "roofline.memory",
    "kv_footprint": "roofline.kvcache",
    "kv_format": "roofline.precision",
    "load_cases": "roofline.userfiles",
    "load_catalog": "roofline.catalog",
    "max_batch": "roofline.memory",
    "max_batch_with_tier": "roofline.tiers",
    "model_from_config": "roofline.catalog",
    "plan_memory": "roofline.memory",
    "plans": "roofline.planner",
    "prefill": "roofline.phases",
    "request": "roofline.phases",
    "run_checks": "roofline.checks",
    "run_sweep": "roofline.sweep",
    "simulate": "roofline.serving.cliff",
    "speculate": "roofline.speculative",
    "spill": "roofline.tiers",
    "summarize": "roofline.cases.case",
    "weight_format": "roofline.precision",
}


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'roofline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))


__version__ = "0.1.0"

__all__ = [
    "ENGINES",
    "KV_FORMATS",
    "WEIGHT_FORMATS",
    "Accelerator",
    "Catalog",
    "CatalogError",
    "Deployment",
    "DoesNotFitError",
    "Efficiency",
    "Grid",
    "InputError",
    "Layout",
    "Limits",
    "MemoryPlan",
    "ModelArch",
    "PhaseResult",
    "RequestResult",
    "RooflineError",
    "StepModel",
    "Tier",
    "__version__",
    "allocation_waste",
    "alpha_from_tau",
    "byte_traffic",
    "compare_attention",
    "crossover_batch",
    "decode",
    "default_wired_limit_bytes",
    "disaggregate",
    "engine",
    "evaluate",
    "evaluate_levers",
    "eviction_gain",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_footprint",
    "kv_format",
    "load_cases",
    "load_catalog",
    "max_batch",
    "max_batch_with_tier",
    "model_from_config",
    "most_gpu_layers",
    "plan_memory",
    "plans",
    "prefill",
    "reload_prefix",
    "request",
    "run_checks",
    "run_sweep",
    "simulate",
    "speculate",
    "spill",
    "summarize",
    "weight_format",
]

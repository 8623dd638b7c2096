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
    offload, edge               roofline.levers.offload.offload, most_gpu_layers,
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
    "reload_prefix": "roofline.levers.tiers",
    "crossover_batch": "roofline.levers.speculative",
    "alpha_from_tau": "roofline.levers.acceptance",
    "most_gpu_layers": "roofline.levers.offload",
    "default_wired_limit_bytes": "roofline.domain.hardware",
    "Accelerator": "roofline.domain.hardware",
    "Catalog": "roofline.catalog.load",
    "CatalogError": "roofline.domain.errors",
    "Deployment": "roofline.step.ops",
    "Layout": "roofline.domain.layout",
    "DoesNotFitError": "roofline.domain.errors",
    "ENGINES": "roofline.engines.engine",
    "Efficiency": "roofline.domain.hardware",
    "Grid": "roofline.step.sweep",
    "InputError": "roofline.domain.errors",
    "KV_FORMATS": "roofline.domain.precision",
    "Limits": "roofline.checks.limits",
    "MemoryPlan": "roofline.step.memory",
    "ModelArch": "roofline.domain.model",
    "PhaseResult": "roofline.step.phases",
    "RequestResult": "roofline.step.phases",
    "RooflineError": "roofline.domain.errors",
    "StepModel": "roofline.serving.sim.steps",
    "Tier": "roofline.domain.hardware",
    "WEIGHT_FORMATS": "roofline.domain.precision",
    "allocation_waste": "roofline.levers.kvcache",
    "byte_traffic": "roofline.step.flows",
    "compare_attention": "roofline.levers.kvcache",
    "decode": "roofline.step.phases",
    "disaggregate": "roofline.serving.disagg",
    "engine": "roofline.engines.engine",
    "evaluate": "roofline.cases.evaluate",
    "evaluate_levers": "roofline.levers.table",
    "eviction_gain": "roofline.levers.kvcache",
    "kv_bytes_per_sequence": "roofline.step.memory",
    "kv_bytes_per_token": "roofline.step.memory",
    "kv_footprint": "roofline.levers.kvcache",
    "kv_format": "roofline.domain.precision",
    "load_cases": "roofline.cases.casefiles",
    "load_catalog": "roofline.catalog.load",
    "max_batch": "roofline.step.memory",
    "max_batch_with_tier": "roofline.levers.tiers",
    "model_from_config": "roofline.catalog.load",
    "plan_memory": "roofline.step.memory",
    "plans": "roofline.step.planner",
    "prefill": "roofline.step.phases",
    "request": "roofline.step.phases",
    "run_checks": "roofline.checks.limits",
    "run_sweep": "roofline.step.sweep",
    "simulate": "roofline.serving.cliff",
    "speculate": "roofline.levers.speculative",
    "spill": "roofline.levers.tiers",
    "summarize": "roofline.cases.case",
    "weight_format": "roofline.domain.precision",
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

# The package's rooms, lowest first: a room imports only rooms before it in this order (checks and
# cases share a floor and import neither each other). tests/test_structure.py holds the code to it;
# the README's module map lists the rooms in this order.
ROOMS = (
    ("timing",),
    ("domain",),
    ("engines",),
    ("catalog",),
    ("step",),
    ("levers",),
    ("serving",),
    ("fleet",),
    ("checks", "cases"),
    ("render",),
    ("cli",),
)

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

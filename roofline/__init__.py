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

from roofline.catalog import Catalog, load_cases, load_catalog, model_from_config
from roofline.checks import Limits, run_checks
from roofline.disagg import disaggregate
from roofline.errors import CatalogError, DoesNotFitError, InputError, RooflineError
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.kvcache import (
    allocation_waste,
    compare_attention,
    eviction_gain,
    kv_footprint,
)
from roofline.levers import evaluate_levers
from roofline.memory import (
    ENGINES,
    MemoryPlan,
    default_wired_limit_bytes,
    engine,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.model import ModelArch
from roofline.offload import most_gpu_layers
from roofline.ops import Deployment
from roofline.phases import PhaseResult, RequestResult, decode, prefill, request
from roofline.planner import plans
from roofline.precision import KV_FORMATS, WEIGHT_FORMATS, kv_format, weight_format
from roofline.scheduler import StepModel, simulate
from roofline.speculative import alpha_from_tau, crossover_batch, speculate
from roofline.sweep import Grid, run_sweep
from roofline.tiers import max_batch_with_tier, reload_prefix, spill
from roofline.traffic import byte_traffic
from roofline.validate import evaluate, summarize

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

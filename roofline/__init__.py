"""roofline: an analytical roofline calculator for LLM inference.

The Python API re-exports the pure core: load a catalog, pick a model and an accelerator, describe
the deployment, and ask for a prefill, a decode step or a whole request.

    >>> from roofline import load_catalog, Deployment, request
    >>> cat = load_catalog()
    >>> r = request(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), 1, 4096, 256)
    >>> round(float(r.decode.arithmetic_intensity), 1)
    1.1
"""

from roofline.catalog import Catalog, load_cases, load_catalog, model_from_config
from roofline.checks import Limits, run_checks
from roofline.errors import CatalogError, DoesNotFitError, InputError, RooflineError
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.levers import evaluate_levers
from roofline.memory import (
    ENGINES,
    MemoryPlan,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import PhaseResult, RequestResult, decode, prefill, request
from roofline.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.scheduler import StepModel, simulate
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
    "decode",
    "evaluate",
    "evaluate_levers",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "load_cases",
    "load_catalog",
    "max_batch",
    "model_from_config",
    "plan_memory",
    "prefill",
    "request",
    "run_checks",
    "simulate",
    "summarize",
]

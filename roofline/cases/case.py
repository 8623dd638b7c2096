"""A published measurement (a case) and its prediction's record: ideal (speed of light) and
expected (calibrated). roofline.cases.evaluate runs one case through its kind's module.

A case names a model, an accelerator, a deployment, a workload and one measured metric. For each:
- ideal: the roofline at η = 1 and no overhead. A measurement faster than this is a bug in the
  model or the catalog (missing bytes or FLOPs, a wrong datasheet figure), never noise;
- expected: the family's calibrated efficiencies and per-step overhead;
- speed_ratio_ideal: how close the hardware ran to the speed of light (1.0 = at it; > 1 violates);
- error_expected: expected / measured − 1 for the metric as stated.

Throughput cases model steady-state continuous batching with `batch` sequences in flight per
replica: each request pays a prefill of its prompt (batched with the others) and decodes at the
batch's step time, so one cycle of B requests takes t_prefill(B, S) + (O − 1)·t_decode(B) and
yields B·O tokens. Under attention-DP the expected cycle pays each rank's prompts in turn
(roofline.serving.attention_dp). With `batch: null`, B is the largest batch the engine's KV
budget allows at prompt + output tokens.

The engine of a case is its `engine:` key, else the one its source names (gpt-fast, llama.cpp,
TensorRT-LLM / NIM, SGLang, vLLM, MLX), else the auto rule. Out-of-sample accuracy
(validation/crossval.py) leaves whole source tables out at once. Catalog objects are passed in:
nothing here loads the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import Layout, links
from roofline.domain.precision import kv_format, weight_format
from roofline.engines.engine import Engine, engine
from roofline.engines.scheduler import with_frontend
from roofline.serving.attention_dp import default_balance
from roofline.step.ops import Deployment
from roofline.timing.host import Calibration

# metric -> (regime, kind): kind "time" (smaller is faster) or "rate" (larger is faster)
METRICS: dict[str, tuple[str, str]] = {
    "ttft_ms": ("ttft", "time"),
    "tpot_ms": ("decode", "time"),
    "decode_tokens_per_s_per_user": ("decode", "rate"),
    "e2e_latency_ms": ("decode", "time"),
    "output_tokens_per_s": ("throughput", "rate"),
    "output_tokens_per_s_per_gpu": ("throughput", "rate"),
    "speedup": ("speculative", "rate"),  # speculative decoding over plain decode (lever cases)
    # disaggregated serving (roofline.cases.disagg): one pool alone, and the KV transfer
    "prefill_tokens_per_s_per_gpu": ("prefill", "rate"),
    "decode_tokens_per_s_per_gpu": ("decode", "rate"),
    "kv_transfer_ms": ("transfer", "time"),
}
SCALE_OUT = "infiniband-ndr"  # the network between nodes, as the CLI's --scale-out default
DISAGG_METRICS = ("prefill_tokens_per_s_per_gpu", "decode_tokens_per_s_per_gpu", "kv_transfer_ms")


@dataclass(frozen=True)
class Case:
    """One published measurement (schema of validation/public_cases.yaml)."""

    id: str
    model: str
    hardware: str
    gpus: int
    tp: int
    pp: int
    ep: int
    weights: str
    kv: str
    batch: int | None
    prompt: int
    output: int
    metric: str
    measured: float
    source: str
    notes: str = ""
    engine: str = "auto"
    attention_dp: int = 1  # attention data-parallel groups per stage (EP on the experts)
    attention_dp_balance: str | None = None  # None: the engine's (serving.attention_dp)
    speculative: dict | None = None  # lever cases: a drafter setting (roofline.cases.levers)
    offload: dict | None = None  # lever cases: weights split with host RAM
    disagg: dict | None = None  # disaggregated serving: the pool measured (roofline.cases.disagg)
    burst: dict | None = (
        None  # all requests at once through the serving simulator (roofline.cases.all_at_t0)
    )


@dataclass(frozen=True)
class CaseResult:
    case: Case
    regime: str
    batch: int
    ideal: float
    expected: float
    measured: float
    speed_ratio_ideal: float
    error_expected: float
    calibration: Calibration | None = None  # family, engine, cases, borrowed, error band

    @property
    def bound_violation(self) -> bool:
        return self.speed_ratio_ideal > 1.0 + 1e-9


# keywords of a source naming the engine it ran on, most specific first
ENGINE_KEYWORDS = (
    ("gpt-fast", "gptfast"),
    ("llama.cpp", "llamacpp"),
    ("llama-bench", "llamacpp"),
    ("tensorrt-llm", "trtllm"),
    ("trtllm", "trtllm"),
    ("nvidia nim", "trtllm"),
    ("sglang", "sglang"),
    ("vllm", "vllm"),
    ("mlx", "mlx"),
)


def served_engine(
    name: str, hw: Accelerator, where: str, version: object = None, frontend: object = "api"
) -> Engine:
    """The engine a measured serving run used (roofline.engines.engine.engine: its version profile)
    behind its request path (serving.policy.with_frontend); a bad name, version or frontend is
    one InputError naming the case (`where`)."""
    try:
        return with_frontend(engine(name, hw, version), str(frontend))
    except InputError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None


def case_engine(case: Case, source: str | None = None) -> str:
    """The engine a case ran on: its `engine:` key, else the first engine its source names
    (`source` overrides the case's own, for rows that cite another case's notes), else auto."""
    if case.engine.lower() != "auto":
        return case.engine.lower()
    text = (source or case.source).lower()
    for word, name in ENGINE_KEYWORDS:
        if word in text:
            return name
    return "auto"


def case_deployment(case: Case) -> tuple[Deployment, int]:
    """The case's deployment and its data-parallel replicas."""
    where = f"case '{case.id}'"
    # expert parallelism wider than TP (attention data-parallel + EP, as in DeepSeek serving) is
    # modelled as one group of `ep` GPUs splitting attention and experts (see docs/ACCURACY.md)
    tp = case.ep if case.ep > case.tp and case.ep % case.tp == 0 else case.tp
    try:
        dep = Deployment(
            weights=weight_format(case.weights),
            kv=kv_format(case.kv),
            layout=Layout(
                tp=tp,
                pp=case.pp,
                ep=case.ep,
                attention_dp=case.attention_dp,
                attention_dp_balance=case.attention_dp_balance
                or default_balance(case_engine(case)),
            ),
        )
    except InputError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None
    if case.gpus % dep.gpus_per_replica:
        raise InputError(f"{where}: gpus {case.gpus} is not a multiple of tp × pp")
    replicas = case.gpus // dep.gpus_per_replica
    return dep, replicas


def with_case_links(
    dep: Deployment, hw: Accelerator, network: Tier, replicas: int = 1
) -> Deployment:
    """The deployment with each collective on the link its group spans (roofline.domain.layout): the
    scale-up link inside its domain, the host link (PCIe) beyond it inside a node, and between
    nodes `network` (the CLI's default, InfiniBand NDR, SCALE_OUT; a case states no other)."""
    if dep.links is not None:
        return dep
    return replace(dep, links=links(replace(dep.layout, dp=replicas, scale_out=network), hw))


def summarize(results: list[CaseResult]) -> dict[str, object]:
    """Bound violations, median and max absolute error of the expected prediction, per regime."""

    def stats(rs: list[CaseResult]) -> dict[str, object]:
        errors = np.abs([r.error_expected for r in rs]) if rs else np.array([np.nan])
        return {
            "cases": len(rs),
            "bound_violations": sum(r.bound_violation for r in rs),
            "median_abs_error": float(np.median(errors)),
            "max_abs_error": float(np.max(errors)),
            "median_speed_ratio_ideal": float(np.median([r.speed_ratio_ideal for r in rs]))
            if rs
            else None,
        }

    out = stats(results)
    out["regimes"] = {
        regime: stats([r for r in results if r.regime == regime])
        for regime in dict.fromkeys(m[0] for m in METRICS.values())
        if any(r.regime == regime for r in results)
    }
    return out

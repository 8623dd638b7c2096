"""Static cases: a batch of requests timed from one prefill and the mean decode step (TTFT,
TPOT, E2E, or the steady-state throughput of continuous batching; roofline.cases.case)."""

from __future__ import annotations

from roofline.cases.case import (
    METRICS,
    Case,
    CaseResult,
    case_deployment,
    case_engine,
    with_case_links,
)
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency, Tier
from roofline.domain.model import ModelArch
from roofline.engines.engine import ENGINES, engine
from roofline.serving.attention_dp import colocated_prefill_s
from roofline.step.memory import max_batch, plan_memory
from roofline.step.phases import decode, prefill


def _metric(
    case: Case, ttft_s: float, tpot_s: float, t_prefill_s: float, replicas: int, batch: int
) -> float:
    s, o = case.prompt, case.output
    if case.metric == "ttft_ms":
        return ttft_s * 1e3
    if case.metric == "tpot_ms":
        return tpot_s * 1e3
    if case.metric == "decode_tokens_per_s_per_user":
        return 1.0 / tpot_s
    if case.metric == "e2e_latency_ms":
        return (ttft_s + (o - 1) * tpot_s) * 1e3
    per_replica = batch * o / (t_prefill_s + (o - 1) * tpot_s)
    total = replicas * per_replica
    del s
    return total if case.metric == "output_tokens_per_s" else total / case.gpus


def base_times(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    network: Tier,
    efficiency: Efficiency | None = None,
    engine_name: str | None = None,
):
    """(deployment, replicas, batch, prefill, decode) of a case: the shared part of evaluate."""
    where = f"case '{case.id}'"
    dep, replicas = case_deployment(case)
    dep = with_case_links(dep, hw, network, replicas)
    eff = efficiency or hw.efficiency
    name = engine_name or case_engine(case)
    batch = case.batch
    plan = plan_memory(model, hw, dep, engine(name if name in ENGINES else "auto", hw))
    if not plan.weights_fit:  # a measurement of a model that cannot be loaded: a misread case
        raise InputError(
            f"{where}: {model.id} in {dep.weights.name} does not fit on {hw.id} at TP{dep.tp}"
            f" PP{dep.pp} ({plan.weights_bytes / 1e9:.1f} GB of weights per GPU)"
        )
    if batch is None:
        batch = int(max_batch(plan, model, dep, case.prompt + case.output))
        if batch < 1:
            raise InputError(
                f"{where}: not one sequence of {case.prompt + case.output} tokens "
                f"fits next to the weights"
            )
    prompt = max(case.prompt, 1)
    steps = max(case.output - 1, 1)
    p = prefill(model, hw, dep, batch, prompt, eff, name)
    d = decode(model, hw, dep, batch, case.prompt + 1, steps, eff, engine=name)
    return dep, replicas, batch, p, d


def metric_value(case: Case, t_prefill_s: float, t_decode_s: float, replicas: int, batch: int):
    """The case's metric from a prefill and a mean decode step time."""
    return _metric(case, t_prefill_s, t_decode_s, t_prefill_s, replicas, batch)


def evaluate_static(case: Case, times: tuple) -> CaseResult:
    """Ideal and expected predictions of a static case's metric, from its `base_times`."""
    dep, replicas, batch, p, d = times
    regime, kind = METRICS[case.metric]
    values = {}
    # steady-state cycles: under attention-DP the ranks take their prompts at different steps
    t_cycle_prefill = colocated_prefill_s(p, dep)
    for name, pre, dec, cyc in (
        ("ideal", p.t_ideal_s, d.t_ideal_s, p.t_ideal_s),
        ("expected", p.t_expected_s, d.t_expected_s, t_cycle_prefill),
    ):
        values[name] = _metric(case, float(pre), float(dec), float(cyc), replicas, batch)
    ideal, expected = values["ideal"], values["expected"]
    speed = ideal / case.measured if kind == "time" else case.measured / ideal
    return CaseResult(
        case,
        regime,
        batch,
        ideal,
        expected,
        case.measured,
        speed,
        expected / case.measured - 1.0,
        d.calibration,
    )

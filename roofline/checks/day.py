"""check's assertions across a day's traffic (spec keys `traffic_curve`, `headroom`,
`scale_up_delay`; checks `max_gpu_hours_per_day`, `min_slo_attainment`): the deployment's replica
layout autoscaled over the curve (roofline.serving.day), with a replica's capacity under the
spec's p99 limits (max_ttft_p99, max_tpot_p99; without them its saturation rate) found once,
as `size` finds it. Pure: returns Check records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline.checks.limits import Check
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_seconds
from roofline.engines.engine import Engine
from roofline.serving.day import DayRates, plan_day
from roofline.serving.daysize import delay_for
from roofline.serving.metrics import Slo
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import capacity_at_edges, max_rate_within_slo, replica_capacity
from roofline.serving.serve import make_replica
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges


@dataclass(frozen=True)
class DayLimits:
    """Assertions across a curve; None means not checked."""

    day_rates: DayRates
    headroom: float
    delay_s: float | None  # None: derived (weight bytes / load bandwidth + engine start)
    max_replicas: int | None  # the autoscaler's ceiling (the spec's dp or gpus), None: none
    max_gpu_hours_per_day: float | None = None
    min_slo_attainment: float | None = None  # a share, 0 to 1
    edges: Edges | None = None  # --confidence's band edges (serving.confidence); None: expected


def run_day_checks(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    *,
    prompt: int,
    output: int,
    slo: Slo,
    limits: DayLimits,
    capacity_bytes: float | None = None,
    ideal: bool = False,
    requests: int = 1000,
    seed: int = 0,
    workload=None,
    router: str = DEFAULT_ROUTER,
    kv=None,
) -> list[Check]:
    """GPU-hours per day and SLO attainment of the deployment autoscaled over the curve;
    `workload` (a workload file's classes, serving.mix) replaces prompt/output: the curve is the
    arrivals/s over its classes, each at its share (mix_day_checks)."""
    delay, how = delay_for(model, hw, dep, eng, limits.delay_s)
    if workload is not None:
        return mix_day_checks(model, hw, dep, eng, workload, slo, limits, delay, how,
                              capacity_bytes, seed, router, kv)  # fmt: skip
    rep = make_replica(model, hw, dep, eng, prompt + output + 1, capacity_bytes=capacity_bytes)
    w = make_workload(max(prompt, 1), output, rate=1.0, requests=requests, seed=seed)
    probed = replica_capacity(rep, w)
    sat, runs = probed.of(ideal).requests_per_s, probed.runs  # runs: the searches' memo
    has_slo = slo.ttft_s is not None or slo.tpot_s is not None
    cap = max_rate_within_slo(rep, w, slo, sat, ideal, seed, runs) if has_slo else sat
    basis = f"p{slo.pct:g} SLO capacity" if has_slo else "saturation"
    kind = "ideal" if ideal else "expected"
    e, cap_exp = limits.edges, cap
    if e is not None and not e.neutral and cap > 0:  # sized to the bands' pessimistic edge:
        cap = capacity_at_edges(rep, w, slo, e, cap, sat, ideal, seed, runs) or 0.0  # as size
        kind = f"{e.level} edge of the {kind}"
    wanted = _wanted(limits)
    if cap <= 0:
        return [
            Check(n, False, lim, float("nan"), "", f"{kind}: misses the SLOs even at light load")
            for n, lim in wanted
        ]
    day = plan_day(limits.day_rates, cap, limits.headroom, delay, max_replicas=limits.max_replicas)
    gpu_h = day.replica_hours_per_day * rep.gpus
    exp_text = ""
    if cap != cap_exp:  # the expected figures' day beside the confidence's
        exp_day = plan_day(limits.day_rates, cap_exp, limits.headroom, delay,
                           max_replicas=limits.max_replicas)  # fmt: skip
        exp_text = (
            f"; expected {exp_day.replica_hours_per_day * rep.gpus:,.1f} GPU-hours,"
            f" {exp_day.slo_attainment:.2%} attainment"
        )
    ceiling = f", at most {limits.max_replicas}" if limits.max_replicas is not None else ""
    fleet = (
        f"{int(day.ordered.min())}-{int(day.ordered.max())} replicas{ceiling} of {rep.gpus} GPU(s),"
        f" {cap:.3g} req/s each ({kind} {basis}) x (1 - headroom {limits.headroom:g})"
    )
    out = []
    for name, limit in wanted:
        if name == "max_gpu_hours_per_day":
            value, ok = gpu_h, gpu_h <= limit
            static = day.static_replica_hours_per_day * rep.gpus
            detail = (
                f"{gpu_h:,.1f} GPU-hours/day ({fleet}; static peak {static:,.1f}) vs limit"
                f" {limit:,.1f} ({(gpu_h / limit - 1) if limit else 0.0:+.1%}){exp_text}"
            )
            out.append(Check(name, ok, limit, value, "GPU-hours/day", detail))
        else:
            value, ok = day.slo_attainment, day.slo_attainment >= limit
            detail = (
                f"{value:.2%} of the day's requests within the ready replicas' capacity ({fleet};"
                f" scale-up delay {fmt_seconds(delay)}, {how}) vs limit {limit:.2%}{exp_text}"
            )
            out.append(Check(name, ok, limit, value, "share", detail))
    return out


def mix_day_checks(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    w,
    slo: Slo,
    limits: DayLimits,
    delay: float,
    how: str,
    capacity_bytes: float | None,
    seed: int,
    router: str,
    kv,
) -> list[Check]:
    """run_day_checks for a workload file's classes (serving.mixday): a replica's capacity for
    the mix, the day planned on it, each class's attainment named in the detail."""
    from dataclasses import replace

    from roofline.serving.mixday import mix_day_capacity, plan_mix_day

    rep = make_replica(model, hw, dep, eng, w.max_len, capacity_bytes=capacity_bytes)
    rep = rep if kv is None else replace(rep, kv=kv)
    cap = mix_day_capacity(rep, w, slo, seed, router, limits.edges)
    wanted = _wanted(limits)
    if cap.overall <= 0:
        return [
            Check(n, False, lim, float("nan"), "", "misses a class's SLOs even at light load")
            for n, lim in wanted
        ]
    names = [c.name for c in w.mix.classes]
    day, classes = plan_mix_day(limits.day_rates, cap, names, limits.headroom, delay,
                                limits.max_replicas)  # fmt: skip
    gpu_h = day.replica_hours_per_day * rep.gpus
    exp_text = ""
    if cap.expected is not None:  # at a confidence: the expected figures' day beside it
        exp_day, _ = plan_mix_day(limits.day_rates, cap.expected, names, limits.headroom, delay,
                                  limits.max_replicas)  # fmt: skip
        exp_text = (
            f"; expected {exp_day.replica_hours_per_day * rep.gpus:,.1f} GPU-hours,"
            f" {exp_day.slo_attainment:.2%} attainment"
        )
    kind = "expected" if cap.expected is None else f"{cap.level} edge of the expected"
    ceiling = f", at most {limits.max_replicas}" if limits.max_replicas is not None else ""
    fleet = (
        f"{int(day.ordered.min())}-{int(day.ordered.max())} replicas{ceiling} of {rep.gpus} GPU(s),"
        f" {cap.overall:.3g} arrivals/s each (every class within its SLOs, {kind}) x (1 -"
        f" headroom {limits.headroom:g})"
    )
    per = ", ".join(f"{c.name} {c.slo_attainment:.2%}" for c in classes)
    out = []
    for name, limit in wanted:
        if name == "max_gpu_hours_per_day":
            static = day.static_replica_hours_per_day * rep.gpus
            detail = (f"{gpu_h:,.1f} GPU-hours/day ({fleet}; static peak {static:,.1f}) vs limit"
                      f" {limit:,.1f}{exp_text}")  # fmt: skip
            out.append(Check(name, gpu_h <= limit, limit, gpu_h, "GPU-hours/day", detail))
        else:
            value = day.slo_attainment
            detail = (
                f"{value:.2%} of the day's requests within the ready replicas' capacity ({per};"
                f" {fleet}; scale-up delay {fmt_seconds(delay)}, {how}) vs limit {limit:.2%}"
                f"{exp_text}"
            )
            out.append(Check(name, value >= limit, limit, value, "share", detail))
    return out


def _wanted(limits: DayLimits) -> list[tuple[str, float]]:
    """The day's assertions given: (name, limit)."""
    return [
        (n, lim)
        for n, lim in (
            ("max_gpu_hours_per_day", limits.max_gpu_hours_per_day),
            ("min_slo_attainment", limits.min_slo_attainment),
        )
        if lim is not None
    ]

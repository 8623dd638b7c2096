"""A deployment's day under a rate curve, the parts that need a deployment: its scale-up delay
(weight bytes / the engine's load bandwidth + its start, hardware/engines.yaml), the p99 table of
one replica at a few loads (serving runs, once per deployment) and the day's summary in GPU-hours
and dollars (roofline.serving.day has the day itself)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.serving.day import Day, DayRates, LatencyTable, latency_loads
from roofline.serving.day import scale_up_delay_s as derive_delay
from roofline.serving.metrics import Slo, metrics
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import cycled, slo_requests
from roofline.serving.serve import make_replica, run_replicas
from roofline.serving.workload import Workload, with_rate
from roofline.step.memory import weight_bytes_total
from roofline.step.ops import Deployment


def delay_for(
    model: ModelArch, hw: Accelerator, dep: Deployment, eng: Engine, override: float | None
) -> tuple[float, str]:
    """(scale-up delay s, how it was found)."""
    if override is not None:
        return override, "--scale-up-delay"
    prof = (hw.efficiency.engines or {}).get(eng.name)
    if prof is None or prof.load_bytes_per_s <= 0:
        raise InputError(
            f"no sourced weight-load bandwidth and start time for engine {eng.name}"
            " (hardware/engines.yaml start_s, load_gb_per_s)",
            hint="give --scale-up-delay, e.g. 90s",
        )
    wb = weight_bytes_total(model, dep)
    t = derive_delay(wb, prof.load_bytes_per_s, prof.start_s)
    how = (
        f"derived: {wb / 1e9:.1f} GB of weights / {prof.load_bytes_per_s / 1e9:.2f} GB/s +"
        f" {prof.start_s:g} s engine start ({eng.name}, hardware/engines.yaml)"
    )
    return t, how


def latency_table(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    capacity: float,
    seed: int,
    replicas: int = 1,
    router: str = DEFAULT_ROUTER,
) -> LatencyTable:
    """p99 TTFT and TPOT of a fleet of `replicas` replicas, requests dealt by `router` (the
    evaluation serve --dp N and size make, roofline.serving.router), each replica at
    LATENCY_LOADS of its capacity (expected step times; runs of slo_requests requests, the
    workload's lengths cycled)."""
    max_len = int(w.prompts.max() + w.outputs.max())
    rep = make_replica(model, hw, dep, eng, max_len)
    wl = cycled(w, slo_requests(Slo(None, None, 99.0), w.n))
    loads = latency_loads(capacity)
    ttft, tpot = [], []
    for x in loads:
        fleet = with_rate(wl, float(x) * replicas, seed)
        runs = run_replicas(rep, fleet, replicas, False, router=router)
        m = metrics(runs, slo, rep.gpus * replicas)
        ttft.append(m.ttft_s.p99)
        tpot.append(m.tpot_s.p99)
    return LatencyTable(loads, np.maximum.accumulate(ttft), np.maximum.accumulate(tpot))


def _nan_none(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def day_json(day: Day, gpus_per_replica: int, usd: float | None, tok_per_req: float) -> dict:
    """A deployment's day: GPU-hours, $ and $/Mtok against static peak provisioning."""
    gpu_h = day.replica_hours_per_day * gpus_per_replica
    static_h = day.static_replica_hours_per_day * gpus_per_replica
    mtok = day.requests_per_day * tok_per_req / 1e6
    cost = None if usd is None else gpu_h * usd
    static_cost = None if usd is None else static_h * usd
    return {
        "capacity_per_replica": day.capacity_per_replica,
        "scale_up_delay_s": day.delay_s,
        "gpu_hours_per_day": gpu_h,
        "static_gpu_hours_per_day": static_h,
        "static_replicas": day.static_replicas,
        "share_of_static": day.replica_hours_per_day / day.static_replica_hours_per_day,
        "unrounded_share_of_static": day.unrounded_replica_hours_per_day
        / day.unrounded_static_replica_hours_per_day,
        "cost_per_day": cost,
        "static_cost_per_day": static_cost,
        "cost_per_million_output_tokens": None if cost is None or mtok <= 0 else cost / mtok,
        "static_cost_per_million_output_tokens": None
        if static_cost is None or mtok <= 0
        else static_cost / mtok,
        "requests_per_day": day.requests_per_day,
        "output_tokens_per_day": mtok * 1e6,
        "slo_attainment": day.slo_attainment,
        "violated_intervals": day.violated_intervals,
        "violated_s": float(day.violated_s.sum()),
        "min_replicas": int(day.ordered.min()),
        "max_replicas": int(day.ordered.max()),
    }


def intervals_json(c: DayRates, day: Day) -> list[dict[str, Any]]:
    return [
        {
            "start_s": float(c.start_s[k]),
            "duration_s": float(c.duration_s[k]),
            "rate": float(c.rate[k]),
            "replicas": int(day.ordered[k]),
            "ready_replicas": int(day.ready_min[k]),
            "violated_s": float(day.violated_s[k]),
            "ttft_p99_s": _nan_none(day.ttft_p99_s[k]),
            "tpot_p99_s": _nan_none(day.tpot_p99_s[k]),
        }
        for k in range(c.rate.size)
    ]

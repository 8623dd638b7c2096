"""Why no deployment: a chip none of whose layouts holds the model or meets the TPOT SLO at batch
1, or a layout that misses the SLOs even at light load; each reason names the bound that ruled it
out. `describe` names a replica's layout as `plan` does."""

from __future__ import annotations

import math

import numpy as np

from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_seconds
from roofline.engines.engine import Engine
from roofline.serving.candidates import MAX_NODES, candidates
from roofline.serving.metrics import Slo, metrics
from roofline.serving.search import COARSE_REQUESTS, cycled
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.workload import Workload, with_rate
from roofline.step.ops import Deployment


def describe(dep: Deployment) -> str:
    """A replica's layout as `plan` names it, without the DP (replicas are counted apart)."""
    return dep.layout.describe().removesuffix(" DP1").replace(" PP1", "")


def no_layout(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    scale_out: Tier | None,
    headroom: float,
) -> str:
    """Why no layout of `model` on `hw` was searched, with the bound that ruled them out: none
    whose weights and KV fit, or the fastest batch-1 TPOT of those that fit above the SLO."""
    prompt, output = int(np.mean(w.prompts)), int(np.mean(w.outputs))
    rate = float(w.rate or 1.0)
    fit, _ = candidates(model, hw, base, eng, prompt, output, rate, None, headroom, scale_out)
    if not fit:
        if hw.scale_up is None:  # candidates.replica_sizes: one GPU a replica
            return (
                f"{hw.id} has no scale-up link, so size runs a replica on one GPU, and one GPU"
                f" does not hold {model.id}'s weights and the KV of one request (plan --gpus N"
                " lays it out over the host link)"
            )
        return (
            f"no layout of {model.id} on {hw.id} up to {MAX_NODES} nodes holds its weights and"
            " the KV of one request"
        )
    fast = min(fit, key=lambda c: c.latency_tpot_s)
    return (
        f"no layout meets the TPOT SLO at batch 1: the fastest, {describe(fast.dep)}, takes"
        f" {fmt_seconds(fast.latency_tpot_s)} a token > {fmt_seconds(slo.tpot_s or 0.0)}"
    )


def light_load_miss(rep: Replica, w: Workload, slo: Slo, sat: float, seed: int) -> str:
    """Why a layout misses the SLOs even at light load: its p-th percentile TTFT and TPOT at
    1/64 of its saturation rate (the lowest rate the SLO search tries) against the SLOs."""
    lo = sat / 64.0
    if not (math.isfinite(lo) and lo > 0):
        return "misses the SLOs even at light load"
    tr = run_replicas(rep, with_rate(cycled(w, min(w.n, COARSE_REQUESTS)), lo, seed), 1, False)
    m = metrics(tr, slo, rep.gpus)
    over = []
    if slo.ttft_s is not None and m.slo_ttft_s > slo.ttft_s:
        over.append(f"TTFT {fmt_seconds(m.slo_ttft_s)} > {fmt_seconds(slo.ttft_s)}")
    if slo.tpot_s is not None and m.slo_tpot_s > slo.tpot_s:
        over.append(f"TPOT {fmt_seconds(m.slo_tpot_s)} > {fmt_seconds(slo.tpot_s)}")
    return (
        f"misses the SLOs even at light load ({lo:.3g} req/s, 1/64 of saturation): p{slo.pct:g} "
        + (" and ".join(over) or "attainment below the SLO's")
    )

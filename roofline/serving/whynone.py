"""Why no deployment: a chip none of whose layouts holds the model or meets the TPOT SLO at batch
1, or a layout that misses the SLOs even at light load; each reason names the bound that ruled it
out. `describe` names a replica's layout as `plan` does."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_seconds
from roofline.engines.engine import Engine
from roofline.serving.candidates import MAX_NODES, candidates
from roofline.serving.metrics import Slo, metrics
from roofline.serving.search import COARSE_REQUESTS, cycled, slo_requests, verdicts
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.workload import Workload, with_rate
from roofline.step.ops import Deployment

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges


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


def misses_at_light_load(
    rep: Replica,
    w: Workload,
    slo: Slo,
    sat: float,
    ideal: bool = False,
    seed: int = 0,
    memo: dict | None = None,
) -> bool:
    """Whether one replica misses `slo` at the SLO search's light load, `sat`/64 (sat its
    saturation rate), on the search's own first runs (COARSE_REQUESTS of the workload's
    requests, kept in `memo` for it): the run max_rate_within_slo(..., floor=sat/64) answers 0
    on, the SLO percentiles growing with the rate (its bisection's premise). One run: size
    --confidence asks it of the SLOs ÷ the light-load bands' high edges before the expected
    search, which a layout with no capacity at the edges then does without."""
    if (slo.ttft_s is None and slo.tpot_s is None) or not (math.isfinite(sat) and sat > 0):
        return False
    coarse = min(slo_requests(slo, w.n), COARSE_REQUESTS)
    return not verdicts(rep, w, slo, ideal, seed, {} if memo is None else memo)(cycled(w, coarse))(
        sat / 64.0
    )


def why_at(at: Edges, rep: Replica, w: Workload, slo: Slo, sat: float, seed: int) -> str:
    """Why a layout has no capacity at the band edges `at`: light_load_miss against the SLOs ÷
    the light-load bands' high edges."""
    why = f"at {at.level} (SLOs ÷ {at.ttft:.3g}, ÷ {at.tpot:.3g}, the light-load edges) "
    return why + light_load_miss(rep, w, at.slo(slo), sat, seed)


def edge_miss(
    at: Edges | None, rep: Replica, w: Workload, slo: Slo, sat: float, seed: int, memo: dict
) -> str | None:
    """why_at, for size to answer before the expected search (which such a layout has no use
    for), when the layout misses the SLOs ÷ the latency edges at light load but meets `slo`
    there (else the expected search's own reason is the layout's); None when it meets them, or
    at the expected figures (`at` None: no edges)."""
    if at is None or not misses_at_light_load(rep, w, at.slo(slo), sat, False, seed, memo):
        return None
    if misses_at_light_load(rep, w, slo, sat, False, seed, memo):
        return None
    return why_at(at, rep, w, slo, sat, seed)

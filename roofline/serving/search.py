"""The rate searches of serving: the saturation rate (the queue-growth bisection), the highest
rate within the SLOs (a bisection below the saturation rate, or a geometric grid of rates for
sizing) and a closed-form starting point. Used by serve, size and disagg alike."""

from __future__ import annotations

import math

import numpy as np

from roofline.serving.serve import Replica, Slo, metrics, run_replicas
from roofline.serving.workload import Workload, with_rate

GRID = 1.05  # rate grid step: the sizing answer is within 5% of the boundary


def _unstable(rep: Replica, w: Workload, rate: float, ideal: bool, seed: int) -> bool:
    """Queue growth: more than 5% of the requests (+5) still queued when the last one arrives."""
    m = metrics(run_replicas(rep, with_rate(w, rate, seed), 1, ideal), Slo(), rep.gpus)
    return m.queued_at_last_arrival > 0.05 * m.requests + 5


def saturation_rate(
    rep: Replica, w: Workload, ideal: bool = False, seed: int = 0, rel_tol: float = 0.02
) -> float:
    """The request rate per replica past which the queue grows without bound, by bisection on
    the rate with the queue-growth criterion above (Poisson arrivals, the workload's lengths)."""
    lo, hi = 0.0, 1.0
    while not _unstable(rep, w, hi, ideal, seed):
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            return math.inf
    while lo == 0.0:
        if not _unstable(rep, w, hi / 2.0, ideal, seed):
            lo = hi / 2.0
        else:
            hi /= 2.0
            if hi < 1e-6:
                return 0.0
    while hi - lo > rel_tol * lo:
        mid = 0.5 * (lo + hi)
        if _unstable(rep, w, mid, ideal, seed):
            hi = mid
        else:
            lo = mid
    return lo


def max_rate_within_slo(
    rep: Replica,
    w: Workload,
    slo: Slo,
    ideal: bool = False,
    seed: int = 0,
    rel_tol: float = 0.03,
    hi: float | None = None,
) -> float:
    """The highest request rate per replica at which the replica meets the SLOs (0 if none):
    bisection below the saturation rate `hi`, assuming latency grows with the rate."""
    hi = hi if hi is not None else saturation_rate(rep, w, ideal, seed)

    def ok(rate: float) -> bool:
        tr = run_replicas(rep, with_rate(w, rate, seed), 1, ideal)
        return metrics(tr, slo, rep.gpus).meets_slo

    if not math.isfinite(hi) or hi <= 0:
        return 0.0
    if ok(hi):
        return hi
    lo = hi / 64.0
    if not ok(lo):
        return 0.0
    while hi - lo > rel_tol * lo:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _ok(rep: Replica, w: Workload, slo: Slo, rate: float, ideal: bool, seed: int) -> bool:
    m = metrics(run_replicas(rep, with_rate(w, rate, seed), 1, ideal), slo, rep.gpus)
    growing = m.queued_at_last_arrival > 0.05 * m.requests + 5
    return m.meets_slo and not growing


def max_rate(
    rep: Replica, w: Workload, slo: Slo, ideal: bool = False, seed: int = 0, start: float = 1.0
) -> float:
    """The highest rate on the grid start·GRID^k (k integer) at which one replica meets the SLOs
    with a stable queue; 0 if even start·GRID^-200 misses."""

    def at(k: int) -> bool:
        return _ok(rep, w, slo, start * GRID**k, ideal, seed)

    step = 8  # grid steps per bracket jump (×1.48)
    if at(0):
        lo = 0
        while at(lo + step):
            lo += step
            if lo > 600:
                return start * GRID**lo
        hi = lo + step
    else:
        hi = 0
        while not at(hi - step):
            hi -= step
            if hi < -200:
                return 0.0
        lo = hi - step
    while hi - lo > 1:  # at(lo) and not at(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if at(mid) else (lo, mid)
    return start * GRID**lo


def capacity_estimate(rep: Replica, w: Workload) -> float:
    """Requests/s a replica sustains at its largest batch, in closed form (the colocated cycle of
    roofline.serving.disagg): B requests per B·t_prefill + (O − 1)·t_decode(B), with B the most
    sequences of mean length the KV budget and max_seqs allow. Only a starting point."""
    steps, rules = rep.expected, rep.rules
    s, o = float(w.prompts.mean()), float(w.outputs.mean())
    per_seq = float(steps.blocks(int(s + o / 2) + 1, rules.block_tokens))
    b = int(max(1, min(rules.max_seqs, rules.budget_blocks // max(per_seq, 1.0))))
    t_d = steps.decode_span_s(np.full(b, s + o / 2), 1)
    t_p = steps.prefill_step_s(np.array([s]))
    return 0.7 * b / (b * t_p + max(o - 1, 1) * t_d)

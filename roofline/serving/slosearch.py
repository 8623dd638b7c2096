"""The SLO searches of serving (roofline.serving.search re-exports them): capacity under SLOs,
the highest rate whose pct-th percentile TTFT and TPOT meet the targets (MLPerf Inference's
server scenario: the highest Poisson rate meeting the latency bound), by bisection below the
saturation rate on runs with at least TAIL_REQUESTS requests beyond the percentile (5,000 for
p99); and the same at a confidence's band edges (capacity_at_edges), from the expected search's
runs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from roofline.serving.confidence import capacity_at
from roofline.serving.metrics import Slo, metrics
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.sim.slostop import SloMissed, SloStop
from roofline.serving.workload import MAX_REQUESTS, Workload, unprefixed, with_prefix, with_rate

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges

TAIL_REQUESTS = 50  # requests beyond the SLO percentile in every run of the SLO search
# the SLO search brackets on short runs (to 10%), then settles on full ones (to 3%): about 30%
# less simulated work than bracketing to 3%, answers within 2% (16 layouts of 70B at p99)
COARSE_REQUESTS = 1000
COARSE_TOL = 0.10
FINE_STEP = 1.03


def slo_requests(slo: Slo, n: int) -> int:
    """Requests per run of the SLO search: `n`, or enough for TAIL_REQUESTS beyond the pct-th
    percentile (50 / (1 − pct/100): 5,000 at p99)."""
    tail = 1.0 - slo.pct / 100.0
    need = math.ceil(round(TAIL_REQUESTS / tail, 6)) if tail > 0 else n
    return int(min(max(n, need), MAX_REQUESTS))


def cycled(w: Workload, n: int) -> Workload:
    """`w`'s lengths cycled (or cut) to `n` requests, all at t = 0 (give them a rate)."""
    if n == w.n:
        return w
    if w.prefix_config is not None:  # whole conversations, rebuilt
        return with_prefix(cycled(unprefixed(w), n), w.prefix_config)
    p, o = np.resize(w.prompts, n), np.resize(w.outputs, n)
    return Workload(
        np.zeros(n), p, o, None, None, None, w.description, w.length_dists, w.burstiness
    )


@dataclass(frozen=True)
class Missed:
    """A run of the SLO search stopped once it missed `metric` ("TTFT" or "TPOT") at its pct-th
    percentile against `limit_s` (sim.slostop): it misses any SLO at that percentile whose
    limit on that metric is no looser."""

    metric: str
    limit_s: float
    pct: float

    @staticmethod
    def of(metric: str, slo: Slo) -> Missed:
        limit = slo.ttft_s if metric == "TTFT" else slo.tpot_s
        assert limit is not None, "a run stops only on a metric the SLO limits"
        return Missed(metric, limit, slo.pct)

    def holds_for(self, slo: Slo) -> bool:
        limit = slo.ttft_s if self.metric == "TTFT" else slo.tpot_s
        return slo.pct == self.pct and limit is not None and limit <= self.limit_s


def highest_ok(
    ok: Callable[[float], bool], hi: float, rel_tol: float = 0.03, floor: float | None = None
) -> float:
    """The highest rate in [floor, hi] (`floor` hi/64 unless given) for which ok(rate) holds, by
    bisection (first within [hi/8, hi] when that is above the floor), assuming ok holds below
    some rate and fails above it; 0 if ok(floor) fails."""
    if not (math.isfinite(hi) and hi > 0):
        return 0.0
    lo = hi / 64.0 if floor is None else floor
    if ok(hi):
        return hi
    mid = hi / 8.0
    if mid > lo and ok(mid):  # most SLOs hold at an eighth of saturation: a narrower bracket
        return _bisect(ok, mid, hi, rel_tol)
    return _bisect(ok, lo, mid if mid > lo else hi, rel_tol) if ok(lo) else 0.0


def _run_key(w: Workload, n: int, rate: float, seed: int, ideal: bool) -> tuple:
    """A run's key in a replica's memo (Capacity.runs): w's lengths cycled to n requests at
    `rate`, under one seed and step times (the SLO only judges it)."""
    return (id(w), n, rate, seed, ideal)


def _known(memo: dict, w: Workload, n: int, slo: Slo, seed: int, ideal: bool) -> list[float]:
    """The rates at which w's lengths cycled to n requests are already in `memo` with a verdict
    under `slo` (a run, or one stopped at a miss that holds for it: Missed.holds_for), lowest
    first: a search under `slo` reads them without a run."""
    return sorted(
        k[2]
        for k, run in memo.items()
        if k[0] != "serve"
        and k == _run_key(w, n, k[2], seed, ideal)
        and (not isinstance(run, Missed) or run.holds_for(slo))
    )


def _bracket(verdict: list[tuple[float, bool]]) -> tuple[float, float]:
    """(the highest rate met below the lowest missed, that lowest missed) of (rate, met) pairs;
    0 and inf where there is none."""
    hi = min((r for r, met in verdict if not met), default=math.inf)
    return max((r for r, met in verdict if met and r < hi), default=0.0), hi


def verdicts(
    rep: Replica, w: Workload, slo: Slo, ideal: bool, seed: int, runs: dict
) -> Callable[[Workload], Callable[[float], bool]]:
    """max_rate_within_slo's verdicts: for a run length's workload `wl` (w's lengths cycled),
    whether one replica at a rate meets `slo`, each run kept in `runs` (the memo)."""

    def ok_at(wl: Workload) -> Callable[[float], bool]:
        # a run every request of which is served stops once it misses the SLO (sim.slostop):
        # the memo keeps that verdict, which holds for any SLO as strict on the metric missed
        whole = wl.prefix is None and wl.concurrency is None and wl.duration_s is None
        stop = SloStop.of(slo.ttft_s, slo.tpot_s, slo.pct, wl.n) if whole else None

        def ok(rate: float) -> bool:
            key = _run_key(w, wl.n, rate, seed, ideal)
            tr = runs.get(key)
            if isinstance(tr, Missed):
                if tr.holds_for(slo):
                    return False
                tr = None  # missed on a looser limit than this SLO's: run it again
            if tr is None:
                try:
                    tr = runs[key] = run_replicas(rep, with_rate(wl, rate, seed), 1, ideal,
                                                  stop=stop)  # fmt: skip
                except SloMissed as miss:
                    runs[key] = Missed.of(miss.metric, slo)
                    return False
            return metrics(tr, slo, rep.gpus).meets_slo

        return ok

    return ok_at


def max_rate_within_slo(
    rep: Replica,
    w: Workload,
    slo: Slo,
    hi: float,
    ideal: bool = False,
    seed: int = 0,
    memo: dict | None = None,
    floor: float | None = None,
    *,
    reuse: bool = False,
    scale: float = 1.0,
    over: Callable[[float], bool] | None = None,
    demand: float | None = None,
) -> float:
    """The highest request rate per replica whose pct-th percentile TTFT and TPOT meet the SLOs,
    at most `hi` (the saturation rate), 0 when they miss at `floor` (light load: hi/64 unless
    given; a floor above `hi` is searched and the answer capped at `hi`). A bisection on runs
    of COARSE_REQUESTS of the workload's requests brackets it to COARSE_TOL; runs of
    slo_requests requests (the workload's lengths cycled) then settle it to 3% (_settle).
    `memo`: the runs already simulated for this replica and workload (Capacity.runs): a search
    under other SLOs (size --confidence) reads the rates both visit from it (a run, by
    requests, rate, seed and step times, does not depend on the SLO; only its verdict does).
    `reuse`: the bracket starts from the verdicts of the short runs already in `memo` (another
    search's rate points, judged against these SLOs: _from_known) instead of hi and hi/8;
    `scale`: the full-length runs start from the short runs' answer × it (their bias where
    another search measured it: capacity_at_edges).
    `over(rate)`, asked at each rate a full-length run misses (an upper bound on the answer):
    True stops the search, raising Over. `demand`: the requests/s a fleet of these replicas
    must serve; the full-length runs then settle on the rates at which its replica count
    changes, demand / k (_settle_count), instead of to 3%."""
    if slo.ttft_s is None and slo.tpot_s is None:
        return hi
    memo = {} if memo is None else memo
    ok_at = verdicts(rep, w, slo, ideal, seed, memo)
    top = hi if floor is None else max(hi, floor)
    low = top / 64.0 if floor is None else floor
    n = slo_requests(slo, w.n)
    coarse = min(n, COARSE_REQUESTS)
    ok = _stopping(ok_at(cycled(w, coarse)), over if coarse == n else None)
    tol = COARSE_TOL if coarse < n else 0.03
    if reuse:
        r = _from_known(ok, _known(memo, w, coarse, slo, seed, ideal), top, tol, low)
    else:
        r = highest_ok(ok, top, tol, low)
    fine = _stopping(ok_at(cycled(w, n)), over)
    if demand and 0 < r < top:
        return min(_settle_count(fine, min(r * scale, top), top, demand, low), hi)
    if coarse < n and r > 0:
        r = _settle(fine, min(r * scale, top), top, step=FINE_STEP, floor=low)
    return min(r, hi)


def _settle_count(ok: Callable[[float], bool], r: float, hi: float, demand: float,
                  floor: float) -> float:  # fmt: skip
    """The highest rate below `hi` at which ok holds, to 3% (as _settle), its full-length runs
    first at the rates at which a fleet serving `demand` changes its replica count, demand / k
    (k whole): k stepped by 1, 2, 4, ... away from the guess `r`'s count until ok changes, then
    bisected on k; the answer then within [demand / k, demand / (k − 1)) (so the count is k,
    the least that meets it), bisected to 3% when those are further apart; 0 below `floor`."""
    least = math.floor(demand / hi) + 1  # the fewest replicas whose rate is below hi

    def at(k: int) -> float:
        return demand / k if k >= least else hi

    k = max(least, math.ceil(demand / r * (1 - 1e-12)))
    step = 1
    if ok(at(k)):  # fewer replicas: k − 1, k − 2, k − 4, ... while they meet it
        good = bad = k
        while bad >= least:
            bad = max(good - step, least - 1)  # least − 1: hi, missed (the caller's first run)
            if bad < least or not ok(at(bad)):
                break
            good, step = bad, step * 2
    else:  # more replicas: k + 1, k + 2, k + 4, ... until one meets it
        bad = k
        while True:
            good = bad + step
            if at(good) < floor:
                return 0.0
            if ok(at(good)):
                break
            bad, step = good, step * 2
    while good - bad > 1:  # ok(at(good)), not ok(at(bad)), bad < good
        mid = (good + bad) // 2
        good, bad = (mid, bad) if ok(at(mid)) else (good, mid)
    return _bisect(ok, at(good), at(bad))


class Over(Exception):
    """A search stopped by its `over` (max_rate_within_slo)."""


def _stopping(
    ok: Callable[[float], bool], over: Callable[[float], bool] | None
) -> Callable[[float], bool]:
    """ok, raising Over at a rate it misses for which over(rate) holds."""
    if over is None:
        return ok

    def stopping(x: float) -> bool:
        if not (met := ok(x)) and over(x):
            raise Over
        return met

    return stopping


def _from_known(
    ok: Callable[[float], bool], known: list[float], top: float, tol: float, floor: float
) -> float:
    """highest_ok(ok, top, tol, floor), its bracket narrowed first by the verdicts at the rates
    `known` (run already: ok reads each from the memo): the lowest rate missed and the highest
    met below it; bisected between them, or from top when none is met."""
    lo, hi = _bracket([(r, ok(r)) for r in known])
    if lo >= top:
        return top
    if hi > top:
        if ok(top):
            return top
        hi = top
    return _bisect(ok, lo, hi, tol) if lo > 0 else highest_ok(ok, hi, tol, floor)


def capacity_at_edges(
    rep: Replica,
    w: Workload,
    slo: Slo,
    edges: Edges,
    r_cap: float,
    sat: float,
    ideal: bool = False,
    seed: int = 0,
    memo: dict | None = None,
    rate: float | None = None,
    headroom: float = 0.0,
    over: Callable[[float], bool] | None = None,
) -> float | None:
    """A replica's capacity at a confidence's band edges (confidence.capacity_at) from its
    expected capacity within the SLOs `r_cap` (`sat` its saturation rate): the throughput
    band's low edge × the highest rate at which the expected model meets the SLOs ÷ the
    light-load bands' high edges (its queue at rate ÷ low), up to r_cap: r_cap when it meets
    them there, else max_rate_within_slo's search from the expected search's rate points
    (`memo`: its short runs judged against the SLOs ÷ edges bracket it) down to sat/64 (0 if
    none meets them there). A rate a full-length run misses bounds the answer: `over(low × it)`
    True (no better than the chip's best) stops it, returning None. `rate`: the offered rate a
    fleet serves with `headroom`: if one fewer replica might do, its rate is tried."""
    tight, low = edges.slo(slo), edges.capacity
    memo = {} if memo is None else memo
    beyond = None if over is None else (lambda x: over(x * low))

    def search(top: float) -> float:
        if tight.ttft_s is None and tight.tpot_s is None:
            return top
        meets = verdicts(rep, w, tight, ideal, seed, memo)(cycled(w, slo_requests(tight, w.n)))
        if _stopping(meets, beyond)(top):  # the expected answer's own run
            return top
        # the short runs' bias, the expected search's answer over their bracket's top met
        short = min(slo_requests(slo, w.n), COARSE_REQUESTS)
        judge = verdicts(rep, w, slo, ideal, seed, memo)(cycled(w, short))
        met = _bracket([(x, judge(x)) for x in _known(memo, w, short, slo, seed, ideal)])[0]
        scale = min(max(top / met, 0.8), 1.25) if met > 0 else 1.0
        demand = rate / low / (1.0 - headroom) if rate else None  # the queue, rate ÷ low
        return max_rate_within_slo(rep, w, tight, top, ideal, seed, memo, sat / 64.0,
                                   reuse=True, scale=scale, over=beyond, demand=demand)  # fmt: skip

    try:
        return capacity_at(edges, r_cap, search)
    except Over:
        return None


def _settle(
    ok: Callable[[float], bool],
    r: float,
    hi: float,
    rel_tol: float = 0.03,
    step: float = 1.03,
    floor: float | None = None,
) -> float:
    """The boundary near a first guess `r` (at most `hi`): steps of rel_tol away from it,
    doubling (in the exponent) until the boundary is crossed, then bisection; two runs when the
    guess is within rel_tol; 0 below `floor` (hi/64 unless given)."""
    low = hi / 64.0 if floor is None else floor
    up = ok(r)
    while True:
        x = min(r * step, hi) if up else r / step
        if ok(x) != up:
            return _bisect(ok, r, x, rel_tol) if up else _bisect(ok, x, r, rel_tol)
        if up and x >= hi:
            return hi
        if not up and x < low:
            return 0.0
        r, step = x, step * step


def _bisect(ok: Callable[[float], bool], lo: float, hi: float, rel_tol: float = 0.03) -> float:
    """ok(lo) holds and ok(hi) fails: the boundary within rel_tol, from below."""
    while hi - lo > rel_tol * lo:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo

"""The rate searches of serving, used by serve, size and disagg alike.

- Saturation: the steady-state completion rate of a replica that is never idle. A closed loop of
  more users than the replica holds (so a queue always waits) runs PROBE_GENERATIONS + 2 times
  that many requests; completions are counted from the users-th to the (N − users)-th,
  which leaves out the warm-up (everyone admitted at once) and the drain (the queue emptying).
  The probe's lengths are drawn once at a fixed seed from the workload's length specification,
  so the figure does not depend on --rate, --requests, --duration or --seed. A Poisson run at
  0.95 × that rate then confirms that the queue stays bounded.
- Capacity under SLOs: the highest rate whose pct-th percentile TTFT and TPOT meet the targets
  (MLPerf Inference's server scenario: the highest Poisson rate meeting the latency bound), by
  bisection below the saturation rate on runs with at least TAIL_REQUESTS requests beyond the
  percentile (5,000 for p99).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from roofline.serving.bounds import RateBounds, rate_bounds
from roofline.serving.confidence import capacity_at
from roofline.serving.metrics import Slo, metrics
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.sim.prefixcache import PrefixConfig
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.sim.slostop import SloMissed, SloStop
from roofline.serving.workload import (
    MAX_REQUESTS,
    Workload,
    draw_lengths,
    unit_gaps,
    unprefixed,
    with_prefix,
    with_rate,
)

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges

PROBE_GENERATIONS = 4  # closed-loop rounds measured (within 2% of 40 rounds: 8B, 70B, lognormal)
PROBE_LENGTHS = 4000  # lengths drawn for the probe from a length distribution
PROBE_SEED = 0
CONFIRM_FRACTION = 0.95
TAIL_REQUESTS = 50  # requests beyond the SLO percentile in every run of the SLO search
# the SLO search brackets on short runs (to 10%), then settles on full ones (to 3%): about 30%
# less simulated work than bracketing to 3%, answers within 2% (16 layouts of 70B at p99)
COARSE_REQUESTS = 1000
COARSE_TOL = 0.10
FINE_STEP = 1.03
CONFIRM_REQUESTS = 1000  # requests in the Poisson run that confirms a saturation rate
BINDINGS = ("compute", "KV capacity", "max-seqs", "API server")


@dataclass(frozen=True)
class Saturation:
    """One replica's saturation: requests and output tokens per second, what binds it."""

    requests_per_s: float
    output_tokens_per_s: float
    binding: str  # one of BINDINGS
    mean_running_batch: float
    kv_occupancy: float
    mean_output_tokens: float  # of the probe's requests: the steady state's mean output
    requests: int  # simulated in the probe
    confirmed: bool | None = None  # a Poisson run at 0.95 × the rate kept its queue bounded


def _draws(w: Workload) -> tuple[np.ndarray, np.ndarray]:
    """PROBE_LENGTHS draws at PROBE_SEED from the workload's length specification, or the
    workload's own lengths (a trace) when it has none."""
    if w.length_dists is None:
        return w.prompts, w.outputs
    p_dist, o_dist = w.length_dists
    n = PROBE_LENGTHS if isinstance(p_dist, str) or isinstance(o_dist, str) else 1
    prompts = draw_lengths(p_dist, n, PROBE_SEED + 1, "prompt")[0]
    outputs = draw_lengths(o_dist, n, PROBE_SEED + 2, "output")[0]
    return prompts, outputs


def probe_lengths(
    w: Workload, draws: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The probe's prompt and output lengths: _draws (or `draws`, when already made) with the
    longest 1% clipped at the 99th percentile (a closed loop's rate is set by the bulk of the
    requests), and at the workload's own longest prompt and output, which the replica was built
    for (this bites only in runs of a few hundred requests or less)."""
    prompts, outputs = draws if draws is not None else _draws(w)
    caps = (
        min(np.percentile(prompts, 99), w.prompts.max()),
        min(np.percentile(outputs, 99), w.outputs.max()),
    )
    return (
        np.minimum(prompts, int(caps[0])).astype(np.int64),
        np.minimum(outputs, int(caps[1])).astype(np.int64),
    )


def probe_users(rep: Replica, prompts: np.ndarray, prefilled: bool = False) -> int:
    """More users than the replica holds at once: 1.2 × the fewest of max-seqs and the sequences
    of the median prompt the KV budget holds, + 8."""
    r = rep.rules
    median = int(np.median(prompts)) + (2 if prefilled else 1)
    fit = r.budget_blocks // max(float(rep.expected.blocks(median, r.block_tokens)), 1.0)
    return int(1.2 * min(r.max_seqs, max(fit, 1))) + 8


def saturation(
    rep: Replica,
    prompts: np.ndarray,
    outputs: np.ndarray,
    ideal: bool = False,
    prefilled: bool = False,
    confirm: bool = False,
    bound: float = math.inf,
    prefix: PrefixConfig | None = None,
    longest: int | None = None,
) -> Saturation:
    """The replica's saturation (module docstring) on requests of these lengths (cycled);
    `prefilled`: requests arrive with their KV (a disaggregated decode pool). `bound`: the
    physical bound on the rate (bounds.RateBounds); a finite window of a length mix can read a
    little above the long-run rate, never the long-run rate above the bound, so the measured
    rate is capped there. `prefix`: the requests share a prefix or hold conversations
    (prefixcache.PrefixConfig), each user sending its next turn without a think time, cached;
    prompts are cut at `longest` (the replica's)."""
    n0 = None
    if prefix is not None:  # the probe's users hold conversations: their prompts grow
        prefix = replace(prefix, think_s=0.0)
        n0 = prefix.build(prompts, outputs)[0]
    users = probe_users(rep, prompts if n0 is None else n0, prefilled)
    n = min(users * (PROBE_GENERATIONS + 2), MAX_REQUESTS)
    p, o = np.resize(prompts, n).astype(np.int64), np.resize(outputs, n).astype(np.int64)
    info = None
    if prefix is not None:
        p, o, info = prefix.build(p, o)
        if longest is not None:
            p = np.minimum(p, longest)
        n = len(p)
    steps = rep.ideal if ideal else rep.expected
    front = None if ideal else rep.frontend
    tr = simulate_requests(
        steps,
        np.zeros(n),
        p,
        o,
        rep.rules,
        prefilled,
        closed_loop=users,
        frontend=front,
        prefix=info,
    )
    order = np.argsort(tr.finish_s, kind="stable")
    f = tr.finish_s[order]
    # from the end of the users-th completion's burst to the end of the (N − users)-th's:
    # requests finishing in the same step are counted together, never split by the window
    j = int(np.searchsorted(f, f[users - 1], side="right")) - 1
    k = int(np.searchsorted(f, f[n - users - 1], side="right")) - 1
    if k <= j:  # one burst holds the whole window: the run's mean rate
        j, k = -1, n - 1
    span = float(f[k] - (f[j] if j >= 0 else 0.0))
    rate = (k - j) / span
    tokens = float(o[order][j + 1 : k + 1].sum()) / span
    if rate > bound:
        rate, tokens = bound, tokens * bound / rate
    busy = max(tr.makespan_s, 1e-30)
    batch = tr.decoding_integral / busy
    active = tr.active_integral / busy
    kv = tr.kv_block_integral / busy / max(tr.budget_blocks, 1)
    api = 0.0
    if front is not None:
        api = tokens * front.token_s + rate * front.request_s
    if api >= 0.9:
        binding = "API server"
    elif active >= 0.95 * rep.rules.max_seqs:
        binding = "max-seqs"
    elif kv >= 0.85 or tr.preemptions > 0:
        binding = "KV capacity"
    else:
        binding = "compute"
    ok = None
    if confirm:
        m = min(n, CONFIRM_REQUESTS)
        if prefix is not None:
            p = np.resize(prompts, m).astype(np.int64)
            o = np.resize(outputs, m).astype(np.int64)
        ok = _bounded(rep, p[:m], o[:m], CONFIRM_FRACTION * rate, ideal, prefix)
    return Saturation(rate, tokens, binding, batch, kv, float(o.mean()), n, ok)


def _bounded(rep: Replica, prompts, outputs, rate: float, ideal: bool, prefix=None) -> bool:
    """A Poisson run at `rate`: at most 5% of the requests (+5) still queued at the last
    arrival."""
    gaps = unit_gaps(np.random.default_rng(PROBE_SEED), prompts.size)
    w = Workload(np.cumsum(gaps) / rate, prompts, outputs, rate, None, None, {})
    w = with_prefix(w, prefix, PROBE_SEED)
    m = metrics(run_replicas(rep, w, 1, ideal), Slo(), rep.gpus)
    return m.queued_at_last_arrival <= 0.05 * m.requests + 5


class Probed:
    """A replica's saturation with ideal and expected step times, each probed (`_probe`) when
    first asked for; search.Capacity's and mixcapacity.MixCapacity's shared interface."""

    _sat: dict[bool, Saturation]

    def _probe(self, ideal: bool) -> Saturation:
        raise NotImplementedError

    def of(self, ideal: bool) -> Saturation:
        if ideal not in self._sat:
            self._sat[ideal] = self._probe(ideal)
        return self._sat[ideal]

    @property
    def ideal(self) -> Saturation:
        return self.of(True)

    @property
    def expected(self) -> Saturation:
        return self.of(False)

    def known(self, ideal: bool) -> Saturation | None:
        """The saturation with ideal or expected step times if already probed, else None."""
        return self._sat.get(ideal)

    def stable(self, rate: float, ideal: bool) -> bool:
        """`rate` per replica is below the saturation rate. The ideal's is never below the
        expected's (a tested bound), so a rate below the expected's needs no ideal probe: the
        expected one, which every caller needs, answers first."""
        if rate < self.of(False).requests_per_s:
            return True
        return ideal and rate < self.of(True).requests_per_s


class Capacity(Probed):
    """One replica's saturation with ideal and expected step times (each probed when first
    asked for) and its physical bounds, for one length distribution."""

    def __init__(self, rep: Replica, w: Workload, confirm: bool = False) -> None:
        self.prefix, self.longest = w.prefix_config, int(w.prompts.max())
        w0 = unprefixed(w)  # a prefix workload: the probe builds its conversations itself
        draws = _draws(w0)  # drawn once: clipped for the probe, whole for the mean
        self.prompts, self.outputs = probe_lengths(w0, draws)
        # the steady state's tokens per request: the distribution's mean, unclipped
        self.mean_output_tokens = float(np.mean(draws[1]))
        self._rep, self._confirm = rep, confirm
        self._sat: dict[bool, Saturation] = {}
        self.runs: dict = {}  # the SLO searches' runs (max_rate_within_slo's memo)
        r = rep.rules
        shortest = float(rep.expected.blocks(int(np.min(self.prompts)) + 1, r.block_tokens))
        batch = int(min(r.max_seqs, max(r.budget_blocks // max(shortest, 1.0), 1)))
        assert rep.model is not None, "a replica built by make_replica"
        mean_prompt, cached = float(np.mean(self.prompts)), 0.0
        if self.prefix is not None:  # the compute bound counts the tokens computed
            p, _, info = self.prefix.build(self.prompts, self.outputs)
            mean_prompt = float(np.mean(p))
            cached = float(np.mean(info.possible_hit_tokens(p, r.block_tokens)))
        self.bounds: RateBounds = rate_bounds(
            rep.model,
            rep.hw,
            rep.dep,
            rep.gpus,
            mean_prompt,
            self.mean_output_tokens,
            batch,
            cached,
        )

    def _probe(self, ideal: bool) -> Saturation:
        return saturation(
            self._rep,
            self.prompts,
            self.outputs,
            ideal,
            confirm=self._confirm,
            bound=self.bounds.requests_per_s,
            prefix=self.prefix,
            longest=self.longest,
        )


def replica_capacity(rep: Replica, w: Workload, confirm: bool = False) -> Capacity:
    """Saturation (ideal and expected step times) and the compute and bandwidth bounds of one
    replica for the workload's length distribution (probe_lengths)."""
    return Capacity(rep, w, confirm)


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
    True stops the search, raising Over."""
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
    if coarse < n and r > 0:
        r = min(r * scale, top)
        r = _settle(_stopping(ok_at(cycled(w, n)), over), r, top, step=FINE_STEP, floor=low)
    return min(r, hi)


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
        r = max_rate_within_slo(rep, w, tight, top, ideal, seed, memo, sat / 64.0, reuse=True,
                                scale=scale, over=beyond)  # fmt: skip
        if rate and 0 < r < top:  # the fleet's queue, rate ÷ low, on the expected model
            k = math.ceil(rate / low / (r * (1.0 - headroom)) * (1 - 1e-12))  # size.need
            fewer = rate / low / ((k - 1) * (1.0 - headroom)) if k > 1 else math.inf
            r = fewer if fewer <= min(top, r * FINE_STEP) and meets(fewer) else r  # under a miss
        return r

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

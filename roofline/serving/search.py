"""The rate searches of serving, used by serve, size and disagg alike.

- Saturation: the steady-state completion rate of a replica that is never idle. A closed loop of
  more users than the replica holds (so a queue always waits) runs PROBE_GENERATIONS + 2 times
  that many requests; completions are counted from the users-th to the (N − users)-th,
  which leaves out the warm-up (everyone admitted at once) and the drain (the queue emptying).
  The probe's lengths are drawn once at a fixed seed from the workload's length specification,
  so the figure does not depend on --rate, --requests, --duration or --seed. A Poisson run at
  0.95 × that rate then confirms that the queue stays bounded.
- Capacity under SLOs (roofline.serving.slosearch, re-exported here): the highest rate whose
  pct-th percentile TTFT and TPOT meet the targets (MLPerf Inference's server scenario: the
  highest Poisson rate meeting the latency bound), by bisection below the saturation rate on
  runs with at least TAIL_REQUESTS requests beyond the percentile (5,000 for p99).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from roofline.serving.bounds import RateBounds, rate_bounds
from roofline.serving.metrics import Slo, metrics
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.sim.prefixcache import PrefixConfig
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.slosearch import (
    COARSE_REQUESTS,
    COARSE_TOL,
    FINE_STEP,
    TAIL_REQUESTS,
    Missed,
    Over,
    capacity_at_edges,
    cycled,
    highest_ok,
    max_rate_within_slo,
    slo_requests,
    verdicts,
)
from roofline.serving.workload import (
    MAX_REQUESTS,
    Workload,
    draw_lengths,
    unit_gaps,
    unprefixed,
    with_prefix,
)

PROBE_GENERATIONS = 4  # closed-loop rounds measured (within 2% of 40 rounds: 8B, 70B, lognormal)
PROBE_LENGTHS = 4000  # lengths drawn for the probe from a length distribution
PROBE_SEED = 0
CONFIRM_FRACTION = 0.95
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


__all__ = [
    "BINDINGS",
    "COARSE_REQUESTS",
    "COARSE_TOL",
    "CONFIRM_FRACTION",
    "CONFIRM_REQUESTS",
    "FINE_STEP",
    "PROBE_GENERATIONS",
    "PROBE_LENGTHS",
    "PROBE_SEED",
    "TAIL_REQUESTS",
    "Capacity",
    "Missed",
    "Over",
    "Probed",
    "Saturation",
    "capacity_at_edges",
    "cycled",
    "highest_ok",
    "max_rate_within_slo",
    "probe_lengths",
    "probe_users",
    "replica_capacity",
    "saturation",
    "slo_requests",
    "verdicts",
]

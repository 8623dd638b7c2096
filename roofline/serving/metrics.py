"""Serving metrics: the SLO, percentiles, and one run's TTFT, TPOT, ITL, E2E, throughput, goodput
and SLO attainment (the definitions are in roofline/serving/serve.py's docstring and
docs/METRICS.md, once)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.units import latency_limit
from roofline.serving.sim.prefixcache import PrefixReport, prefix_report
from roofline.serving.sim.record import RunRecord

STEADY_E2ES = 5.0  # a run shorter than this many mean E2Es is flagged as not steady


@dataclass(frozen=True)
class Slo:
    ttft_s: float | None = None
    tpot_s: float | None = None
    pct: float = 99.0

    def __post_init__(self) -> None:
        if not 50 <= self.pct <= 100:
            hint = f" (did you mean {self.pct * 100:g}?)" if 0 < self.pct <= 1 else ""
            raise InputError(
                f"--slo-pct is a percentile from 50 to 100 (99 for p99), got {self.pct}{hint}"
            )
        for name in ("ttft_s", "tpot_s"):
            v = getattr(self, name)
            if v is not None:
                latency_limit(v, f"--slo-{name[:4]}")


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p90: float
    p99: float
    mean: float


def percentiles(x: np.ndarray, weights: np.ndarray | None = None) -> Percentiles:
    """p50, p90, p99 (inverted CDF of the weighted sample) and the mean; zeros when empty."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return Percentiles(0.0, 0.0, 0.0, 0.0)
    if weights is None:
        p = np.percentile(x, [50, 90, 99])
        return Percentiles(float(p[0]), float(p[1]), float(p[2]), float(x.mean()))
    order = np.argsort(x)
    xs, cw = x[order], np.cumsum(np.asarray(weights, dtype=float)[order])
    idx = np.searchsorted(cw, np.array([0.5, 0.9, 0.99]) * cw[-1])
    p = xs[np.minimum(idx, xs.size - 1)]
    return Percentiles(float(p[0]), float(p[1]), float(p[2]), float(np.sum(x * weights) / cw[-1]))


@dataclass(frozen=True)
class ReplicaShare:
    """One replica's own figures in a fleet run: what the router gave it and how it fared."""

    requests: int
    ttft_p99_s: float
    tpot_p99_s: float
    kv_occupancy: float
    step_share: float


@dataclass(frozen=True)
class ServeMetrics:
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    queue_s: Percentiles
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float  # 1 / mean TPOT
    goodput_requests_per_s: float
    slo_attainment: float
    meets_slo: bool
    mean_running_batch: float  # per replica, time-averaged, sequences decoding
    mean_queue_length: float  # per replica, waiting for admission
    mean_in_system: float  # over all replicas (Little's law: = rate × mean E2E)
    kv_occupancy: float  # time-averaged share of the KV budget in use
    # share of the window a replica is running a step: continuous batching runs one whenever a
    # request is in flight, so it reads near 1 well below saturation (the power model's input)
    step_share: float
    preemptions: int
    queued_at_last_arrival: int
    window_s: float
    gpus: int
    requests: int
    # the benchmark window's own figures (first send to last finish, benchmark_serving's
    # convention); requests_per_s, output_tokens_per_s and goodput above are the steady state's
    # once steady_state() has run, the same as these before
    benchmark_requests_per_s: float = 0.0
    benchmark_output_tokens_per_s: float = 0.0
    steady: bool = True  # the run spans at least STEADY_E2ES mean E2Es
    compute_share: float = 0.0  # share of the GPUs' time their FLOPs need at peak
    power_share: float = 1.0  # board power above idle drawn on average (roofline.serving.cost)
    prefix: PrefixReport | None = None  # the prefix cache's figures (None: no cache)
    # TTFT and TPOT at the SLO's percentile (Slo.pct; check specs' slo_pct judges them)
    slo_ttft_s: float = math.nan
    slo_tpot_s: float = math.nan
    # the busy share of time: steady requests/s ÷ the saturation rate (queueing's ρ = λ/μ of a
    # server completing at the saturation rate), at most 1; None until steady_state knows it
    utilisation: float | None = None
    # why TTFT, queue and E2E have no steady state (stationary arrivals past the saturation
    # rate: the queue grows without bound); "" when they have one
    unbounded: str = ""
    transient: ServeMetrics | None = None  # past saturation: the simulated run as it was
    per_replica: tuple[ReplicaShare, ...] = ()  # each replica's own figures (a fleet's run)
    per_class: tuple = ()  # a workload file's classes (roofline.serving.classes.ClassMetrics)


def replica_share(record: RunRecord, slo: Slo, gpus: int) -> ReplicaShare:
    """One replica's figures from its run record."""
    m = metrics([record], slo, gpus)
    return ReplicaShare(m.requests, m.ttft_s.p99, m.tpot_s.p99, m.kv_occupancy, m.step_share)


def past_saturation(m: ServeMetrics, reason: str, slo: Slo) -> ServeMetrics:
    """`m` (a run under stationary arrivals offered above the saturation rate) as its steady
    state: the queue grows without bound, so TTFT, queueing time and E2E grow without bound
    (infinite percentiles), as do the mean queue length and the requests in the system; TPOT
    and ITL keep the run's figures (the running batch sits at its cap). No SLO is met: every
    request's wait grows past any TTFT limit (attainment 0), and a fleet that falls ever further
    behind serves nobody in bounded time even without one. The run itself is kept, labelled
    (`transient`): its percentiles depend on how long it ran."""
    inf = Percentiles(math.inf, math.inf, math.inf, math.inf)
    return replace(
        m,
        ttft_s=inf,
        queue_s=inf,
        e2e_s=inf,
        slo_attainment=0.0 if slo.ttft_s is not None else m.slo_attainment,
        meets_slo=False,
        mean_queue_length=math.inf,
        mean_in_system=math.inf,
        steady=False,
        unbounded=reason,
        transient=m,
    )


def metrics(records: list[RunRecord], slo: Slo, gpus: int) -> ServeMetrics:
    """Summarise the run records of all replicas (or of one, standing for all: `gpus` counts it)."""
    cat = {
        k: np.concatenate([getattr(t, k)[t.served] for t in records])
        for k in (
            "arrival_s",
            "client_sent_s",
            "admitted_s",
            "first_token_s",
            "finish_s",
            "outputs",
        )
    }
    waits = {
        k: np.concatenate(
            [
                np.zeros(int(t.served.sum())) if getattr(t, k) is None else getattr(t, k)[t.served]
                for t in records
            ]
        )
        for k in ("first_wait_s", "finish_wait_s")
    }
    lat = records[0].latency_s if records else 0.0  # the front end's path to the client
    a, o = cat["client_sent_s"], cat["outputs"]
    f = cat["finish_s"] + lat + waits["finish_wait_s"]
    first = cat["first_token_s"] + lat + waits["first_wait_s"]
    ttft, e2e = first - a, f - a
    tpot = np.where(o > 1, (f - first) / np.maximum(o - 1, 1), 0.0)
    # TPOT's percentiles are over the requests that decode (more than one output token), as
    # `vllm bench serve` takes them (vllm/benchmarks/serve.py calculate_metrics: `tpots` gets a
    # request only if output_len > 1); a one-token request still meets any TPOT SLO (its 0 in
    # `ok`, as that script's goodput counts it).
    decoded = tpot[o > 1] if bool(np.any(o > 1)) else tpot
    window = float(f.max() - a.min()) if a.size else 0.0
    window = window if window > 0 else 1.0
    ok = np.ones(a.size, dtype=bool)
    if slo.ttft_s is not None:
        ok &= ttft <= slo.ttft_s
    if slo.tpot_s is not None:
        ok &= tpot <= slo.tpot_s
    ttft_p, tpot_p = percentiles(ttft), percentiles(decoded)
    q = np.percentile(ttft, slo.pct), np.percentile(decoded, slo.pct)
    meets = (slo.ttft_s is None or q[0] <= slo.ttft_s) and (
        slo.tpot_s is None or q[1] <= slo.tpot_s
    )
    spans = [t.makespan_s - float(np.nanmin(t.arrival_s)) for t in records]
    n_rep = len(records)
    a_eng = cat["arrival_s"]
    last = float(a_eng.max())
    queued = int(np.sum((a_eng <= last) & (cat["admitted_s"] > last)))

    def mean_of(attr: str) -> float:
        return sum(getattr(t, attr) / max(s, 1e-30) for t, s in zip(records, spans, strict=True))

    out_tokens = float(o.sum())
    return ServeMetrics(
        ttft_p,
        tpot_p,
        percentiles(
            np.concatenate([t.itl_s for t in records]),
            np.concatenate([t.itl_weight for t in records]),
        ),
        percentiles(e2e),
        percentiles(cat["admitted_s"] - a_eng),  # waiting at the engine, after the API server
        a.size / window,
        out_tokens / window,
        out_tokens / window / gpus,
        1.0 / tpot_p.mean if tpot_p.mean > 0 else 0.0,
        float(ok.sum()) / window,
        float(ok.mean()) if a.size else 0.0,
        bool(meets),
        mean_of("decoding_integral") / n_rep,
        mean_of("waiting_integral") / n_rep,
        sum(t.active_integral + t.waiting_integral for t in records) / window,
        sum(
            t.kv_block_integral / max(s, 1e-30) / t.budget_blocks
            for t, s in zip(records, spans, strict=True)
        )
        / n_rep,
        sum(t.busy_s / max(s, 1e-30) for t, s in zip(records, spans, strict=True)) / n_rep,
        sum(t.preemptions for t in records),
        queued,
        window,
        gpus,
        int(a.size),
        a.size / window,
        out_tokens / window,
        bool(window >= STEADY_E2ES * float(e2e.mean())) if a.size else False,
        prefix=prefix_report([t.prefix for t in records if t.prefix is not None], spans),
        slo_ttft_s=float(q[0]),
        slo_tpot_s=float(q[1]),
    )


# ---- bands under load (issue 35 item 2) ----------------------------------------------------
LOAD_BAND_METRICS = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99")


@dataclass(frozen=True)
class LoadBand:
    """A latency figure's band under load: the measured figure's 90% range as factors of the
    expected one, [low, high]; `high` None when the low-capacity edge is past saturation (the
    figure grows without bound: `reason` says why). `rates` are the offered rates the expected
    model was read at for the (high-capacity, low-capacity) edges; None for a closed loop,
    whose band is its time scale's (roofline.serving.loadbands.closed_loop_bands)."""

    low: float
    high: float | None
    rates: tuple[float, float] | None
    reason: str = ""


def _figure(m: ServeMetrics, name: str) -> float:
    """ttft_p99 -> m.ttft_s.p99."""
    head, _, tail = name.partition("_")
    return float(getattr(getattr(m, f"{head}_s"), tail))


def load_bands(
    expected: ServeMetrics,
    rate: float,
    at_rate: Callable[[float], ServeMetrics],
    throughput: tuple[float, float],
    own: dict[str, tuple[float, float]],
) -> dict[str, LoadBand]:
    """TTFT and TPOT bands under load (issue 35 item 2), the capacity band run through the
    queue. With the measured capacity in [expected · lo, expected · hi] (the throughput band,
    roofline/catalog/bands.py), a replica that serves k times the expected capacity sees the
    offered rate λ as the expected model sees λ / k (the rule of roofline.serving.confidence:
    the same requests re-timed), so a figure's edges are the expected figure at λ / hi and at
    λ / lo, each × the figure's own band edge on that side (`own`: its low and high factors,
    the per-request error the queue does not explain):

        low = f(λ / hi) / f(λ) × own_low,   high = f(λ / lo) / f(λ) × own_high.

    At λ / lo past the saturation rate (`at_rate` returns the metrics with `unbounded` set)
    TTFT grows without bound: high is None with the reason; TPOT keeps the figure at the
    batch cap. Each edge stays on its side of 1 (the band holds the expected figure).
    `at_rate(r)`: the expected steady-state metrics at offered rate r. Figures that are not
    finite at λ itself (the expected run past saturation) have no band here."""
    lo, hi = throughput
    if not (0 < lo <= hi) or expected.unbounded:
        return {}
    fast, slow = at_rate(rate / hi), at_rate(rate / lo)
    out = {}
    for name in LOAD_BAND_METRICS:
        f = _figure(expected, name)
        if not (math.isfinite(f) and f > 0):
            continue
        o_lo, o_hi = own.get(name, (1.0, 1.0))
        f_fast, f_slow = _figure(fast, name), _figure(slow, name)
        low = min(f_fast / f * o_lo, 1.0)
        high = max(f_slow / f * o_hi, 1.0) if math.isfinite(f_slow) else None
        reason = (
            f"at the throughput band's low edge ({lo:.2f} x the expected capacity) {rate:.3g}"
            f" req/s loads the expected model as {rate / lo:.3g} req/s: {slow.unbounded}"
            if high is None
            else ""
        )
        out[name] = LoadBand(low, high, (rate / hi, rate / lo), reason)
    # the throughput at the offered rate, re-timed alike: a replica k times as fast serves k x
    # the expected model's steady throughput at λ / k, λ itself below saturation, so at a rate
    # both edges' replicas carry the band is nil (a fixed fleet at a fixed rate serves the
    # rate), and only past a replica's capacity does its throughput (and cost a token) move
    t = expected.requests_per_s
    if t > 0 and math.isfinite(t):
        low_t = min(lo * slow.requests_per_s / t, 1.0)
        high_t = max(hi * fast.requests_per_s / t, 1.0)
        low_t, high_t = (1.0 if abs(x - 1.0) < 1e-9 else x for x in (low_t, high_t))  # k·λ/k
        rates = (rate / hi, rate / lo)
        out["throughput"] = LoadBand(low_t, high_t, rates)
        out["cost_per_million_output_tokens"] = LoadBand(1.0 / high_t, 1.0 / low_t, rates)
    return out

"""A day's traffic on an autoscaled deployment: replicas per interval of a rate curve, the
replicas ready after a scale-up delay, GPU-hours, cost and SLO attainment over the day.

Transitions are simulated, not requests: a replica's capacity (requests/s within the SLOs, or
its saturation rate without SLOs) comes from the steady-state model once per deployment
(roofline.serving.search, as `size` computes it), and each interval is judged against it.

- Replicas ordered in interval i: n_i = max(1, ceil(rate_i / (capacity × (1 − headroom)))), the
  rule `size` sizes a constant rate with (roofline.serving.size; headroom is the share of a
  replica's capacity left unused).
- The autoscaler is reactive (a Kubernetes HPA or KServe/Knative on the observed rate): it
  orders n_i at the start of interval i; a new replica serves once it has loaded its weights and
  started the engine, `delay_s` later; a replica removed stops at once. So the replicas ready at
  time t are the fewest ordered during [t − delay, t] (the curve repeats: the day before ends
  as this one does). Replicas are paid from the moment they are ordered (loading included).
- An instant is violated when the rate exceeds the ready replicas' capacity (ready × capacity,
  the headroom spent). SLO attainment = the share of the day's requests that arrive at instants
  that are not violated (requests weighted by the rate, each instant's rate its interval's).
- The scale-up delay, derived: weight bytes ÷ load bandwidth + engine start (the engine's
  `load_gb_per_s` and `start_s` in hardware/engines.yaml, each with its source).
- Static peak provisioning: max_i n_i replicas all day. Per day: the curve's span scaled to
  86,400 s (a curve of 24 hours is a day as it is).
- p99 latency per interval: a table of p99 TTFT and TPOT against the rate per replica (runs of
  the serving simulator at a few loads, once per deployment), interpolated at each instant's
  rate per ready replica, the worst of the interval's instants within capacity (above the
  table's last load, the capacity, an instant counts in violated_s instead; NaN if all do).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DAY_S = 86_400.0
MIN_REPLICAS = 1  # the autoscaler keeps one replica warm (a cold first request waits the delay)
LATENCY_LOADS = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)  # shares of the capacity the p99 table samples


@dataclass(frozen=True)
class DayRates:
    """A rate curve: interval starts and lengths (s, from the curve's start) and the mean
    request rate (requests/s) in each."""

    start_s: np.ndarray
    duration_s: np.ndarray
    rate: np.ndarray
    description: str  # what was read and how (echoed)

    @property
    def span_s(self) -> float:
        return float(self.duration_s.sum())

    @property
    def mean_rate(self) -> float:
        """Requests over the span / the span."""
        return float((self.rate * self.duration_s).sum() / self.span_s)


@dataclass(frozen=True)
class LatencyTable:
    """p99 TTFT and TPOT (s) at rates per replica (requests/s, ascending)."""

    rate_per_replica: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_p99_s: np.ndarray


@dataclass(frozen=True)
class Day:
    """The day of one deployment under a curve (module docstring)."""

    capacity_per_replica: float  # requests/s a replica serves within the SLOs
    headroom: float
    delay_s: float
    ordered: np.ndarray  # replicas ordered (and paid) per interval
    ready_min: np.ndarray  # fewest replicas ready during each interval
    violated_s: np.ndarray  # seconds of each interval whose rate exceeds the ready capacity
    ttft_p99_s: np.ndarray  # worst p99 TTFT in the interval within capacity (NaN: none, or no
    # table); the time above capacity is violated_s
    tpot_p99_s: np.ndarray
    replica_hours_per_day: float
    static_replicas: int
    static_replica_hours_per_day: float
    unrounded_replica_hours_per_day: float  # Σ rate × duration / capacity: no rounding,
    unrounded_static_replica_hours_per_day: float  # headroom or delay (and peak / capacity)
    slo_attainment: float  # share of the day's requests arriving at non-violated instants
    requests_per_day: float

    @property
    def violated_intervals(self) -> int:
        return int(np.count_nonzero(self.violated_s > 0))


def scale_up_delay_s(weight_bytes: float, load_bytes_per_s: float, start_s: float) -> float:
    """Seconds from ordering a replica to its first request: its weights read at the load
    bandwidth plus the engine's start (imports, torch.compile, CUDA graph capture, KV cache
    allocation); figures in hardware/engines.yaml with their source."""
    return float(weight_bytes) / float(load_bytes_per_s) + float(start_s)


def replicas_needed(rate: np.ndarray, capacity: float, headroom: float) -> np.ndarray:
    """max(MIN_REPLICAS, ceil(rate / (capacity × (1 − headroom)))), as size sizes a rate (the
    1e-12 keeps a rate of exactly k capacities at k replicas through rounding)."""
    n = np.ceil(np.asarray(rate, dtype=float) / (capacity * (1.0 - headroom)) * (1 - 1e-12))
    return np.maximum(n, MIN_REPLICAS).astype(np.int64)


def _pieces(c: DayRates, delay_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The day cut where the ready count can change (interval starts and starts + delay): each
    piece's start, length, interval index, and the index range of the intervals its trailing
    window [t − delay, t] covers, on the curve repeated once before itself."""
    span = c.span_s
    d = min(delay_s, span)
    cuts = np.unique(np.concatenate([c.start_s, np.mod(c.start_s + d, span), [0.0]]))
    cuts = cuts[(cuts >= 0) & (cuts < span)]
    length = np.diff(np.append(cuts, span))
    keep = length > 1e-9 * span
    cuts, length = cuts[keep], length[keep]
    mid = cuts + length / 2
    ext = np.concatenate([c.start_s - span, c.start_s])
    hi = np.searchsorted(ext, mid, side="right") - 1
    lo = np.searchsorted(ext, mid - d, side="right") - 1
    return cuts, length, hi - c.start_s.size, np.stack([lo, hi])


def ready_replicas(c: DayRates, ordered: np.ndarray, delay_s: float):
    """(piece starts, lengths, interval of each piece, replicas ready in each piece): the fewest
    replicas ordered in the window [t − delay, t] (module docstring)."""
    start, length, interval, (lo, hi) = _pieces(c, delay_s)
    ext = np.concatenate([ordered, ordered, [0]])  # the sentinel keeps reduceat's indices legal
    idx = np.empty(2 * lo.size, dtype=np.int64)
    idx[0::2], idx[1::2] = lo, hi + 1
    ready = np.minimum.reduceat(ext, idx)[0::2]
    return start, length, interval, ready


def plan_day(
    c: DayRates,
    capacity: float,
    headroom: float,
    delay_s: float,
    latency: LatencyTable | None = None,
    max_replicas: int | None = None,
    ordered: np.ndarray | None = None,
) -> Day:
    """The deployment's day under the curve (module docstring); `max_replicas`: the autoscaler's
    ceiling (a fleet of at most that many; an interval that needs more is short all through);
    `ordered`: the replicas another capacity ordered per interval, judged against this one (a
    workload class in a pool sized for all classes, serving.mixday)."""
    if not (math.isfinite(capacity) and capacity > 0):
        raise ValueError("capacity must be positive")
    if ordered is None:
        ordered = replicas_needed(c.rate, capacity, headroom)
    if max_replicas is not None:
        ordered = np.minimum(ordered, max_replicas)
    _, length, interval, ready = ready_replicas(c, ordered, delay_s)
    rate = c.rate[interval]
    bad = rate > ready * capacity * (1 + 1e-12)
    n_int = c.rate.size
    violated = np.bincount(interval, weights=np.where(bad, length, 0.0), minlength=n_int)
    ready_min = np.full(n_int, np.iinfo(np.int64).max)
    np.minimum.at(ready_min, interval, ready)
    ttft = np.full(n_int, np.nan)
    tpot = np.full(n_int, np.nan)
    if latency is not None:
        load = rate / np.maximum(ready, 1)
        over = load > latency.rate_per_replica[-1] * (1 + 1e-9)
        for table, out in ((latency.ttft_p99_s, ttft), (latency.tpot_p99_s, tpot)):
            y = np.where(over, -np.inf, np.interp(load, latency.rate_per_replica, table))
            worst = np.full(n_int, -np.inf)
            np.maximum.at(worst, interval, y)
            out[:] = np.where(np.isfinite(worst), worst, np.nan)
    requests = rate * length
    total = float(requests.sum())
    attain = min(1.0, max(0.0, 1.0 - float(requests[bad].sum()) / total)) if total > 0 else 1.0
    per_day = DAY_S / c.span_s
    hours = float((ordered * c.duration_s).sum()) / 3600.0 * per_day
    static = int(ordered.max())
    unrounded = float((c.rate * c.duration_s).sum()) / capacity / 3600.0 * per_day
    return Day(
        capacity,
        headroom,
        delay_s,
        ordered,
        ready_min,
        violated,
        ttft,
        tpot,
        hours,
        static,
        static * DAY_S / 3600.0,
        unrounded,
        float(c.rate.max()) / capacity * DAY_S / 3600.0,
        attain,
        total * per_day,
    )


def latency_loads(capacity: float) -> np.ndarray:
    """The rates per replica the p99 table samples: LATENCY_LOADS × the capacity."""
    return np.array(LATENCY_LOADS) * capacity

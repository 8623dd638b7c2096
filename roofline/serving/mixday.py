"""A workload file's classes across a day's rate curve (size --workload --traffic-curve, check
with workload and traffic_curve): the curve gives the arrivals/s over all classes in each
interval, each class its share of them (its rate in the file over the file's total, as
workloadfile.WorkloadMix.class_rates scales a class with the total).

- A replica's capacity for the mix: the highest arrivals/s over the classes, at their shares, at
  which one replica's run (serve.serve, the one evaluation of a fleet, expected step times)
  meets every class's SLOs; found by search.highest_ok (bisection to 3%) below the replica's
  saturation for the mix (mixcapacity.mix_capacity, converted from sequences to arrivals; at
  and past it no rate holds, as serve reports no steady state there).
- A class's capacity: the highest arrivals/s of the same mix at which that class meets its own
  SLOs (found on the same runs where the searches visit the same rates). The mix's capacity is
  at most each class's (every class holds there), so capacity = min over the classes.
- The day (serving.day.plan_day, the single-shape day's rule): replicas ordered per interval
  from the mix's capacity; the overall SLO attainment as there. A class's attainment counts its
  own requests (its share of every instant's) arriving while the mix's rate is within the ready
  replicas × the class's capacity: a class with a loose SLO keeps its attainment through a
  rise that breaks a tight one's.
- p99 per interval (serving.day's rule): a table of one replica's p99 TTFT and TPOT at
  LATENCY_LOADS of a capacity (runs of the mix, expected step times), the pool's over every
  request at the mix's capacity, each class's over its own requests at its own capacity,
  interpolated at each instant's arrivals/s per ready replica (mix_latency).
- At a confidence (serving.confidence, the single-shape day's rule, checks.day): a replica's
  capacity is the throughput band's low edge × the highest rate at which the classes' SLOs ÷
  the light-load TTFT/TPOT bands' high edges (every class's own and the command's) hold, at
  most the expected capacity (the real replica's queue at its rate ÷ low); per class alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.serving.day import Day, DayRates, LatencyTable, latency_loads, plan_day
from roofline.serving.metrics import Slo
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import highest_ok
from roofline.serving.serve import Replica, serve
from roofline.serving.workload import Workload, with_rate

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges


@dataclass(frozen=True)
class MixDayCapacity:
    """One replica's capacity for a mix, arrivals/s over all classes."""

    overall: float  # every class within its SLOs
    per_class: tuple[float, ...]  # class k within its own SLOs
    shares: tuple[float, ...]  # each class's share of the arrivals
    output_tokens_per_arrival: tuple[float, ...]  # each class's, from the run at `overall`
    saturation: float  # the mix's saturation, arrivals/s per replica (the search's ceiling)
    level: str = "expected"  # the confidence the capacities are at (serving.confidence)
    expected: MixDayCapacity | None = None  # at a confidence: the expected capacities
    probe: Any = field(default=None, compare=False, repr=False)  # the saturation probe's


@dataclass(frozen=True)
class ClassDay:
    """One class across the day in the pool sized for the mix."""

    name: str
    share: float
    capacity_per_replica: float  # arrivals/s of the mix at which this class holds its SLOs
    peak_arrivals_per_s: float
    requests_per_day: float  # the class's arrivals per day
    output_tokens_per_day: float
    slo_attainment: float
    ttft_p99_s: np.ndarray | None = None  # per interval, its own requests (NaN: none in capacity)
    tpot_p99_s: np.ndarray | None = None


@dataclass(frozen=True)
class MixLatency:
    """p99 tables of one replica against arrivals/s per replica: the pool's, each class's."""

    pool: LatencyTable
    per_class: tuple[LatencyTable, ...]


def shares(w: Workload) -> tuple[float, ...]:
    """Each class's share of the mix's arrivals."""
    rates = w.mix.class_rates()
    total = sum(rates)
    return tuple(r / total for r in rates)


def edged(w: Workload, e: Edges) -> Workload:
    """`w` with every class's own SLOs ÷ its light-load band's high edge (Edges.slo on each),
    redrawn at any rate with them (the command's SLO the caller passes as e.slo(slo))."""
    from roofline.serving.mix import mix_workload

    def one(c):
        s = e.slo(Slo(c.slo_ttft_s, c.slo_tpot_s, 99.0))
        return replace(c, slo_ttft_s=s.ttft_s, slo_tpot_s=s.tpot_s)

    mix = replace(w.mix, classes=tuple(one(c) for c in w.mix.classes))
    n = w.mix_requests
    return replace(w, mix=mix, mix_retime=lambda r, s: mix_workload(mix, n, s, r))


def mix_day_capacity(
    rep: Replica,
    w: Workload,
    slo: Slo,
    seed: int = 0,
    router: str = DEFAULT_ROUTER,
    edges: Edges | None = None,
) -> MixDayCapacity:
    """The replica's capacity for `w`'s classes, overall and per class, at `edges`' confidence
    (None: expected; module docstring): each by confidence.capacity_at, the rule size and the
    single-shape day apply, its search under the edged SLOs asked only up to the expected
    capacity."""
    from roofline.serving.confidence import capacity_at

    exp_search = _Search(rep, w, slo, seed, router)
    exp = exp_search.capacities()
    if edges is None or edges.neutral or exp.overall <= 0:
        return exp
    own = _Search(rep, edged(w, edges), edges.slo(slo), seed, router, exp.probe)
    overall = capacity_at(edges, exp.overall, partial(own.highest, None))
    per = tuple(
        max(capacity_at(edges, a, partial(own.highest, k)), overall)
        for k, a in enumerate(exp.per_class)
    )
    return replace(exp, overall=overall, per_class=per, level=edges.level, expected=exp)


class _Search:
    """The mix's capacities under `slo` and its classes' own (module docstring): runs of one
    replica (expected step times) at the rates a search visits, each rate run once."""

    def __init__(self, rep: Replica, w: Workload, slo: Slo, seed: int, router: str,
                 probe=None) -> None:  # fmt: skip
        self.rep, self.w, self.slo, self.seed, self.router = rep, w, slo, seed, router
        self.cap = probe if probe is not None else mix_capacity(rep, w)
        self.sat = self.cap.expected.requests_per_s * w.mix_rate / max(float(w.rate or 1.0), 1e-30)
        self.runs: dict[float, tuple] = {}

    def classes_at(self, rate: float) -> tuple:
        if rate not in self.runs:
            res = serve(self.rep, with_rate(self.w, rate, self.seed), self.slo, 1,
                        capacity=self.cap, router=self.router, expected_only=True)  # fmt: skip
            self.runs[rate] = res.expected.per_class
        return self.runs[rate]

    def highest(self, k: int | None, top: float | None = None) -> float:
        """The highest arrivals/s, at most `top` (default the saturation), at which every class
        (k None) or class k meets its SLOs (search.highest_ok); 0 when they miss at the
        saturation's 1/64 (light load)."""

        def holds(rate: float) -> bool:
            if rate >= self.sat * (1 - 1e-9):  # at saturation the queue has no steady state
                return False
            per = self.classes_at(rate)
            return all(c.meets_slo for c in per) if k is None else per[k].meets_slo

        # below the saturation's 1/64 (the expected search's light load), as search.highest_ok
        return highest_ok(holds, min(top or self.sat, self.sat), floor=self.sat / 64.0)

    def capacities(self) -> MixDayCapacity:
        """The expected capacities, overall and per class."""
        overall = self.highest(None)
        per_class = tuple(max(self.highest(k), overall) for k in range(len(self.w.mix.classes)))
        tokens = tuple(
            c.output_tokens_per_s / c.arrivals_per_s if c.arrivals_per_s > 0 else 0.0
            for c in self.classes_at(overall if overall > 0 else self.sat / 64.0)
        )
        return MixDayCapacity(overall, per_class, shares(self.w), tokens, self.sat, probe=self.cap)


def mix_latency(
    rep: Replica, w: Workload, slo: Slo, cap: MixDayCapacity, seed: int = 0,
    router: str = DEFAULT_ROUTER,
) -> MixLatency:  # fmt: skip
    """The p99 tables the day reads per interval (module docstring): runs of one replica at
    LATENCY_LOADS × the mix's capacity (the pool's figures) and × each class's (its own), each
    rate run once; a table made non-decreasing in the load, as serving.daysize's."""
    names = [c.name for c in w.mix.classes]
    caps = (cap.overall, *cap.per_class)
    runs = {}
    for x in sorted({float(r) for c in caps for r in latency_loads(c)}):
        res = serve(rep, with_rate(w, x, seed), slo, 1, capacity=cap.probe or mix_capacity(rep, w),
                    router=router, expected_only=True)  # fmt: skip
        runs[x] = res.expected

    def table(capacity: float, k: int | None) -> LatencyTable:
        loads = latency_loads(capacity)
        ttft, tpot = [], []
        for x in loads:
            m: Any = runs[float(x)]
            if k is not None:
                m = next((c for c in m.per_class if c.name == names[k]), None)
            ttft.append(m.ttft_s.p99 if m is not None else np.nan)
            tpot.append(m.tpot_s.p99 if m is not None else np.nan)
        return LatencyTable(loads, np.maximum.accumulate(ttft), np.maximum.accumulate(tpot))

    return MixLatency(
        table(cap.overall, None), tuple(table(c, k) for k, c in enumerate(cap.per_class))
    )


def plan_mix_day(
    c: DayRates,
    cap: MixDayCapacity,
    names: list[str],
    headroom: float,
    delay_s: float,
    max_replicas: int | None = None,
    latency: MixLatency | None = None,
) -> tuple[Day, list[ClassDay]]:
    """The pool's day under the curve (plan_day on the mix's capacity) and each class's; with
    `latency`, the p99 of each interval, the pool's and each class's (module docstring)."""
    pool = latency.pool if latency is not None else None
    day = plan_day(c, cap.overall, headroom, delay_s, pool, max_replicas=max_replicas)
    out = []
    for k, name in enumerate(names):
        table = latency.per_class[k] if latency is not None else None
        own = plan_day(c, cap.per_class[k], headroom, delay_s, table, ordered=day.ordered)
        requests = cap.shares[k] * day.requests_per_day
        out.append(
            ClassDay(
                name,
                cap.shares[k],
                cap.per_class[k],
                cap.shares[k] * float(np.max(c.rate)),
                requests,
                requests * cap.output_tokens_per_arrival[k],
                own.slo_attainment,
                own.ttft_p99_s if table is not None else None,
                own.tpot_p99_s if table is not None else None,
            )
        )
    return day, out

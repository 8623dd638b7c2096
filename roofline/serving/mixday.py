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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.serving.day import Day, DayRates, plan_day
from roofline.serving.metrics import Slo
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import highest_ok
from roofline.serving.serve import Replica, serve
from roofline.serving.workload import Workload, with_rate


@dataclass(frozen=True)
class MixDayCapacity:
    """One replica's capacity for a mix, arrivals/s over all classes."""

    overall: float  # every class within its SLOs
    per_class: tuple[float, ...]  # class k within its own SLOs
    shares: tuple[float, ...]  # each class's share of the arrivals
    output_tokens_per_arrival: tuple[float, ...]  # each class's, from the run at `overall`
    saturation: float  # the mix's saturation, arrivals/s per replica (the search's ceiling)


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


def shares(w: Workload) -> tuple[float, ...]:
    """Each class's share of the mix's arrivals."""
    rates = w.mix.class_rates()
    total = sum(rates)
    return tuple(r / total for r in rates)


def mix_day_capacity(
    rep: Replica, w: Workload, slo: Slo, seed: int = 0, router: str = DEFAULT_ROUTER
) -> MixDayCapacity:
    """The replica's capacity for `w`'s classes, overall and per class (module docstring)."""
    cap = mix_capacity(rep, w)
    sat = cap.expected.requests_per_s * w.mix_rate / max(float(w.rate or 1.0), 1e-30)
    runs: dict[float, tuple] = {}

    def classes_at(rate: float) -> tuple:
        if rate not in runs:
            res = serve(rep, with_rate(w, rate, seed), slo, 1, capacity=cap, router=router,
                        expected_only=True)  # fmt: skip
            runs[rate] = res.expected.per_class
        return runs[rate]

    def ok(k: int | None):
        def holds(rate: float) -> bool:
            if rate >= sat * (1 - 1e-9):  # at saturation the queue has no steady state
                return False
            per = classes_at(rate)
            return all(c.meets_slo for c in per) if k is None else per[k].meets_slo

        return holds

    overall = highest_ok(ok(None), sat)
    per_class = tuple(max(highest_ok(ok(k), sat), overall) for k in range(len(w.mix.classes)))
    tokens = tuple(
        c.output_tokens_per_s / c.arrivals_per_s if c.arrivals_per_s > 0 else 0.0
        for c in classes_at(overall if overall > 0 else sat / 64.0)
    )
    return MixDayCapacity(overall, per_class, shares(w), tokens, sat)


def plan_mix_day(
    c: DayRates,
    cap: MixDayCapacity,
    names: list[str],
    headroom: float,
    delay_s: float,
    max_replicas: int | None = None,
) -> tuple[Day, list[ClassDay]]:
    """The pool's day under the curve (plan_day on the mix's capacity) and each class's."""
    day = plan_day(c, cap.overall, headroom, delay_s, max_replicas=max_replicas)
    out = []
    for k, name in enumerate(names):
        own = plan_day(c, cap.per_class[k], headroom, delay_s, ordered=day.ordered)
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
            )
        )
    return day, out


__all__ = ["ClassDay", "MixDayCapacity", "mix_day_capacity", "plan_mix_day", "shares"]

"""Sizing a workload file's pool (roofline.serving.mix): the fewest replicas of one replica whose
run (serve.serve, the one evaluation of a fleet) meets every class's SLOs, for the classes
together in one pool and for each class alone in its own (apart)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline.domain.errors import InputError
from roofline.serving.metrics import Slo
from roofline.serving.mix import mix_workload
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.serve import Replica, ServeResult, serve, steady_capacity
from roofline.serving.workload import Workload

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges

MAX_REPLICAS = 512


@dataclass(frozen=True)
class Sized:
    replicas: int
    gpus: int
    result: ServeResult  # the run at that count, its expected half (serve's expected_only)


def replicas_needed(
    rep: Replica, w: Workload, slo: Slo, router: str = "least-loaded", at_least: int = 1
) -> Sized:
    """The fewest replicas, `at_least` or more (doubling from it, then bisection), whose
    expected run meets every class's SLOs at the workload's rate. Only the expected half is run
    (serve's expected_only): the verdict and size's row read it alone."""
    cap = mix_capacity(rep, w)  # a probe that credits shared KV when the mix shares it

    def run(n: int) -> ServeResult | None:
        """serve's run at n replicas; None when its verdict is known without it (past_capacity)."""
        if past_capacity(w, n, cap):
            return None
        return serve(rep, w, slo, n, capacity=cap, router=router, expected_only=True)

    lo, hi, best = at_least - 1, at_least, None
    while True:
        res = run(hi)
        if res is not None and res.expected.meets_slo:
            best = res
            break
        lo, hi = hi, hi * 2
        if hi > MAX_REPLICAS:
            raise InputError(f"no count of replicas up to {MAX_REPLICAS} meets the classes' SLOs")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        res = run(mid)
        if res is not None and res.expected.meets_slo:
            hi, best = mid, res
        else:
            lo = mid
    assert best is not None, "the doubling ends on a count that meets the SLOs"
    return Sized(hi, hi * rep.gpus, best)


def past_capacity(w: Workload, replicas: int, capacity) -> bool:
    """Whether serve's expected verdict on `replicas` replicas is a miss before any run:
    stationary arrivals offered past `capacity`'s expected saturation per replica have no
    steady state (serve.steady_state, metrics.past_saturation: no SLO met): serve's own
    offered rate and capacity (Workload.offered_to, serve.steady_capacity)."""
    cap, per = steady_capacity(w, capacity), w.offered_to(replicas, replicas)
    if cap is None or per is None or not w.stationary:
        return False
    return not cap.stable(per / replicas, False)


def replicas_at_edges(
    rep: Replica, w: Workload, slo: Slo, e: Edges, seed: int = 0, router: str = "least-loaded",
    expected: Sized | None = None,
) -> Sized:  # fmt: skip
    """The pool sized at --confidence's band edges (serving.confidence, as size sizes one shape):
    the fewest replicas meeting, at the arrivals ÷ the throughput band's low edge
    (confidence.slowed), every SLO (the classes' own and the command's) ÷ its light-load band's
    high edge (mixday.edged); never fewer than `expected`'s. The figures are the run at the
    arrivals given on that many replicas."""
    from roofline.serving.confidence import slowed
    from roofline.serving.mixday import edged

    n = 1 if expected is None else expected.replicas  # the edges need at least as many
    n = replicas_needed(rep, slowed(edged(w, e), e, seed), e.slo(slo), router, n).replicas
    return replicas_needed(rep, w, slo, router, n)  # the offered rate's figures at that count


def size_apart(
    rep: Replica, w: Workload, slo: Slo, seed: int = 0, router: str = "least-loaded",
    edges: Edges | None = None,
) -> list[Sized]:  # fmt: skip
    """Each class alone in its own pool, at its own rate in `w` (its share of w's arrivals/s,
    which a --rate or a curve's peak may have scaled from the file's), sized the same way (at
    `edges`' confidence when given)."""
    mix = w.mix
    rates = mix.class_rates(w.mix_rate)
    out = []
    for k in range(len(mix.classes)):
        alone = mix_workload(mix.only(k), w.mix_requests, seed, rates[k])
        n = replicas_needed(rep, alone, slo, router)
        if edges is not None and not edges.neutral:
            n = replicas_at_edges(rep, alone, slo, edges, seed, router, n)
        out.append(n)
    return out

"""Sizing a workload file's pool (roofline.serving.mix): the fewest replicas of one replica whose
run (serve.serve, the one evaluation of a fleet) meets every class's SLOs, for the classes
together in one pool and for each class alone in its own (apart)."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.domain.errors import InputError
from roofline.serving.metrics import Slo
from roofline.serving.mix import mix_workload
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.serve import Replica, ServeResult, serve
from roofline.serving.workload import Workload

MAX_REPLICAS = 512


@dataclass(frozen=True)
class Sized:
    replicas: int
    gpus: int
    result: ServeResult  # the run at that count


def replicas_needed(rep: Replica, w: Workload, slo: Slo, router: str = "least-loaded") -> Sized:
    """The fewest replicas (doubling, then bisection) whose expected run meets every class's
    SLOs at the workload's rate."""
    cap = mix_capacity(rep, w)  # a probe that credits shared KV when the mix shares it

    def run(n: int) -> ServeResult:
        return serve(rep, w, slo, n, capacity=cap, router=router)

    lo, hi, best = 0, 1, None
    while True:
        res = run(hi)
        if res.expected.meets_slo:
            best = res
            break
        lo, hi = hi, hi * 2
        if hi > MAX_REPLICAS:
            raise InputError(f"no count of replicas up to {MAX_REPLICAS} meets the classes' SLOs")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        res = run(mid)
        if res.expected.meets_slo:
            hi, best = mid, res
        else:
            lo = mid
    return Sized(hi, hi * rep.gpus, best)


def size_apart(
    rep: Replica, w: Workload, slo: Slo, seed: int = 0, router: str = "least-loaded"
) -> list[Sized]:
    """Each class alone in its own pool, at its own rate in `w` (its share of w's arrivals/s,
    which a --rate or a curve's peak may have scaled from the file's), sized the same way."""
    mix = w.mix
    rates = mix.class_rates(w.mix_rate)
    return [
        replicas_needed(rep, mix_workload(mix.only(k), w.mix_requests, seed, rates[k]), slo, router)
        for k in range(len(mix.classes))
    ]

"""serve's rate loop: one deployment under each of several request rates, every rate against the
same replica capacity (roofline.serving.search.replica_capacity: saturation and the compute and
bandwidth bounds, which depend on the length distribution, not on the rate)."""

from __future__ import annotations

from roofline.serving.metrics import Slo
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import Capacity
from roofline.serving.serve import Replica, ServeResult, serve
from roofline.serving.workload import Workload, with_rate


def serve_rates(
    rep: Replica,
    base: Workload,
    rates: list[float | None],
    slo: Slo,
    replicas: int,
    seed: int = 0,
    confirm: bool = False,
    router: str = DEFAULT_ROUTER,
) -> tuple[Capacity, list[tuple[float | None, ServeResult]]]:
    """The replica's capacity (its saturation confirmed by a bounded queue when `confirm`) and,
    for each rate, (rate, the serve result on `replicas` copies). `base` is the workload at
    rates[0]; a later rate re-times the same requests (workload.with_rate, one seed), so rates
    only stretch or compress the arrival times. A rate None (closed loop, or an arrival log)
    reports the workload's own rate."""
    cap = mix_capacity(rep, base, confirm=confirm)  # search.replica_capacity but for shared KV
    if confirm:  # reported beside the points anyway: probed first, each point's utilisation has it
        cap.of(True)
    out: list[tuple[float | None, ServeResult]] = []
    for r in rates:
        w = base if r is None or r == rates[0] else with_rate(base, r, seed)
        out.append(
            (w.rate if r is None else r, serve(rep, w, slo, replicas, capacity=cap, router=router))
        )
    return cap, out

"""serve's TTFT and TPOT bands under load (issue 35 item 2): the throughput band run through the
queue at each rate point (roofline.serving.metrics.load_bands), the expected model at a band
edge's rate read from the rate points already simulated where it can be."""

from __future__ import annotations

import math
from dataclasses import astuple, replace

from roofline.catalog.bands import band
from roofline.serving.metrics import (
    LOAD_BAND_METRICS,
    LoadBand,
    Percentiles,
    ServeMetrics,
    Slo,
    load_bands,
)
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.serve import Capacity, Replica, ServeResult, evaluate
from roofline.serving.workload import Workload, with_rate


def serve_load_bands(
    rep: Replica,
    base: Workload,
    results: list[tuple[float | None, ServeResult]],
    slo: Slo,
    capacity: Capacity | None,
    family: str,
    engine: str | None,
    *,
    router: str = DEFAULT_ROUTER,
    seed: int = 0,
) -> list[dict[str, LoadBand]]:
    """Each rate point's TTFT and TPOT bands under load (metrics.load_bands), the throughput
    band of the hardware `family` under the engine profile `engine` run through the queue, ×
    the light-load TTFT/TPOT band (catalog.bands.LIGHT; the figure's own in a file without).
    The expected model at a band edge's rate reuses the rate points already simulated: the
    same rate, or linear interpolation between the two simulated rates around it while both
    are below saturation; another rate is simulated (expected step times only). None for a
    closed loop, a replayed log or a run without a steady state (capacity None): no bands."""
    pid = engine
    thr = band("throughput", family, pid)
    no_steady = (  # serve's window figures: a shared-KV mix under a probe that ignores it
        base.mix is not None
        and base.prefix is not None
        and not getattr(capacity, "credits_sharing", False)
    )
    if thr is None or capacity is None or not base.stationary or no_steady:
        return [{} for _ in results]
    own = {}  # the per-request error the queue does not explain: the light-load band's (the
    for name in LOAD_BAND_METRICS:  # figure's own, near capacity, is the queue's: issue 35)
        b = band(f"{name.split('_')[0]}_light", family, pid) or band(name, family, pid)
        own[name] = (b.low, b.high) if b is not None else (1.0, 1.0)
    n = results[0][1].replicas
    known = sorted(
        (r, res.expected) for r, res in results if r is not None and not res.expected.unbounded
    )
    made: dict[float, ServeMetrics] = {}

    def at_rate(r: float) -> ServeMetrics:
        for x, m in known:
            if math.isclose(x, r, rel_tol=1e-9):
                return m
        below = [(x, m) for x, m in known if x < r]
        above = [(x, m) for x, m in known if x > r]
        if below and above and capacity.stable(r / n, False):
            return _interpolate(below[-1], above[0], r)
        if r not in made:
            w = with_rate(base, r, seed)
            made[r] = evaluate(rep, w, slo, n, False, capacity, router, False)
        return made[r]

    return [
        {} if r is None else load_bands(res.expected, r, at_rate, (thr.low, thr.high), own)
        for r, res in results
    ]


def _interpolate(a: tuple[float, ServeMetrics], b: tuple[float, ServeMetrics], r: float):
    """The TTFT and TPOT percentiles at rate r, linear between two simulated rates."""
    (xa, ma), (xb, mb) = a, b
    t = (r - xa) / (xb - xa)

    def mid(pa: Percentiles, pb: Percentiles) -> Percentiles:
        return Percentiles(
            *(u + t * (v - u) for u, v in zip(astuple(pa), astuple(pb), strict=True))
        )

    return replace(ma, ttft_s=mid(ma.ttft_s, mb.ttft_s), tpot_s=mid(ma.tpot_s, mb.tpot_s))


__all__ = ["serve_load_bands"]

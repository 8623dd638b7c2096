"""serve's TTFT and TPOT bands under load (issue 35 item 2): the throughput band run through the
queue at each rate point (roofline.serving.metrics.load_bands), the expected model at a band
edge's rate read from the rate points already simulated where it can be."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import astuple, replace
from typing import TYPE_CHECKING

from roofline.catalog.bands import band, closed_loop_margin
from roofline.serving.metrics import (
    LOAD_BAND_METRICS,
    LoadBand,
    Percentiles,
    ServeMetrics,
    Slo,
    load_bands,
)
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.serve import Capacity, Replica, ServeResult, evaluate, steady_capacity
from roofline.serving.workload import Workload, with_rate

if TYPE_CHECKING:
    from roofline.domain.hardware import Accelerator
    from roofline.engines.engine import Engine


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
    are below saturation; another rate is simulated (expected step times only). A closed loop
    (or a burst) has no rate to scale: its time scale's bands (closed_loop_bands). None for a
    replayed log or a run without a steady state (capacity None): no bands."""
    pid = engine
    thr = band("throughput", family, pid)
    if thr is not None and base.concurrency is not None and base.rate is None:
        closed = closed_loop_bands(family, pid)  # a closed loop, or a burst: no rate to scale
        return [closed if res.expected.requests else {} for _, res in results]
    capacity = steady_capacity(base, capacity)  # None: serve's window figures, no steady state
    if thr is None or capacity is None or not base.stationary:
        return [{} for _ in results]
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
        {} if r is None else rate_bands(res.expected, r, at_rate, family, pid) for r, res in results
    ]


def rate_bands(
    expected: ServeMetrics,
    rate: float,
    at_rate: Callable[[float], ServeMetrics],
    family: str,
    engine: str | None,
) -> dict[str, LoadBand]:
    """metrics.load_bands at an offered `rate` with the bands of the hardware `family` under
    the engine profile `engine`: the throughput band, and as each figure's own the light-load
    band (the per-request error the queue does not explain; the figure's own band, near
    capacity, is the queue's: issue 35), else the figure's. `at_rate(r)`: the expected
    steady-state metrics of the same fleet at offered rate r. Empty without a throughput
    band."""
    thr = band("throughput", family, engine)
    if thr is None:
        return {}
    own = {}
    for name in LOAD_BAND_METRICS:
        b = band(f"{name.split('_')[0]}_light", family, engine) or band(name, family, engine)
        own[name] = (b.low, b.high) if b is not None else (1.0, 1.0)
    return load_bands(expected, rate, at_rate, (thr.low, thr.high), own)


def fleet_load_bands(
    rep: Replica, w: Workload, res: ServeResult, slo: Slo, capacity: Capacity,
    hw: Accelerator, eng: Engine,
    router: str, seed: int,
) -> dict[str, LoadBand]:  # fmt: skip
    """The bands under load of one fleet at w's rate (`res`: serve's result for it), as
    serve_load_bands gives serve --dp N for the same fleet: size's rows, so the two pages
    state one band for one fleet. Empty where serve's would be (a replayed log, no steady
    state, a run past saturation)."""
    family, engine = hw.efficiency.family, eng.profile_id  # an Accelerator's, an Engine's
    bands = serve_load_bands(rep, w, [(w.rate, res)], slo, capacity, family, engine,
                             router=router, seed=seed)  # fmt: skip
    return bands[0]


def closed_loop_bands(family: str, engine: str | None) -> dict[str, LoadBand]:
    """A closed loop's TTFT and TPOT bands (validation/closedbands.py): its users send the next
    request when one ends, so a replica k times as fast as expected runs the same loop with
    every time ÷ k (roofline.serving.confidence's rule, the requests re-timed), k in the
    throughput band [lo, hi]; × the light-load band [l_lo, l_hi] (the step's own error), the
    edges moved by the closed-loop margin m fitted on the closed-loop and burst runs never seen
    (hardware/bands.json `closed_loop`):

        low = l_lo / hi · e^-m,   high = l_hi / lo · e^m,

    each kept on its side of 1. Empty without a throughput band or a margin."""
    thr = band("throughput", family, engine)
    out: dict[str, LoadBand] = {}
    if thr is None:
        return out
    for name in LOAD_BAND_METRICS:
        kind = name.split("_")[0]
        m, light = closed_loop_margin(kind), band(f"{kind}_light", family, engine)
        if m is None or light is None:
            continue
        low = min(light.low / thr.high * math.exp(-m), 1.0)
        out[name] = LoadBand(low, max(light.high / thr.low * math.exp(m), 1.0), None)
    return out


def _interpolate(a: tuple[float, ServeMetrics], b: tuple[float, ServeMetrics], r: float):
    """The TTFT and TPOT percentiles at rate r, linear between two simulated rates."""
    (xa, ma), (xb, mb) = a, b
    t = (r - xa) / (xb - xa)

    def mid(pa: Percentiles, pb: Percentiles) -> Percentiles:
        return Percentiles(
            *(u + t * (v - u) for u, v in zip(astuple(pa), astuple(pb), strict=True))
        )

    return replace(ma, ttft_s=mid(ma.ttft_s, mb.ttft_s), tpot_s=mid(ma.tpot_s, mb.tpot_s))

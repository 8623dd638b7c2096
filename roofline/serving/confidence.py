"""Sizing to a confidence (issue 35): a fleet sized to its error bands' pessimistic edge.

The bands (roofline/catalog/bands.py) say where the measured figure lies, 90% of the time,
around the expected one. At confidence p90 a replica is taken to serve the expected capacity
× the throughput band's low edge `capacity` (≤ 1: never better than expected), so the fleet is
sized and evaluated at the offered rate ÷ `capacity` (the same requests re-timed: the queue
sees the slower replica as a faster stream); and the SLO is met when the TTFT and TPOT of that
queue, × the light-load bands' high edges `ttft`, `tpot` (≥ 1: the step's own error, with no
queue: validation/bands.py LIGHT), are within the limits, i.e. the queue's expected figures
within limit ÷ edge. The queue carries the capacity error's effect on the latencies: the SLO
percentile's own bands (TTFT p99 up to × 13.4) are fitted mostly on runs near capacity, where
the error IS the queue's response to a capacity error, so scaling the queue at rate ÷ low by
them would count that error twice. The two edges are still taken at once (the throughput and
step-time errors are correlated, not independent: the joint edge is the cautious reading, not
a 90% figure of its own). At `expected` every edge is 1 and nothing changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from roofline.domain.errors import InputError
from roofline.serving.metrics import Slo

if TYPE_CHECKING:
    from roofline.serving.workload import Workload


def level(text: str) -> str:
    """--confidence's level: expected, or p90 (also "90", "P90")."""
    t = text.strip().lower()
    t = "p" + t if t.replace(".", "", 1).isdigit() else t
    if t in ("p90", "p90.0"):
        return "p90"
    if t == "expected":
        return t
    raise InputError(
        f"--confidence must be expected or p90 (the bands are 90% intervals), got {text!r}"
    )


@dataclass(frozen=True)
class Edges:
    """The pessimistic edges one accelerator is sized to (module docstring)."""

    level: str  # "expected" or "p90"
    capacity: float = 1.0  # measured/expected capacity at the throughput band's low edge
    ttft: float = 1.0  # measured/expected TTFT at its light-load band's high edge
    tpot: float = 1.0  # and TPOT's

    def __post_init__(self) -> None:
        if not (0 < self.capacity <= 1 and self.ttft >= 1 and self.tpot >= 1):
            raise InputError(f"confidence edges out of range: {self}")
        if not all(math.isfinite(x) for x in (self.capacity, self.ttft, self.tpot)):
            raise InputError(f"confidence edges must be finite: {self}")

    @property
    def neutral(self) -> bool:
        return self.capacity == 1.0 and self.ttft == 1.0 and self.tpot == 1.0

    def rate(self, rate: float) -> float:
        """The rate the expected model must serve for the real fleet to serve `rate`."""
        return rate / self.capacity

    def slo(self, slo: Slo) -> Slo:
        """The limits the expected figures must meet: each ÷ its light-load band's high edge."""
        return replace(
            slo,
            ttft_s=None if slo.ttft_s is None else slo.ttft_s / self.ttft,
            tpot_s=None if slo.tpot_s is None else slo.tpot_s / self.tpot,
        )


def edges(level_: str, throughput_low: float | None, ttft_high: float | None,
          tpot_high: float | None) -> Edges:  # fmt: skip
    """The edges at `level_` from the bands' factors (None: no band, the expected figure)."""
    if level_ == "expected":
        return Edges("expected")
    return Edges(
        level_,
        min(1.0, throughput_low or 1.0),
        max(1.0, ttft_high or 1.0),
        max(1.0, tpot_high or 1.0),
    )


def capacity_at(e: Edges, expected: float, tight: Callable[[float], float]) -> float:
    """A replica's capacity at the band edges `e` (module docstring), the one rule size, the
    day and the mix's day apply: the throughput band's low edge × the highest rate at which
    the expected model meets the SLOs ÷ the light-load bands' high edges, `tight(top)`: that
    search, asked only up to `top` = `expected` (its capacity within the SLOs at the expected
    figures: the SLOs ÷ edges ≥ 1 are met at no higher rate); 0 when the expected capacity is.
    A real replica at rate r runs as the expected one at r ÷ low (slowed), so it meets the
    SLOs up to low × that rate."""
    if expected <= 0:
        return 0.0
    return e.capacity * min(expected, tight(expected))


def search_order(e: Edges | None, slo: Slo, bound: float, t_pf: float) -> float:
    """The requests/s one replica of a layout is taken to serve for the order in which size
    searches its layouts at the band edges `e` (most promising first; an order, never a bound:
    it prunes nothing): its rate bound × the throughput band's low edge, scaled down by how far
    its TTFT's p-th percentile × the band's high edge would exceed the SLO even at light load,
    taken as M/M/1's with the prefill's t_pf a prompt (plan's batch-1 TTFT),
    ln(1 / (1 − p)) · t_pf (Kleinrock, "Queueing Systems" vol. 1, 1975, §3.2): × min(1, SLO /
    (edge · that)). At the expected figures (`e` None) the rate bound alone."""
    if e is None:
        return bound
    if slo.ttft_s is None or t_pf <= 0 or slo.pct >= 100:
        return bound * e.capacity
    tail = math.log(1.0 / (1.0 - slo.pct / 100.0)) * t_pf * e.ttft
    return bound * e.capacity * min(1.0, slo.ttft_s / tail)


def chips_in_turn(rows: list, chip: Callable[[Any], str], turn: bool = True) -> list:
    """`rows` (most promising first) with each chip's first before any chip's second, and so on,
    in their order otherwise (`turn` False: as they are): at the band edges size searches every
    chip's most promising layout before the others of any, which then run against their own
    chip's best found (sizerounds prunes a layout against its own chip's best only) and mostly
    stop at once."""
    if not turn:
        return rows
    nth: dict[str, int] = {}
    turns = []
    for r in rows:
        turns.append(nth.get(chip(r), 0))
        nth[chip(r)] = turns[-1] + 1
    return [rows[i] for _, i in sorted(zip(turns, range(len(rows)), strict=True))]


def level_of(confidence: dict[str, Edges] | None, hw: str) -> str:
    """The level accelerator `hw` is sized to under `confidence` (hardware id -> edges)."""
    at = (confidence or {}).get(hw)
    return at.level if at is not None else "expected"


def slowed(w: Workload, e: Edges, seed: int = 0) -> Workload:
    """The workload the expected model serves for the real fleet at the throughput band's low
    edge (module docstring: the offered rate ÷ `e.capacity`): a stationary process re-timed at
    that rate (workload.with_rate), a replayed log's own times × `e.capacity` (its shape kept:
    the same bursts, closer together)."""
    from roofline.serving.workload import with_rate

    if e.capacity == 1.0:
        return w
    if w.mix_retime is not None:  # a workload file's classes: its rate counts arrivals/s
        return with_rate(w, e.rate(w.mix_rate), seed)
    if w.replay:
        rate = None if w.rate is None else float(w.rate) / e.capacity
        return replace(w, arrival_s=w.arrival_s * e.capacity, rate=rate)
    return with_rate(w, e.rate(float(w.rate or 0.0)), seed)


def edge_binding(e: Edges, counts: tuple[int, int, int], own: str, expected: str) -> str:
    """What set a fleet's replica count at the band edges `e` (size): of the expected fleet's
    count, the queue's at the rate ÷ the throughput band's low edge against the SLOs, and that
    queue's against the SLOs ÷ the light-load bands' high edges (`counts`, in that order), the
    largest, the first on a tie; `own` and `expected` what binds the latter and the first
    ("TTFT SLO", "TPOT SLO" or "saturation: ...")."""
    n_exp, n_queue, n_own = counts
    if n_exp >= max(n_queue, n_own):
        return f"{expected} at the expected figures"
    low = f"{e.capacity:.3g} x the expected capacity"
    if n_queue >= n_own:
        return f"throughput band's low edge ({low})"
    if own in ("TTFT SLO", "TPOT SLO"):
        edge = e.ttft if own == "TTFT SLO" else e.tpot
        return f"{own} ÷ {edge:.3g} (its light-load band's high edge) at {low}"
    return own

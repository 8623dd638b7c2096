"""Coverage of the printed error bands (issue 35): the share of the out-of-sample points each
metric's printed 90% band holds, and the band's median width, before and after the margin
(validation/bands.py).

A point is held when its measured/expected ratio r = 1 / (1 + e) lies in the interval the band
prints for the point's (family, engine) cell: [low, high], or [1 − x, 1 + x] when it prints ±x
(render.core.band_text). Two readings:
- in sample: the shipped band, fitted on every point, the point's own among them;
- unseen source: the band fitted without the point's source (leave-one-source-out), which is
  what a user whose deployment no publication measured gets. "After" widens those by the
  shipped margins, one number per metric fitted on these same scores against the interval as
  printed (split conformal; the table's figure is the calibration's own, ceil(0.9 n) / n of the
  points, or the least hundredth's more).
Width = high − low of the printed interval, as a share of the expected figure, the median over
the metric's points. "Before" is the method before issue 35: no sibling points, no margin, ±rel
printed for a symmetric interval.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from validation import closedbands as cb
from validation.bands import (
    BANDS,
    SYMMETRIC,
    Point,
    cell_of,
    compute,
    loso,
    margins,
    widen,
    with_siblings,
)
from validation.bands import printed as printed_now


@dataclass(frozen=True)
class Coverage:
    band: str
    n: int
    in_sample: float  # share of its points the shipped band holds
    unseen: float  # share held by the band fitted without the point's source
    width: float  # median printed width (high − low) as a share of the expected figure


def printed(cell: dict, before: bool) -> tuple[float, float]:
    """The interval a cell prints: [low, high], or ±x when symmetric within SYMMETRIC (x = rel
    before issue 35, the interval's wider side after it: validation.bands.printed)."""
    low, high = cell["low"], cell["high"]
    if not before:
        return printed_now(cell)
    if abs((high - 1.0) - (1.0 - low)) <= SYMMETRIC:
        x = cell["rel"]
        return 1.0 - x, 1.0 + x
    return low, high


def _held(cell: dict | None, p: Point, before: bool) -> bool | None:
    if cell is None:
        return None
    lo, hi = printed(cell, before)
    return lo - 1e-9 <= 1.0 / (1.0 + p.error) <= hi + 1e-9


def coverage(pts: tuple[Point, ...] | list[Point], before: bool) -> list[Coverage]:
    """Each metric's coverage and width (module docstring), the method before or after."""
    fit_pts = list(pts) if before else with_siblings(pts)
    fits = loso(fit_pts)
    if before:
        full, unseen = compute(fit_pts), fits
    else:
        m = margins(fit_pts, fits)
        full = widen(compute(fit_pts), m)
        unseen = {s: widen(b, m) for s, b in fits.items()}
    out = []
    for band in BANDS:
        mine = [p for p in pts if p.band == band]
        if not mine:
            continue
        ins = [_held(cell_of(full, band, p.family, p.engine), p, before) for p in mine]
        oos = [_held(cell_of(unseen[p.source], band, p.family, p.engine), p, before) for p in mine]
        widths = []
        for p in mine:
            cell = cell_of(full, band, p.family, p.engine)
            if cell is not None:
                lo, hi = printed(cell, before)
                widths.append(hi - lo)
        oos_known = [h for h in oos if h is not None]
        out.append(
            Coverage(
                band,
                len(mine),
                float(np.mean([bool(h) for h in ins])),
                float(np.mean(oos_known)) if oos_known else 0.0,
                float(np.median(widths)) if widths else 0.0,
            )
        )
    return out


def _closed_interval(
    bands: dict, p: Point, kind: str, margin: float | None
) -> tuple[float, float] | None:
    """The interval printed for a closed-loop point: the closed-loop band (`margin`: the
    shipped one, validation.closedbands.band) or, `margin` None, its metric's own band as
    printed (validation.bands.printed)."""
    if margin is not None:
        iv = cb.interval(bands, kind, p.family, p.engine)
        return None if iv is None else cb.band(iv, margin)
    cell = cell_of(bands, p.band, p.family, p.engine)
    return None if cell is None else printed_now(cell)


def _share(pts: list[Point], ivs: list[tuple[float, float] | None]) -> float:
    """The share of the points with an interval whose ratio 1 / (1 + error) it holds."""
    have = [
        iv[0] - 1e-9 <= 1.0 / (1.0 + p.error) <= iv[1] + 1e-9
        for p, iv in zip(pts, ivs, strict=True)
        if iv is not None
    ]
    return float(np.mean(have)) if have else 0.0


@cache
def closed_fit(pts: tuple[Point, ...]) -> tuple[dict, dict[str, dict], dict[str, dict]]:
    """(the shipped bands, the bands fitted without each source widened by the shipped margins,
    the closed-loop margins validation/closedbands.py fits on these), once per set of points."""
    joined = with_siblings(pts)
    fits = loso(joined)
    m = margins(joined, fits)
    unseen = {s: widen(b, m) for s, b in fits.items()}
    return widen(compute(joined), m), unseen, cb.margins(list(pts), unseen)


def closed(pts: tuple[Point, ...] | list[Point]) -> list[tuple[Coverage, Coverage]]:
    """Per latency (TTFT; TPOT with ITL), the closed-loop and burst runs' coverage (module
    docstring) before → after: the band serve printed for a closed loop before (the metric's
    own, as printed, validation.bands.printed) and the one it prints now, the throughput band
    as the loop's time scale × the light-load band moved by the shipped closed-loop margin
    (validation/closedbands.py; "unseen": the margin the calibration's own, its bands fitted
    without the point's source)."""
    full, unseen, shift = closed_fit(tuple(pts))
    out = []
    for kind in cb.KINDS:
        mine = [p for p in pts if cb.kind_of(p) == kind and kind in shift]
        row = []
        for margin in (None, shift[kind]["margin"]) if mine else ():
            ins = [_closed_interval(full, p, kind, margin) for p in mine]
            oos = [_closed_interval(unseen[p.source], p, kind, margin) for p in mine]
            widths = [iv[1] - iv[0] for iv in ins if iv is not None]
            width = float(np.median(widths)) if widths else 0.0
            row.append(
                Coverage(
                    f"{kind} closed loop", len(mine), _share(mine, ins), _share(mine, oos), width
                )
            )
        if row:
            out.append((row[0], row[1]))
    return out


def table(pts: tuple[Point, ...] | list[Point]) -> str:
    """The Markdown coverage table, before → after, one row per metric, then the closed-loop
    latencies' (closed)."""
    rows = [
        "| metric | points | held in sample | held, unseen source | median width |",
        "|---|---:|---:|---:|---:|",
    ]
    pairs = zip(coverage(pts, True), coverage(pts, False), strict=True)
    for b, a in [*pairs, *closed(pts)]:
        rows.append(
            f"| {a.band} | {a.n} | {b.in_sample:.0%} → {a.in_sample:.0%} | "
            f"{b.unseen:.0%} → {a.unseen:.0%} | {b.width:.2f} → {a.width:.2f} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    from validation.bands import points

    print(table(points()))

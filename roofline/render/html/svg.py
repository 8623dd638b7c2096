"""Inline SVG charts for the HTML report: a line/scatter chart (linear or log axes, reference
lines) and a horizontal grouped bar chart. Every mark carries a `<title>`, so a reader hovering
it sees its values; no script, no fonts or images from anywhere. Pure string building."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

# Okabe & Ito's colour-blind-safe palette (Okabe, Ito 2008, "Color Universal Design")
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")
W, H = 640, 360  # the viewBox; the SVG scales to its container's width
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 36, 48

Fmt = Callable[[float], str]


def _g(x: float) -> str:
    return f"{x:.4g}"


@dataclass(frozen=True)
class Series:
    """One named series: points (x, y, the tooltip's text)."""

    name: str
    points: Sequence[tuple[float, float, str]]
    line: bool = True


@dataclass(frozen=True)
class Ref:
    """A reference line at `value` (horizontal on the y axis, or vertical on the x axis)."""

    value: float
    label: str


@dataclass
class Axis:
    label: str
    log: bool = False
    fmt: Fmt = _g
    lo: float = 0.0
    hi: float = 1.0
    ticks: list[float] = field(default_factory=list)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2 or 5 x 10^k)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 5, 10) if s * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = [round(start, 12)]
    while ticks[-1] < hi - step * 1e-9:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _setup(axis: Axis, values: Sequence[float], zero: bool) -> None:
    vals = [v for v in values if math.isfinite(v) and (v > 0 or not axis.log)]
    if axis.log:
        vals = vals or [1.0]
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        if hi <= lo:
            hi = lo * 10
        axis.lo, axis.hi = lo, hi
        k0, k1 = round(math.log10(lo)), round(math.log10(hi))
        step = max(1, (k1 - k0 + 5) // 6)
        axis.ticks = [10.0**k for k in range(k0, k1 + 1, step)]
        if k1 - k0 <= 3:  # few decades: 1, 2, 5 in each
            axis.ticks = [m * 10.0**k for k in range(k0, k1 + 1) for m in (1, 2, 5)]
            axis.ticks = [t for t in axis.ticks if t <= hi]
    else:
        vals = vals or [0.0, 1.0]
        lo, hi = min(vals), max(vals)
        if zero:
            lo = min(lo, 0.0)
        ticks = _nice_ticks(lo, hi)
        axis.lo, axis.hi, axis.ticks = ticks[0], ticks[-1], ticks


def _pos(axis: Axis, v: float, a: float, b: float) -> float:
    """The coordinate of value v on an axis drawn from a (lo) to b (hi)."""
    if axis.log:
        v = max(v, axis.lo * 1e-3)
        f = (math.log10(v) - math.log10(axis.lo)) / (math.log10(axis.hi) - math.log10(axis.lo))
    else:
        f = (v - axis.lo) / ((axis.hi - axis.lo) or 1.0)
    return a + f * (b - a)


def _t(text: str) -> str:
    return f"<title>{escape(text)}</title>"


def _frame(title: str, body: list[str], height: int = H) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {W} {height}" role="img" '
        f'aria-label="{escape(title, quote=True)}">'
        f"{_t(title)}" + "".join(body) + "</svg>"
    )


def _legend(names: Sequence[str], y: float = 12) -> list[str]:
    out, x = [], LEFT
    for i, name in enumerate(names):
        c = PALETTE[i % len(PALETTE)]
        if x + 24 + 7 * len(name) > W and x > LEFT:  # a second row
            x, y = LEFT, y + 13
        out.append(
            f'<rect x="{x}" y="{y - 9}" width="12" height="10" fill="{c}"/>'
            f'<text x="{x + 16}" y="{y}" class="lg">{escape(name)}</text>'
        )
        x += 24 + 7 * len(name)
    return out


def _plot_area(x0: float, x1: float, y0: float, y1: float) -> str:
    return f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" class="plot"/>'


def _vline(px: float, y0: float, y1: float) -> str:
    """A vertical line's end points, from the plot's foot y0 to its top y1."""
    return f'x1="{px:.1f}" y1="{y0}" x2="{px:.1f}" y2="{y1}"'


def _tick(grid: str, x: str, y: str, anchor: str, value: str) -> str:
    """A tick: the grid line across the plot (its end points `grid`) and the value at (x, y)."""
    return (
        f'<line {grid} class="grid"/>'
        f'<text x="{x}" y="{y}" class="tick" text-anchor="{anchor}">{escape(value)}</text>'
    )


def _x_axis(
    axis: Axis, x0: float, x1: float, y0: float, y1: float, height: float
) -> tuple[list[str], str]:
    """A horizontal axis: the grid line at each tick with its value under the plot, and the
    axis's label at the foot of the chart."""
    out = []
    for t in axis.ticks:
        px = _pos(axis, t, x0, x1)
        out.append(_tick(_vline(px, y0, y1), f"{px:.1f}", f"{y0 + 16}", "middle", axis.fmt(t)))
    label = (
        f'<text x="{(x0 + x1) / 2}" y="{height - 8}" class="axis" text-anchor="middle">'
        f"{escape(axis.label)}</text>"
    )
    return out, label


def _ref(line: str, text: str, label: str) -> str:
    """A reference line (an SLO, the saturation rate) with its label and tooltip."""
    return f'<g class="ref"><line {line}/><text {text}>{escape(label)}</text>{_t(label)}</g>'


def line_chart(
    title: str,
    x: Axis,
    y: Axis,
    series: Sequence[Series],
    hlines: Sequence[Ref] = (),
    vlines: Sequence[Ref] = (),
    y_zero: bool = True,
    roofs: Sequence[Series] = (),
) -> str:
    """Series of points (joined by lines unless `line` is False) against x, with horizontal
    (e.g. an SLO) and vertical (e.g. the saturation rate) reference lines. `roofs` are drawn as
    plain grey lines under the data (the roofline's roofs)."""
    xs = [p[0] for s in [*series, *roofs] for p in s.points] + [r.value for r in vlines]
    ys = [p[1] for s in [*series, *roofs] for p in s.points] + [r.value for r in hlines]
    _setup(x, xs, zero=False)
    _setup(y, ys, zero=y_zero)
    x0, x1, y0, y1 = LEFT, W - RIGHT, H - BOTTOM, TOP
    body = [_plot_area(x0, x1, y0, y1)]
    x_ticks, x_label = _x_axis(x, x0, x1, y0, y1, H)
    body += x_ticks
    for t in y.ticks:
        py = _pos(y, t, y0, y1)
        grid = f'x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}"'
        body.append(_tick(grid, f"{x0 - 6}", f"{py + 4:.1f}", "end", y.fmt(t)))
    body.append(
        x_label + f'<text x="14" y="{(y0 + y1) / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {(y0 + y1) / 2})">{escape(y.label)}</text>'
    )
    for roof in roofs:
        pts = " ".join(
            f"{_pos(x, a, x0, x1):.1f},{_pos(y, b, y0, y1):.1f}" for a, b, _ in roof.points
        )
        body.append(f'<polyline points="{pts}" class="roof">{_t(roof.name)}</polyline>')
        a, b, _ = roof.points[-1]
        body.append(
            f'<text x="{_pos(x, a, x0, x1):.1f}" y="{_pos(y, b, y0, y1) - 4:.1f}" class="tick" '
            f'text-anchor="end">{escape(roof.name)}</text>'
        )
    for r in hlines:
        py = _pos(y, r.value, y0, y1)
        line = f'x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}"'
        body.append(_ref(line, f'x="{x1 - 4}" y="{py - 4:.1f}" text-anchor="end"', r.label))
    for i, r in enumerate(vlines):
        px = _pos(x, r.value, x0, x1)
        body.append(_ref(_vline(px, y0, y1), f'x="{px + 4:.1f}" y="{y1 + 12 + 13 * i}"', r.label))
    for i, s in enumerate(series):
        c = PALETTE[i % len(PALETTE)]
        coords = [(_pos(x, a, x0, x1), _pos(y, b, y0, y1), tip) for a, b, tip in s.points]
        if s.line and len(coords) > 1:
            pts = " ".join(f"{a:.1f},{b:.1f}" for a, b, _ in coords)
            body.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"/>')
        for a, b, tip in coords:
            body.append(
                f'<circle cx="{a:.1f}" cy="{b:.1f}" r="4" fill="{c}">{_t(f"{s.name}: {tip}")}'
                "</circle>"
            )
    body += _legend([s.name for s in series])
    return _frame(title, body)


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    axis: Axis,
    refs: Sequence[Ref] = (),
) -> str:
    """Horizontal bars, one group per category and one bar per series (None: no bar), with
    vertical reference lines (e.g. an SLO). Bars start at zero."""
    values = [v for _, vs in series for v in vs if v is not None] + [r.value for r in refs]
    _setup(axis, [*values, 0.0], zero=True)
    label_w = min(220, 12 + 7 * max((len(c) for c in categories), default=4))
    bar_h, gap = 14, 10
    group_h = bar_h * len(series) + gap
    height = TOP + group_h * len(categories) + BOTTOM
    x0, x1, y1 = label_w, W - RIGHT, TOP
    y0 = height - BOTTOM
    ticks, label = _x_axis(axis, x0, x1, y0, y1, height)
    body = [_plot_area(x0, x1, y0, y1), *ticks, label]
    base = _pos(axis, max(axis.lo, 0.0) if not axis.log else axis.lo, x0, x1)
    for gi, cat in enumerate(categories):
        gy = y1 + gap / 2 + gi * group_h
        body.append(
            f'<text x="{x0 - 6}" y="{gy + group_h / 2:.1f}" class="tick" text-anchor="end">'
            f"{escape(cat[:30])}</text>"
        )
        for si, (name, vs) in enumerate(series):
            v = vs[gi]
            if v is None or not math.isfinite(v):
                continue
            c = PALETTE[si % len(PALETTE)]
            px = _pos(axis, v, x0, x1)
            by = gy + si * bar_h
            body.append(
                f'<rect x="{min(base, px):.1f}" y="{by:.1f}" width="{abs(px - base):.1f}" '
                f'height="{bar_h - 2}" fill="{c}">{_t(f"{cat}, {name}: {axis.fmt(v)}")}</rect>'
            )
    for r in refs:
        px = _pos(axis, r.value, x0, x1)
        body.append(
            _ref(_vline(px, y0, y1), f'x="{px - 4:.1f}" y="{y1 - 4}" text-anchor="end"', r.label)
        )
    body += _legend([name for name, _ in series])
    return _frame(title, body, height)

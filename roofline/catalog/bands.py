"""How far an expected figure is from the published measurements it was checked against: its
error band, from the out-of-sample relative errors e = expected / measured − 1 of the metric on
the hardware family under the engine profile the figure is computed for (a cell with fewer than 5
points: the family's, all engines; a family with fewer than 5: all families pooled). A band is
`rel`, the 90th percentile of |e| (the ± of a roughly symmetric band), and `low`/`high`, the
measured figure's 90% interval as factors of the expected one: with e5, e95 the signed errors'
5th and 95th percentiles, measured = expected / (1 + e) lies in
[expected / (1 + e95), expected / (1 + e5)], so low = 1 / (1 + e95), high = 1 / (1 + e5)
(positive: a rate's band never reaches below zero). Derived offline by
validation/bands.py from the validation results into hardware/bands.json (method and figures:
docs/ACCURACY.md); read here once, on first use, so a command that prints no band never pays for
it. Saturation is a throughput by another name and takes the throughput band; $/Mtok, J/token
and GPUs go as 1 / throughput and take it inverted (issue 35): with the measured throughput in
[expected · low, expected · high], the measured cost (∝ 1 / throughput) lies in
[expected / high, expected / low], so low' = 1 / high and high' = 1 / low (a throughput band of
−30%/+43% is a cost band of 1/1.43 − 1 = −30% / 1/0.70 − 1 = +43%; −66%/+47% is −32%/+194%).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

FILE = "bands.json"
METRICS = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2e_p50", "throughput")
# the step's own TTFT and TPOT error with no queue (validation/bands.py LIGHT): size --confidence
LIGHT = ("ttft_light", "tpot_light")
INHERITS = {
    "saturation": "throughput",
    "cost_per_million_output_tokens": "throughput",
    "joules_per_output_token": "throughput",
    "gpus": "throughput",
}
INVERTED = frozenset(("cost_per_million_output_tokens", "joules_per_output_token", "gpus"))


@dataclass(frozen=True)
class Band:
    """An expected figure's band: ±rel (90th percentile of |error|) and the measured figure's
    90% interval [value · low, value · high] (module docstring)."""

    rel: float
    n: int  # out-of-sample points behind it
    family: str | None  # the family whose points set it; None: all families pooled
    basis: str  # one line saying where it comes from
    low: float = 0.0  # measured / expected at the interval's low end
    high: float = 0.0  # measured / expected at its high end
    engine: str | None = None  # the engine profile whose points set it; None: all engines
    sources: int = 0  # publications its points come from (0: not recorded)

    @property
    def thin(self) -> bool:
        """A thin fit (issue 34): fewer than 5 points, or all from one source."""
        return self.n < 5 or 0 < self.sources < 2

    def inverted(self) -> Band:
        """The band of 1 / the figure (module docstring): [1 / high, 1 / low]."""
        low, high = 1.0 / self.high, 1.0 / self.low
        rel = max(1.0 - low, high - 1.0)
        return Band(rel, self.n, self.family, self.basis, low, high, self.engine, self.sources)

    def bounds(self, value: float) -> tuple[float, float]:
        """The measured figure's 90% interval around an expected `value`."""
        return value * self.low, value * self.high


def interval(e5: float, e95: float) -> tuple[float, float]:
    """(low, high) factors of the expected figure from the 5th and 95th percentiles of
    e = expected / measured − 1: measured = expected / (1 + e) falls as e rises, so
    e5 <= e <= e95 gives expected / (1 + e95) <= measured <= expected / (1 + e5)."""
    return 1.0 / (1.0 + e95), 1.0 / (1.0 + e5)


@cache
def _table() -> dict[str, Any]:
    """hardware/bands.json of the shipped catalog ({} if it is missing: no bands)."""
    from roofline.catalog.load import shipped_dirs

    path = shipped_dirs()[0] / FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _make(cell: dict[str, Any], family: str | None, engine: str | None, text: str) -> Band:
    rel = float(cell["rel"])  # a file from before low/high: the symmetric band
    low, high = float(cell.get("low", 1.0 - rel)), float(cell.get("high", 1.0 + rel))
    return Band(rel, int(cell["n"]), family, text, low, high, engine, int(cell.get("sources", 0)))


def band(metric: str, family: str, engine: str | None = None) -> Band | None:
    """The band of an expected figure (METRICS, or a key of INHERITS) on a hardware family
    under an engine profile (hardware/engines.yaml id, e.g. "vllm-v0"; None: any), or None if
    no published measurement stands behind that metric. The cell (family, engine) when it has
    5 points, else the family's, else all families pooled; the basis says which and why."""
    base = INHERITS.get(metric, metric)
    if engine:  # a version profile that runs here as its engine does shares its cell (bands.json)
        engine = _table().get("shares", {}).get(family, {}).get(engine, engine)
    entry = _table().get("bands", {}).get(base)
    if entry is None:
        return None
    pct = f"p{_table().get('percentile', 90):g}"
    least = _table().get("min_points", 5)
    own = entry["families"].get(family)
    cell = entry.get("engines", {}).get(family, {}).get(engine) if engine else None
    if cell is not None:
        b = _make(cell, family, engine, f"out-of-sample {pct}, family {family}, engine {engine}")
        text = f"{b.basis}, n={b.n}"
    elif own is not None:
        b = _make(own, family, None, "")
        text = f"out-of-sample {pct}, family {family}, n={own['n']}"
        if engine:
            text += f" (engine {engine}: fewer than {least} points of its own)"
    else:
        pooled = entry["pooled"]
        have = entry.get("too_few", {}).get(family, 0)
        why = f"{have} point{'s' if have != 1 else ''}" if have else "no points"
        b = _make(pooled, None, None, "")
        text = (
            f"out-of-sample {pct}, all families pooled, n={pooled['n']} "
            f"(family {family}: {why}, fewer than {least})"
        )
    if base != metric:
        text = f"the {base} band{', inverted' if metric in INVERTED else ''}: {text}"
    out = Band(b.rel, b.n, b.family, text, b.low, b.high, b.engine, b.sources)
    return out.inverted() if metric in INVERTED else out


def closed_loop_margin(kind: str) -> float | None:
    """The margin a closed loop's TTFT or TPOT band (`kind` "ttft" or "tpot") moves its edges
    by, ln units (validation/closedbands.py, hardware/bands.json `closed_loop`); None: none
    fitted."""
    got = _table().get("closed_loop", {}).get(kind)
    return None if got is None else float(got["margin"])

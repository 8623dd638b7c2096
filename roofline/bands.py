"""How far an expected figure is from the published measurements it was checked against: its
error band, the 90th percentile of out-of-sample |relative error| of the metric on the hardware
family (a family with fewer than 5 points: all families pooled). Derived offline by
validation/bands.py from the validation results into hardware/bands.json (method and figures:
docs/ACCURACY.md); read here once, on first use, so a command that prints no band never pays for
it. Saturation and $/Mtok are throughputs by another name and take the throughput band.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

FILE = "bands.json"
METRICS = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2e_p50", "throughput")
INHERITS = {"saturation": "throughput", "cost_per_million_output_tokens": "throughput"}


@dataclass(frozen=True)
class Band:
    """±rel around an expected figure: low = value · (1 − rel), high = value · (1 + rel)."""

    rel: float
    n: int  # out-of-sample points behind it
    family: str | None  # the family whose points set it; None: all families pooled
    basis: str  # one line saying where it comes from

    def bounds(self, value: float) -> tuple[float, float]:
        return value * (1.0 - self.rel), value * (1.0 + self.rel)


@cache
def _table() -> dict[str, Any]:
    """hardware/bands.json of the shipped catalog ({} if it is missing: no bands)."""
    from roofline.catalog import shipped_dirs

    path = shipped_dirs()[0] / FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def band(metric: str, family: str) -> Band | None:
    """The band of an expected figure (METRICS, or a key of INHERITS) on a hardware family, or
    None if no published measurement stands behind that metric."""
    base = INHERITS.get(metric, metric)
    entry = _table().get("bands", {}).get(base)
    if entry is None:
        return None
    pct = f"p{_table().get('percentile', 90):g}"
    own = entry["families"].get(family)
    if own is not None:
        b = Band(own["rel"], own["n"], family, "")
        text = f"out-of-sample {pct}, family {family}, n={own['n']}"
    else:
        pooled = entry["pooled"]
        have = entry.get("too_few", {}).get(family, 0)
        why = f"{have} point{'s' if have != 1 else ''}" if have else "no points"
        b = Band(pooled["rel"], pooled["n"], None, "")
        text = (
            f"out-of-sample {pct}, all families pooled, n={pooled['n']} "
            f"(family {family}: {why}, fewer than {_table().get('min_points', 5)})"
        )
    if base != metric:
        text = f"the throughput band: {text}"
    return Band(b.rel, b.n, b.family, text)


def bands(metrics: tuple[str, ...], family: str) -> dict[str, Band]:
    """The bands of several figures on one family, skipping those without one."""
    out = {m: band(m, family) for m in metrics}
    return {m: b for m, b in out.items() if b is not None}


__all__ = ["INHERITS", "METRICS", "Band", "band", "bands"]

"""What validation/bands.py and validation/closedbands.py both read: an out-of-sample error as a
band reads it (Point), a serving case file's cases, and the band cell roofline/catalog/bands.py
picks for a (band, family, engine). Their own module, so that closedbands (which bands.main runs)
imports no module that imports it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Point:
    """One out-of-sample error of one case, as its band reads it."""

    case: str
    band: str
    family: str
    error: float  # expected / measured − 1 of the band's figure
    kind: str  # "step", "held out", "layout/disagg", "serving"
    engine: str = ""  # the engine profile it was evaluated with (hardware/engines.yaml)
    source: str = ""  # the publication it comes from (its URL, up to the first " (" or ",")


@cache
def case_list(rel: str) -> tuple[dict, ...]:
    """A serving case file's cases, parsed once (for one_user and closedbands.closed_ids)."""
    from roofline.catalog.files import safe_load_yaml

    return tuple(safe_load_yaml((ROOT / rel).read_text())["cases"])


def cell_of(bands: dict, band: str, family: str, engine: str) -> dict | None:
    """The cell roofline/catalog/bands.py reads for (band, family, engine): the engine's, the
    family's, else the pooled one (None: no band)."""
    entry = bands.get(band)
    if entry is None:
        return None
    return (
        entry.get("engines", {}).get(family, {}).get(engine)
        or entry["families"].get(family)
        or entry["pooled"]
    )

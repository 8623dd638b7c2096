"""A price entry's `spot` block (hardware/prices.yaml): the median of dated spot offers and a
spot GPU's preemptions per hour, each with its source; read by roofline.catalog.load."""

from __future__ import annotations

from roofline.catalog.schema import NUM, positive
from roofline.domain.errors import CatalogError

SPOT_KEYS = {
    "usd_per_gpu_hour": (NUM, True),
    "offers": (list, True),
    "preemptions_per_hour": (NUM, True),
    "preemption_source": (str, True),
}


def spot_fields(where: str, spot: dict | None, name: str) -> tuple[float | None, float | None, str]:
    """(spot $/GPU-hour, preemptions per hour, source) of a price entry's `spot` (or none)."""
    if spot is None:
        return None, None, ""
    usd = positive(f"{where}: spot", "usd_per_gpu_hour", spot["usd_per_gpu_hour"])
    rate = spot["preemptions_per_hour"]
    if not 0 <= float(rate) < 1:
        raise CatalogError(f"{where}: spot: preemptions_per_hour must be from 0 to 1, got {rate}")
    how = (
        f"{name}: spot median of {len(spot['offers'])} offers; preemptions:"
        f" {spot['preemption_source']}"
    )
    return usd, float(rate), how

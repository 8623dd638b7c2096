"""serve's bands under load in its document (roofline.serving.loadbands): each rate point's
`load_bands`, and the document's own when it has one point."""

from __future__ import annotations

from typing import Any

from roofline.serving.metrics import LoadBand


def load_bands_json(bands: dict[str, LoadBand]) -> dict[str, Any] | None:
    """metric -> low, high (null: unbounded), unbounded (the reason, or null), the offered
    rates the expected model was read at for the two edges; None when there are none."""
    if not bands:
        return None
    return {
        name: {
            "low": b.low,
            "high": b.high,
            "unbounded": b.reason or None,
            "rates": {"high_capacity": b.rates[0], "low_capacity": b.rates[1]},
            "basis": "the throughput band run through the queue x the light-load band",
        }
        for name, b in bands.items()
    }


def attach(doc: dict[str, Any], per_point: list[dict[str, LoadBand]]) -> None:
    """Each point's load bands into serve's document (and the top level's for one point)."""
    for p, b in zip(doc["points"], per_point, strict=True):
        p["load_bands"] = load_bands_json(b)
    if len(doc["points"]) == 1:
        doc["load_bands"] = doc["points"][0]["load_bands"]

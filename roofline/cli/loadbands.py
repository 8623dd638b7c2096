"""serve's bands under load in its document (roofline.serving.loadbands): each rate point's
`load_bands`, and the document's own when it has one point."""

from __future__ import annotations

from typing import Any

from roofline.serving.metrics import LoadBand

QUEUE = "the throughput band run through the queue x the light-load band"
OFFERED = (
    "the throughput band run through the offered rate: each edge's replica serves the rate it is"
    " offered up to its own capacity"
)
CLOSED = (
    "the throughput band as the closed loop's time scale x the light-load band, its edges moved"
    " by the closed-loop margin (validation/closedbands.py)"
)


_RATES = ("throughput", "cost_per_million_output_tokens")  # bands at the offered rate


def load_bands_json(bands: dict[str, LoadBand]) -> dict[str, Any] | None:
    """metric -> low, high (null: unbounded), unbounded (the reason, or null), the offered
    rates the expected model was read at for the two edges (null: a closed loop, scaled in
    time), where they come from; None when there are none."""
    if not bands:
        return None
    return {
        name: {
            "low": b.low,
            "high": b.high,
            "unbounded": b.reason or None,
            "rates": None
            if b.rates is None
            else {"high_capacity": b.rates[0], "low_capacity": b.rates[1]},
            "basis": CLOSED if b.rates is None else OFFERED if name in _RATES else QUEUE,
        }
        for name, b in bands.items()
    }


def attach(doc: dict[str, Any], per_point: list[dict[str, LoadBand]]) -> None:
    """Each point's load bands into serve's document (and the top level's for one point)."""
    for p, b in zip(doc["points"], per_point, strict=True):
        p["load_bands"] = load_bands_json(b)
    if len(doc["points"]) == 1:
        doc["load_bands"] = doc["points"][0]["load_bands"]

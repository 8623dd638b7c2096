"""--confidence (issue 35): the level and the band edges each accelerator is sized to."""

from __future__ import annotations


def confidence_level(text: str) -> str:
    """--confidence's level (serving.confidence.level): expected or p90."""
    from roofline.serving.confidence import level

    return level(text)


def confidence_edges(text: str, accelerators, engine_profile: str | None, slo_pct: float) -> dict:
    """--confidence as the band edges each accelerator is sized to (serving.confidence):
    hardware id -> Edges, from its family's bands under the engine profile: the throughput
    band's low edge and the light-load TTFT/TPOT bands' high edges (catalog.bands.LIGHT: the
    step's own error; the queue at the rate ÷ the low edge carries the load's), else, in a
    bands file without them, the bands of the SLO's percentile (p99's from p90 up, else the
    median's)."""
    from roofline.catalog.bands import band
    from roofline.serving.confidence import edges, level

    lvl = level(text)
    tail = "p99" if slo_pct >= 90 else "p50"
    out = {}
    for hw in accelerators:
        fam = hw.efficiency.family

        def high(metric: str, fam: str = fam) -> float | None:
            b = band(f"{metric}_light", fam, engine_profile)
            b = b or band(f"{metric}_{tail}", fam, engine_profile)
            return None if b is None else b.high

        thr = band("throughput", fam, engine_profile)
        out[hw.id] = edges(lvl, None if thr is None else thr.low, high("ttft"), high("tpot"))
    return out

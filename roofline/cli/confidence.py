"""--confidence (issue 35): the level and the band edges each accelerator is sized to."""

from __future__ import annotations


def confidence_level(text: str) -> str:
    """--confidence's level (serving.confidence.level): expected or p90."""
    from roofline.serving.confidence import level

    return level(text)


def confidence_edges(text: str, accelerators, engine_profile: str | None, slo_pct: float) -> dict:
    """--confidence as the band edges each accelerator is sized to (serving.confidence):
    hardware id -> Edges, from its family's bands under the engine profile; the TTFT/TPOT
    bands of the SLO's percentile (p99's from p90 up, else the median's)."""
    from roofline.catalog.bands import band
    from roofline.serving.confidence import edges, level

    lvl = level(text)
    tail = "p99" if slo_pct >= 90 else "p50"
    out = {}
    for hw in accelerators:
        fam = hw.efficiency.family

        def edge(metric: str, side: str, fam: str = fam) -> float | None:
            b = band(metric, fam, engine_profile)
            return None if b is None else getattr(b, side)

        out[hw.id] = edges(
            lvl,
            edge("throughput", "low"),
            edge(f"ttft_{tail}", "high"),
            edge(f"tpot_{tail}", "high"),
        )
    return out

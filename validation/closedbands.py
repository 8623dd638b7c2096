"""TTFT and TPOT bands of a closed loop (a burst is one: every user's request sent at t = 0),
from what they derive from (issue 35 item 2): the throughput band through the loop's time scale,
× the light-load band, calibrated on the closed-loop runs never seen.

A closed loop has no offered rate to scale by the throughput band's edges (serving/loadbands.py
does that for a Poisson stream): its users send the next request when one ends, so a replica k
times as fast as expected (k in the throughput band's [low, high]) runs the same loop with every
time ÷ k (roofline.serving.confidence's rule, the same requests re-timed: the schedule is the
same, each step k times as short). A latency's band is then the light-load band (the step's own
error, no queue) over that time scale:

    [light.low / thr.high, light.high / thr.low],

the throughput and step-time edges taken at once (correlated errors, as at size's p90 edge).
The two 90% intervals multiplied are no 90% interval of their own, so the edges are moved by one
margin per metric (TTFT; TPOT with the inter-token latency), conformalized quantile regression's
signed score (Romano, Patterson and Candès, "Conformalized Quantile Regression", NeurIPS 2019):
s = max(ln(L / r), ln(r / H)) with r = measured / expected, negative inside the interval; the
margin m is the ceil(0.9 n)-th smallest s over the closed-loop and burst runs of the serving case
files, each scored against the bands fitted without its source (validation/bands.py loso, widened
by the shipped margins), and the band is [L · e^-m, H · e^m]: m < 0 narrows an interval that held
more than 90% of them, m > 0 widens one that held fewer. hardware/bands.json carries the margins
(`closed_loop`); roofline/serving/loadbands.py applies them. Coverage: validation/coverage.py.
"""

from __future__ import annotations

import math
from functools import cache

from validation.bandpoints import Point, case_list, cell_of

KINDS = ("ttft", "tpot")  # the latencies banded under load (serving.metrics.LOAD_BAND_METRICS)
FILES = (
    "validation/serving_cases.yaml",
    "validation/engine_sweeps.yaml",
    "validation/highload_cases.yaml",
)
COVERAGE = 0.90


@cache
def closed_ids() -> frozenset[str]:
    """The ids of the serving cases run as a closed loop or a burst."""
    return frozenset(
        c["id"] for rel in FILES for c in case_list(rel) if c.get("arrivals") in ("closed", "burst")
    )


def kind_of(p: Point) -> str | None:
    """ttft or tpot for a closed-loop run's TTFT or TPOT (ITL) point, else None."""
    head = p.band.split("_")[0]
    if head in KINDS and not p.band.endswith("_light") and p.case in closed_ids():
        return head
    return None


def interval(bands: dict, kind: str, family: str, engine: str) -> tuple[float, float] | None:
    """[light.low / thr.high, light.high / thr.low] from the (family, engine) cells of `bands`
    (module docstring), None without either band."""
    thr = cell_of(bands, "throughput", family, engine)
    light = cell_of(bands, f"{kind}_light", family, engine)
    if thr is None or light is None:
        return None
    return light["low"] / thr["high"], light["high"] / thr["low"]


def signed(p: Point, iv: tuple[float, float]) -> float:
    """The signed score of the point's ratio r = 1 / (1 + error) against [L, H]."""
    r = 1.0 / (1.0 + p.error)
    return max(math.log(iv[0] / r), math.log(r / iv[1]))


def scored(pts: list[Point], unseen: dict[str, dict]) -> dict[str, list[tuple[Point, float]]]:
    """Per kind, each closed-loop point with its score against the bands without its source."""
    out: dict[str, list[tuple[Point, float]]] = {k: [] for k in KINDS}
    for p in pts:
        kind = kind_of(p)
        iv = None if kind is None else interval(unseen[p.source], kind, p.family, p.engine)
        if kind is not None and iv is not None:
            out[kind].append((p, signed(p, iv)))
    return out


def margins(pts: list[Point], unseen: dict[str, dict]) -> dict[str, dict]:
    """Per kind: the margin (module docstring, rounded up to a thousandth), the points and the
    sources behind it."""
    out = {}
    for kind, items in scored(pts, unseen).items():
        if not items:
            continue
        k = math.ceil(round(COVERAGE * len(items), 9))
        m = sorted(s for _, s in items)[k - 1]
        out[kind] = {
            "margin": math.ceil(m * 1000.0 - 1e-9) / 1000.0,
            "n": len(items),
            "sources": len({p.source for p, _ in items}),
        }
    return out


def band(iv: tuple[float, float], margin: float) -> tuple[float, float]:
    """[L · e^-m, H · e^m], each edge kept on its side of 1 (the band holds the expected figure:
    roofline.serving.loadbands)."""
    return min(iv[0] * math.exp(-margin), 1.0), max(iv[1] * math.exp(margin), 1.0)

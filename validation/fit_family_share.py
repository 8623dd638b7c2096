"""Fit a hardware family's scalar shares (hardware/families.yaml `compute` and `memory`, one
factor on both) on its full-load serving points, with leave-one-source-out (issue 34).

For a family with no kernel curves of its own (Intel Gaudi, Google TPU), every op runs at the
family's scalar shares, borrowed from nvidia-datacenter until a published run of the family
exists. validation/highload_cases.yaml holds Intel's own Gaudi 2 and Gaudi 3 throughput tables:
one factor k scales both shares (their ratio stays the borrowed one: two sources cannot separate
them), the grid value minimising the sum of squared log(expected / measured) over the family's
points. Out of sample: each source left out, k refitted on the others. A family with a single
source has no out-of-sample figure (the fit is reported, not written).
Run `python -m validation.fit_family_share intel-gaudi` (~1 min); validation/serving_crossval.py
FAMILY_FIT holds what it prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from roofline.domain.hardware import Efficiency  # noqa: E402
from validation.serving_crossval import CASE_FILES, source_group  # noqa: E402

GRID = tuple(round(0.40 + 0.01 * i, 2) for i in range(71))  # k from 0.40 to 1.10


Pick = Callable[[Any], bool]  # which accelerators a fit scales
Scale = Callable[[Efficiency, float], Efficiency]  # how their shares scale with k


def both_shares(e: Efficiency, k: float) -> Efficiency:
    """A family's compute and memory shares times k (their ratio kept)."""
    return replace(e, compute=e.compute * k, memory=e.memory * k)


class _Scaled:
    """The catalog with the efficiencies of the accelerators `pick` selects scaled by k."""

    def __init__(self, cat, pick: Pick, scale: Scale, k: float) -> None:
        self._cat, self._pick, self._scale, self._k = cat, pick, scale, k

    def __getattr__(self, name: str):
        return getattr(self._cat, name)

    def accelerator(self, name: str):
        hw = self._cat.accelerator(name)
        if not self._pick(hw):
            return hw
        return replace(hw, efficiency=self._scale(hw.efficiency, self._k))


def table(
    cat, pick: Pick, scale: Scale = both_shares, grid=GRID
) -> dict[float, dict[str, list[float]]]:
    """k -> source -> the log errors of the picked accelerators' serving points at k (the
    expected figures, which the fit reads)."""
    from roofline.cases.casefiles import load_serving_cases
    from roofline.cases.serving import run_serving_case

    cs = [
        c
        for f in CASE_FILES
        for c in load_serving_cases(ROOT / f)
        if pick(cat.accelerator(c["hardware"]))
    ]
    out: dict[float, dict[str, list[float]]] = {}
    for k in grid:
        sc = _Scaled(cat, pick, scale, k)
        row: dict[str, list[float]] = {}
        for c in cs:
            r = run_serving_case(c, sc, expected_only=True)
            row.setdefault(source_group(c), []).append(float(np.log(r.expected / c["measured"])))
        out[k] = row
    return out


def fit(t: dict[float, dict[str, list[float]]], leave: str | None = None) -> float:
    return min(t, key=lambda k: sum(e * e for g, es in t[k].items() if g != leave for e in es))


def main(family: str) -> None:
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    t = table(cat, lambda hw: hw.family == family)
    groups = sorted(t[GRID[0]])
    e = cat.accelerator(
        next(h for h in cat.accelerators if cat.accelerator(h).family == family)
    ).efficiency
    print(f"{family}: shares compute {e.compute}, memory {e.memory}; {len(groups)} sources")
    print(f"  all: k {fit(t):g}")
    for g in groups:
        print(f"  without {g}: k {fit(t, g):g} ({len(t[GRID[0]][g])} cases)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "intel-gaudi")

"""Fit one kernel group's compute scale on its serving points, with leave-one-source-out: reported,
not written (issue 34; docs/ACCURACY.md's twin section names it the next step).

A kernel group's curves (hardware/kernels.yaml, aiconfigurator-core's timings) set every op's
efficiency on its chips; `k` scales their compute side (every GEMM and attention curve's plateau,
as a user catalog's `compute` calibration or --eta-compute does: roofline/step/optime.py
kernel_view), the bandwidth side kept. The grid value minimising the sum of squared
log(expected / measured) over the group's serving points (as validation/fit_family_share.py; the
median |error| at each k is printed beside it, since a few runs far past capacity dominate a sum of
squares) (every case file of
validation/serving_crossval.py, every engine) is the fit; out of sample, each source left out and
k refitted on the others. Run `python -m validation.fit_kernel_scale nvidia-hopper` (a few
minutes: each grid value serves every point once).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from roofline.domain.hardware import Efficiency  # noqa: E402
from validation.fit_family_share import fit, table  # noqa: E402

GRID = tuple(round(0.60 + 0.05 * i, 2) for i in range(10))  # k from 0.60 to 1.05


def in_group(group: str):
    """The pick of validation/fit_family_share.table: the accelerators on `group`'s curves."""
    return lambda hw: hw.efficiency.kernels is not None and hw.efficiency.kernels.id == group


def compute_only(e: Efficiency, k: float) -> Efficiency:
    """The curves' compute side times k (kernel_view scales every curve by the share), the
    bandwidth side kept."""
    return replace(e, compute=e.compute * k)


def fit_median(t: dict[float, dict[str, list[float]]], leave: str | None = None) -> float:
    """The grid value of the least median |log error| (robust to the runs far past capacity)."""
    return min(
        t,
        key=lambda k: float(
            np.median(np.abs([e for g, es in t[k].items() if g != leave for e in es]))
        ),
    )


def main(group: str) -> None:
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    t = table(cat, in_group(group), compute_only, GRID)
    groups = sorted(t[GRID[0]])
    n = sum(len(v) for v in t[GRID[0]].values())
    med = {
        k: float(np.median(np.abs(np.exp([e for es in t[k].values() for e in es]) - 1))) for k in t
    }
    k_all = fit(t)
    print(f"{group}: {n} serving points from {len(groups)} sources")
    print("  median |error| by k: " + ", ".join(f"{k:g} {m:.1%}" for k, m in med.items()))
    at = f"median |error| {med[1.0]:.1%} at k 1, {med[k_all]:.1%} at k {k_all:g}"
    print(f"  all, least squares on the log errors: k {k_all:g} ({at})")
    print(f"  all, least median |log error|: k {fit_median(t):g}")
    for g in groups:
        print(
            f"  without {g}: k {fit(t, g):g} least squares, {fit_median(t, g):g} least median "
            f"({len(t[GRID[0]][g])} points)"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvidia-hopper")

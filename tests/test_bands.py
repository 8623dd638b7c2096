"""Error bands on a small synthetic point set: the percentiles, the interval's conversion and
the fallback order (cell, family, pooled), derived by hand (validation/bands.py,
roofline/catalog/bands.py, render.core.band_text)."""

from __future__ import annotations

import pytest

import roofline.catalog.bands as rb
from roofline.render.core import band_text
from validation.bands import Point, compute, document

# 21 TPOT errors on family "fam-a" under engine "eng-x": e_i = (i − 5) / 20, i = 0..20, i.e.
# −0.25, −0.20, ..., 0.75. numpy's linear percentile of n = 21 sorted values at q sits at index
# (n − 1) q / 100 = q / 5: the 5th at index 1, the 95th at 19, the 90th at 18, the median at 10.
#   signed: e5 = −0.20, e95 = 0.70
#   |e| sorted: 0, .05, .05, .10, .10, .15, .15, .20, .20, .25, .25, .30, .35, ..., .75
#     index 18 = .30 + 7 × .05 = 0.65 (rel); index 10 = 0.25 (median)
#   low = 1 / (1 + 0.70) = 0.588 -> 0.58 (down), high = 1 / (1 − 0.20) = 1.25 (exact)
CELL = [(i - 5) / 20 for i in range(21)]
# 3 more on fam-a under eng-y (too few for a cell of their own), 2 on fam-b (too few for a family)
OTHER_A = [0.1, 0.1, 0.1]
FAM_B = [0.5, 0.5]


def _pts() -> list[Point]:
    pts = [Point(f"x{i}", "tpot_p50", "fam-a", e, "serving", "eng-x") for i, e in enumerate(CELL)]
    pts += [
        Point(f"y{i}", "tpot_p50", "fam-a", e, "serving", "eng-y") for i, e in enumerate(OTHER_A)
    ]
    pts += [Point(f"b{i}", "tpot_p50", "fam-b", e, "step", "eng-x") for i, e in enumerate(FAM_B)]
    return pts


def test_percentiles_of_a_cell_by_hand():
    cell = compute(_pts())["tpot_p50"]["engines"]["fam-a"]["eng-x"]
    # every point names the same (empty) source: one source, a thin fit (issue 34)
    assert cell == {
        "rel": 0.65,
        "low": 0.58,
        "high": 1.25,
        "n": 21,
        "median_abs_error": 0.25,
        "sources": 1,
    }
    assert "eng-y" not in compute(_pts())["tpot_p50"]["engines"]["fam-a"]  # 3 points
    assert compute(_pts())["tpot_p50"]["too_few"] == {"fam-b": 2}


def test_interval_conversion():
    # e = expected / measured − 1. Expected 100: e = 0.5 is measured 66.7 (100 / 1.5), e = −0.2
    # is measured 125 (100 / 0.8); the measured range is [0.667, 1.25] × expected
    assert rb.interval(-0.2, 0.5) == pytest.approx((100 / 150, 100 / 80))
    assert rb.Band(0.5, 9, None, "", 2 / 3, 1.25).bounds(100.0) == pytest.approx((66.67, 125), 1e-3)


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setattr(rb, "_table", lambda: document(compute(_pts()), "2026-01-01"))


def test_fallback_cell_family_pooled(synthetic):
    b = rb.band("tpot_p50", "fam-a", "eng-x")  # the cell: 21 points
    assert (b.rel, b.low, b.high, b.n, b.family, b.engine) == (
        0.65,
        0.58,
        1.25,
        21,
        "fam-a",
        "eng-x",
    )
    assert "engine eng-x" in b.basis
    b = rb.band("tpot_p50", "fam-a", "eng-y")  # 3 points of its own: the family's 24
    assert (b.n, b.family, b.engine) == (24, "fam-a", None)
    assert "eng-y: fewer than 5" in b.basis
    assert rb.band("tpot_p50", "fam-a").n == 24  # no engine named: the family's
    b = rb.band("tpot_p50", "fam-b", "eng-x")  # 2 points of the family: all 26 pooled
    assert (b.n, b.family, b.engine) == (26, None, None)
    assert "pooled" in b.basis and "fam-b: 2 points" in b.basis
    assert rb.band("ttft_p50", "fam-a") is None  # no points behind that metric


def test_band_text_symmetric_or_range():
    # sides 0.30 and 0.32 differ by 0.02 <= 0.05: ± the wider side (32%, so the ± holds the
    # interval, issue 35); 0.42 and 0.25: the measured range
    assert band_text({"rel": 0.3, "low": 0.70, "high": 1.32}) == "±32%"
    assert band_text({"rel": 0.65, "low": 0.58, "high": 1.25}) == "-42%/+25%"
    assert band_text({"rel": 0.5, "low": 0.62, "high": 0.92}) == "-38%/-8%"  # measured below
    assert band_text({"rel": 0.28}) == "±28%"  # a band from before low/high

"""Issue 35: bands inverted for figures that go as 1 / throughput, and the edges a fleet is
sized to at a confidence (roofline/catalog/bands.py, roofline/serving/confidence.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.catalog.bands import Band
from roofline.domain.errors import InputError
from roofline.render.core import band_text
from roofline.serving.confidence import Edges, edges, level
from roofline.serving.metrics import Slo


def test_cost_band_is_the_throughput_band_inverted_by_hand():
    # throughput measured in [0.70, 1.43] x expected: cost ∝ 1 / throughput lies in
    # [1 / 1.43, 1 / 0.70] = [0.699, 1.4286] x expected, printed -30%/+43%
    cost = Band(0.43, 9, None, "", 0.70, 1.43).inverted()
    assert (cost.low, cost.high) == pytest.approx((0.6993, 1.4286), abs=1e-4)
    # the issue's -66%/+47% band: 1 / 1.47 − 1 = −32%, 1 / 0.34 − 1 = +194%
    cost = Band(0.66, 9, None, "", 0.34, 1.47).inverted()
    assert band_text({"rel": cost.rel, "low": cost.low, "high": cost.high}) == "-32%/+194%"


@given(st.floats(0.05, 1.0), st.floats(1.0, 20.0))
def test_an_inverted_band_is_the_reciprocal_interval(low, high):
    inv = Band(0.5, 9, None, "", low, high).inverted()
    assert inv.low == pytest.approx(1 / high) and inv.high == pytest.approx(1 / low)
    # the edges as printed: 1 / (1 + high − 1) − 1 and 1 / (1 + low − 1) − 1
    assert inv.low - 1 == pytest.approx(1 / (1 + (high - 1)) - 1)
    assert inv.high - 1 == pytest.approx(1 / (1 + (low - 1)) - 1)
    back = inv.inverted()
    assert (back.low, back.high) == pytest.approx((low, high))


@given(st.floats(0.01, 3.0), st.floats(0.2, 20.0), st.floats(0.2, 20.0), st.floats(0.1, 1000.0))
def test_p90_edges_never_ask_less_than_expected(thr_low, ttft_high, tpot_high, rate):
    e = edges("p90", thr_low, ttft_high, tpot_high)
    assert e.rate(rate) >= rate  # a pessimistic capacity: at least the offered rate to serve
    slo = Slo(2.0, 0.05, 99.0)
    tight = e.slo(slo)
    assert tight.ttft_s <= slo.ttft_s and tight.tpot_s <= slo.tpot_s
    assert edges("expected", thr_low, ttft_high, tpot_high).neutral


def test_levels():
    assert level("p90") == level("90") == level("P90") == "p90"
    assert level("expected") == "expected"
    with pytest.raises(InputError, match="expected or p90"):
        level("p95")
    with pytest.raises(InputError):
        Edges("p90", capacity=1.5)

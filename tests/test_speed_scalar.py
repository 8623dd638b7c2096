"""The scalar fast path of the roofline primitives (one point in plain floats, no array overhead)
gives exactly what the broadcast path gives for the same numbers, NaN and zero cases included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.domain.layout import Layout
from roofline.step.ops import Deployment
from roofline.step.phases import request
from roofline.timing.roofline import arithmetic_intensity, bound, op_time_s

# FLOPs and bytes of an op: zero, NaN, or from a thousandth to 1e30 (ratios stay finite)
amount = st.one_of(
    st.floats(min_value=1e-3, max_value=1e30, allow_nan=False), st.just(0.0), st.just(math.nan)
)
rate = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False)
eta = st.floats(min_value=0.01, max_value=1.0)


def _same(a, b) -> bool:
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


@given(amount, amount, rate, rate, eta, eta)
def test_op_time_scalar_equals_broadcast(f, q, p, w, ec, em):
    one = op_time_s(f, q, p, w, ec, em)
    arr = op_time_s(np.array([f]), np.array([q]), p, w, ec, em)[0]
    assert np.ndim(one) == 0 and _same(one, arr)
    # and the formula by hand: max(F/(P·ηc), Q/(W·ηm)), NaN when either side is NaN
    by_hand = max(f / (p * ec), q / (w * em)) if not (math.isnan(f) or math.isnan(q)) else math.nan
    assert _same(one, by_hand)


@given(amount, amount, st.floats(min_value=0.0, max_value=1e6))
def test_intensity_and_bound_scalar_equal_broadcast(f, q, ridge):
    one = arithmetic_intensity(f, q)
    arr = arithmetic_intensity(np.array([f]), np.array([q]))[0]
    assert _same(one, arr)
    assert str(bound(one, ridge)) == str(bound(np.array([arr]), ridge)[0])


def test_zero_peak_keeps_the_array_behaviour():
    with np.errstate(divide="ignore"):
        assert op_time_s(1.0, 0.0, 0.0, 1.0) == np.inf


@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b"])
def test_request_on_scalars_equals_the_array_call(cat, model):
    m, hw, dep = cat.model(model), cat.accelerator("h100"), Deployment(layout=Layout(tp=2))
    batches, prompts, outputs = np.array([1, 7, 64]), np.array([0, 1, 4096]), np.array([1, 2, 999])
    grid = request(m, hw, dep, batches[:, None, None], prompts[None, :, None], outputs)
    for i, b in enumerate(batches.tolist()):
        for j, s in enumerate(prompts.tolist()):
            for k, o in enumerate(outputs.tolist()):
                one = request(m, hw, dep, b, s, o)
                for t in ("ideal", "expected"):
                    for f in ("batch_prefill_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
                        got = float(getattr(getattr(one, t), f))
                        want = np.broadcast_to(getattr(getattr(grid, t), f), (3, 3, 3))[i, j, k]
                        assert got == pytest.approx(float(want), rel=1e-12), (b, s, o, t, f)
                assert str(one.decode.bound) == str(
                    np.broadcast_to(grid.decode.bound, (3, 3, 3))[i, j, k]
                )

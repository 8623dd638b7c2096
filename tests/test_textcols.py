"""The numpy text formatters behind the sweep's CSV (render/textcols.py) write, byte for byte,
what Python itself writes: `'%.7g' % x` for floats (including ties, powers of ten, carries like
9999999.5 -> 1e+07, zeros, subnormals and the extremes) and `str(n)` for integers."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from roofline.render import textcols


def _texts(m: np.ndarray) -> list[str]:
    return [bytes(row[row != 0]).decode() for row in m]


def _g7(values: list[float]) -> list[str]:
    return _texts(textcols.g7(np.array(values, dtype=float)))


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50))
def test_g7_is_percent_7g(values):
    assert _g7(values) == ["%.7g" % v for v in values]  # noqa: UP031


@given(st.lists(st.integers(min_value=-9, max_value=9), min_size=1), st.integers(-30, 30))
def test_g7_on_short_decimals(digits, exponent):
    """Short decimals times powers of ten: exact ties in decimal ('0.12345675') land on the
    float64 rounding edge, where the fallback to Python's own formatting must take over."""
    values = [float(f"{d}.{abs(d) * 1234567 % 10**8:08d}5e{exponent}") for d in digits]
    assert _g7(values) == ["%.7g" % v for v in values]  # noqa: UP031


def test_g7_edges():
    values = [
        0.0,
        -0.0,
        5e-324,
        1e-300,
        1.7976931348623157e308,
        9999999.5,
        9999999.4,
        1e7,
        1e-4,
        1e-5,
        0.00012345675,
        123456.75,
        99999995.0,
        1.0,
        -2.5,
        100.0,
        0.1,
    ]
    assert _g7(values) == ["%.7g" % v for v in values]  # noqa: UP031


def test_g7_leaves_missing_values_empty():
    assert _g7([math.nan, math.inf, -math.inf, 1.5]) == ["", "", "", "1.5"]


@given(st.lists(st.integers(min_value=-(10**18) + 1, max_value=10**18 - 1), min_size=1))
def test_ints_are_str(values):
    a = np.array(values, dtype=np.int64)
    assert textcols.ints_ok(a)
    assert _texts(textcols.ints(a)) == [str(v) for v in values]


def test_join_rows_drops_padding_only():
    a = textcols.texts(["x", "", "longer"])
    shared = np.frombuffer(b"k,v", dtype=np.uint8)
    assert textcols.join_rows([a, shared, a], b";", 3) == b"x;k,v;x\n;k,v;\nlonger;k,v;longer\n"

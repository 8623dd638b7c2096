"""The SLO search asks for no run whose verdict it already has (roofline.serving.slosearch).

Every run of the search is a simulation (most of size's and fleet's time). Assuming, as the
search does, that a replica meets the SLOs below some rate and misses above it, a rate at or
above one already missed, or at or below one already met, has a known verdict: asking for it
again is waste (a repeat of the very same rate is free: the memo serves it). These tests
record the rates each search step asks for against a boundary b (ok(x) iff x <= b) and check
that none is implied by the verdicts before it, and that the answer is within the step's
tolerance below b (the bisection's contract, derived from the boundary alone)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.slosearch import _bisect, _settle, highest_ok


def recorder(b: float) -> tuple[list[tuple[float, bool]], object]:
    """ok(x) iff x <= b, each new rate asked (with its verdict) kept in order."""
    asked: list[tuple[float, bool]] = []

    def ok(x: float) -> bool:
        met = x <= b
        if x not in {r for r, _ in asked}:
            asked.append((x, met))
        return met

    return asked, ok


def implied(asked: list[tuple[float, bool]]) -> list[float]:
    """The rates asked whose verdict an earlier one implied (monotone verdicts)."""
    out = []
    for i, (x, _) in enumerate(asked):
        before = asked[:i]
        if any(not met and r <= x for r, met in before) or any(met and r >= x for r, met in before):
            out.append(x)
    return out


rates = st.floats(min_value=0.01, max_value=1000.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(b=rates, hi=rates)
def test_the_coarse_bracket_asks_no_rate_it_knows(b, hi):
    # highest_ok from hi = saturation: hi, hi / 8, then bisection to 10% (the coarse runs)
    asked, ok = recorder(b)
    r = highest_ok(ok, hi, 0.10)
    assert implied(asked) == []
    if b >= hi:
        assert r == hi
    elif b < hi / 64:  # the floor misses: nothing is met
        assert r == 0.0
    else:  # within 10% below the boundary: r met, a rate at most 10% above it missed
        assert r <= b and b - r <= 0.10 * r


@settings(max_examples=200, deadline=None)
@given(b=rates, guess=st.floats(min_value=0.2, max_value=5.0), hi=rates)
def test_the_fine_settle_asks_no_rate_it_knows(b, guess, hi):
    # _settle from the coarse answer (guess x b, at most hi): steps of 3% doubling, bisection
    asked, ok = recorder(b)
    r = _settle(ok, min(guess * b, hi), hi, 0.03, 1.03, hi / 64)
    assert implied(asked) == []
    if b >= hi:
        assert r == hi
    elif r > 0:
        assert r <= b and b - r <= 0.03 * r
    else:  # 0 only where a rate below the floor missed
        assert r == 0.0 and b < hi / 64


@given(b=st.floats(min_value=1.0, max_value=2.0, exclude_max=True))
def test_the_bisection_never_asks_its_ends_again(b):
    # lo = 1 met, hi = 2 missed: from 100% apart to 3% takes ceil(log2(ln 2 / ln 1.03)) = 5
    asked, ok = recorder(b)
    r = _bisect(ok, 1.0, 2.0, 0.03)
    xs = [x for x, _ in asked]
    assert 1.0 not in xs and 2.0 not in xs and implied(asked) == []
    assert len(xs) == 5 and r <= b and b - r <= 0.03 * r

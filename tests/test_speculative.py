"""Speculative decoding: the expected-tokens formula, the verify pass's intensity, speed-ups."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.ops import Deployment
from roofline.speculative import expected_tokens_per_round, speculate


def test_expected_tokens_by_hand():
    # Leviathan et al. 2023: E = (1 − α^(γ+1)) / (1 − α)
    assert expected_tokens_per_round(3, 0.5) == pytest.approx((1 - 0.5**4) / 0.5)  # 1.875
    assert expected_tokens_per_round(4, 1.0) == 5  # every draft accepted, plus the bonus token
    assert expected_tokens_per_round(4, 0.0) == 1  # only the target's own token


@given(gamma=st.integers(1, 32), alpha=st.floats(0.0, 0.999))
def test_expected_tokens_between_one_and_gamma_plus_one(gamma, alpha):
    e = float(expected_tokens_per_round(gamma, alpha))
    assert 1.0 - 1e-9 <= e <= gamma + 1 + 1e-9


def test_verify_raises_decode_intensity(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    s = speculate(
        m,
        cat.model("llama-3.1-8b"),
        hw,
        Deployment(tp=4),
        Deployment(tp=4),
        1,
        4096,
        np.array([1.0, 3.0, 7.0]),
        0.8,
    )
    base = float(s.baseline.arithmetic_intensity)
    # at batch 1 the verify pass of γ + 1 tokens reads the same bytes: ~(γ + 1)× the intensity
    for g, i in zip((1, 3, 7), s.verify.arithmetic_intensity, strict=True):
        assert i == pytest.approx((g + 1) * base, rel=0.15)


def test_speedup_needs_acceptance(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    args = (m, cat.model("llama-3.1-8b"), hw, Deployment(tp=4), Deployment(tp=4), 1, 4096)
    good = speculate(*args, np.array([4.0]), 0.8)
    hopeless = speculate(*args, np.array([4.0]), 0.0)
    assert float(good.speedup_ideal[0]) > 1.5
    assert float(hopeless.speedup_ideal[0]) < 1.0  # drafts cost time and yield nothing


def test_cli_speculate(run):
    doc = run(
        "speculate",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--draft",
        "llama-3.1-8b",
        "--acceptance",
        "0.8",
        "--format",
        "json",
    ).json()
    assert doc["best_gamma"] in range(1, 9)
    assert {"gamma", "tokens_per_round", "verify_arithmetic_intensity", "speedup_expected"} <= set(
        doc["rows"][0]
    )
    bad = run(
        "speculate", "llama-3.1-70b", "h100", "--draft", "llama-3.1-8b", "--acceptance", "1.5"
    )
    assert bad.code == 2 and "--acceptance" in bad.stderr

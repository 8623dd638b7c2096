"""Closed forms the op counts use (ops.py), and as_float, the one-point/array switch of their
inputs."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.roofline import FloatArray

_POINT = (float, int, np.float64)


def as_float(x: ArrayLike) -> FloatArray:
    """An array, or for one point a Python float: the same IEEE arithmetic as numpy's, without
    its per-operation overhead (the per-point path, tests/test_point_path.py)."""
    if type(x) in _POINT:
        return float(x)  # type: ignore[return-value]
    return np.asarray(x, dtype=float)


def sum_capped(first: ArrayLike, last: ArrayLike, window: int | None) -> FloatArray:
    """Σ_{t=first}^{last} min(t, w) in closed form (w = None: no cap). Zero when last < first.

    Used for causal prefill (pairs attended by queries 1..S under a sliding window) and for the
    total KV read over a request's decode steps."""
    a, b = as_float(first), as_float(last)
    n = np.maximum(b - a + 1, 0.0)
    if window is None:
        return n * (a + b) / 2.0
    m = np.clip(window, a - 1, np.maximum(b, a - 1))  # last t that is still below the cap
    below = (m * (m + 1) - (a - 1) * a) / 2.0
    return np.where(n > 0, below + (np.maximum(b, a - 1) - m) * window, 0.0)


def expected_experts(n_experts: int, top_k: int, tokens: ArrayLike) -> FloatArray:
    """Expected distinct experts touched by t tokens with uniform top-k routing:
    E·(1 − (1 − k/E)^t) (k at t = 1, → E as t grows)."""
    t = as_float(tokens)
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** t)

"""Closed forms the op counts use (ops.py), and as_float, the one-point/array switch of their
inputs."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from roofline.timing.roofline import FloatArray, FloatOrArray

_POINT = (float, int, np.float64)


def as_float(x: ArrayLike) -> FloatOrArray:
    """An array, or for one point a Python float: the same IEEE arithmetic as numpy's, without
    its per-operation overhead (the per-point path, tests/test_point_path.py)."""
    if type(x) in _POINT:
        return float(x)  # type: ignore[arg-type]
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


def expected_experts(n_experts: int, top_k: int, tokens: ArrayLike) -> FloatOrArray:
    """Expected distinct experts touched by t tokens with uniform top-k routing:
    E·(1 − (1 − k/E)^t) (k at t = 1, → E as t grows)."""
    t = as_float(tokens)
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** t)


def expert_tile_padding(
    step_rows: ArrayLike, top_k: int, n_experts: int, tile: int
) -> FloatOrArray:
    """Work a grouped (per-expert) GEMM does over the work its rows need, when each expert's rows
    are padded to whole tiles of `t` rows: E[⌈n/t⌉]·t / λ, with n the rows routed to one expert,
    Poisson with mean λ = T·k/E (independent uniform top-k routing of the step's T rows: the least
    padding any routing gives [uncertain: real routers are skewed]). E[⌈n/t⌉] = Σ_{j≥0} P(n > j·t)
    (an expert with no row runs no tile), P(n > x) by the normal approximation with continuity
    correction. The tile is min(tile, T rounded up to 8) (llama.cpp's mul_mat_q_case picks the
    column tile from the step's rows, ggml/src/ggml-cuda/mmq.cuh). 1 when tile = 0."""
    if tile <= 0:
        return 1.0
    rows = np.asarray(step_rows, dtype=float)
    t = np.minimum(float(tile), 8.0 * np.ceil(np.maximum(rows, 1.0) / 8.0))
    lam = np.maximum(rows * top_k / n_experts, 1e-9)
    sd = np.sqrt(lam)
    total = -np.expm1(-lam)  # P(n > 0)
    erfc = np.vectorize(math.erfc, otypes=[float])
    j_max = int(np.max(np.ceil((lam + 8.0 * sd + 1.0) / t))) + 1
    for j in range(1, j_max + 1):
        total = total + 0.5 * erfc((j * t + 0.5 - lam) / (sd * math.sqrt(2.0)))
    out = total * t / lam
    return float(out) if out.ndim == 0 else out

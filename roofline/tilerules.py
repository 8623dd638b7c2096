"""The output tile a GEMM library picks per shape, as its own dispatch code decides: pure
functions, numpy broadcasting (and a one-point twin in Python floats).

vLLM's CUTLASS 2.x FP8 GEMM on Ada (sm89; csrc/quantization/cutlass_w8a8/c2x/
scaled_mm_c2x_sm89_fp8_dispatch.cuh, cutlass_gemm_sm89_fp8_dispatch): the rows M pick a config
(M ≤ 16, ≤ 32, ≤ 64, ≤ 128, ≤ 256, larger) and, inside it, the next power of two of N
(np2 = next_pow_2(N)) picks the thread block tile t_m × t_n:

    M ≤ 16:   np2 ≤ 8192: 16×64;  ≤ 24576: 16×128; else 32×64
    M ≤ 32:   np2 ≤ 8192: 32×64;  ≤ 16384: 32×128; else 32×64
    M ≤ 64:   np2 ≤ 8196: 64×64;  ≤ 16384: 64×128; else 64×64
    M ≤ 128:  np2 ≤ 8192: 64×128; ≤ 16384: 128×128; else 128×64
    M ≤ 256:  np2 ≤ 4096: 64×128; else 128×128
    M > 256:  np2 ≤ 4096: 128×128; ≤ 8192: 256×128; else 128×128

The kernel is a CUTLASS 2.x GemmUniversal in kGemm mode with one batch (scaled_mm_c2x.cuh,
cutlass_gemm_caller): every thread block runs the whole K loop, no split-K.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

VLLM_SM89_FP8 = "vllm_sm89_fp8"
TILE_RULES = (VLLM_SM89_FP8,)

# (largest M of the config, [(largest next_pow_2(N), t_m, t_n), ...]); the last N bucket is open
_SM89_FP8 = (
    (16.0, ((8192.0, 16.0, 64.0), (24576.0, 16.0, 128.0), (math.inf, 32.0, 64.0))),
    (32.0, ((8192.0, 32.0, 64.0), (16384.0, 32.0, 128.0), (math.inf, 32.0, 64.0))),
    (64.0, ((8196.0, 64.0, 64.0), (16384.0, 64.0, 128.0), (math.inf, 64.0, 64.0))),
    (128.0, ((8192.0, 64.0, 128.0), (16384.0, 128.0, 128.0), (math.inf, 128.0, 64.0))),
    (256.0, ((4096.0, 64.0, 128.0), (math.inf, 128.0, 128.0))),
    (math.inf, ((4096.0, 128.0, 128.0), (8192.0, 256.0, 128.0), (math.inf, 128.0, 128.0))),
)


def next_pow_2(n: ArrayLike) -> np.ndarray:
    """The smallest power of two ≥ n (n ≥ 1; vLLM's next_pow_2), inf kept."""
    nn = np.maximum(np.asarray(n, dtype=float), 1.0)
    return np.exp2(np.ceil(np.log2(nn)))


def rule_tiles(rule: str, m: ArrayLike, n: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(t_m, t_n) per GEMM of M × N under a library's tile rule (see the module docstring)."""
    if rule != VLLM_SM89_FP8:
        raise ValueError(f"unknown tile rule {rule!r}")
    mm, np2 = np.broadcast_arrays(np.asarray(m, dtype=float), next_pow_2(n))
    tm, tn = np.zeros(mm.shape), np.zeros(mm.shape)
    lower = -math.inf
    for m_top, buckets in _SM89_FP8:
        in_m = (mm > lower) & (mm <= m_top)
        n_lower = -math.inf
        for n_top, a, b in buckets:
            sel = in_m & (np2 > n_lower) & (np2 <= n_top)
            tm, tn = np.where(sel, a, tm), np.where(sel, b, tn)
            n_lower = n_top
        lower = m_top
    return tm, tn


def rule_tiles_one(rule: str, m: float, n: float) -> tuple[float, float]:
    """rule_tiles for one GEMM, in Python floats."""
    if rule != VLLM_SM89_FP8:
        raise ValueError(f"unknown tile rule {rule!r}")
    np2 = 2.0 ** math.ceil(math.log2(max(n, 1.0))) if math.isfinite(n) else math.inf
    for m_top, buckets in _SM89_FP8:
        if m <= m_top:
            for n_top, a, b in buckets:
                if np2 <= n_top:
                    return a, b
    return 0.0, 0.0  # NaN shapes

"""The roofline itself: intensity, ridge point, attainable FLOP/s, time per op and its bound.

Williams, Waterman & Patterson, "Roofline: an insightful visual performance model" (CACM 2009);
notation after the scaling book (T_math, T_comms): for an op with F FLOPs and Q bytes on a chip with
peak P and bandwidth W, T = max(F / P, Q / W); it is compute-bound iff F / Q >= P / W.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def arithmetic_intensity(flops: ArrayLike, bytes_moved: ArrayLike) -> FloatArray:
    """I = F / Q in FLOP per byte (inf when nothing moves, 0 when nothing is computed)."""
    f, q = np.asarray(flops, dtype=float), np.asarray(bytes_moved, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, f / np.where(q > 0, q, 1.0), np.where(f > 0, np.inf, 0.0))


def attainable_flops_per_s(intensity: ArrayLike, peak_flops_per_s: float, bw_bytes_per_s: float):
    """Attainable performance = min(P, I · W) (the roof)."""
    return np.minimum(peak_flops_per_s, np.asarray(intensity, dtype=float) * bw_bytes_per_s)


def op_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    eta_compute: float = 1.0,
    eta_memory: float = 1.0,
) -> FloatArray:
    """T = max(F / (P·η_c), Q / (W·η_m)): math and memory traffic overlap perfectly within an op."""
    t_math_s = np.asarray(flops, dtype=float) / (peak_flops_per_s * eta_compute)
    t_mem_s = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * eta_memory)
    return np.maximum(t_math_s, t_mem_s)


def bound(intensity: ArrayLike, ridge_flops_per_byte: float) -> NDArray[np.str_]:
    """'compute' where I >= I* (the ridge point, at η = 1), else 'memory'."""
    return np.where(np.asarray(intensity) >= ridge_flops_per_byte, "compute", "memory")

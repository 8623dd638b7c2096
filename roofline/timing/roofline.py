"""The roofline itself: intensity, ridge point, time per op and its bound.

Williams, Waterman & Patterson, "Roofline: an insightful visual performance model" (CACM 2009);
notation after the scaling book (T_math, T_comms): for an op with F FLOPs and Q bytes on a chip with
peak P and bandwidth W, T = max(F / P, Q / W); it is compute-bound iff F / Q >= P / W.

For one point (every quantity one number) numpy's per-call overhead, about a microsecond a ufunc,
costs far more than the arithmetic, so each array function of roofline/timing/ has a float twin
beside it (`*_one`): Python floats, the same IEEE operations in the same order, and numpy's
semantics for the few non-arithmetic steps (maximum, minimum, ceil and floor below), so every
value is bit for bit the array function's on a 0-d array (tests/test_point_path.py).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
# What a broadcasting formula returns: an array, or on the one-point fast path one number (a
# np.float64, which is a float).
FloatOrArray = float | FloatArray
_SCALARS = (float, int, np.float64)


def _point(x: object) -> bool:
    """One number (a Python or numpy scalar, or a 0-d array): the scalar fast path applies."""
    return type(x) in _SCALARS or (type(x) is np.ndarray and x.ndim == 0)


def intensity_one(flops: float, bytes_moved: float) -> float:
    """arithmetic_intensity of one point, in Python floats."""
    return flops / bytes_moved if bytes_moved > 0 else (math.inf if flops > 0 else 0.0)


def arithmetic_intensity(flops: ArrayLike, bytes_moved: ArrayLike) -> FloatOrArray:
    """I = F / Q in FLOP per byte (inf when nothing moves, 0 when nothing is computed)."""
    if _point(flops) and _point(bytes_moved):  # one point: plain floats, same formula
        return np.float64(intensity_one(float(flops), float(bytes_moved)))  # type: ignore[arg-type]
    f, q = np.asarray(flops, dtype=float), np.asarray(bytes_moved, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, f / np.where(q > 0, q, 1.0), np.where(f > 0, np.inf, 0.0))


def op_time_one(flops: float, bytes_moved: float, p: float, w: float) -> float:
    """op_time_s of one point in Python floats, at the effective peak p = P·η_c and bandwidth
    w = W·η_m (both > 0)."""
    t_math_s, t_mem_s = flops / p, bytes_moved / w
    if math.isnan(t_math_s) or math.isnan(t_mem_s):
        return math.nan  # as np.maximum: NaN propagates
    return t_math_s if t_math_s >= t_mem_s else t_mem_s


def op_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    eta_compute: float = 1.0,
    eta_memory: float = 1.0,
) -> FloatOrArray:
    """T = max(F / (P·η_c), Q / (W·η_m)): math and memory traffic overlap perfectly within an op."""
    p, w = peak_flops_per_s * eta_compute, bw_bytes_per_s * eta_memory
    if _point(flops) and _point(bytes_moved) and p > 0 and w > 0:  # one point, plain floats
        return np.float64(op_time_one(float(flops), float(bytes_moved), p, w))  # type: ignore[arg-type]
    t_math_s = np.asarray(flops, dtype=float) / (peak_flops_per_s * eta_compute)
    t_mem_s = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * eta_memory)
    return np.maximum(t_math_s, t_mem_s)


_COMPUTE, _MEMORY = np.str_("compute"), np.str_("memory")


def bound(intensity: ArrayLike, ridge_flops_per_byte: float) -> NDArray[np.str_]:
    """'compute' where I >= I* (the ridge point, at η = 1), else 'memory'."""
    if _point(intensity):  # one point
        return _COMPUTE if float(intensity) >= ridge_flops_per_byte else _MEMORY  # type: ignore
    return np.where(np.asarray(intensity) >= ridge_flops_per_byte, "compute", "memory")


def maximum(a: float, b: float) -> float:
    """np.maximum of two floats: the larger, NaN if either is NaN."""
    return a if (a >= b or a != a) else b


def minimum(a: float, b: float) -> float:
    """np.minimum of two floats: the smaller, NaN if either is NaN."""
    return a if (a <= b or a != a) else b


def ceil(x: float) -> float:
    """np.ceil of a float (±inf and NaN as they are)."""
    return float(math.ceil(x)) if math.isfinite(x) else x


def floor(x: float) -> float:
    """np.floor of a float (±inf and NaN as they are)."""
    return float(math.floor(x)) if math.isfinite(x) else x

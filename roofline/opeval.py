"""Helpers of phases.py's per-op evaluation, and its fast path for one point.

For one point (every op's FLOPs and bytes a scalar) the ops of a step are stacked into arrays and
each roofline function (arithmetic_intensity, op_time_s, bound, efficiency.gemm_time_s) is called
once per step, or once per group of GEMMs sharing a curve and a peak, instead of once per op:
the same elementwise formulas on the same float64 numbers, so every per-op value is the one the
per-op call gives, bit for bit (tests/test_point_path.py). Ops outside those groups (weight-only
GEMMs, fused attention) keep the per-op call. The kernel curves of an Efficiency (with the CLI's
--eta overrides applied) are resolved once per (Efficiency, dtype), not per op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from roofline.efficiency import (
    GROUPED_OPS,
    KERNELS_PER_OP,
    AttentionCurve,
    GemmCurve,
    MoeCurve,
    PrefillAttentionCurve,
    gemm_time_s,
    scaled,
)
from roofline.hardware import Accelerator, Efficiency
from roofline.ops import Deployment, Op
from roofline.roofline import FloatArray, arithmetic_intensity, bound, op_time_s


def weight_bytes_per_value(op: Op, dep: Deployment) -> float:
    """Bytes per stored weight of the op: the weight format's for quantised linears, else the
    16-bit 'other' format's (router, embedding, head)."""
    return dep.linear_bits / 8.0 if op.quantized else dep.other_bits / 8.0


def gemm_rows(flops: ArrayLike, weight_bytes: ArrayLike, bytes_per_value: ArrayLike) -> FloatArray:
    """Rows of a GEMM (tokens; tokens per expert for an MoE layer): F·b_w / (2·Q_weights), since
    F = 2·params·rows and Q_weights = params·b_w (ops.py); at least 1, and 1 without weights.
    Elementwise, so it serves one op or a stack of them."""
    w = np.asarray(weight_bytes, dtype=float)
    f = np.asarray(flops, dtype=float)
    rows = f * bytes_per_value / (2.0 * np.where(w > 0, w, 1.0))
    return np.where(w > 0, np.maximum(rows, 1.0), 1.0)


def gemm_rows_one(flops: float, weight_bytes: float, bytes_per_value: float) -> float:
    """gemm_rows for one op in Python floats: the same IEEE operations in the same order (and
    NaN kept, as np.maximum keeps it)."""
    if not weight_bytes > 0:
        return 1.0
    rows = flops * bytes_per_value / (2.0 * weight_bytes)
    return rows if (rows >= 1.0 or rows != rows) else 1.0


def cached_by_identity(
    store: dict[tuple, tuple[tuple, Any]], objs: tuple, extra: tuple, build: Callable[[], Any]
) -> Any:
    """build(), memoised on the identity of `objs` and the hashable `extra`: the objects are kept
    beside the value, so their ids cannot be reused by others while cached; the store is emptied
    past 256 entries."""
    key = (*map(id, objs), *extra)
    hit = store.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], objs, strict=True)):
        return hit[1]
    value = build()
    if len(store) > 256:
        store.clear()
    store[key] = (objs, value)
    return value


@dataclass(frozen=True)
class KernelView:
    """The curves an Efficiency's ops run on for one compute dtype, with the CLI's overrides
    applied once (scaled, capped), not per op."""

    sc: float  # --eta-compute scale of the curves' plateaus
    sm: float  # --eta-memory scale
    base: GemmCurve  # the dtype's GEMM curve
    b16: GemmCurve  # the 16-bit curve (weight-only GEMMs, attention without a curve, gathers)
    decode_attention: AttentionCurve | None
    prefill_attention: PrefillAttentionCurve | None
    moe: MoeCurve | None  # the fused MoE layer's curve for the dtype (16-bit dtypes share one)


_VIEWS: dict[tuple, tuple[tuple, KernelView]] = {}


def kernel_view(eff: Efficiency, dtype: str) -> KernelView:
    """The KernelView of (eff, dtype), cached by the Efficiency's identity."""
    return cached_by_identity(_VIEWS, (eff,), (dtype,), lambda: _kernel_view(eff, dtype))


def _kernel_view(eff: Efficiency, dtype: str) -> KernelView:
    ks = eff.kernels
    assert ks is not None
    sc, sm = eff.compute / ks.compute_ref, eff.memory / ks.memory_ref  # CLI overrides scale
    base = scaled(ks.gemm_curve(dtype) or GemmCurve(ks.compute_ref, ks.memory_ref), sc, sm)
    b16 = scaled(ks.gemm_curve("bf16") or base, sc, sm)
    attn = ks.decode_attention
    if attn is not None:
        attn = replace(attn, eta_memory=min(attn.eta_memory * sm, 1.0))
    pre = ks.prefill_attention
    if pre is not None:
        pre = replace(pre, eta_max=min(pre.eta_max * sc, 1.0))
    moe = ks.moe.get("bf16" if dtype in ("fp16", "bf16") else dtype)
    if moe is not None:
        moe = replace(
            moe,
            eta_max=min(moe.eta_max * sc, 1.0),
            eta_memory=min(moe.eta_memory * sm, 1.0),
            eta_act=min(moe.eta_act * sm, 1.0),
        )
    return KernelView(sc, sm, base, b16, attn, pre, moe)


def is_point(ops: list[Op], attn_shape: tuple[ArrayLike, ArrayLike]) -> bool:
    """Whether every op quantity (and the attention shape) is one number, not an array."""
    for op in ops:
        if (
            type(op.flops) is np.ndarray
            or type(op.weight_bytes) is np.ndarray
            or type(op.kv_bytes) is np.ndarray
            or type(op.act_bytes) is np.ndarray
        ):
            return False
    return not any(type(x) is np.ndarray for x in attn_shape)


# (intensity, ridge, bound, t_ideal_s, t_expected_s) of one op
Verdict = tuple[Any, float, Any, Any, Any]


@dataclass(frozen=True)
class _Plan:
    """What one step's op list needs besides its numbers, the same at every point of a
    deployment: the non-collective ops, their peaks and ridges, and how each expected time is
    found (the GEMM groups by curve and peak, or the per-op call)."""

    idx: tuple[int, ...]  # the non-collective ops, by index in the op list
    dtypes: tuple[str, ...]
    peaks: tuple[float, ...]
    p: np.ndarray
    ridges: tuple[float, ...]
    ridge: np.ndarray
    eta_m: np.ndarray | None  # without kernel curves: each op's bandwidth share
    matmuls: tuple[bool, ...]  # GEMM rows from F and the weights; others M = N = inf
    per_value_list: tuple[float, ...]  # bytes per weight value
    n: np.ndarray
    kernels: np.ndarray
    grouped: np.ndarray  # expert groups a GEMM spans (inf for GROUPED_OPS: tile padding only)
    groups: tuple[tuple[GemmCurve, float, tuple[int, ...]], ...]  # curve, peak, members
    per_op: tuple[int, ...]  # weight-only GEMMs and fused attention: the per-op call


def _plan(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
) -> _Plan:
    idx = tuple(i for i, op in enumerate(ops) if not op.is_collective)
    sel = [ops[i] for i in idx]
    w = hw.memory_bandwidth_bytes_per_s
    dtypes = tuple(attn_dtype if op.kind == "attention" else dtype for op in sel)
    peaks = tuple(hw.peak(d, sparse=op.sparse) for d, op in zip(dtypes, sel, strict=True))
    ridges = tuple(pk / w for pk in peaks)
    eta_m = None
    groups: dict[tuple[int, float], tuple[GemmCurve, list[int]]] = {}
    per_op: list[int] = []
    if eff.kernels is None:
        dequant = [op.quantized and dep.weights.weight_only for op in sel]
        eta_m = np.array([eff.memory_dequant if d else eff.memory for d in dequant], dtype=float)
    else:
        view = kernel_view(eff, dtype)
        attention_curves = view.decode_attention is not None or view.prefill_attention is not None
        for j, op in enumerate(sel):
            if op.kind == "matmul":
                weight_only = op.quantized and (
                    dep.weights.weight_only or dtypes[j] != dep.weights.compute
                )
                curve = view.base
            else:  # gathers and curve-less attention: the 16-bit plateau, M = N = inf
                weight_only = False
                curve = view.b16
            fused_moe = op.name in GROUPED_OPS and view.moe is not None
            if weight_only or fused_moe or (op.kind == "attention" and attention_curves):
                per_op.append(j)
                continue
            groups.setdefault((id(curve), peaks[j]), (curve, []))[1].append(j)
    return _Plan(
        idx,
        dtypes,
        peaks,
        np.array(peaks, dtype=float),
        ridges,
        np.array(ridges, dtype=float),
        eta_m,
        tuple(op.kind == "matmul" for op in sel),
        tuple(weight_bytes_per_value(op, dep) for op in sel),
        np.array([(op.gemm_n or np.inf) if op.kind == "matmul" else np.inf for op in sel]),
        np.array([KERNELS_PER_OP.get(op.name, 1.0) * op.layers for op in sel], dtype=float),
        np.array([np.inf if op.name in GROUPED_OPS else 1.0 for op in sel]),
        tuple((c, pk, tuple(js)) for (_, pk), (c, js) in groups.items()),
        tuple(per_op),
    )


_PLANS: dict[tuple, tuple[tuple, _Plan]] = {}


def _cached_plan(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
) -> _Plan:
    """The plan of an op list, cached by the identity of (hw, dep, eff) and the ops' structure."""
    shape = tuple((op.name, op.kind, op.layers, op.sparse, op.quantized, op.gemm_n) for op in ops)
    return cached_by_identity(
        _PLANS,
        (hw, dep, eff),
        (dtype, attn_dtype, shape),
        lambda: _plan(ops, hw, dep, eff, dtype, attn_dtype),
    )


def evaluate_point(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
    expected_op_s: Callable[[Op, str, float], Any],
) -> dict[int, Verdict]:
    """The roofline verdict of every non-collective op of one point, by op index: what phases.py
    computes per op, with the roofline and GEMM functions called once on the stacked ops (once
    per GEMM group: every op goes in, each keeps its own group's value).
    `expected_op_s(op, op_dtype, peak)` is the per-op expected time, for the ops not batched."""
    plan = _cached_plan(ops, hw, dep, eff, dtype, attn_dtype)
    if not plan.idx:
        return {}
    sel = [ops[i] for i in plan.idx]
    w = hw.memory_bandwidth_bytes_per_s
    flops = [op.flops for op in sel]
    moved = [op.bytes for op in sel]
    # intensity and bound per op: their one-point paths cost less than an array call here
    intensity = [arithmetic_intensity(a, b) for a, b in zip(flops, moved, strict=True)]
    verdict = [bound(x, r) for x, r in zip(intensity, plan.ridges, strict=True)]
    f = np.array(flops, dtype=float)
    q = np.array(moved, dtype=float)
    t_ideal = op_time_s(f, q, plan.p, w)
    if plan.eta_m is not None:
        t_exp = list(op_time_s(f, q, plan.p, w, eff.compute, plan.eta_m))
    else:
        t_exp = [None] * len(sel)
        if plan.groups:
            m = np.array(
                [
                    gemm_rows_one(float(a), float(op.weight_bytes), pv) if mm else np.inf
                    for a, op, pv, mm in zip(
                        flops, sel, plan.per_value_list, plan.matmuls, strict=True
                    )
                ],
                dtype=float,
            )
            for curve, peak, members in plan.groups:
                t = gemm_time_s(f, q, m, plan.n, peak, w, curve, plan.kernels, plan.grouped)
                for j in members:
                    t_exp[j] = t[j]
        for j in plan.per_op:
            t_exp[j] = expected_op_s(sel[j], plan.dtypes[j], plan.peaks[j])
    return {
        i: (intensity[j], plan.ridges[j], verdict[j], t_ideal[j], t_exp[j])
        for j, i in enumerate(plan.idx)
    }

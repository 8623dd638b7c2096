"""One op's expected time under the kernel curves (expected_op_s), the helpers of phases.py's
per-op evaluation, and its fast path for one point.

For one point (every op's FLOPs and bytes a number) each op is evaluated in Python floats:
roofline.py's one-point forms (intensity_one, op_time_one) and pointkernels' float twins of the
kernel curves (GEMM with its wave quantisation, decode and prefill attention), the same IEEE
operations in the same order as the array functions, so every per-op value is the one the per-op
call gives on 0-d arrays, bit for bit (tests/test_point_path.py); numpy's per-call overhead, far
above the arithmetic for one number, is gone. Weight-only GEMMs and the fused MoE layer keep the
per-op call. What does not change between points of a deployment (each op's dtype, peak, ridge,
curve, N, kernel count; the kernel curves with the CLI's --eta overrides applied) is a plan
cached by the identity of the accelerator, deployment and efficiency objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from roofline.closedform import expert_tile_padding
from roofline.hardware import Accelerator, Efficiency
from roofline.memo import cached_by_identity
from roofline.ops import Deployment, Op
from roofline.timing.attention import (
    AttentionCurve,
    PrefillAttentionCurve,
    attention_decode_time_one,
    attention_decode_time_s,
    prefill_attention_time_one,
    prefill_attention_time_s,
)
from roofline.timing.gemm import (
    GROUPED_OPS,
    KERNELS_PER_OP,
    GemmCurve,
    MoeCurve,
    dequant_time_s,
    gemm_time_one,
    gemm_time_s,
    moe_time_s,
    scaled,
)
from roofline.timing.gemv import op_alu_time_s
from roofline.timing.roofline import FloatArray, bound, intensity_one, op_time_one, op_time_s


def expert_padding(op: Op, dep: Deployment) -> FloatArray:
    """The factor on a routed-expert op's FLOPs when the engine's kernels pad each expert's rows
    to whole tiles (the weight format's expert_tile, precision.engine_weight_format;
    closedform.expert_tile_padding), for steps of at least one full tile of rows (prefill): 1
    for other ops and for narrower steps, whose tiles are as narrow as the step (the vector
    kernels up to 8 rows), where the cost of a mostly empty tile is its weight unpacking, not its
    multiply-adds [uncertain]. Expected time only: the ideal counts the useful FLOPs."""
    tile = dep.weights.expert_tile
    if op.routed is None or tile <= 0 or not dep.weights.weight_only:
        return 1.0
    rows, k, e = op.routed
    pad = expert_tile_padding(rows, k, e, tile)
    if np.ndim(rows):
        return np.where(np.asarray(rows) >= tile, pad, 1.0)
    return pad if rows >= tile else 1.0


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


def is_point(ops: list[Op], attn_shape: tuple[ArrayLike, ...]) -> bool:
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

# how a point's op finds its expected time
SHARES = 0  # no kernel curves: the roofline at the family's η shares
GEMM = 1  # a GEMM-shaped kernel (GEMMs, gathers, curve-less attention): pointkernels twin
DECODE_ATTENTION = 2  # fused decode attention: pointkernels twin
PREFILL_ATTENTION = 3  # fused prefill attention: pointkernels twin
CALL = 4  # weight-only GEMMs and the fused MoE layer: the per-op call


@dataclass(frozen=True, slots=True)
class _OpPlan:
    """What one op of a step needs besides its numbers, the same at every point of a
    deployment."""

    index: int  # in the op list
    dtype: str
    peak: float  # the datasheet peak (ideal, ridge)
    peak_exp: float  # the peak the expected time runs at (hardware.Accelerator.expected_peak)
    ridge: float
    how: int
    eta: float = 0.0  # SHARES: the bandwidth share; attention: b16's compute / memory share
    eta_compute: float = 1.0  # SHARES: the compute share
    curve: Any = None  # GEMM: the GemmCurve; the attention curves from the kernel view
    matmul: bool = False  # GEMM rows from F and the weights; others M = N = inf
    per_value: float = 0.0  # bytes per weight value
    n: float = math.inf
    kernels: float = 1.0
    groups: float = 1.0  # expert groups a GEMM spans (inf for GROUPED_OPS: tile padding only)
    alu: bool = False  # SHARES: a block-kernel linear with a mat-vec ALU floor (gemvalu.py)


def op_dtype(op: Op, hw: Accelerator, dtype: str, attn_dtype: str) -> str:
    """The dtype an op multiplies in: attention in the activations' (`attn_dtype`), a
    non-expert layer of a checkpoint that quantizes the experts only in its own format's
    (op.compute), every other op in the step's (`dtype`)."""
    if op.compute is not None:
        return hw.resolve_compute(op.compute)
    return attn_dtype if op.kind == "attention" else dtype


def _plan(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
    phase: str,
) -> tuple[_OpPlan, ...]:
    """The plan of every non-collective op, mirroring expected_op_s's choices."""
    w = hw.memory_bandwidth_bytes_per_s
    view = kernel_view(eff, dtype) if eff.kernels is not None else None
    out = []
    for i, op in enumerate(ops):
        if op.is_collective:
            continue
        d = op_dtype(op, hw, dtype, attn_dtype)
        peak = hw.peak(d, sparse=op.sparse)
        kernels = KERNELS_PER_OP.get(op.name, 1.0) * op.layers
        common = {
            "index": i,
            "dtype": d,
            "peak": peak,
            "peak_exp": hw.expected_peak(d, sparse=op.sparse),
            "ridge": peak / w,
            "kernels": kernels,
        }
        if view is None:
            dequant = op.quantized and dep.weights.weight_only
            eta_m = eff.memory_dequant if dequant else eff.memory
            blocks = op.quantized and dep.weights.block_kernels
            eta_c = eff.compute_dequant if blocks else eff.compute
            alu = op.quantized and dep.weights.alu_flops > 0
            out.append(_OpPlan(**common, how=SHARES, eta=eta_m, eta_compute=eta_c, alu=alu))
            continue
        eta = 0.0
        if op.kind == "matmul":
            weight_only = op.quantized and (dep.weights.weight_only or d != dep.weights.compute)
            fused_moe = op.name in GROUPED_OPS and view.moe is not None
            how = CALL if weight_only or fused_moe else GEMM
            curve = (view if op.compute is None else kernel_view(eff, d)).base
        elif op.kind == "attention" and phase == "decode" and view.decode_attention is not None:
            how, curve, eta = DECODE_ATTENTION, view.decode_attention, view.b16.eta_max
        elif op.kind == "attention" and phase == "prefill" and view.prefill_attention is not None:
            how, curve, eta = PREFILL_ATTENTION, view.prefill_attention, view.b16.eta_memory
        else:  # gathers and curve-less attention: the 16-bit plateau, M = N = inf
            how, curve = GEMM, view.b16
        matmul = op.kind == "matmul"
        plan = _OpPlan(
            **common,
            how=how,
            eta=eta,
            curve=curve,
            matmul=matmul,
            per_value=weight_bytes_per_value(op, dep),
            n=(op.gemm_n or math.inf) if matmul else math.inf,
            groups=math.inf if op.name in GROUPED_OPS else 1.0,
        )
        out.append(plan)
    return tuple(out)


_PLANS: dict[tuple, tuple[tuple, tuple[_OpPlan, ...]]] = {}


def _cached_plan(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
    phase: str,
) -> tuple[_OpPlan, ...]:
    """The plan of an op list, cached by the identity of (hw, dep, eff) and the ops' structure."""
    shape = tuple(
        (op.name, op.kind, op.layers, op.sparse, op.quantized, op.gemm_n, op.compute) for op in ops
    )
    return cached_by_identity(
        _PLANS,
        (hw, dep, eff),
        (dtype, attn_dtype, phase, shape),
        lambda: _plan(ops, hw, dep, eff, dtype, attn_dtype, phase),
    )


def evaluate_point(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    attn_dtype: str,
    phase: str,
    attn_shape: tuple[float, ...],
    expected_op_s: Callable[[Op, str, float], Any],
) -> list[Verdict | None]:
    """The roofline verdict of every op of one point (None for collectives), in Python floats:
    what phases.py computes per op through roofline.py and efficiency.py, here through their
    one-point forms (roofline.py's *_one, pointkernels). `attn_shape` is phases' (rows, streams)
    in decode, (prompt, rows) in prefill; `expected_op_s(op, op_dtype, peak)` is the per-op
    expected time, for the ops left to it (and any the float forms cannot take: a zero peak),
    given the expected peak (hardware.Accelerator.expected_peak; the ideal keeps the datasheet
    one)."""
    w = hw.memory_bandwidth_bytes_per_s
    out: list[Verdict | None] = [None] * len(ops)
    a, b = float(attn_shape[0]), float(attn_shape[1])
    kv_heads = float(attn_shape[2]) if len(attn_shape) == 3 else None  # decode: K heads per GPU
    for p in _cached_plan(ops, hw, dep, eff, dtype, attn_dtype, phase):
        op = ops[p.index]
        f, q, how, pe = float(op.flops), float(op.bytes), p.how, p.peak_exp
        t_exp: Any = None
        try:
            t_ideal = op_time_one(f, q, p.peak, w)
            if how == GEMM:
                m = gemm_rows_one(f, float(op.weight_bytes), p.per_value) if p.matmul else math.inf
                t_exp = gemm_time_one(f, q, m, p.n, pe, w, p.curve, p.kernels, p.groups)
            elif how == DECODE_ATTENTION:
                t_exp = attention_decode_time_one(
                    f, q, pe, w, p.curve, p.eta, a, b, p.kernels, kv_heads
                )
            elif how == PREFILL_ATTENTION:
                t_exp = prefill_attention_time_one(f, q, a, pe, w, p.curve, p.eta, p.kernels, b)
            elif how == SHARES:
                pad = expert_padding(op, dep)
                t_exp = op_time_one(f * pad, q, pe * p.eta_compute, w * p.eta)
                if p.alu:
                    t_exp = max(t_exp, float(op_alu_time_s(op, dep, hw, eff.alu_dequant)))
        except ZeroDivisionError:  # where numpy gives inf or NaN: the array functions
            t_ideal, t_exp = op_time_s(f, q, p.peak, w), None
            if how == SHARES:
                t_exp = op_time_s(f * expert_padding(op, dep), q, pe, w, p.eta_compute, p.eta)
                if p.alu:
                    t_exp = np.maximum(t_exp, op_alu_time_s(op, dep, hw, eff.alu_dequant))
        if t_exp is None:
            t_exp = expected_op_s(op, p.dtype, pe)
        intensity = intensity_one(f, q)
        out[p.index] = (intensity, p.ridge, bound(intensity, p.ridge), t_ideal, t_exp)
    return out


def _gemm_m(op: Op, dep: Deployment) -> FloatArray:
    """Rows of the op's GEMM (tokens; tokens per expert for an MoE layer): F·b_w / (2·Q_weights),
    since F = 2·params·rows and Q_weights = params·b_w (ops.py)."""
    return gemm_rows(op.flops, op.weight_bytes, weight_bytes_per_value(op, dep))


def expected_op_s(
    op: Op,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    dtype: str,
    peak: float,
    phase: str,
    attn_shape: tuple[ArrayLike, ...],
) -> FloatArray:
    """An op's expected time under the accelerator's kernel curves (roofline/efficiency.py);
    `peak` is the expected peak (hardware.Accelerator.expected_peak), not the datasheet's."""
    ks = eff.kernels
    w = hw.memory_bandwidth_bytes_per_s
    assert ks is not None
    view = kernel_view(eff, dtype)
    base, b16, sm = view.base, view.b16, view.sm
    kernels = KERNELS_PER_OP.get(op.name, 1.0) * op.layers
    if op.kind == "matmul":
        m = _gemm_m(op, dep)
        n = op.gemm_n or np.inf
        weight_only = op.quantized and (dep.weights.weight_only or dtype != dep.weights.compute)
        groups = np.inf if op.name in GROUPED_OPS else 1.0
        if groups > 1 and view.moe is not None and not weight_only:  # the fused MoE curve
            return moe_time_s(
                op.flops, op.weight_bytes, op.kv_bytes + op.act_bytes, m, peak, w, view.moe, kernels
            )
        if not weight_only:
            return gemm_time_s(op.flops, op.bytes, m, n, peak, w, base, kernels, groups)
        bits = dep.weights.bits
        wo = ks.weight_only.get("int8" if bits > 6 else "int4")
        if wo is None:  # no measured weight-only kernel: the 16-bit curve at the scalar share
            curve = replace(b16, eta_memory=eff.memory_dequant)
            return gemm_time_s(op.flops, op.bytes, m, n, peak, w, curve, kernels, groups)
        if wo.gemm is not None:  # the weight-only kernel's own curve
            curve = scaled(wo.gemm, view.sc, sm)
        else:
            curve = replace(b16, eta_memory=min(wo.eta_memory * sm, 1.0), latency_s=wo.latency_s)
        weights = np.asarray(op.weight_bytes, dtype=float) / weight_bytes_per_value(op, dep)
        # the dequantising ALUs run at the same (sustained) clock as the tensor cores
        fp32 = hw.peak_flops_per_s.get("fp32")
        alu = peak / 16.0 if fp32 is None else fp32 * hw.sustained_compute_ratio
        t = gemm_time_s(op.flops, op.bytes, m, n, peak, w, curve, kernels, groups)
        return t + dequant_time_s(weights, m, alu, wo)
    if op.kind == "attention" and phase == "decode" and view.decode_attention is not None:
        rows, streams, kv_heads = attn_shape if len(attn_shape) == 3 else (*attn_shape, None)
        curve = view.decode_attention
        return attention_decode_time_s(
            op.flops, op.bytes, peak, w, curve, b16.eta_max, rows, streams, kernels, kv_heads
        )
    if op.kind == "attention" and phase == "prefill" and view.prefill_attention is not None:
        prompt, rows = attn_shape
        return prefill_attention_time_s(
            op.flops,
            op.bytes,
            prompt,
            peak,
            w,
            view.prefill_attention,
            b16.eta_memory,
            kernels,
            rows,
        )
    # attention without a measured curve (at the 16-bit plateau) and gathers (memory-bound)
    return gemm_time_s(op.flops, op.bytes, np.inf, np.inf, peak, w, b16, kernels)

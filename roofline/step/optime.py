"""One op's time, the one dispatcher: every op of a step gets its roofline verdict here (intensity,
ridge, bound, ideal and expected time), and roofline/step/phases.py only sums them.

The ideal is the roofline at the datasheet peak (roofline/timing/roofline.py). The expected time
takes, in this order: a collective its link's measured curve (roofline/timing/collectives.py);
an op of a family without kernel curves the roofline at the family's scalar shares (with the
mat-vec ALU floor of llama.cpp's block kernels, roofline/timing/gemv.py); every other op its GPU
generation's kernel curve, at the expected peak (hardware.Accelerator.expected_peak): GEMMs by
shape and dtype, weight-only GEMMs with their dequantisation, the fused MoE layer
(roofline/timing/gemm.py), fused decode and prefill attention (roofline/timing/attention.py).

Which of them an op takes, and what does not change between points of a deployment (its dtype,
peaks, ridge, curve with the CLI's --eta overrides applied, N, kernel count), is an op plan cached
by the identity of the accelerator, deployment and efficiency objects. For one point (every op's
FLOPs and bytes a number) the plan runs through the float twins (*_one) of the timing functions,
bit for bit the array functions on 0-d arrays (tests/test_point_path.py); weight-only GEMMs, the
fused MoE layer and collectives keep the array call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.layout import links
from roofline.step.closedform import expert_tile_padding
from roofline.step.memo import cached_by_identity
from roofline.step.moe_curves import dtype_key, engine_moe_curve, moe_curve, moe_key, scaled_moe
from roofline.step.ops import Deployment, Op
from roofline.timing.attention import (
    AttentionCurve,
    PrefillAttentionCurve,
    attention_decode_time_one,
    attention_decode_time_s,
    mla_tile_padding,
    prefill_attention_time_one,
    prefill_attention_time_s,
)
from roofline.timing.collectives import collective_curves, collective_time_s
from roofline.timing.gemm import (
    GemmCurve,
    MoeCurve,
    WeightOnlyCurve,
    dequant_time_s,
    gemm_time_one,
    gemm_time_s,
    moe_time_s,
    scaled,
)
from roofline.timing.gemv import op_alu_time_s
from roofline.timing.host import EngineProfile
from roofline.timing.roofline import (
    FloatArray,
    FloatOrArray,
    arithmetic_intensity,
    bound,
    intensity_one,
    op_time_one,
    op_time_s,
)

# Kernels one op of ops.py stands for, per layer: the MLP is gate/up + down, an MoE layer the two
# grouped GEMMs (vLLM fused_moe, SGLang, TensorRT-LLM: w13 then w2).
KERNELS_PER_OP = {"mlp": 2.0, "moe.experts": 2.0, "moe.shared": 2.0}
# Grouped GEMMs: one kernel runs every expert's tiles, so the SMs fill from many groups and only
# each group's tile padding counts (gemm.wave_quantisation with groups = ∞).
GROUPED_OPS = frozenset({"moe.experts"})
# the Links field of each collective kind (the op builder's own mapping: roofline/step/ops.py)
_LINK_OF = {"allreduce": "tp", "alltoall": "ep", "p2p": "pp"}


@dataclass(frozen=True)
class OpResult:
    """An op with its roofline verdict."""

    op: Op
    intensity: FloatOrArray
    ridge_flops_per_byte: float
    bound: np.ndarray  # "compute" | "memory" | "link" | "latency"
    t_ideal_s: FloatOrArray
    t_expected_s: FloatOrArray


def expert_padding(op: Op, dep: Deployment) -> FloatOrArray:
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


def kernel_view(eff: Efficiency, dtype: str, block_scaled: bool = False) -> KernelView:
    """The KernelView of (eff, dtype, block-scaled FP8 or not), cached by the Efficiency's
    identity."""
    key = (dtype, block_scaled)
    return cached_by_identity(_VIEWS, (eff,), key, lambda: _kernel_view(eff, dtype, block_scaled))


def _kernel_view(eff: Efficiency, dtype: str, block_scaled: bool = False) -> KernelView:
    ks = eff.kernels
    assert ks is not None
    sc, sm = eff.compute / ks.compute_ref, eff.memory / ks.memory_ref  # CLI overrides scale
    own = ks.gemm_curve(dtype, block_scaled)
    base = scaled(own or GemmCurve(ks.compute_ref, ks.memory_ref), sc, sm)
    b16 = scaled(ks.gemm_curve("bf16") or base, sc, sm)
    attn = ks.decode_attention
    if attn is not None:
        attn = replace(attn, eta_memory=min(attn.eta_memory * sm, 1.0))
    pre = ks.prefill_attention
    if pre is not None:
        pre = replace(pre, eta_max=min(pre.eta_max * sc, 1.0))
    moe = ks.moe.get(dtype_key(dtype))
    if moe is None and ks.moe:  # a dtype with no fused-MoE data of its own (the 4-bit formats)
        moe = ks.moe.get("fp8") or ks.moe.get("bf16")  # borrows the module's shape (gemm.py)
    if moe is not None:
        moe = scaled_moe(moe, sc, sm)
    return KernelView(sc, sm, base, b16, attn, pre, moe)


def engine_moe_plan(p: _OpPlan, eff: Efficiency, engine: str | None) -> _OpPlan:
    """A fused MoE op's plan on the engine's own measured fused MoE (moe_curves.engine_moe_curve)
    when the family has one for the engine and dtype; any other plan unchanged."""
    own = engine_moe_curve(eff, p.moe_key, engine) if p.how == MOE else None
    return p if own is None else p._replace(curve=own)


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


def op_dtype(op: Op, hw: Accelerator, dtype: str, attn_dtype: str) -> str:
    """The dtype an op multiplies in: attention in the activations' (`attn_dtype`), a
    non-expert layer of a checkpoint that quantizes the experts only in its own format's
    (op.compute), every other op in the step's (`dtype`)."""
    if op.compute is not None:
        return hw.resolve_compute(op.compute)
    return attn_dtype if op.kind == "attention" else dtype


# how an op finds its expected time
COLLECTIVE = 0  # its link's measured curve, never below the alpha-beta ideal
SHARES = 1  # no kernel curves: the roofline at the family's η shares
GEMM = 2  # a GEMM-shaped kernel (GEMMs, gathers, curve-less attention)
WEIGHT_ONLY = 3  # a weight-only GEMM: its curve plus the dequantisation
MOE = 4  # the fused MoE layer
DECODE_ATTENTION = 5  # fused decode attention
PREFILL_ATTENTION = 6  # fused prefill attention


class _OpPlan(NamedTuple):  # a NamedTuple: built for every op of a new deployment, and cheaply
    """What one op of a step needs besides its numbers, the same at every point of a
    deployment."""

    how: int
    dtype: str = ""
    peak: float = 0.0  # the datasheet peak (ideal, ridge)
    peak_exp: float = 0.0  # the peak the expected time runs at (Accelerator.expected_peak)
    ridge: float = 0.0
    eta: float = 0.0  # SHARES: the bandwidth share; attention: b16's compute / memory share
    eta_compute: float = 1.0  # SHARES: the compute share
    curve: Any = None  # the GemmCurve (scaled), MoeCurve or attention curve
    matmul: bool = False  # GEMM rows from F and the weights; others M = N = inf
    per_value: float = 0.0  # bytes per weight value
    n: float = math.inf
    kernels: float = 1.0
    groups: float = 1.0  # expert groups a GEMM spans (inf for GROUPED_OPS: tile padding only)
    alu: bool = False  # SHARES: a block-kernel linear with a mat-vec ALU floor (gemv.py)
    dequant: WeightOnlyCurve | None = None  # WEIGHT_ONLY: the measured kernel's extra cost
    alu_peak: float = 0.0  # WEIGHT_ONLY: the dequantising ALUs' FLOP/s
    moe_key: str = ""  # MOE: the kernels.yaml dtype key of its curve (engine_moe_plan)


def _plan(
    ops: list[Op], hw: Accelerator, dep: Deployment, eff: Efficiency, phase: str
) -> tuple[_OpPlan, ...]:
    """Every op's plan: which time it takes (module docstring) and with what."""
    dtype = dep.compute(hw)
    attn_dtype = hw.resolve_compute(dep.activations.compute)
    w = hw.memory_bandwidth_bytes_per_s
    views: dict[tuple[str, bool], KernelView] = {}
    out = []
    curve: AttentionCurve | PrefillAttentionCurve
    for op in ops:
        if op.is_collective:
            out.append(_OpPlan(COLLECTIVE))
            continue
        d = op_dtype(op, hw, dtype, attn_dtype)
        peak, peak_exp = hw.peak(d, sparse=op.sparse), hw.expected_peak(d, sparse=op.sparse)
        kernels = KERNELS_PER_OP.get(op.name, 1.0) * op.layers
        common: dict[str, Any] = {
            "dtype": d,
            "peak": peak,
            "peak_exp": peak_exp,
            "ridge": peak / w,
            "kernels": kernels,
        }
        if eff.kernels is None:
            dequant = op.quantized and dep.weights.weight_only
            blocks = op.quantized and dep.weights.block_kernels
            eta_m = (eff.memory_dequant if blocks else eff.memory_affine) if dequant else eff.memory
            eta_c = eff.compute_dequant if blocks else eff.compute
            alu = op.quantized and dep.weights.alu_flops > 0
            out.append(_OpPlan(SHARES, **common, eta=eta_m, eta_compute=eta_c, alu=alu))
            continue
        vk = (d, op.block_scaled)
        view = views.get(vk) or views.setdefault(vk, kernel_view(eff, d, op.block_scaled))
        if op.kind == "matmul":
            common |= {
                "matmul": True,
                "per_value": weight_bytes_per_value(op, dep),
                "n": op.gemm_n or math.inf,
                "groups": math.inf if op.name in GROUPED_OPS else 1.0,
            }
            weight_only = op.quantized and (dep.weights.weight_only or d != dep.weights.compute)
            # the fused MoE module, its expert weights dequantised inside it when weight-only:
            # that format's own measured module when the family has one (moe_curve)
            wo_name = dep.weights.name if weight_only else None
            moe = moe_curve(eff, view.moe, view.sc, view.sm, wo_name)
            if op.name in GROUPED_OPS and moe is not None:
                key = moe_key(d, wo_name, eff.kernels)
                out.append(_OpPlan(MOE, **common, curve=moe, moe_key=key))
            elif weight_only:
                out.append(_weight_only_plan(common, hw, dep, eff, view))
            else:
                out.append(_OpPlan(GEMM, **common, curve=view.base))
        elif op.kind == "attention" and phase == "decode" and view.decode_attention is not None:
            curve = view.decode_attention
            # compute-bound (MLA): the family's measured MLA decode share, else the GEMM plateau
            eta = min(curve.eta_compute * view.sc, 1.0) if curve.eta_compute else view.b16.eta_max
            out.append(_OpPlan(DECODE_ATTENTION, **common, curve=curve, eta=eta))
        elif op.kind == "attention" and phase == "prefill" and view.prefill_attention is not None:
            curve, eta = view.prefill_attention, view.b16.eta_memory
            out.append(_OpPlan(PREFILL_ATTENTION, **common, curve=curve, eta=eta))
        else:  # gathers and curve-less attention: the 16-bit plateau, M = N = inf
            out.append(_OpPlan(GEMM, **common, curve=view.b16))
    return tuple(out)


def _weight_only_plan(
    common: dict[str, Any], hw: Accelerator, dep: Deployment, eff: Efficiency, view: KernelView
) -> _OpPlan:
    """A weight-only GEMM: the measured weight-only kernel's own curve, else the 16-bit curve at
    its bandwidth share and latency, plus its dequantisation on the ALUs; with no measured
    kernel the 16-bit curve at the family's weight-only share."""
    assert eff.kernels is not None
    wo = eff.kernels.weight_only.get("int8" if dep.weights.bits > 6 else "int4")
    if wo is None:
        curve = replace(view.b16, eta_memory=eff.memory_dequant)
        return _OpPlan(GEMM, **common, curve=curve)
    if wo.gemm is not None:
        curve = scaled(wo.gemm, view.sc, view.sm)
    else:
        eta_m = min(wo.eta_memory * view.sm, 1.0)
        curve = replace(view.b16, eta_memory=eta_m, latency_s=wo.latency_s)
    # the dequantising ALUs run at the same (sustained) clock as the tensor cores
    fp32 = hw.peak_flops_per_s.get("fp32")
    alu = common["peak_exp"] / 16.0 if fp32 is None else fp32 * hw.sustained_compute_ratio
    return _OpPlan(WEIGHT_ONLY, **common, curve=curve, dequant=wo, alu_peak=alu)


_PLANS: dict[tuple, tuple[tuple, tuple[_OpPlan, ...]]] = {}


def _cached_plan(
    ops: list[Op], hw: Accelerator, dep: Deployment, eff: Efficiency, phase: str
) -> tuple[_OpPlan, ...]:
    """The plan of an op list, cached by the identity of (hw, dep, eff) and the ops' structure."""
    shape = tuple(
        (
            op.name,
            op.kind,
            op.layers,
            op.sparse,
            op.quantized,
            op.gemm_n,
            op.compute,
            op.block_scaled,
        )
        for op in ops
    )
    return cached_by_identity(
        _PLANS, (hw, dep, eff), (phase, shape), lambda: _plan(ops, hw, dep, eff, phase)
    )


def op_results(
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    phase: str,
    attn_shape: tuple[ArrayLike, ...],
    profile: EngineProfile | None,
) -> tuple[list[OpResult], bool]:
    """Every op's verdict in a step, and whether the step is one point (Python floats).
    `attn_shape` is phases' (rows, streams, KV heads) in decode, (prompt, rows) in prefill;
    `profile` the engine, whose own all-reduce a measured NVLink all-reduce may take."""
    point = is_point(ops, attn_shape)
    plans = _cached_plan(ops, hw, dep, eff, phase)
    ridge = hw.ridge_flops_per_byte(dep.compute(hw))  # a collective's row shows the step's
    home = hw.scale_up or hw.host_link
    ks = eff.kernels
    own_allreduce = profile.allreduce_kernel if profile is not None else None
    own_moe = profile.moe_kernel if profile is not None else None
    step = _Step(hw, dep, eff, attn_shape)
    # a deployment built without its layout, wider than the scale-up domain: each collective
    # takes the link its group spans (layout.links)
    spans = dep.links is None and _spans_host(hw, dep)
    own = links(dep.layout, hw) if spans else None
    zero = np.zeros(())
    out = []
    t_ideal: FloatOrArray
    for op, p in zip(ops, plans, strict=True):
        if p.how == COLLECTIVE:
            lk = op.link or home
            if own is not None:
                lk = getattr(own, _LINK_OF.get(op.kind, "tp")) or lk
                op = op if op.link is lk else replace(op, link=lk)
            assert lk is not None  # the op builder refuses TP/PP > 1 without a link
            curves = collective_curves(lk, home, ks, eff.links, own_allreduce, phase)
            t_ideal, t, verdict = collective_time_s(
                op.kind, lk, op.ranks, op.message_bytes, op.layers, curves
            )
            out.append(OpResult(op, zero, ridge, verdict, t_ideal, t))
        elif point:
            p = engine_moe_plan(p, eff, own_moe)
            out.append(_point_result(op, p, step))
        else:
            p = engine_moe_plan(p, eff, own_moe)
            intensity = arithmetic_intensity(op.flops, op.bytes)
            t_ideal = op_time_s(op.flops, op.bytes, p.peak, hw.memory_bandwidth_bytes_per_s)
            t_exp = _expected_s(op, p, step)
            out.append(OpResult(op, intensity, p.ridge, bound(intensity, p.ridge), t_ideal, t_exp))
    return out, point


def _spans_host(hw: Accelerator, dep: Deployment) -> bool:
    """A replica wider than the scale-up domain (NVLink-bridged pairs beyond TP2, say): some
    group may leave the scale-up link, so the layout's links apply."""
    up = hw.scale_up
    return up is not None and (up.domain_gpus or 1) < dep.gpus_per_replica


class _Step(NamedTuple):
    """What every op of one step is timed against (op_results): the chip, the deployment, the
    efficiencies and the step's attention shape."""

    hw: Accelerator
    dep: Deployment
    eff: Efficiency
    attn_shape: tuple[ArrayLike, ...]


def _expected_s(op: Op, p: _OpPlan, step: _Step) -> FloatOrArray:
    """An op's expected time by its plan, through the array functions (any shape)."""
    hw, dep, eff, attn_shape = step
    w, pe, how, k = hw.memory_bandwidth_bytes_per_s, p.peak_exp, p.how, p.kernels
    if how == SHARES:
        f_exp = op.flops * expert_padding(op, dep)  # engine tiles padding routed experts
        t: FloatOrArray = op_time_s(f_exp, op.bytes, pe, w, p.eta_compute, p.eta)
        if p.alu:  # block mat-vec ALU floor (timing/gemv.py)
            t = np.maximum(t, op_alu_time_s(op, dep, hw, eff.alu_dequant))
        return t
    if how == DECODE_ATTENTION:
        shape = attn_shape if len(attn_shape) == 3 else (*attn_shape, None)
        rows, streams, kv_heads = cast(tuple[ArrayLike, ArrayLike, ArrayLike | None], shape)
        return attention_decode_time_s(
            op.flops * mla_tile_padding(op.latent_group, p.curve.head_tile),
            op.bytes,
            pe,
            w,
            p.curve,
            p.eta,
            rows,
            streams,
            k,
            kv_heads,
        )
    if how == PREFILL_ATTENTION:
        prompt, rows = attn_shape
        return prefill_attention_time_s(op.flops, op.bytes, prompt, pe, w, p.curve, p.eta, k, rows)
    m = gemm_rows(op.flops, op.weight_bytes, p.per_value) if p.matmul else np.inf
    if how == MOE:
        act = op.kv_bytes + op.act_bytes
        experts, tiles = op.moe_grid if op.moe_grid is not None else (0.0, 0.0)
        return moe_time_s(
            op.flops, op.weight_bytes, act, m, pe, w, p.curve, k, experts, tiles, op.layers
        )
    t = gemm_time_s(op.flops, op.bytes, m, p.n, pe, w, p.curve, k, p.groups)
    if how == WEIGHT_ONLY:
        weights = np.asarray(op.weight_bytes, dtype=float) / p.per_value
        assert p.dequant is not None  # _weight_only_plan sets it
        t = t + dequant_time_s(weights, m, p.alu_peak, p.dequant)
    return t


def _point_result(op: Op, p: _OpPlan, step: _Step) -> OpResult:
    """An op's verdict at one point, in Python floats through the float twins; weight-only
    GEMMs, the fused MoE layer and what the floats cannot take (a zero peak: ZeroDivisionError,
    where numpy gives inf or NaN) through the array functions."""
    hw, dep, eff, attn_shape = step
    w = hw.memory_bandwidth_bytes_per_s
    f, q, how, pe = float(op.flops), float(op.bytes), p.how, p.peak_exp
    t_exp: Any = None
    t_ideal: FloatOrArray
    try:
        t_ideal = op_time_one(f, q, p.peak, w)
        if how == GEMM:
            m = gemm_rows_one(f, float(op.weight_bytes), p.per_value) if p.matmul else math.inf
            t_exp = gemm_time_one(f, q, m, p.n, pe, w, p.curve, p.kernels, p.groups)
        elif how == DECODE_ATTENTION:
            a, b = float(attn_shape[0]), float(attn_shape[1])  # type: ignore[arg-type]
            kv = float(attn_shape[2]) if len(attn_shape) == 3 else None  # type: ignore[arg-type]
            f_exp = f * float(mla_tile_padding(op.latent_group, p.curve.head_tile))
            t_exp = attention_decode_time_one(f_exp, q, pe, w, p.curve, p.eta, a, b, p.kernels, kv)
        elif how == PREFILL_ATTENTION:
            a, b = float(attn_shape[0]), float(attn_shape[1])  # type: ignore[arg-type]
            t_exp = prefill_attention_time_one(f, q, a, pe, w, p.curve, p.eta, p.kernels, b)
        elif how == SHARES:
            f_exp = f * cast(float, expert_padding(op, dep))  # one point: a float
            t_exp = op_time_one(f_exp, q, pe * p.eta_compute, w * p.eta)
            if p.alu:
                t_exp = max(t_exp, float(op_alu_time_s(op, dep, hw, eff.alu_dequant)))
    except ZeroDivisionError:
        t_ideal, t_exp = op_time_s(f, q, p.peak, w), None
    if t_exp is None:
        t_exp = _expected_s(op, p, step)
    intensity = intensity_one(f, q)
    return OpResult(op, intensity, p.ridge, bound(intensity, p.ridge), t_ideal, t_exp)

"""Prefill, decode and a whole request: per-op roofline times and TTFT, TPOT, E2E, throughput.

Metrics, defined once (DESIGN.md §3):
- TTFT: the prefill of the prompt (it produces the first output token); no queueing here.
- TPOT: mean time per output token after the first = the mean decode step over the O−1 steps at
  KV lengths S+1 … S+O−1 (closed form: Σ KV(t) = O·KV(S) + kv_per_token·O(O−1)/2).
- E2E = TTFT + (O−1)·TPOT.
- output_tokens_per_s = replicas × batch × O / E2E (a static batch start to finish).
- decode_time_fraction = (O−1)·TPOT / E2E.
Times per op are summed over the layer (the sum of per-op maxima, not the max of the sums). The
ideal time uses η = 1 and no overhead (the speed of light); the expected time divides peaks by the
hardware entry's efficiencies and adds its fixed per-step overhead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.errors import InputError
from roofline.hardware import Accelerator, Efficiency
from roofline.layout import distinct_stages, pipeline_time_s
from roofline.model import ModelArch
from roofline.ops import Deployment, Op, decode_ops, prefill_ops
from roofline.parallel import allreduce_time_s, alltoall_time_s, is_latency_bound, send_time_s
from roofline.roofline import FloatArray, arithmetic_intensity, bound, op_time_s


@dataclass(frozen=True)
class OpResult:
    """An op with its roofline verdict."""

    op: Op
    intensity: FloatArray
    ridge_flops_per_byte: float
    bound: np.ndarray  # "compute" | "memory" | "link" | "latency"
    t_ideal_s: FloatArray
    t_expected_s: FloatArray


@dataclass(frozen=True)
class PhaseResult:
    """One forward step (prefill, or the mean decode step), totals per GPU."""

    name: str
    compute_dtype: str
    ops: tuple[OpResult, ...]
    flops: FloatArray
    weight_bytes: FloatArray
    kv_bytes: FloatArray
    activation_bytes: FloatArray
    link_bytes: FloatArray
    ridge_flops_per_byte: float
    t_ideal_s: FloatArray
    t_expected_s: FloatArray

    @property
    def bytes(self) -> FloatArray:
        return self.weight_bytes + self.kv_bytes + self.activation_bytes

    @property
    def arithmetic_intensity(self) -> FloatArray:
        return arithmetic_intensity(self.flops, self.bytes)

    @property
    def bound(self) -> np.ndarray:
        return bound(self.arithmetic_intensity, self.ridge_flops_per_byte)


def _evaluate(name: str, ops: list[Op], hw: Accelerator, dep: Deployment, eff: Efficiency):
    dtype = dep.compute(hw)
    ridge = hw.ridge_flops_per_byte(dtype)
    attn_dtype = hw.resolve_compute(dep.activations.compute)
    link = hw.scale_up or hw.host_link
    results = []
    zero = np.zeros(())
    link_total = zero
    for op in ops:
        if op.is_collective:
            lk = op.link or link
            assert lk is not None  # the op builder refuses TP/PP > 1 without a link
            if op.kind == "p2p":
                t = send_time_s(lk, op.message_bytes) * op.layers
            else:
                timer = alltoall_time_s if op.kind == "alltoall" else allreduce_time_s
                t = timer(lk, op.ranks, op.message_bytes) * op.layers
            latency = is_latency_bound(lk, op.ranks, op.message_bytes)
            verdict = np.where(latency, "latency", "link")
            link_total = link_total + np.asarray(op.message_bytes) * op.layers
            results.append(OpResult(op, zero, ridge, verdict, t, t))
            continue
        op_dtype = attn_dtype if op.kind == "attention" else dtype
        peak = hw.peak(op_dtype, sparse=op.sparse)
        w = hw.memory_bandwidth_bytes_per_s
        intensity = arithmetic_intensity(op.flops, op.bytes)
        t_ideal = op_time_s(op.flops, op.bytes, peak, w)
        dequant = op.quantized and dep.weights.weight_only
        eta_m = eff.memory_dequant if dequant else eff.memory
        t_exp = op_time_s(op.flops, op.bytes, peak, w, eff.compute, eta_m)
        results.append(
            OpResult(op, intensity, peak / w, bound(intensity, peak / w), t_ideal, t_exp)
        )

    def total(attr: str):
        return sum((getattr(r.op, attr) for r in results), zero)

    t_ideal = sum((r.t_ideal_s for r in results), zero)
    t_exp = sum((r.t_expected_s for r in results), zero) + eff.step_overhead_s
    return PhaseResult(
        name,
        dtype,
        tuple(results),
        total("flops"),
        total("weight_bytes"),
        total("kv_bytes"),
        total("act_bytes"),
        link_total,
        ridge,
        t_ideal,
        t_exp,
    )


def _scaled(r: OpResult, m) -> OpResult:
    op = r.op
    scaled = replace(
        op,
        flops=op.flops * m,
        weight_bytes=op.weight_bytes * m,
        kv_bytes=op.kv_bytes * m,
        act_bytes=op.act_bytes * m,
        message_bytes=np.asarray(op.message_bytes) * m,
    )
    return replace(r, op=scaled, t_ideal_s=r.t_ideal_s * m, t_expected_s=r.t_expected_s * m)


def _pipelined(name: str, model: ModelArch, hw, dep: Deployment, eff, batch, build, rounds=1.0):
    """One step of a PP pipeline: `batch` in m micro-batches (dep.microbatches, at most the
    batch) through every stage; each distinct stage is evaluated for one micro-batch and the
    slowest sets the pace (layout.pipeline_time_s). Per GPU a step does m micro-batch passes
    (each reads the stage's weights again); the idle fill/drain time is a `pp.bubble` row, so
    the rows still add up to the step. Without PP: the one stage, as is."""
    if dep.pp == 1:
        return _evaluate(name, build(batch, None), hw, dep, eff)
    b = np.asarray(batch, dtype=float)
    m = np.minimum(float(dep.pipeline_microbatches), np.maximum(b, 1.0))
    results = [
        _evaluate(name, build(b / m, st), hw, dep, eff) for st in distinct_stages(model, dep.pp)
    ]
    slow = max(results, key=lambda r: float(np.max(r.t_expected_s)))
    n = np.maximum(np.asarray(rounds, dtype=float), 1.0)
    stage_i = np.maximum.reduce([r.t_ideal_s for r in results])
    stage_e = np.maximum.reduce([r.t_expected_s for r in results])
    t_i = pipeline_time_s(stage_i, dep.pp, m, n) / n
    t_e = pipeline_time_s(stage_e, dep.pp, m, n) / n
    zero = np.zeros_like(t_e)
    bubble_op = Op("pp.bubble", "bubble", 1, zero, zero, zero, zero)
    bubble = OpResult(
        bubble_op,
        zero,
        slow.ridge_flops_per_byte,
        np.full(np.shape(t_e), "pipeline"),
        t_i - m * slow.t_ideal_s,
        t_e - m * slow.t_expected_s,
    )
    return replace(
        slow,
        ops=(*(_scaled(r, m) for r in slow.ops), bubble),
        flops=slow.flops * m,
        weight_bytes=slow.weight_bytes * m,
        kv_bytes=slow.kv_bytes * m,
        activation_bytes=slow.activation_bytes * m,
        link_bytes=slow.link_bytes * m,
        t_ideal_s=t_i,
        t_expected_s=t_e,
    )


def prefill(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    eff: Efficiency | None = None,
) -> PhaseResult:
    """One batched prefill of `batch` prompts of `prompt` tokens (under PP: m micro-batches
    through the stages, GPipe's (m + pp − 1) stage times)."""
    return _pipelined(
        "prefill",
        model,
        hw,
        dep,
        eff or hw.efficiency,
        batch,
        lambda b, st: prefill_ops(model, hw, dep, b, prompt, st),
    )


def decode(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    steps: ArrayLike = 1,
    eff: Efficiency | None = None,
    new_tokens: ArrayLike = 1,
) -> PhaseResult:
    """The mean decode step over `steps` steps starting at KV length `context`; `new_tokens`
    tokens per sequence per step (more than one verifies speculative drafts). Under PP the
    `steps` rounds share one pipeline fill and drain (layout.pipeline_time_s)."""
    return _pipelined(
        "decode",
        model,
        hw,
        dep,
        eff or hw.efficiency,
        batch,
        lambda b, st: decode_ops(model, hw, dep, b, context, steps, new_tokens, st),
        steps,
    )


@dataclass(frozen=True)
class Timing:
    ttft_s: FloatArray
    tpot_s: FloatArray
    e2e_s: FloatArray
    output_tokens_per_s: FloatArray
    decode_time_fraction: FloatArray


@dataclass(frozen=True)
class RequestResult:
    prefill: PhaseResult
    decode: PhaseResult
    ideal: Timing
    expected: Timing
    replicas: int


def _timing(ttft, tpot, batch, output, replicas) -> Timing:
    o = np.asarray(output, dtype=float)
    decode_s = (o - 1.0) * tpot
    e2e = ttft + decode_s
    return Timing(ttft, tpot, e2e, replicas * np.asarray(batch) * o / e2e, decode_s / e2e)


def request(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    output: ArrayLike,
    replicas: int = 1,
    eff: Efficiency | None = None,
) -> RequestResult:
    """A static batch of `batch` requests, each `prompt` tokens in and `output` tokens out."""
    b, s, o = (np.asarray(x, dtype=float) for x in (batch, prompt, output))
    if np.any(b < 1) or np.any(s < 0) or np.any(o < 1):
        raise InputError("batch and output must be at least 1 and the prompt at least 0 tokens")
    p = prefill(model, hw, dep, b, np.maximum(s, 1.0), eff)
    d = decode(model, hw, dep, b, s + 1.0, np.maximum(o - 1.0, 1.0), eff)
    ideal = _timing(p.t_ideal_s, d.t_ideal_s, b, o, replicas)
    expected = _timing(p.t_expected_s, d.t_expected_s, b, o, replicas)
    return RequestResult(p, d, ideal, expected, replicas)

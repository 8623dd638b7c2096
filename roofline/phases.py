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

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.errors import InputError
from roofline.hardware import Accelerator, Efficiency
from roofline.model import ModelArch
from roofline.ops import Deployment, Op, decode_ops, prefill_ops
from roofline.parallel import allreduce_time_s, alltoall_time_s, is_latency_bound
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
            assert link is not None  # the op builder refuses TP/PP > 1 without a link
            timer = alltoall_time_s if op.kind == "alltoall" else allreduce_time_s
            t = timer(link, op.ranks, op.message_bytes) * op.layers
            latency = is_latency_bound(link, op.ranks, op.message_bytes)
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


def prefill(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    eff: Efficiency | None = None,
) -> PhaseResult:
    """One batched prefill of `batch` prompts of `prompt` tokens."""
    return _evaluate(
        "prefill", prefill_ops(model, hw, dep, batch, prompt), hw, dep, eff or hw.efficiency
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
    tokens per sequence per step (more than one verifies speculative drafts)."""
    return _evaluate(
        "decode",
        decode_ops(model, hw, dep, batch, context, steps, new_tokens),
        hw,
        dep,
        eff or hw.efficiency,
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

"""Prefill, decode and a whole request: per-op roofline times and TTFT, TPOT, E2E, throughput.

Metrics, defined once (DESIGN.md §3):
- TTFT: the prefill of the prompt (it produces the first output token); no queueing here.
- TPOT: mean time per output token after the first = the mean decode step over the O−1 steps at
  KV lengths S+1 … S+O−1 (closed form: Σ KV(t) = O·KV(S) + kv_per_token·O(O−1)/2).
- E2E = TTFT + (O−1)·TPOT.
- output_tokens_per_s = replicas × batch × O / E2E (a static batch start to finish).
- decode_time_fraction = (O−1)·TPOT / E2E.
Times per op (roofline/step/optime.py: the ideal, and the expected time at the GPU generation's
measured kernel curves, or the family's scalar shares without them) are summed over the layer (the
sum of per-op maxima, not the max of the sums). The ideal time uses η = 1 and no overhead (the
speed of light). On the expected time go the engine's per-step host costs (step_time_s), its
per-sequence host cost (roofline/timing/host.py: cpu_per_seq · B, per engine and family) and any
fixed overhead. The engine defaults to the CLI's auto rule (roofline.engines.engine.engine). The
ideal never depends on any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.layout import distinct_stages, pipeline_time_s
from roofline.domain.model import ModelArch
from roofline.domain.precision import chip_weight_format, engine_weight_format
from roofline.engines.engine import ENGINES
from roofline.engines.engine import engine as default_engine
from roofline.step.memo import cached_by_identity
from roofline.step.ops import Deployment, Op, decode_ops, kv_heads_per_gpu, prefill_ops
from roofline.step.optime import OpResult, kernel_view, op_results
from roofline.step.overlap import overlaps, shared_expert_overlap
from roofline.timing.host import (
    Calibration,
    EngineProfile,
    block_fp8_moe_layer_s,
    calibration_of,
    compute_turn_rows,
    kernel_time_factor,
    per_seq_host_s,
    step_time_one,
    step_time_s,
)
from roofline.timing.roofline import (
    FloatArray,
    FloatOrArray,
    arithmetic_intensity,
    bound,
    maximum,
)


@dataclass(frozen=True)
class PhaseResult:
    """One forward step (prefill, or the mean decode step), totals per GPU."""

    name: str
    compute_dtype: str
    ops: tuple[OpResult, ...]
    flops: FloatOrArray
    weight_bytes: FloatOrArray
    kv_bytes: FloatOrArray
    activation_bytes: FloatOrArray
    link_bytes: FloatOrArray
    ridge_flops_per_byte: float
    t_ideal_s: FloatOrArray
    t_expected_s: FloatOrArray
    engine: str = ""  # the engine whose host costs the expected time includes
    t_overhead_s: FloatOrArray = 0.0  # of t_expected_s: engine + fixed per-step costs
    calibration: Calibration | None = None  # family, engine, cases, borrowed, error band

    @property
    def bytes(self) -> FloatOrArray:
        return self.weight_bytes + self.kv_bytes + self.activation_bytes

    @property
    def arithmetic_intensity(self) -> FloatOrArray:
        return arithmetic_intensity(self.flops, self.bytes)

    @property
    def bound(self) -> np.ndarray:
        return bound(self.arithmetic_intensity, self.ridge_flops_per_byte)


def _evaluate(
    name: str,
    ops: list[Op],
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    layers: int = 0,
    engine_name: str | None = None,
    attn_shape: tuple[ArrayLike, ...] = (
        1.0,
        1.0,
    ),  # decode: rows, streams, KV heads; prefill: s, rows
    seqs: ArrayLike = 0.0,  # sequences the step carries (the engine's per-sequence host cost)
    mla: bool = False,  # the model's attention is MLA (the engine's own MLA decode kernel)
):
    """One step: every op's verdict (roofline/step/optime.py), their sums, and the engine's host
    costs on top of the expected time."""
    dtype = dep.compute(hw)
    profile = eff.engines.get(engine_name or "") if eff.engines else None
    results, point = op_results(ops, hw, dep, eff, name, attn_shape, profile)
    results = _own_kernels(results, profile, eff.family, name, mla)
    if overlaps(engine_name, name):  # the engine's two-stream shared expert (step/overlap.py)
        hidden = shared_expert_overlap(results)
        if hidden is not None:
            results = [*results, hidden]
    # totals over the ops, each summed in op order from zero (one pass for all seven)
    zero = np.zeros(())
    start: FloatOrArray = zero if not point else 0.0  # the same sums; Python floats are cheaper
    flops = weight = kv = act = t_ideal = t_ops = start
    link_total: FloatOrArray = zero
    for r in results:
        o = r.op
        flops, weight, kv, act = (
            flops + o.flops,
            weight + o.weight_bytes,
            kv + o.kv_bytes,
            act + o.act_bytes,
        )
        t_ideal, t_ops = t_ideal + r.t_ideal_s, t_ops + r.t_expected_s
        if o.is_collective:
            link_total = link_total + np.asarray(o.message_bytes) * o.layers
    host_seq = per_seq_host_s(  # roofline/timing/host.py
        profile, seqs, eff.family, _turn_rows(profile, eff, hw, dtype, seqs, flops, weight)
    )
    t_exp: FloatOrArray
    if point:
        t_exp = step_time_one(float(t_ops), layers, profile, name) + eff.step_overhead_s
        t_exp = t_exp + host_seq
    else:
        t_exp = step_time_s(t_ops, layers, profile, name) + eff.step_overhead_s + host_seq
    return PhaseResult(
        name,
        dtype,
        tuple(results),
        flops,
        weight,
        kv,
        act,
        link_total,
        hw.ridge_flops_per_byte(dtype),
        t_ideal,
        t_exp,
        engine_name or "",
        t_exp - t_ops,
        _calibration(eff, engine_name or ""),
    )


_CALIBRATIONS: dict[tuple, tuple[tuple, Calibration]] = {}


def _turn_rows(profile, eff: Efficiency, hw: Accelerator, dtype: str, seqs, flops, weight):
    """The batch where this step turns compute bound on the family's GEMM curve
    (host.compute_turn_rows), for an engine whose per-sequence cost on the family is device
    work (per_seq_device); None otherwise (the cost grows with every sequence)."""
    if profile is None or eff.family not in profile.per_seq_device or eff.kernels is None:
        return None
    curve = kernel_view(eff, dtype).base
    return compute_turn_rows(
        seqs,
        flops,
        1.0 / (curve.eta_max * hw.expected_peak(dtype)),
        np.asarray(weight, dtype=float) / (curve.eta_memory * hw.memory_bandwidth_bytes_per_s),
    )


def _own_kernels(
    results: list[OpResult], profile: EngineProfile | None, family: str, phase: str, mla: bool
) -> list[OpResult]:
    """The ops the engine runs on kernels of its own, at their time on this family
    (host.kernel_time_factor): the routed experts' fused MoE GEMMs in every phase, MLA's
    absorbed attention in decode (prefill runs MLA un-absorbed, as MHA), routed experts in
    block-scaled FP8 once more (kind "block_fp8_moe"); block-scaled FP8 GEMMs in prefill (kind
    "fp8_prefill"), and a decode step's fixed time per block-FP8 MoE
    layer (host.block_fp8_moe_layer_s) on the routed experts. The ideal is kept."""
    moe = kernel_time_factor(profile, family, "moe")
    block_moe = kernel_time_factor(profile, family, "block_fp8_moe")
    att = kernel_time_factor(profile, family, "mla") if mla and phase == "decode" else 1.0
    fp8 = kernel_time_factor(profile, family, "fp8_prefill") if phase != "decode" else 1.0
    fixed = block_fp8_moe_layer_s(profile, family) if phase == "decode" else 0.0
    if moe == 1.0 and block_moe == 1.0 and att == 1.0 and fp8 == 1.0 and fixed == 0.0:
        return results
    out = []
    for r in results:
        op = r.op
        x = moe if op.name == "moe.experts" else att if op.kind == "attention" else 1.0
        if op.block_scaled and op.kind == "matmul":
            x *= fp8 * (block_moe if op.name == "moe.experts" else 1.0)
        add = fixed * op.layers if op.name == "moe.experts" and op.block_scaled else 0.0
        if x != 1.0 or add:
            r = replace(r, t_expected_s=r.t_expected_s * x + add)
        out.append(r)
    return out


def _calibration(eff: Efficiency, engine_name: str) -> Calibration:
    """calibration_of, cached by the Efficiency's identity."""
    return cached_by_identity(
        _CALIBRATIONS, (eff,), (engine_name,), lambda: calibration_of(eff, engine_name)
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


def _pipelined(
    name: str,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    batch: ArrayLike,
    build,
    engine_name: str,
    shape,
    rounds: ArrayLike = 1.0,
):
    """One step of a PP pipeline: `batch` in m micro-batches (dep.microbatches, at most the
    batch) through every stage; each distinct stage is evaluated for one micro-batch and the
    slowest sets the pace (layout.pipeline_time_s). Per GPU a step does m micro-batch passes
    (each reads the stage's weights again); the idle fill/drain time is a `pp.bubble` row, so
    the rows still add up to the step. Without PP: the one stage, as is. `shape(b)` is the
    attention shape of b sequences for the kernel model; each stage pays the engine's per-step
    host costs for its own layers. The per-sequence host cost is paid on one attention-DP rank's
    sequences (b / attention_dp): each rank runs its own scheduler process over its own share
    of the batch, in parallel with the others (SGLang's data_parallel_controller.py starts one
    scheduler per DP rank; vLLM's data parallel one engine core per rank)."""
    adp = max(int(dep.attention_dp), 1)
    if dep.pp == 1:
        layers = model.num_hidden_layers
        seqs = batch if adp == 1 else np.asarray(batch, dtype=float) / adp
        return _evaluate(
            name,
            build(batch, None),
            hw,
            dep,
            eff,
            layers,
            engine_name,
            shape(batch),
            seqs,
            model.is_mla,
        )
    b = np.asarray(batch, dtype=float)
    m = np.minimum(float(dep.pipeline_microbatches), np.maximum(b, 1.0))
    layers = max(model.num_hidden_layers // dep.pp, 1)
    results = [
        _evaluate(
            name,
            build(b / m, st),
            hw,
            dep,
            eff,
            layers,
            engine_name,
            shape(b / m),
            b / m / adp,
            model.is_mla,
        )
        for st in distinct_stages(model, dep.pp)
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


def _engine_name(hw: Accelerator, engine: str | None) -> str:
    """The engine whose host costs apply: as given, else the memory module's auto rule (llama.cpp
    on unified memory, vLLM elsewhere), the one the CLI's --engine defaults to."""
    if engine is None or engine.lower() == "auto":
        return default_engine("auto", hw).name
    name = engine.lower()
    if name not in ENGINES and name not in hw.efficiency.engines:
        known = sorted(set(ENGINES) | set(hw.efficiency.engines))
        raise InputError(
            f"unknown engine '{engine}'", hint=f"choose auto or one of {', '.join(known)}"
        )
    return name


_ENGINE_DEPS: dict[tuple, tuple[tuple, Deployment]] = {}


def engine_deployment(dep: Deployment, hw: Accelerator, engine_name: str) -> Deployment:
    """The deployment with its weight format as the chip and the engine's kernels run it
    (precision.chip_weight_format: weight-only where the chip lacks the format's compute;
    precision.engine_weight_format: llama.cpp's GGUF kernels), the same object when unchanged;
    cached by identity so the op and plan caches keep hitting. A GPU with measured kernel curves
    (data-center NVIDIA) keeps its weight-only curve against the 16-bit peak: no MMQ timing was
    measured there, and that curve's shares are of the 16-bit peak [uncertain]."""

    def build() -> Deployment:
        peaks = hw.peak_flops_per_s
        fmt = chip_weight_format(dep.weights, peaks)  # a format the chip cannot multiply in
        if hw.efficiency.kernels is not None:  # the weight-only curves: 16-bit compute
            peaks = {k: v for k, v in peaks.items() if k != "int8"}
        fmt = engine_weight_format(fmt, engine_name, hw.vendor, peaks)
        return dep if fmt is dep.weights else replace(dep, weights=fmt)

    return cached_by_identity(_ENGINE_DEPS, (dep, hw), (engine_name,), build)


def prefill(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    eff: Efficiency | None = None,
    engine: str | None = None,
) -> PhaseResult:
    """One batched prefill of `batch` prompts of `prompt` tokens (under PP: m micro-batches
    through the stages, GPipe's (m + pp − 1) stage times); `engine` (default: the CLI's auto
    rule) sets the per-step host costs of the expected time, and the weight format as its
    kernels run it (engine_deployment)."""
    name = _engine_name(hw, engine)
    dep = engine_deployment(dep, hw, name)
    return _pipelined(
        "prefill",
        model,
        hw,
        dep,
        eff or hw.efficiency,
        batch,
        lambda b, st: prefill_ops(model, hw, dep, b, prompt, st),
        name,
        # attention shape of a prefill: the prompt length and the query heads (sequences × heads)
        lambda b: (prompt, _attention_shape(model, dep, b, 1.0)[0]),
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
    engine: str | None = None,
) -> PhaseResult:
    """The mean decode step over `steps` steps starting at KV length `context`; `new_tokens`
    tokens per sequence per step (more than one verifies speculative drafts). Under PP the
    `steps` rounds share one pipeline fill and drain (layout.pipeline_time_s). The engine
    sets the host costs and the weight format as its kernels run it (engine_deployment)."""
    name = _engine_name(hw, engine)
    dep = engine_deployment(dep, hw, name)
    return _pipelined(
        "decode",
        model,
        hw,
        dep,
        eff or hw.efficiency,
        batch,
        lambda b, st: decode_ops(model, hw, dep, b, context, steps, new_tokens, st),
        name,
        lambda b: _attention_shape(model, dep, b, new_tokens),
        steps,
    )


def _attention_shape(model: ModelArch, dep: Deployment, batch: ArrayLike, queries: ArrayLike):
    """(query-head rows, KV streams, KV heads) per GPU of a decode step's attention: B·q·H/TP
    rows; B·K/TP streams (K heads replicated past TP = K; one latent stream per sequence under
    MLA); K/TP heads (a float: it is the same at every point)."""
    b = np.asarray(batch, dtype=float)
    rows = b * np.asarray(queries, dtype=float) * model.num_attention_heads / dep.tp
    kv = 1.0 if model.is_mla else float(kv_heads_per_gpu(model, dep.tp))
    return rows, b * kv, kv


@dataclass(frozen=True)
class Timing:
    batch_prefill_s: FloatArray  # the batch's prompts prefilled together (one request's TTFT at 1)
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

    @property
    def calibration(self) -> Calibration | None:
        """Calibration status of the expected figures (family, engine, cases, error band)."""
        return self.decode.calibration


_SCALARS = (int, float, np.float64, np.int64)


def _timing(ttft, tpot, batch, output, replicas) -> Timing:
    point = type(output) is float and type(batch) is float  # the same, as scalars
    o = output if point else np.asarray(output, dtype=float)
    b = batch if point else np.asarray(batch)
    decode_s = (o - 1.0) * tpot
    e2e = ttft + decode_s
    return Timing(ttft, tpot, e2e, replicas * b * o / e2e, decode_s / e2e)


def request(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    output: ArrayLike,
    replicas: int = 1,
    eff: Efficiency | None = None,
    engine: str | None = None,
    context: ArrayLike | None = None,
) -> RequestResult:
    """A static batch of `batch` requests, each `prompt` tokens in and `output` tokens out; the
    decode steps attend over prompt + 1 … prompt + output − 1 tokens (their mean), or over
    `context` tokens each when given (a sequence holding `context` tokens: --context)."""
    b: FloatOrArray
    s: FloatOrArray
    o: FloatOrArray
    bad: bool | np.bool_
    s_1: FloatOrArray
    steps: FloatOrArray
    if all(type(x) in _SCALARS for x in (batch, prompt, output)):  # one point: Python floats
        b, s, o = float(batch), float(prompt), float(output)  # type: ignore[arg-type]
        bad = b < 1 or s < 0 or o < 1
        s_1, steps = maximum(s, 1.0), maximum(o - 1.0, 1.0)
    else:
        b, s, o = (np.asarray(x, dtype=float) for x in (batch, prompt, output))
        bad = np.any(b < 1) or np.any(s < 0) or np.any(o < 1)
        s_1, steps = np.maximum(s, 1.0), np.maximum(o - 1.0, 1.0)
    if bad:
        raise InputError("batch and output must be at least 1 and the prompt at least 0 tokens")
    p = prefill(model, hw, dep, b, s_1, eff, engine)
    if context is None:
        d = decode(model, hw, dep, b, s + 1.0, steps, eff, engine=engine)
    else:
        d = decode(model, hw, dep, b, context, 1, eff, engine=engine)
    ideal = _timing(p.t_ideal_s, d.t_ideal_s, b, o, replicas)
    expected = _timing(p.t_expected_s, d.t_expected_s, b, o, replicas)
    return RequestResult(p, d, ideal, expected, replicas)

"""Per-op efficiency: how long a real kernel takes for an op's FLOPs and bytes, and what an engine
adds per step. Pure functions, SI units, numpy broadcasting; the catalog supplies the parameters
(hardware/kernels.yaml, fitted by validation/calibrate_kernels.py; hardware/engines.yaml).

GEMM (one kernel, M tokens × N outputs × K inputs, F = 2MNK FLOPs, Q bytes):
    t = t₀ + max(F·(1 + M½/(M + 16))·(1 + N½/N) / (P·η_max),  Q / (W·η_mem))
The factor 1 + M½/(M + 16) is tile quantisation: a GEMM runs its M rows in tiles of a fixed
height, so a moderate-M GEMM pays for about M½ extra rows of tensor-core work (NVIDIA, "Matrix
Multiplication Background User's Guide", tile and wave quantisation); a GEMV-sized M (a few rows)
runs small-tile / split-K kernels padded to the 16-row MMA tile (PTX ISA, mma.m16n8k16), hence
M + 16 rather than M: the padding fades below 16 rows instead of growing as 1/M. N/(N + N½) is
the same for
the output tiles that must fill the SMs (a narrow TP shard leaves SMs idle). η_max is the plateau
of a large GEMM (clocks under load, epilogue), η_mem the share of bandwidth a weight-streaming
(small-M) GEMM reaches, t₀ the kernel's fixed latency (launch-to-completion of an empty tile).
Weight-only quantised GEMMs (int8/int4 weights, 16-bit math) add the dequantisation ALU work,
ops_per_weight · N·K · max(1, M/128) / P_alu, on the non-tensor (FP32) units: each CTA of 128
rows of M dequantises the weights it uses (TensorRT-LLM fpA_intB kernels; Frantar et al., MARLIN,
2024, §3), which is why those kernels go compute-bound at moderate batch.
Attention (fused, flash): decode t = t₀ + rows·t_row + max(F/(P·η_max), KV·(1 + S½/S)/(W·η_attn))
with S the KV streams; prefill t = t₀ + F·(1 + S½/s)/(P·η_max) over a prompt of s tokens.
MoE grouped GEMMs run on the dense curve at M = the rows each expert receives (tokens × k / experts
touched), N = the expert's sharded width.
An engine adds per step: t_step = max(t_gpu + n_k·gap, n_k·launch) + cpu_step, with n_k kernels
per step (per layer × layers) and launch = 0 under CUDA graphs (one graph launch is part of the
CPU step): a step is launch-bound when the CPU issues kernels slower than the GPU runs them
(NVIDIA, "Getting Started with CUDA Graphs", 2019; vLLM docs, CUDA graphs).
With no kernel curves (families without kernel data) every curve degenerates to the scalar model
t = max(F/(P·η_c), Q/(W·η_m)): M½ = N½ = t₀ = 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

FloatArray = np.ndarray

MMA_ROWS = 16.0  # rows of the smallest tensor-core tile (PTX mma.m16n8k16): a GEMV pads to it
M_TILE_ROWS = 128.0  # rows of M one CTA of a weight-only GEMM dequantises its weights for
# Kernels one op of ops.py stands for, per layer: the MLP is gate/up + down, an MoE layer the two
# grouped GEMMs (vLLM fused_moe, SGLang, TensorRT-LLM: w13 then w2).
KERNELS_PER_OP = {"mlp": 2.0, "moe.experts": 2.0, "moe.shared": 2.0}


@dataclass(frozen=True)
class GemmCurve:
    """GEMM time curve of one dtype on one GPU generation (shares of the chip's own peaks)."""

    eta_max: float
    eta_memory: float
    m_half: float = 0.0
    n_half: float = 0.0
    latency_s: float = 0.0
    fit_median_error: float | None = None


@dataclass(frozen=True)
class WeightOnlyCurve:
    """Extra cost of a weight-only quantised GEMM (16-bit math on int8/int4 weights)."""

    alu_ops_per_weight: float
    eta_memory: float
    latency_s: float = 0.0
    fit_median_error: float | None = None


@dataclass(frozen=True)
class AttentionCurve:
    """Fused decode attention: bandwidth share on the KV read, a fixed latency, a cost per
    (query, head) row and the KV streams (sequences × KV heads) at which half the share is lost."""

    eta_memory: float
    latency_s: float = 0.0
    per_row_s: float = 0.0
    streams_half: float = 0.0
    fit_median_error: float | None = None


@dataclass(frozen=True)
class PrefillAttentionCurve:
    """Causal flash attention over a prompt of s tokens: t = t₀ + F·(1 + S½/s)/(P·η_max)."""

    eta_max: float
    s_half: float = 0.0
    latency_s: float = 0.0
    fit_median_error: float | None = None


@dataclass(frozen=True)
class LinkCurve:
    """Measured all-reduce per GPU count: per-call latency α and the achieved bus bandwidth as a
    share of the measured chip's catalog link bandwidth (so a sibling with a slower link scales)."""

    latency_s: Mapping[int, float]
    bandwidth_share: Mapping[int, float]

    def at(self, ranks: int) -> tuple[float, float]:
        """(α, share) at `ranks` GPUs: the measured count, else interpolated in log2(ranks) and
        held at the ends."""
        ns = sorted(self.latency_s)
        x, xs = np.log2(ranks), np.log2(ns)
        a = float(np.interp(x, xs, [self.latency_s[n] for n in ns]))
        b = float(np.interp(x, xs, [self.bandwidth_share[n] for n in ns]))
        return a, b


@dataclass(frozen=True)
class KernelSet:
    """The kernel curves of one GPU generation (hardware/kernels.yaml)."""

    id: str
    gemm: Mapping[str, GemmCurve]
    weight_only: Mapping[str, WeightOnlyCurve] = field(default_factory=dict)
    decode_attention: AttentionCurve | None = None
    allreduce: LinkCurve | None = None  # NCCL
    engine_allreduce: Mapping[str, LinkCurve] = field(default_factory=dict)  # engines' own
    alltoall: LinkCurve | None = None  # NCCL all-to-all (expert parallelism)
    prefill_attention: PrefillAttentionCurve | None = None
    source: str = ""
    borrowed: bool = False  # the accelerator has no data of its own: it uses this group's
    compute_ref: float = 1.0  # the family's scalar shares when the curves were attached: a
    memory_ref: float = 1.0  # different Efficiency.compute / .memory scales every curve

    def gemm_curve(self, dtype: str) -> GemmCurve | None:
        """The curve for a compute dtype (fp16 and bf16 share one; fp8 falls back to bf16)."""
        for d in (dtype, "bf16" if dtype in ("fp16", "tf32", "fp32") else dtype, "bf16"):
            if d in self.gemm:
                return self.gemm[d]
        return None


@dataclass(frozen=True)
class EngineProfile:
    """Per-step host cost of a serving engine (hardware/engines.yaml)."""

    id: str
    cpu_step_s: float  # scheduling, input preparation, sampling, detokenisation per step
    launch_s: float  # CPU time to launch one kernel without CUDA graphs
    gap_s: float  # GPU idle between two kernels (also inside a CUDA graph)
    kernels_per_layer: float  # kernels one decoder layer launches (GEMMs, attention, norms, ...)
    graphs_decode: bool = True
    graphs_prefill: bool = False
    allreduce_kernel: str = "nccl"  # whose measured all-reduce it runs: an engine id, or nccl
    source: str = ""
    aliases: tuple[str, ...] = ()
    # speculative decoding's host cost (roofline/speculative.py): per round (proposal bookkeeping,
    # rejection sampling, tree masks, the drafter's extra launch) and per sequential draft step
    spec_round_cpu_s: float = 0.0
    spec_draft_step_cpu_s: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """Where an expected figure's efficiencies come from and how far to trust it."""

    family: str
    engine: str
    kernels: str  # the GPU generation whose kernel curves apply ("" = scalar shares only)
    kernels_borrowed: bool  # the accelerator has no kernel data of its own
    cases: int  # published cases of the family behind the case-fitted figures
    error_band: float | None  # the family's out-of-sample median |error| (relative)
    source: str = ""

    @property
    def borrowed(self) -> bool:
        """True when the figures are not the accelerator's own: borrowed curves or no cases."""
        return self.kernels_borrowed or self.cases == 0

    def band(self, value: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """(low, high) of an expected figure: value · (1 ∓ band); (value, value) without a band."""
        v = np.asarray(value, dtype=float)
        b = self.error_band or 0.0
        return v * (1.0 - b), v * (1.0 + b)


def calibration_of(eff, engine: str) -> Calibration:
    """The calibration status of an Efficiency (roofline/hardware.py) under an engine."""
    ks = eff.kernels
    return Calibration(
        family=eff.family,
        engine=engine,
        kernels="" if ks is None else ks.id,
        kernels_borrowed=False if ks is None else ks.borrowed,
        cases=eff.cases,
        error_band=eff.error_band,
        source=eff.source,
    )


def scaled(curve: GemmCurve, compute: float = 1.0, memory: float = 1.0) -> GemmCurve:
    """The curve with its plateau shares scaled (an --eta-compute / --eta-memory override keeps the
    curve's shape), capped at 1."""
    if compute == 1.0 and memory == 1.0:
        return curve
    return replace(
        curve,
        eta_max=min(curve.eta_max * compute, 1.0),
        eta_memory=min(curve.eta_memory * memory, 1.0),
    )


def gemm_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    m: ArrayLike,
    n: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: GemmCurve,
    kernels: ArrayLike = 1.0,
) -> FloatArray:
    """t = t₀·kernels + max(F(1 + M½/(M+16))(1 + N½/N)/(P·η_max), Q/(W·η_mem)).
    With M½ = N½ = t₀ = 0 this is the plain roofline at efficiencies (η_max, η_mem)."""
    f = np.asarray(flops, dtype=float)
    mm = np.maximum(np.asarray(m, dtype=float), 1e-9)
    nn = np.maximum(np.asarray(n, dtype=float), 1e-9)
    shape = (1.0 + curve.m_half / (mm + MMA_ROWS)) * (1.0 + curve.n_half / nn)
    t_math = f * shape / (peak_flops_per_s * curve.eta_max)
    t_mem = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * curve.eta_memory)
    return curve.latency_s * np.asarray(kernels, dtype=float) + np.maximum(t_math, t_mem)


def compute_efficiency(m: ArrayLike, n: ArrayLike, curve: GemmCurve) -> FloatArray:
    """η(M, N) = η_max / (1 + M½/(M + 16)) · N/(N + N½): the share of peak a compute-bound GEMM
    reaches."""
    mm, nn = np.asarray(m, dtype=float), np.asarray(n, dtype=float)
    return curve.eta_max / (1.0 + curve.m_half / (mm + MMA_ROWS)) * nn / (nn + curve.n_half)


def dequant_time_s(
    weights: ArrayLike, m: ArrayLike, alu_flops_per_s: float, curve: WeightOnlyCurve
) -> FloatArray:
    """ALU time to dequantise `weights` elements once per 128-row tile of M:
    ops · weights · max(1, M/128) / P_alu."""
    tiles = np.maximum(1.0, np.asarray(m, dtype=float) / M_TILE_ROWS)
    return curve.alu_ops_per_weight * np.asarray(weights, dtype=float) * tiles / alu_flops_per_s


def attention_decode_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: AttentionCurve,
    eta_compute: float,
    rows: ArrayLike,
    streams: ArrayLike,
    layers: float = 1.0,
) -> FloatArray:
    """Fused decode attention (flash-decoding): per layer t₀ + rows·t_row, plus
    max(F/(P·η_c), Q·(1 + S½/S)/(W·η_attn)) — with few KV streams S (sequences × KV heads) the
    kernel cannot keep every SM streaming (Dao et al., "Flash-Decoding", 2023, split-KV)."""
    s = np.maximum(np.asarray(streams, dtype=float), 1e-9)
    t_math = np.asarray(flops, dtype=float) / (peak_flops_per_s * eta_compute)
    q = np.asarray(bytes_moved, dtype=float) * (1.0 + curve.streams_half / s)
    t_mem = q / (bw_bytes_per_s * curve.eta_memory)
    fixed = (curve.latency_s + curve.per_row_s * np.asarray(rows, dtype=float)) * layers
    return fixed + np.maximum(t_math, t_mem)


def prefill_attention_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    prompt: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: PrefillAttentionCurve,
    eta_memory: float,
    layers: float = 1.0,
) -> FloatArray:
    """Causal flash attention over s tokens: t₀·layers + max(F(1 + S½/s)/(P·η_max), Q/(W·η_m)):
    a short sequence gives each head few query tiles to keep the SMs busy (Dao, FlashAttention-2,
    2023, §3.2: parallelism over the sequence length)."""
    s = np.maximum(np.asarray(prompt, dtype=float), 1.0)
    t_math = (
        np.asarray(flops, dtype=float)
        * (1.0 + curve.s_half / s)
        / (peak_flops_per_s * curve.eta_max)
    )
    t_mem = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * eta_memory)
    return curve.latency_s * layers + np.maximum(t_math, t_mem)


def step_time_s(
    t_gpu_s: ArrayLike, layers: int, engine: EngineProfile | None, phase: str
) -> FloatArray:
    """One step with the engine's host costs: max(t_gpu + n_k·gap, n_k·launch) + cpu_step, with
    n_k = kernels_per_layer · layers and launch = 0 when the phase runs under CUDA graphs."""
    t = np.asarray(t_gpu_s, dtype=float)
    if engine is None:
        return t
    n_k = engine.kernels_per_layer * layers
    graphs = engine.graphs_decode if phase == "decode" else engine.graphs_prefill
    launch = 0.0 if graphs else engine.launch_s
    return np.maximum(t + n_k * engine.gap_s, n_k * launch) + engine.cpu_step_s

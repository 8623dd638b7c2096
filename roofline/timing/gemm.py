"""How long a real GEMM takes for its FLOPs and bytes: the kernel curves, the library's tile
rules, wave quantisation and the dequantisation of weight-only GEMMs. Pure functions, SI units,
numpy broadcasting, each time function with its one-point float twin (*_one, beside it; see
roofline/timing/roofline.py); the catalog supplies the parameters (hardware/kernels.yaml, fitted
by validation/calibrate_kernels.py).

GEMM (one kernel, M tokens × N outputs × K inputs, F = 2MNK FLOPs, Q bytes):
    t = t₀ + max(F·(1 + M½/(M + 16))·(1 + N½/N) / (P·η_max·u) + w·t_w,  Q / (W·η_mem))
Wave quantisation (NVIDIA, "Matrix Multiplication Background User's Guide", tile and wave
quantisation): the kernel cuts C into tiles of t_m × t_n; T = ⌈M/t_m⌉·⌈N/t_n⌉ tiles, split along K
into s = clamp(⌊SMs/T⌋, 1, s_max) pieces when they are too few to fill the SMs (split-K), run in
w = ⌈T·s/SMs⌉ waves; u = M·N·s / (w·SMs·t_m·t_n) is the useful share of the padded work, and every
wave pays a fixed t_w (the tile's prologue and epilogue, which do not shrink with K). The smooth
factors remain for the kernels' own choices the tile grid does not capture: 1 + M½/(M + 16) is the
extra rows a moderate-M GEMM pays for when the library picks smaller tiles (a GEMV-sized M pads to
the 16-row MMA tile, PTX ISA mma.m16n8k16, hence M + 16), 1 + N½/N the same for narrow N. With
t_m = 0 the wave term is off (u = 1, w = 0): the fit picks, per generation and dtype, whichever
describes the measured kernels. A curve may instead follow its library's own tile rule (tile_rule;
TILE RULES below: vLLM's CUTLASS FP8 GEMM on Ada picks t_m × t_n from M and N, no split-K),
its per-wave cost then t_w + t_area·(t_m·t_n)/128² (the epilogue writes t_m·t_n outputs per
tile); and a GEMM whose engine quantises its activations in a kernel of its own first (vLLM's
Fp8LinearMethod with a static scale: QuantFP8 -> scaled_fp8_quant, then cutlass_scaled_mm) adds
that pass, quant_bytes · M·K / (W·η_mem) (bf16 read + fp8 written: 3 bytes a value).
η_max is the plateau of a large GEMM (clocks under load,
epilogue), η_mem the share of bandwidth a weight-streaming (small-M) GEMM reaches, t₀ the kernel's
fixed latency (launch-to-completion of an empty tile).
A GEMM curve may step its plateau down to large_ratio·η_max from M ≥ m_large on (the library
switching kernels by M: large_m_factor).
Weight-only quantised GEMMs (int8/int4 weights, 16-bit math) run on a GEMM curve of their own
when one was fitted (its plateau carries the dequantisation inside the K loop); otherwise on the
16-bit curve plus the dequantisation ALU work,
ops_per_weight · N·K · max(1, M/128) / P_alu, on the non-tensor (FP32) units: each CTA of 128
rows of M dequantises the weights it uses (TensorRT-LLM fpA_intB kernels; Frantar et al., MARLIN,
2024, §3), which is why those kernels go compute-bound at moderate batch.
MoE grouped GEMMs run on a curve of their own where the generation has one (MoeCurve, fitted on
the fused MoE module: routing, permutation, both grouped GEMMs, un-permutation):
    t = 2·t₀ + max(F·(1 + M½/(M + 16))/(P·η_max), Q_w/(W·η_w)) + Q_act/(W·η_act)
with M the rows each expert receives, Q_w the touched experts' weights and Q_act the routed
activations, whose permute / gather / scatter passes over HBM do not overlap the weight stream
(the per-row cost). Without one, on the dense curve at that M, N = the expert's sharded width,
with only each expert's tile padding (the experts' tiles together fill the SMs). A dtype with no
fused-MoE data of its own (the 4-bit formats: the fitted moe_perf tables hold bf16 and fp8_block)
borrows the generation's fp8 curve, else its bf16 one, at its own peak [borrowed: the routing,
permutation and per-expert tiles around the grouped GEMMs do not depend on the weight format], and
so do weight-only expert GEMMs (MXFP4 experts on a GPU without 4-bit math, dequantised inside the
fused module) at the compute dtype's curve: without it a 2,048-sequence step of gpt-oss or
Qwen3-30B-A3B ran at the dense plateau, 1.3-2.4x the throughput TensorRT-LLM's tables measure.
With no kernel curves (families without kernel data) every curve degenerates to the scalar model
t = max(F/(P·η_c), Q/(W·η_m)): M½ = N½ = t₀ = 0.

TILE RULES: the output tile a GEMM library picks per shape, as its own dispatch code decides.
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
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.timing.roofline import FloatOrArray, ceil, floor, maximum, minimum

FloatArray = np.ndarray
TILE_AREA_REF = 128.0 * 128.0  # the tile area wave_area_s is quoted per
MMA_ROWS = 16.0  # rows of the smallest tensor-core tile (PTX mma.m16n8k16): a GEMV pads to it
M_TILE_ROWS = 128.0  # rows of M one CTA of a weight-only GEMM dequantises its weights for

# the libraries' tile rules (TILE RULES above)
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


@dataclass(frozen=True)
class GemmCurve:
    """GEMM time curve of one dtype on one GPU generation (shares of the chip's own peaks)."""

    eta_max: float
    eta_memory: float
    m_half: float = 0.0
    n_half: float = 0.0
    latency_s: float = 0.0
    fit_median_error: float | None = None
    tile_m: float = 0.0  # rows × columns of the kernel's output tile (0: no wave quantisation)
    tile_n: float = 0.0
    split_k_max: float = 1.0  # most pieces the kernel splits K into when tiles are too few
    wave_latency_s: float = 0.0  # fixed cost of every wave of tiles (prologue, epilogue)
    sm_count: float = 0.0  # SMs of the chip the curve was measured on
    # From M ≥ m_large rows the library runs another kernel whose plateau is large_ratio·η_max
    # (0: one kernel at every M); see large_m_factor
    m_large: float = 0.0
    large_ratio: float = 1.0
    # tile_rule: the library picks the tile per shape by its own dispatch (TILE RULES above;
    # tile_m, tile_n unused); wave_area_s: the per-wave cost that grows with the tile's area,
    # per 128 × 128 outputs; quant_bytes: bytes per M·K value of a separate activation
    # quantisation pass before the GEMM (0: none)
    tile_rule: str = ""
    wave_area_s: float = 0.0
    quant_bytes: float = 0.0

    @property
    def tiled(self) -> bool:
        """True when the curve has a tile grid (a fixed tile or a library's tile rule)."""
        return (self.tile_m > 0 or bool(self.tile_rule)) and self.sm_count > 0


@dataclass(frozen=True)
class WeightOnlyCurve:
    """Extra cost of a weight-only quantised GEMM (16-bit math on int8/int4 weights)."""

    alu_ops_per_weight: float
    eta_memory: float
    latency_s: float = 0.0
    fit_median_error: float | None = None
    gemm: GemmCurve | None = None  # the kernel's own GEMM curve (16-bit peak units), if fitted


@dataclass(frozen=True)
class MoeCurve:
    """Fused MoE layer (both grouped GEMMs and the routing around them) of one dtype on one GPU
    generation: plateau η_max and knee M½ at the per-expert rows, the weight-streaming share η_w,
    the routed activations' share η_act and the fixed cost t₀ per grouped GEMM; and the grouped
    GEMM's scheduler: t_g per local expert walked per grouped GEMM and t_wave per wave of the
    touched experts' tiles over the SMs (moe_time_s; 0 where not fitted)."""

    eta_max: float
    m_half: float
    eta_memory: float
    eta_act: float
    latency_s: float = 0.0
    fit_median_error: float | None = None
    walk_s: float = 0.0  # t_g: per local expert, per grouped GEMM
    tile_wave_s: float = 0.0  # t_wave: per wave of a layer's tiles of the touched experts
    sm_count: float = 0.0  # the group's SMs (kernels.yaml sm_count), for the waves


# Columns of one tile of a grouped expert GEMM: DeepGEMM's and TensorRT-LLM's block-scaled FP8
# kernels block the weights' output dimension by 128, the scale block (DeepSeek-V3 technical
# report, 128×128 weight blocks). [approximation: the libraries pick 64-256 per shape]
MOE_TILE = 128.0


def moe_tiles(touched: ArrayLike, n_up: ArrayLike, n_down: ArrayLike) -> FloatArray:
    """Tiles of the two grouped GEMMs over the touched experts, one row block each (decode):
    touched·(⌈N_up/128⌉ + ⌈N_down/128⌉), N_up = 2f/TP_e (gate and up), N_down = d."""
    per = np.ceil(np.asarray(n_up, dtype=float) / MOE_TILE) + np.ceil(
        np.asarray(n_down, dtype=float) / MOE_TILE
    )
    return np.asarray(touched, dtype=float) * per


def moe_time_s(
    flops: ArrayLike,
    weight_bytes: ArrayLike,
    act_bytes: ArrayLike,
    m: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: MoeCurve,
    kernels: ArrayLike = 2.0,
    experts: ArrayLike = 0.0,
    tiles: ArrayLike = 0.0,
    layers: float = 1.0,
) -> FloatArray:
    """t = t₀·kernels + max(F(1 + M½/(M+16))/(P·η_max), Q_w/(W·η_w)) + Q_act/(W·η_act)
    + t_g·kernels·E_local + t_wave·layers·⌈tiles/SMs⌉ (tiles: one layer's, moe_tiles): the
    grouped GEMMs stream the touched experts' weights (or run at the per-expert-M plateau),
    while the routed activations pass through HBM in the permute / un-permute kernels around
    them (TensorRT-LLM fused MoE, vLLM fused_moe; fitted on aiconfigurator-core's moe_perf
    tables). The scheduler's terms: every persistent
    CTA of the grouped GEMM walks all E_local experts of its rank, two dependent loads of the
    expert's row offsets each, before it finds its tile (GroupedWithOffsetScheduler
    ::get_next_block, cpp/include/tensorrt_llm/deep_gemm/scheduler.cuh at NVIDIA/TensorRT-LLM
    @89fd9b74; TensorRT-LLM's FP8 block-scale MoE on Hopper runs DeepGEMM's GroupedWithOffset
    kernel), and the tiles of the touched experts run in waves over the SMs: experts sharded by
    TP (moe_tp_size) keep every expert on every rank, 8x the walk of EP8, and split each
    expert into thin GEMMs (N = 2f/8 = 512 for DeepSeek-R1) whose tiles carry little work."""
    mm = np.maximum(np.asarray(m, dtype=float), 1.0)
    t_math = (
        np.asarray(flops, dtype=float)
        * (1.0 + curve.m_half / (mm + MMA_ROWS))
        / (peak_flops_per_s * curve.eta_max)
    )
    t_w = np.asarray(weight_bytes, dtype=float) / (bw_bytes_per_s * curve.eta_memory)
    t_act = np.asarray(act_bytes, dtype=float) / (bw_bytes_per_s * curve.eta_act)
    k = np.asarray(kernels, dtype=float)
    t = curve.latency_s * k + np.maximum(t_math, t_w) + t_act
    t = t + curve.walk_s * k * np.asarray(experts, dtype=float)
    if curve.tile_wave_s > 0.0 and curve.sm_count > 0.0:
        waves = np.ceil(np.asarray(tiles, dtype=float) / curve.sm_count)
        t = t + curve.tile_wave_s * layers * waves
    return t


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


def tile_shape(m: ArrayLike, n: ArrayLike, curve: GemmCurve) -> tuple[FloatArray, FloatArray]:
    """(t_m, t_n): the curve's fixed tile, or the one its library's tile rule picks for M × N."""
    if curve.tile_rule:
        return rule_tiles(curve.tile_rule, m, n)
    shape = np.broadcast(np.asarray(m), np.asarray(n)).shape
    return np.full(shape, curve.tile_m), np.full(shape, curve.tile_n)


def tile_shape_one(m: float, n: float, curve: GemmCurve) -> tuple[float, float]:
    """tile_shape for one GEMM."""
    if curve.tile_rule:
        return rule_tiles_one(curve.tile_rule, m, n)
    return curve.tile_m, curve.tile_n


def wave_quantisation(
    m: ArrayLike, n: ArrayLike, curve: GemmCurve, groups: ArrayLike = 1.0
) -> tuple[FloatArray, FloatArray]:
    """(u, w): the useful share of the padded tile work and the waves of one kernel.
    T = groups·⌈M/t_m⌉·⌈N/t_n⌉ tiles, split-K s = clamp(⌊SMs/T⌋, 1, s_max), w = ⌈T·s/SMs⌉,
    u = groups·M·N·s / (w·SMs·t_m·t_n) (NVIDIA Matrix Multiplication Background User's Guide);
    t_m × t_n the curve's tile, or the one its library's tile rule picks per shape
    (TILE RULES above). groups = ∞ (a grouped GEMM whose many groups fill the SMs):
    u = tile padding only, w = 0. No tile (t_m = 0, no rule) or an unknown shape (M or N
    infinite): u = 1, w = 0."""
    sms = curve.sm_count
    mm, nn = np.asarray(m, dtype=float), np.asarray(n, dtype=float)
    if not curve.tiled:
        shape = np.broadcast(mm, nn, np.asarray(groups)).shape
        return np.ones(shape), np.zeros(shape)
    if np.ndim(nn) == 0 and not np.isfinite(nn):  # N unknown (no gemm_n): u = 1, w = 0
        return np.ones(np.shape(mm)), np.zeros(np.shape(mm))
    known = np.isfinite(mm) & np.isfinite(nn)  # unknown shapes (∞): u = 1, w = 0
    all_known = bool(known.all())
    tm: FloatOrArray
    tn: FloatOrArray
    if curve.tile_rule:
        tm, tn = rule_tiles(curve.tile_rule, np.where(known, mm, 1.0), np.where(known, nn, 1.0))
    else:
        tm, tn = curve.tile_m, curve.tile_n
    if not all_known:
        mm, nn = np.where(known, mm, tm), np.where(known, nn, tn)
    cols = np.ceil(nn / tn)
    tiles = np.ceil(mm / tm) * cols
    g = np.asarray(groups, dtype=float)
    padding = mm * (nn / (tm * tn)) / tiles  # the grouped case's u
    if np.ndim(g) == 0 and not np.isfinite(g):  # grouped: padding only
        if not all_known:
            return np.where(known, padding, 1.0), np.zeros(np.shape(tiles))
        return padding, np.zeros(np.shape(tiles))
    grouped = ~np.isfinite(g)  # a stack of ops (one point's fast path) may mix both
    g = np.where(grouped, 1.0, g) if grouped.any() else g
    tiles = tiles * g
    if curve.split_k_max > 1:
        split = np.minimum(np.maximum(np.floor(sms / tiles), 1.0), curve.split_k_max)
        waves = np.ceil(tiles * split / sms)
        u = mm * (nn * g / (sms * tm * tn)) * split / waves
    else:
        waves = np.ceil(tiles / sms)
        u = mm * (nn * g / (sms * tm * tn)) / waves
    if grouped.any():
        u, waves = np.where(grouped, padding, u), np.where(grouped, 0.0, waves)
    if not all_known:
        return np.where(known, u, 1.0), np.where(known, waves, 0.0)
    return u, waves


def wave_quantisation_one(
    m: float, n: float, curve: GemmCurve, groups: float = 1.0
) -> tuple[float, float]:
    """wave_quantisation for one GEMM (u, w); see its docstring for the formula."""
    sms = curve.sm_count
    if not curve.tiled or not (math.isfinite(m) and math.isfinite(n)):
        return 1.0, 0.0  # no tile, or an unknown shape
    tm, tn = tile_shape_one(m, n, curve)
    cols = ceil(n / tn)
    tiles = ceil(m / tm) * cols
    if not math.isfinite(groups):  # grouped: the tile padding only
        return m * (n / (tm * tn)) / tiles, 0.0
    tiles = tiles * groups
    if curve.split_k_max > 1:
        split = minimum(maximum(floor(sms / tiles), 1.0), curve.split_k_max)
        waves = ceil(tiles * split / sms)
        return m * (n * groups / (sms * tm * tn)) * split / waves, waves
    waves = ceil(tiles / sms)
    return m * (n * groups / (sms * tm * tn)) / waves, waves


def large_m_factor(m: ArrayLike, curve: GemmCurve) -> FloatArray:
    """1, or large_ratio from M ≥ m_large rows on: the library's heuristic switches kernels by M
    (cuBLAS picks its kernel per shape from a heuristic table: NVIDIA cuBLAS documentation,
    cublasLtMatmulAlgoGetHeuristic), and the measured plateau steps down there (L40S bf16,
    torch.nn.functional.linear, aiconfigurator-core 0.12.0: ≈ 0.78× from M = 8192 on, no step
    between M = 1 and 4353 [uncertain: the cause, e.g. a larger CTA holding fewer pipeline
    stages in Ada's 100 KB of shared memory per SM, NVIDIA Ada Tuning Guide §1.4.4.2])."""
    mm = np.asarray(m, dtype=float)
    if curve.m_large <= 0:
        return np.ones(np.shape(mm))
    return np.where(mm >= curve.m_large, curve.large_ratio, 1.0)


def gemm_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    m: ArrayLike,
    n: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: GemmCurve,
    kernels: ArrayLike = 1.0,
    groups: ArrayLike = 1.0,
) -> FloatArray:
    """t = (t₀ + w·t_w)·kernels + max(F(1 + M½/(M+16))(1 + N½/N)/(P·η_max·u), Q/(W·η_mem))
    [+ quant_bytes·M·K/(W·η_mem), M·K = F/(2N): the activations' quantisation pass]
    with (u, w) from wave_quantisation; the per-wave cost sits on the compute side of the max
    (t_w + t_area·t_m·t_n/128² under a tile rule).
    With M½ = N½ = t₀ = 0 and no tile this is the plain roofline at efficiencies (η_max, η_mem)."""
    f = np.asarray(flops, dtype=float)
    mm = np.maximum(np.asarray(m, dtype=float), 1e-9)
    nn = np.maximum(np.asarray(n, dtype=float), 1e-9)
    shape = (1.0 + curve.m_half / (mm + MMA_ROWS)) * (1.0 + curve.n_half / nn)
    t_math = f * shape / (peak_flops_per_s * curve.eta_max)
    if curve.m_large > 0:
        t_math = t_math / large_m_factor(mm, curve)
    k = np.asarray(kernels, dtype=float)
    if curve.tiled:
        u, waves = wave_quantisation(mm, nn, curve, groups)
        t_wave = curve.wave_latency_s
        if curve.wave_area_s > 0:
            tm, tn = tile_shape(mm, nn, curve)
            t_wave = t_wave + curve.wave_area_s * (tm * tn / TILE_AREA_REF)
        t_math = t_math / u + waves * t_wave * k
    t_mem = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * curve.eta_memory)
    t = curve.latency_s * k + np.maximum(t_math, t_mem)
    if curve.quant_bytes > 0:  # the activations' quantisation pass: M·K = F/(2N) values
        t = t + curve.quant_bytes * (f / (2.0 * nn)) / (bw_bytes_per_s * curve.eta_memory)
    return t


def gemm_time_one(
    flops: float,
    bytes_moved: float,
    m: float,
    n: float,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: GemmCurve,
    kernels: float = 1.0,
    groups: float = 1.0,
) -> float:
    """gemm_time_s for one GEMM; see its docstring for the formula."""
    mm, nn = maximum(m, 1e-9), maximum(n, 1e-9)
    shape = (1.0 + curve.m_half / (mm + MMA_ROWS)) * (1.0 + curve.n_half / nn)
    t_math = flops * shape / (peak_flops_per_s * curve.eta_max)
    if curve.m_large > 0:
        t_math = t_math / (curve.large_ratio if mm >= curve.m_large else 1.0)
    if curve.tiled:
        u, waves = wave_quantisation_one(mm, nn, curve, groups)
        t_wave = curve.wave_latency_s
        if curve.wave_area_s > 0:
            tm, tn = tile_shape_one(mm, nn, curve)
            t_wave = t_wave + curve.wave_area_s * (tm * tn / TILE_AREA_REF)
        t_math = t_math / u + waves * t_wave * kernels
    t_mem = bytes_moved / (bw_bytes_per_s * curve.eta_memory)
    t = curve.latency_s * kernels + maximum(t_math, t_mem)
    if curve.quant_bytes > 0:
        t = t + curve.quant_bytes * (flops / (2.0 * nn)) / (bw_bytes_per_s * curve.eta_memory)
    return t


def compute_efficiency(m: ArrayLike, n: ArrayLike, curve: GemmCurve) -> FloatArray:
    """η(M, N) = η_max·u(M, N) / (1 + M½/(M + 16)) · N/(N + N½): the share of peak a compute-bound
    GEMM reaches, before the per-wave fixed cost (which depends on K)."""
    mm, nn = np.asarray(m, dtype=float), np.asarray(n, dtype=float)
    u, _ = wave_quantisation(mm, nn, curve)
    eta = curve.eta_max * large_m_factor(mm, curve) * u
    return eta / (1.0 + curve.m_half / (mm + MMA_ROWS)) * nn / (nn + curve.n_half)


def dequant_time_s(
    weights: ArrayLike, m: ArrayLike, alu_flops_per_s: float, curve: WeightOnlyCurve
) -> FloatArray:
    """ALU time to dequantise `weights` elements once per 128-row tile of M:
    ops · weights · max(1, M/128) / P_alu."""
    tiles = np.maximum(1.0, np.asarray(m, dtype=float) / M_TILE_ROWS)
    return curve.alu_ops_per_weight * np.asarray(weights, dtype=float) * tiles / alu_flops_per_s

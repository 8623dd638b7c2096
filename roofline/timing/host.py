"""A serving engine's host cost per step (hardware/engines.yaml): the fixed part and the part per
running sequence, with the one-point twin of step_time_s; and the provenance of the expected
figures (Calibration: the family's case fit, the GPU generation's kernel curves, own or borrowed,
the out-of-sample error band). Pure functions, SI units; never part of the ideal figures.

An engine adds per step: t_step = max(t_gpu + n_k·gap, n_k·launch) + cpu_step, with n_k kernels
per step (per layer × layers) and launch = 0 under CUDA graphs (one graph launch is part of the
CPU step): a step is launch-bound when the CPU issues kernels slower than the GPU runs them
(NVIDIA, "Getting Started with CUDA Graphs", 2019; vLLM docs, CUDA graphs).

Besides the fixed `cpu_step`, the step pays work for every running sequence that the kernel
curves do not carry: the scheduler's per-request loop, every worker's per-request input
preparation and state update (block tables, positions, slot mappings), the sampled token's
bookkeeping (stop checks, output objects) and hand-off. vLLM's own profiling names these
per-request loops (vLLM v0.6.0 performance blog, Sep 2024, "Performance Diagnosis": scheduling
29% of the execution time of Llama 3 8B on one H100, input and output processing besides;
vllm-project/vllm PR #46112: Scheduler.update_from_output alone 0.142 ms at batch 128, 0.287 ms
at batch 256, linear in the batch). It is linear in the sequences the step carries:

    t_host_seq = cpu_per_seq[engine, family] · B

kept per engine AND hardware family (hardware/engines.yaml `cpu_per_seq_us`, a mapping from
family to µs; a family not named pays 0): the engine's platform build differs (vLLM on ROCm runs
its own attention metadata builders, AITER and HIP-graph paths) and the one table that shows the
slope (AMD's vLLM latency table on 8x MI300X) also carries per-sequence device work its kernel
curve misses. Fitted by validation/calibrate.py with cpu_step (validation/crossval.py) for a family
that ran the engine at two or more batch sizes. Where the slope is device work rather than the
host's (hardware/engines.yaml cpu_per_seq_device: vLLM V1 on AMD Instinct, issue 34), it is paid
on min(B, B_c) sequences, B_c the batch where the step turns compute bound (seq_cost_rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.timing.roofline import maximum

FloatArray = np.ndarray


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
    moe_kernel: str | None = None  # whose fused MoE it runs (engine_moe; None: the family curve)
    source: str = ""
    aliases: tuple[str, ...] = ()
    # speculative decoding's host cost (roofline/levers/speculative.py): per round (proposal
    # bookkeeping, rejection sampling, tree masks, the drafter's extra launch) and per sequential
    # draft step
    draft_round_cpu_s: float = 0.0
    draft_step_cpu_s: float = 0.0
    # the API server's path outside the engine's steps, per request (roofline/engines/scheduler.py)
    request_latency_s: float = 0.0
    # the API server's CPU time per request and per streamed token on the fast (Rust) and slow
    # (pure-Python) detokenizer paths (roofline/engines/scheduler.py Frontend)
    api_request_s: float = 0.0
    api_token_fast_s: float = 0.0
    api_token_slow_s: float = 0.0
    # host time per running sequence per step, by hardware family: (family, s) pairs (absent: 0)
    cpu_per_seq_s: tuple[tuple[str, float], ...] = ()
    # families whose per-sequence cost is the device's, not the host's: it stops growing at the
    # batch where the step turns compute bound (per_seq_host_s, seq_cost_rows)
    per_seq_device: tuple[str, ...] = ()
    # the engine's own fused-MoE and MLA decode kernels on a hardware family, as the measured
    # time over the kernel curves' (family, factor) pairs (absent: 1): kernel_time_factor
    moe_time_factor: tuple[tuple[str, float], ...] = ()
    mla_decode_time_factor: tuple[tuple[str, float], ...] = ()
    # beyond moe_time_factor, on routed experts in block-scaled FP8 only (the Triton fused MoE of
    # the early-2025 engines on ROCm against AITER's block-scale kernel): kind "block_fp8_moe"
    block_fp8_moe_time_factor: tuple[tuple[str, float], ...] = ()
    # the engine's block-scaled FP8 GEMMs (fine-grained 128x128 scales, DeepSeek-V3/R1) in prefill
    # over the family curve's time, and the fixed time per block-FP8 MoE layer of a decode step
    # outside the curves, (family, factor) and (family, s) pairs (absent: 1 and 0):
    # kernel_time_factor kind "fp8_prefill", block_fp8_moe_layer_s
    block_fp8_prefill_factor: tuple[tuple[str, float], ...] = ()
    block_fp8_moe_layer_s: tuple[tuple[str, float], ...] = ()
    # a new replica's start (roofline/serving/day.py scale_up_delay_s): the engine's start
    # after its weights are read (imports, torch.compile, CUDA graph capture) and the read
    # bandwidth of its weights from storage; 0: no sourced figure
    start_s: float = 0.0
    load_bytes_per_s: float = 0.0
    # a version profile (roofline/engines/versions.py): the engine it is a version of (its memory
    # rule, scheduler rules and launch flags) and the engine versions it holds, e.g. ">=0.5,<0.8"
    base: str = ""
    versions: str = ""
    # the version's scheduler defaults where they differ from the engine's (0 / None: the rules of
    # roofline/engines/scheduler.py): running sequences and whether prompts are chunked
    max_num_seqs: int = 0
    chunked_prefill: bool | None = None
    # the most prompts one non-chunked prefill step runs (0: as many as the token budget holds)
    prefill_requests_per_step: int = 0
    # every decode step attends each slot's whole preallocated KV cache (a dense masked einsum
    # over max_cache_length, not the tokens held): roofline/serving/sim/steps.py dense_cache
    decode_whole_cache: bool = False


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


def step_time_one(t_gpu_s: float, layers: int, engine: EngineProfile | None, phase: str) -> float:
    """step_time_s for one point; see its docstring for the formula."""
    if engine is None:
        return t_gpu_s
    n_k = engine.kernels_per_layer * layers
    graphs = engine.graphs_decode if phase == "decode" else engine.graphs_prefill
    launch = 0.0 if graphs else engine.launch_s
    return maximum(t_gpu_s + n_k * engine.gap_s, n_k * launch) + engine.cpu_step_s


def per_seq_host_s(
    profile: EngineProfile | None,
    seqs: ArrayLike,
    family: str = "",
    turn_rows: ArrayLike | None = None,
) -> np.ndarray | float:
    """Time a step of `seqs` sequences adds beyond the fixed cpu_step on a chip of `family`:
    cpu_per_seq[family] · B (module docstring); 0 for an engine without the figure there. On a
    family the profile names in per_seq_device the figure is device work, paid on
    seq_cost_rows(seqs, turn_rows) sequences: at most the batch where the step turns compute
    bound (`turn_rows`, seq_cost_rows says why)."""
    per = dict(profile.cpu_per_seq_s if profile is not None else ())
    c = float(per.get(family, 0.0))
    if c == 0.0:
        return 0.0
    if turn_rows is not None and profile is not None and family in profile.per_seq_device:
        seqs = seq_cost_rows(seqs, turn_rows)
    if np.ndim(seqs) == 0:
        return c * float(seqs)  # type: ignore[arg-type]
    return c * np.asarray(seqs, dtype=float)


def compute_turn_rows(
    seqs: ArrayLike, flops: ArrayLike, t_compute_ref_s: float, t_weights_s: ArrayLike
) -> np.ndarray:
    """The batch at which a step of `seqs` sequences (`flops` FLOPs) turns compute bound: where
    its FLOPs at the family's GEMM plateau take as long as streaming its weights at the family's
    memory share, B_c = B · t_weights / t_compute with t_compute = flops · t_compute_ref_s (the
    seconds per FLOP at the plateau, 1 / (η_max · peak)) and t_weights = weight bytes / (η_memory
    · bandwidth) (the roofline's ridge on the kernel curve's shares, Williams et al., CACM 2009).
    A step without FLOPs never turns (infinite)."""
    f = np.asarray(flops, dtype=float) * t_compute_ref_s
    b = np.asarray(seqs, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(f > 0, b * np.asarray(t_weights_s) / np.where(f > 0, f, 1.0), np.inf)


def seq_cost_rows(seqs: ArrayLike, turn_rows: ArrayLike) -> np.ndarray | float:
    """The sequences a device-side per-sequence cost is paid on: min(B, B_c). Below the compute
    turn B_c a step streams its weights and its GEMMs' time still grows with every row it adds
    (vLLM V1's step on 8 MI300X grows 90 µs a sequence from batch 16 to 64 for Llama 3.1 70B
    where the CDNA 3 curve stays flat; ROCm/vllm dev-docker latency table at 040de12); past it
    the curve's compute-bound time grows with the rows itself, so the extra stops at what it was
    at the turn (docs/ACCURACY.md, the Mechanisms table)."""
    out = np.minimum(np.asarray(seqs, dtype=float), np.asarray(turn_rows, dtype=float))
    return float(out) if np.ndim(out) == 0 else out


def kernel_time_factor(profile: EngineProfile | None, family: str, kind: str) -> float:
    """How much longer the engine's own kernel of `kind` ("moe": the routed experts' fused MoE
    GEMMs; "mla": MLA's absorbed decode attention) runs on a hardware family than the family's
    kernel curves give (hardware/engines.yaml moe_time_factor / mla_decode_time_factor; 1 where
    none is named). The curves of a family are measured on one library's kernels (CDNA 3: AITER's
    GEMM tuner timings, roofline/step/optime.py), while an engine ships its own MoE and MLA
    kernels per platform and version: SGLang and vLLM on ROCm ran Triton fused_moe and Triton MLA
    decode before AITER's (AMD ROCm blog 'Supercharge DeepSeek-R1 Inference on AMD Instinct
    MI300X', 2025-03-21: AITER block-scale fused MoE up to 3x, AITER MLA decode up to 17x over
    them; vLLM blog 'Beyond Porting', 2025-12-16: vLLM's TRITON_MLA 1.2-1.4x the time of
    ROCM_AITER_MLA, AITER opt-in through VLLM_ROCM_USE_AITER=1). Fitted per engine x family by
    validation/fit_stack_kernels.py, never per case. Kind "block_fp8_moe": the further factor on
    routed experts in block-scaled FP8 only (AMD's 'up to 3x' is AITER's block-scale fused MoE
    over Triton's; no such figure for 16-bit or per-tensor experts, which take "moe" alone).
    Kind "fp8_prefill": the engine's
    block-scaled FP8 GEMMs (dense linears and routed experts of a 128x128-block checkpoint) in
    prefill, where they run compute bound (block_fp8_moe_layer_s says where the figures come
    from)."""
    if profile is None:
        return 1.0
    pairs = {
        "moe": profile.moe_time_factor,
        "mla": profile.mla_decode_time_factor,
        "fp8_prefill": profile.block_fp8_prefill_factor,
        "block_fp8_moe": profile.block_fp8_moe_time_factor,
    }[kind]
    for fam, x in pairs:
        if fam == family:
            return x
    return 1.0


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
    """The calibration status of an Efficiency (roofline/domain/hardware.py) under an engine."""
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


def block_fp8_moe_layer_s(profile: EngineProfile | None, family: str) -> float:
    """Fixed time per block-FP8 MoE layer of a decode step on `family` beyond the kernel curves
    (hardware/engines.yaml block_fp8_moe_layer_us; 0 where none is named): the early-2025
    engines' DeepSeek-V3/R1 layer (vLLM 0.7, SGLang before 0.4.4) routes and quantises through
    chains of small kernels the curves hold no time for (grouped top-k over 256 experts as
    PyTorch ops, moe_align_block_size, per-token-group FP8 quantisation before each block-scaled
    GEMM, the experts' sum), paid every step whatever the batch. Sourced per family in
    hardware/engines.yaml (SGLang 0.4.1's DeepSeek-V3 decode at batch 1, 8 and 32, sgl-project/
    sglang pull request #2643), never fitted per case."""
    if profile is None:
        return 0.0
    for fam, x in profile.block_fp8_moe_layer_s:
        if fam == family:
            return x
    return 0.0

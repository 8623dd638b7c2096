"""ALU cost of llama.cpp's block-dequantising mat-vec kernels (GGUF decode on Metal and CUDA).

A decode step's GEMV reads each weight once; llama.cpp's mat-vec kernels unpack the GGUF blocks in
their inner loop, so besides the bytes each weight costs a fixed number of ALU instructions
(mask, shift, convert, multiply-add; the block scales amortised over the block). On chips with
little ALU rate per byte of bandwidth (M1 Max: 10.4 TFLOPS FP32 for 400 GB/s; Jetson Orin: 5.3
for 204.8) the kernel is ALU-bound, not memory-bound: F16 decode reaches ~0.75 of the M1 Max's
bandwidth where Q4_K_M reaches ~0.44 (validation/levers_cases.yaml, XiongjieDai table).

Model: t_alu = MACs · ops_per_weight / (P_fp32 · η_alu) for steps of at most GEMV_MAX_ROWS rows
(the mat-vec path), MACs = F / 2 = weights · rows; the op takes max(roofline at the shares,
t_alu). η_alu is the family's `alu_weight_only` share (validation/calibrate.py fits it on the
llama.cpp GGUF decode cases; families without cases borrow the median).

Instructions per weight per column, counted by hand from llama.cpp's kernels (ggml-org/llama.cpp
master, late 2025; single column, per thread per block, loads and index arithmetic included,
the activation loads and sums amortised over the rows one simdgroup computes):
- Metal, ggml-metal.metal kernel_mul_mv_q4_K_f32_impl: per 32 weights per row 32 × (AND mask,
  u16→f32 convert, FMA) = 96, scale unpacking (3 shifts, 12 and/or/shift) 15, combine with the
  six-bit scales and mins ~36, loads 5; per block the 32 activation loads and sums over the
  N_R0_Q4_K = 2 rows: ~1/weight. ≈ 5.8 instructions per weight.
- Metal, block_q_n_dot_y (q4_0, mul_vec_q_n_f32_impl): 16 × (AND, convert, FMA) + 4 loads + 5 per
  16 weights, the pre-scaled activations (load, multiply, sum) over N_R0_Q4_0 = 4 rows: ≈ 4.3.
- Metal, kernel_mul_mv_q8_0_f32: int8 load-convert, FMA, activations over 4 rows: ≈ 3.0.
- Metal, kernel_mul_mv_q6_K_f32_impl: per weight AND/shift/OR of the low and high bits, −32,
  convert, FMA (~7), byte extraction and scales: ≈ 10 [uncertain].
- CUDA, mmvq.cu + vecdotq.cuh: activations quantised to q8_1, 4 weights per dp4a.
  vec_dot_q4_K_q8_1_impl_vmmq: per 16 weights 4 shift/AND, 8 dp4a (4 for the sum of u, redone
  per row), 4 byte extracts, 4 IMUL, 4 I2F, 4 FMA, + the scale unpacking and loads of
  vec_dot_q4_K_q8_1 (~26) and the mmvq loop (~10): ≈ 4.1 integer-pipe instructions per weight.
  vec_dot_q4_0_q8_1_impl: per int (8 weights) 2 shift/AND + 2 dp4a, + scales and loads: ≈ 2.1.
  vec_dot_q8_0_q8_1_impl: 1 dp4a per 4 weights + loads, scales, loop: ≈ 2.2.
  vec_dot_q6_K_q8_1_impl_mmvq: per int 2 shift/AND for the low bits, 3 for the high, vsubss4,
  dp4a, IMUL by the scale, I2F, FMA: ≈ 4.0 [uncertain].
- Recipes: Q4_K_M keeps Q6_K for half of ffn_down and attn_v (llama.cpp src/llama-quant.cpp,
  llama_tensor_get_type), ~14% of a Llama's linear weights: 0.86 · Q4_K + 0.14 · Q6_K.
  Q5_K_M, Q3_K_M, Q2_K, IQ2_XXS and MXFP4 are not counted line by line: estimates from their bit
  layouts relative to Q4_K (more planes to merge, grid lookups for IQ2) [uncertain].

FP32-FLOP equivalents (the unit of the catalog's FP32 peak, an FMA being 2 FLOPs):
- Apple GPUs issue one 32-bit instruction, integer or float, per ALU lane per cycle; FP16 is not
  faster (philipturner/metal-benchmarks README, "Instruction Throughputs" and the GIPS column of
  its overview: instructions per second = FP32 FLOPS / 2): 2 FLOPs per instruction.
- NVIDIA GA10x, AD10x and Orin (compute capability 8.6, 8.7, 8.9) run 32-bit integer add, shift,
  logic and multiply-add (dp4a) at 64 results per clock per SM, half the 128 FP32 lanes (CUDA C++
  Programming Guide, "Arithmetic Instructions" throughput table): 4 FLOPs per instruction
  [uncertain for Blackwell sm_12x, whose INT32 and FP32 lanes merged].
"""

from __future__ import annotations

from typing import Any

import numpy as np

# mmvq.cuh MMVQ_MAX_BATCH_SIZE (8); Metal's mul_mv_ext kernels take up to 8 columns likewise
GEMV_MAX_ROWS = 8

# instructions per weight per column (module docstring): (Metal on Apple, CUDA on NVIDIA)
OPS_PER_WEIGHT: dict[str, tuple[float, float]] = {
    "q4_0": (4.3, 2.1),
    "q8_0": (3.0, 2.2),
    "q4_k_m": (0.86 * 5.8 + 0.14 * 10.0, 0.86 * 4.1 + 0.14 * 4.0),
    "q6_k": (10.0, 4.0),
    "q5_k_m": (7.5, 4.5),
    "q3_k_m": (8.0, 5.0),
    "q2_k": (8.0, 5.0),
    "iq2_xxs": (9.0, 6.0),
    "mxfp4": (4.5, 3.0),
}
BACKENDS = ("apple", "nvidia")  # the columns of OPS_PER_WEIGHT
FLOPS_PER_INSTRUCTION = {"apple": 2.0, "nvidia": 4.0}


def alu_flops_per_weight(fmt_name: str, vendor: str) -> float:
    """FP32-FLOP equivalents per weight per column of llama.cpp's mat-vec kernel for a GGUF
    format on a vendor's backend (Metal on Apple, CUDA on NVIDIA); 0 where not counted (CPU,
    Vulkan, ROCm)."""
    if vendor not in BACKENDS or fmt_name not in OPS_PER_WEIGHT:
        return 0.0
    return OPS_PER_WEIGHT[fmt_name][BACKENDS.index(vendor)] * FLOPS_PER_INSTRUCTION[vendor]


def gemv_alu_time_s(
    flops: Any, weight_bytes: Any, bytes_per_value: float, alu_flops: float, peak_fp32: float
) -> Any:
    """t_alu = (F/2) · ops_per_weight / P_fp32 (η = 1) for ops of at most GEMV_MAX_ROWS rows
    (rows = F · b_w / (2 · Q_weights), as optime.gemm_rows), else 0: wider steps run the
    matrix-matrix kernels, whose unpacking the compute share covers. Elementwise."""
    f = np.asarray(flops, dtype=float)
    w = np.asarray(weight_bytes, dtype=float)
    if alu_flops <= 0.0 or peak_fp32 <= 0.0:
        return np.zeros_like(f) if f.ndim else 0.0
    rows = f * bytes_per_value / (2.0 * np.where(w > 0, w, 1.0))
    t = np.where((w > 0) & (rows <= GEMV_MAX_ROWS), 0.5 * f * alu_flops / peak_fp32, 0.0)
    return t if t.ndim else float(t)


def op_alu_time_s(op: Any, dep: Any, hw: Any, eta_alu: float) -> Any:
    """An op's mat-vec ALU time at the share η_alu: gemv_alu_time_s / η_alu for a quantised
    linear whose format runs through block kernels (precision.Format.alu_flops > 0), else 0."""
    alu = dep.weights.alu_flops if op.quantized else 0.0
    # the clock a power-limited board sustains (Accelerator.expected_peak) slows its ALUs too
    peak = hw.peak_flops_per_s.get("fp32", 0.0) * hw.sustained_compute_ratio
    return gemv_alu_time_s(op.flops, op.weight_bytes, dep.linear_bits / 8.0, alu, peak) / eta_alu

"""Number formats for weights, activations and the KV cache.

Bits per value include the storage of scales (and zero points) amortised over their group, so that
weight bytes = parameters × bits / 8 is exact for the stored checkpoint.

Sources for the layouts:
- int4 (group 128, one fp16 scale): AWQ/GPTQ default, 4 + 16/128 = 4.125 bits.
- int4-g32 (group 32, bf16 scale and zero): 4 + 32/32 = 5.0 bits.
- nvfp4: NVIDIA Blackwell NVFP4, 16 FP4 values share one FP8 (E4M3) scale: 4 + 8/16 = 4.5 bits.
- mxfp4: OCP Microscaling spec v1.0, 32 FP4 values share one E8M0 scale: 4 + 8/32 = 4.25 bits.
- q8_0 / q4_0: ggml block formats, 32 values + one fp16 scale: 8.5 and 4.5 bits.
- q4_k_m: llama.cpp's mixed "medium" recipe; 4.85 bits per weight is the average llama.cpp reports
  for Llama models (llama.cpp quantize README).
- iq2_xxs, q2_k, q3_k_m, q5_k_m, q6_k, mlx-4bit, mlx-8bit: see GGUF_MLX_NOTE; their embedding and
  head bits are in OTHER_BITS.
- KV int8/int4: per-token, per-head asymmetric quantisation with an fp16 scale and zero point per
  head (LMDeploy KV-cache quantisation docs): 8 + 32/H and 4 + 32/H bits; H = 128 assumed.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, replace

from roofline.domain.errors import InputError
from roofline.timing.gemv import alu_flops_per_weight


@dataclass(frozen=True)
class Format:
    """A storage format: bits per value including scales, and the dtype its matmuls run in."""

    name: str
    bits: float
    compute: str  # preferred compute dtype: a key of Accelerator.peak_flops_per_s
    weight_only: bool  # True: dequantised to 16 bit before the matmul
    note: str
    expert_tile: int = 0  # rows each expert's GEMM is padded to (engine kernels; 0 = none)
    block_kernels: bool = False  # run by an engine's own block-dequantising kernels (GGUF)
    alu_flops: float = 0.0  # FP32-FLOP equivalents per weight per column of its mat-vec kernel

    @property
    def bytes_per_value(self) -> float:
        return self.bits / 8.0


# the unquantised floats, each its own compute dtype: weights and KV cache alike
FLOATS = (
    Format("fp32", 32.0, "fp32", False, "IEEE single precision"),
    Format("bf16", 16.0, "bf16", False, "bfloat16"),
    Format("fp16", 16.0, "fp16", False, "IEEE half precision"),
)


def _by_name(*formats: Format) -> dict[str, Format]:
    """The formats keyed by name, the unquantised floats first."""
    return {f.name: f for f in (*FLOATS, *formats)}


WEIGHT_FORMATS: dict[str, Format] = _by_name(
    Format("fp8", 8.0, "fp8", False, "FP8 E4M3, per-tensor or per-channel scales (negligible)"),
    Format("int8", 8.0, "bf16", True, "weight-only int8, per-channel scales (negligible)"),
    Format("w8a8", 8.0, "int8", False, "int8 weights and activations (SmoothQuant)"),
    Format("int4", 4.125, "bf16", True, "weight-only int4, group 128, fp16 scale (AWQ/GPTQ)"),
    Format("int4-g32", 5.0, "bf16", True, "weight-only int4, group 32, bf16 scale and zero"),
    Format("nvfp4", 4.5, "fp4", False, "NVFP4: 16 values share an FP8 scale"),
    Format("mxfp4", 4.25, "fp4", False, "OCP MXFP4: 32 values share an E8M0 scale"),
    Format("q8_0", 8.5, "fp16", True, "ggml Q8_0: 32 int8 + fp16 scale"),
    Format("q4_0", 4.5, "fp16", True, "ggml Q4_0: 32 int4 + fp16 scale"),
    Format("q4_k_m", 4.85, "fp16", True, "llama.cpp Q4_K_M mixed recipe (average)"),
    # llama.cpp mixed recipes and MLX group quantisation (sources in GGUF_MLX_NOTE below)
    Format("iq2_xxs", 2.06, "fp16", True, "llama.cpp IQ2_XXS (2.06 bpw)"),
    Format("q2_k", 3.35, "fp16", True, "llama.cpp Q2_K mixed recipe (3.35 bpw, Llama-2-7B)"),
    Format("q3_k_m", 3.91, "fp16", True, "llama.cpp Q3_K_M mixed recipe (3.91 bpw)"),
    Format("q5_k_m", 5.68, "fp16", True, "llama.cpp Q5_K_M mixed recipe (5.68 bpw)"),
    Format("q6_k", 6.56, "fp16", True, "llama.cpp Q6_K (6.5625 bpw)"),
    Format("mlx-4bit", 4.5, "fp16", True, "MLX 4-bit, group 64, fp16 scale and bias"),
    Format("mlx-8bit", 8.5, "fp16", True, "MLX 8-bit, group 64, fp16 scale and bias"),
)

GGUF_MLX_NOTE = """
Bits per weight of the GGUF mixed recipes: llama.cpp tools/quantize README, table "Llama 2 7B"
(Q2_K 3.35, Q3_K_M 3.91, Q4_K_M 4.84, Q5_K_M 5.68, Q6_K 6.56 bits per weight, the whole file);
IQ2_XXS 2.06 bpw from `llama-quantize --help`. Block types (k-quants PR #1684): Q2_K 2.5625,
Q3_K 3.4375, Q4_K 4.5, Q5_K 5.5, Q6_K 6.5625 bpw. MLX (mlx-lm convert -q): group size 64 with an
fp16 scale and bias per group, 4 + 32/64 = 4.5 and 8 + 32/64 = 8.5 bits.
"""

# Embedding and output head of GGUF and MLX files are quantised too (the linear layers' format sets
# the rest). llama.cpp src/llama-quant.cpp, llama_tensor_get_type: output.weight becomes Q6_K for
# every ftype whose base type is not Q8_0 (Q5_K for the IQ1/IQ2 types; Q8_0 stays Q8_0); rule
# present since the k-quants PR #1684 (June 2023), so it holds for Q4_0 files too. token_embd keeps
# the recipe's base type (Q4_0 for Q4_0, Q4_K for Q4_K_M; Q2_K for IQ2_XXS) unless the embedding is
# tied to the head. The value is the mean of the two, as the model's `other` parameters are mostly
# those two matrices of equal size. Check: Llama-2-7B Q4_0 = 6.476e9 x 4.5/8 (layers) + 1.311e8 x
# (4.5 + 6.5625)/8 (embedding + head) + 2.7e5 x 4 (f32 norms) = 3.825e9 B, the 3.83 GB TheBloke/
# Llama-2-7B-GGUF lists for llama-2-7b.Q4_0.gguf (tests/test_edge.py). MLX's nn.quantize quantises
# Embedding and Linear alike (4.5 / 8.5 bits).
OTHER_BITS: dict[str, float] = {
    "q8_0": 8.5,
    "q4_0": (4.5 + 6.5625) / 2,
    "q4_k_m": (4.5 + 6.5625) / 2,
    "iq2_xxs": (2.5625 + 5.5) / 2,
    "q2_k": (2.5625 + 6.5625) / 2,
    "q3_k_m": (3.4375 + 6.5625) / 2,
    "q5_k_m": (5.5 + 6.5625) / 2,
    "q6_k": 6.5625,
    "mlx-4bit": 4.5,
    "mlx-8bit": 8.5,
}

# GGUF block formats: llama.cpp's own quantisation types (ggml/src/ggml-common.h block layouts)
GGUF_FORMATS = frozenset(("q8_0", "q4_0", "q4_k_m", "iq2_xxs", "q2_k", "q3_k_m", "q5_k_m", "q6_k"))


def engine_weight_format(fmt: Format, engine: str, vendor: str, peaks: Container[str]) -> Format:
    """The weight format as an engine's kernels run it. llama.cpp computes its GGUF block formats,
    and MXFP4 (a GGUF type too since the gpt-oss release), in kernels of its own that unpack the
    blocks in the inner loop, so every such matmul is weight-only (dequantising) whatever the
    format's native path elsewhere:
    - CUDA (NVIDIA with int8 tensor cores, Turing on): ggml_cuda_should_use_mmq picks the MMQ
      kernels for every batch size; they quantise the activations to q8_1 and multiply with int8
      mma.sync tiles (ggml/src/ggml-cuda/mmq.cuh, mma.cuh; "CUDA: use tensor cores for MMQ",
      ggml-org/llama.cpp PR #7676), so the compute peak is the int8 tensor rate, not FP16 and not
      FP4/FP8 (no native MXFP4 mma in the builds the cases ran, b6918 of Nov 2025); MoE experts
      go through the same kernels (mul_mat_id);
    - Metal and elsewhere: the blocks are dequantised to half in the kernel and multiplied in
      FP16 (ggml-metal.metal kernel_mul_mm: simdgroup half matrices): the format's FP16 path,
      weight-only (MXFP4 too).
    Routed experts (mul_mat_id) run one GEMM per expert whose rows are padded to whole tiles:
    128 rows in MMQ (mmq_x up to 128 on tensor-core GPUs, chosen from the step's rows: mmq.cuh
    mul_mat_q_case), 32 in Metal's kernel_mul_mm_id (its 64 x 32 simdgroup tile) [uncertain]
    (closedform.expert_tile_padding; counted for steps of at least one full tile, optime).
    Their mat-vec kernels (decode) cost `alu_flops` FP32-FLOP equivalents per weight per column
    (roofline/timing/gemv.py, counted from the Metal and CUDA kernels).
    Other engines keep the format as it is."""
    if engine != "llamacpp" or (fmt.name not in GGUF_FORMATS and fmt.name != "mxfp4"):
        return fmt
    mmq = vendor == "nvidia" and "int8" in peaks
    compute, tile = ("int8", MMQ_TILE_ROWS) if mmq else ("fp16", METAL_TILE_ROWS)
    alu = alu_flops_per_weight(fmt.name, vendor)
    same = fmt.compute == compute and fmt.expert_tile == tile and fmt.alu_flops == alu
    if same and fmt.weight_only and fmt.block_kernels:
        return fmt
    return replace(
        fmt, compute=compute, weight_only=True, expert_tile=tile, block_kernels=True, alu_flops=alu
    )


MMQ_TILE_ROWS = 128  # llama.cpp CUDA MMQ: widest column tile (mmq.cuh, get_mmq_x_max_host)
METAL_TILE_ROWS = 32  # llama.cpp Metal mul_mm(_id): 32 columns per threadgroup tile


KV_FORMATS: dict[str, Format] = _by_name(
    Format("fp8", 8.0, "bf16", False, "FP8 E4M3, per-tensor scale"),
    Format("int8", 8.25, "bf16", False, "int8, fp16 scale + zero per token and head (H=128)"),
    Format("int4", 4.25, "bf16", False, "int4, fp16 scale + zero per token and head (H=128)"),
)

ACTIVATION_FORMATS: dict[str, Format] = {
    name: WEIGHT_FORMATS[name] for name in ("fp32", "bf16", "fp16", "fp8")
}


def chip_weight_format(fmt: Format, peaks: Container[str]) -> Format:
    """The weight format as a chip without its compute format runs it: weight-only, dequantised
    to the first 16-bit (or wider) dtype the chip has in COMPUTE_FALLBACK, so the dequantisation
    cost of weight-only kernels applies (FP8 weights on an A100 run through Marlin's FP8 kernel,
    which dequantises to 16 bit: vLLM docs, "FP8 W8A16" on Ampere; NVFP4/MXFP4 on Ampere and
    Volta likewise; W8A8 where there is no int8 tensor math). The same object when the chip has
    the format's compute or the format is weight-only already."""
    if fmt.weight_only or fmt.compute in peaks:
        return fmt
    chain = COMPUTE_FALLBACK.get(fmt.compute, ())
    wide = next((d for d in chain if d in peaks and d in ("bf16", "fp16", "fp32")), fmt.compute)
    return replace(fmt, compute=wide, weight_only=True)


def weight_format_note(fmt: Format, peaks: Container[str], chip: str) -> str | None:
    """One line saying how `fmt` runs on a chip that lacks its compute format, else None."""
    ran = chip_weight_format(fmt, peaks)
    if ran is fmt:
        return None
    return (
        f"{fmt.name} weights on {chip}: no {fmt.compute} compute, so they run weight-only, "
        f"dequantized to {ran.compute} (the dequantization cost is counted)"
    )


# When a chip lacks the preferred compute dtype, fall back along this chain (a chip without FP8
# runs FP8 weights through a weight-only kernel at 16 bit, e.g. Marlin on A100).
COMPUTE_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp8", "bf16", "fp16", "fp32"),
    "fp8": ("fp8", "bf16", "fp16", "fp32"),
    "int8": ("int8", "bf16", "fp16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp32": ("fp32",),
}


# Other names engines and model cards use for the same number formats...
ALIASES: dict[str, str] = {
    "float32": "fp32",
    "f32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "f16": "fp16",
    "half": "fp16",
    "fp8_e4m3": "fp8",
    "fp8-e4m3": "fp8",
    "e4m3": "fp8",
    "fp8_e5m2": "fp8",
}
# ...and for weight quantisation schemes (weights only).
WEIGHT_ALIASES: dict[str, str] = {
    **ALIASES,
    "w8a16": "int8",
    "int8-weight-only": "int8",
    "w4a16": "int4",
    "awq": "int4",
    "gptq": "int4",
    "int4-awq": "int4",
    "int4-gptq": "int4",
    "smoothquant": "w8a8",
    "q4_k": "q4_k_m",
    "mlx-4": "mlx-4bit",
    "mlx4": "mlx-4bit",
    "mlx-q4": "mlx-4bit",
    "mlx-8": "mlx-8bit",
    "mlx8": "mlx-8bit",
    "mlx-q8": "mlx-8bit",
}


def _lookup(
    table: dict[str, Format], name: str, what: str, aliases: dict[str, str] = ALIASES
) -> Format:
    from difflib import get_close_matches

    key = name.lower()
    key = key if key in table else aliases.get(key, key)
    if key in table:
        return table[key]
    close = get_close_matches(key, table, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"choose one of {', '.join(table)}"
    raise InputError(f"unknown {what} format '{name}'", hint=hint)


def weight_format(name: str) -> Format:
    """Look up a weight format by name (case-insensitive)."""
    return _lookup(WEIGHT_FORMATS, name, "weight", WEIGHT_ALIASES)


def kv_format(name: str) -> Format:
    """Look up a KV-cache format by name (case-insensitive)."""
    return _lookup(KV_FORMATS, name, "KV-cache")


def activation_format(name: str) -> Format:
    """Look up an activation format by name (case-insensitive)."""
    return _lookup(ACTIVATION_FORMATS, name, "activation")


def sparse_2_4_bits(dense_bits: float) -> float:
    """Bits per weight of a 2:4 structured-sparse matrix: half the values plus a 2-bit index per
    kept value (NVIDIA Ampere whitepaper, sparse tensor cores): dense_bits/2 + 1. bf16 -> 9 bits."""
    return dense_bits / 2.0 + 1.0

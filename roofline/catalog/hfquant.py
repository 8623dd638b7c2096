"""Read a Hugging Face `quantization_config` as one of roofline's weight formats (pure).

Each checkpoint format names its bits and groups in its own keys (AutoAWQ / AutoGPTQ `bits` and
`group_size`, llm-compressor's `config_groups`, ModelOpt's `quant_algo`, bitsandbytes'
`load_in_4bit`); `quantized_weights` maps them onto roofline.domain.precision's weight formats and
refuses, by name, a method it does not know rather than fall back to 16 bits.
"""

from __future__ import annotations

from typing import Any

from roofline.domain.errors import InputError

QUANT_METHODS = (
    "awq",
    "gptq",
    "fp8",
    "fbgemm_fp8",
    "compressed-tensors",
    "mxfp4",
    "modelopt",
    "bitsandbytes",
)


def _int_weights(method: str, bits: Any, group: Any, where: str) -> tuple[str, str]:
    """Integer weight-only formats (AWQ, GPTQ, compressed-tensors pack-quantized): 8 bits →
    int8; 4 bits with groups of 32 or fewer → int4-g32, coarser groups or per-channel → int4
    (group 128; a group of 64 stores 4.25 bits, 3% more than int4 counts)."""
    size = f", group {group}" if group not in (None, -1, 0) else ", per channel"
    if bits == 8:
        return "int8", f"{method} 8-bit{size}"
    if bits == 4:
        fine = isinstance(group, int) and 0 < group <= 32
        return ("int4-g32" if fine else "int4"), f"{method} 4-bit{size}"
    raise InputError(
        f"{where}: quantization_config: {method} with {bits}-bit weights has no weight format "
        "in roofline (4 and 8 bits are modelled)",
        hint="remove quantization_config from a copy of config.json and pass --weights",
    )


def _compressed_tensors(q: dict[str, Any], where: str) -> tuple[str, str]:
    """llm-compressor's format: the first config group's weights (num_bits, type, group_size)
    and whether activations are quantized too (w8a8)."""
    groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, dict)]
    weights = groups[0].get("weights") if groups else None
    if not isinstance(weights, dict):
        raise InputError(f"{where}: quantization_config: compressed-tensors without config_groups")
    bits, kind, group = (
        weights.get("num_bits"),
        weights.get("type", "int"),
        weights.get("group_size"),
    )
    acts = groups[0].get("input_activations")
    if kind == "float" and bits == 8:
        return "fp8", "compressed-tensors fp8"
    if kind == "float" and bits == 4 and group in (16, 32):
        return ("nvfp4" if group == 16 else "mxfp4"), f"compressed-tensors fp4, group {group}"
    if kind == "int" and bits == 8 and isinstance(acts, dict) and acts.get("num_bits") == 8:
        return "w8a8", "compressed-tensors int8 weights and activations"
    if kind == "int":
        return _int_weights("compressed-tensors", bits, group, where)
    raise InputError(
        f"{where}: quantization_config: compressed-tensors {kind} {bits}-bit weights "
        f"(group {group}) have no weight format in roofline",
        hint="remove quantization_config from a copy of config.json and pass --weights",
    )


def quantized_weights(q: dict[str, Any], where: str = "config.json") -> tuple[str, str]:
    """(weight format, description) of a config.json `quantization_config`.

    awq / gptq: `bits` and `group_size` (see _int_weights); fp8 and fbgemm_fp8 (DeepSeek's
    128×128 block scales add 32/16384 bits per weight, negligible) → fp8; mxfp4 (gpt-oss) →
    mxfp4; compressed-tensors: see _compressed_tensors; modelopt `quant_algo` FP8 / NVFP4 /
    W4A16_AWQ → fp8 / nvfp4 / int4; bitsandbytes load_in_8bit → int8, load_in_4bit → int4 (NF4
    with double-quantised block scales, about 4.13 bits). Any other method is an InputError naming
    it: a silent 16-bit fallback would overstate a quantized checkpoint's bytes 2-4x."""
    method = str(q.get("quant_method", "")).lower()
    if method in ("awq", "gptq"):
        bits = q.get("bits", q.get("w_bit"))
        return _int_weights(method, bits, q.get("group_size", q.get("q_group_size")), where)
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        return "fp8", f"{method}" + (f", {block[0]}x{block[1]} blocks" if block else "")
    if method == "mxfp4":
        return "mxfp4", "mxfp4"
    if method == "compressed-tensors":
        return _compressed_tensors(q, where)
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        mapped = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_AWQ": "int4"}.get(algo)
        if mapped:
            return mapped, f"modelopt {algo}"
        raise InputError(f"{where}: quantization_config: modelopt quant_algo {algo!r} is not known")
    if method == "bitsandbytes":
        if q.get("load_in_8bit"):
            return "int8", "bitsandbytes 8-bit"
        if q.get("load_in_4bit"):
            return "int4", f"bitsandbytes 4-bit {q.get('bnb_4bit_quant_type', 'nf4')}"
    raise InputError(
        f"{where}: quantization_config quant_method {method or None!r} is not supported",
        hint=f"known: {', '.join(QUANT_METHODS)}; to import the shape alone, remove "
        "quantization_config from a copy of config.json and pass --weights",
    )


def block_scaled_fp8(q: dict[str, Any]) -> bool:
    """Whether an FP8 checkpoint scales its weights per block (`weight_block_size`, DeepSeek-V3's
    [128, 128]): engines run its linears through block-scaled FP8 GEMMs (vLLM's and SGLang's
    w8a8_block_fp8 paths, AITER's a8w8_blockscale kernels on ROCm) rather than the per-tensor
    ones (torch._scaled_mm, hipBLASLt)."""
    method = str(q.get("quant_method", "")).lower()
    return method in ("fp8", "fbgemm_fp8") and bool(q.get("weight_block_size"))


def dense_weights(q: dict[str, Any]) -> str | None:
    """The format of the non-expert linear layers when a checkpoint quantizes the routed experts
    only: its `modules_to_not_convert` (transformers' quantizers) names the attention layers,
    which then stay in 16 bit (gpt-oss: MXFP4 experts; attention, router, embeddings and head in
    BF16, huggingface.co/docs/transformers/quantization/mxfp4). None: one format throughout."""
    skipped = q.get("modules_to_not_convert") or []
    if not isinstance(skipped, list):
        return None
    return "bf16" if any("self_attn" in str(x) or ".attn" in str(x) for x in skipped) else None

"""The fused MoE layer's curve an op runs on: the family's (hardware/kernels.yaml moe, fitted on
TensorRT-LLM's fused MoE), a weight-only format's own, or the engine's own (engine_moe).
Selection only; the time is roofline/timing/gemm.py moe_time_s."""

from __future__ import annotations

from dataclasses import replace

from roofline.domain.hardware import Efficiency, KernelSet
from roofline.timing.gemm import MoeCurve


def scaled_moe(moe: MoeCurve, sc: float, sm: float) -> MoeCurve:
    """The MoE curve with its plateau shares scaled by the CLI overrides, capped at 1."""
    return replace(
        moe,
        eta_max=min(moe.eta_max * sc, 1.0),
        eta_memory=min(moe.eta_memory * sm, 1.0),
        eta_act=min(moe.eta_act * sm, 1.0),
    )


def moe_curve(
    eff: Efficiency, family: MoeCurve | None, sc: float, sm: float, weight_only: str | None
) -> MoeCurve | None:
    """The fused MoE module's curve: with weights in a format the chip has no MMA for
    (`weight_only`, e.g. mxfp4 on Hopper, which dequantises the FP4 experts to bf16 inside the
    grouped GEMM), that format's own measured module when the family has one (hardware/
    kernels.yaml moe.mxfp4: TensorRT-LLM's w4a16_mxfp4 moe_torch_flow tables, plateau 0.375 of
    the bf16 peak against 0.904 for bf16 weights); else the compute dtype's (`family`, already
    scaled; `sc`, `sm`: the CLI overrides' scales).
    [approximation: the shared MoE form (gemm.py moe_time_s) fits the tables to 22.5%, but
    over-predicts thousands of tokens on one rank, e.g. 7.2 ms against 4.3 ms measured for
    gpt-oss-120b's layer at 8,192 tokens on an H200, and under-predicts EP 16-32 by ~20%; vLLM's
    Triton MXFP4 kernel is ~1.5x faster there and SGLang's fused_moe_triton 2-3x slower
    (aiconfigurator-core 0.12.0 moe tables of vllm 0.24.0 and sglang 0.5.14); with experts
    TP-sharded their Triton fused_moe scales better than TensorRT-LLM's permute-based module
    (DeepSeek-R1 fp8_block, H200, 8,192 tokens, TP1 -> TP8: vLLM 9.48 -> 2.37 ms, SGLang 7.98 ->
    1.88 ms, TensorRT-LLM 10.4 -> 4.98 ms): the engines' own curves (engine_moe_curve) carry it
    for a profile that names one (vllm and sglang, issue 34: TensorRT-LLM's curve now carries its
    grouped GEMM's scheduler, walk_us and tile_wave_us, which Triton's fused_moe has not).]"""
    ks = eff.kernels
    own = ks.moe.get(weight_only) if ks is not None and weight_only is not None else None
    return family if own is None else scaled_moe(own, sc, sm)


def dtype_key(dtype: str) -> str:
    """The kernels.yaml moe key of a compute dtype (the 16-bit dtypes share bf16's tables)."""
    return "bf16" if dtype in ("fp16", "bf16") else dtype


def moe_key(dtype: str, weight_only: str | None, ks: KernelSet) -> str:
    """The kernels.yaml dtype key of the MoE curve moe_curve picks: the weight-only format's own
    table when the family has one, else the compute dtype's (dtype_key)."""
    if weight_only is not None and weight_only in ks.moe:
        return weight_only
    return dtype_key(dtype)


def engine_moe_curve(eff: Efficiency, key: str, engine: str | None) -> MoeCurve | None:
    """The engine's own measured fused MoE (EngineProfile.moe_kernel: hardware/kernels.yaml
    engine_moe, vLLM's and SGLang's Triton fused_moe on Hopper and Ampere) for the curve's dtype
    key, scaled by the CLI overrides; None (the family's TensorRT-LLM curve stays) when the family
    has none.
    [approximation: fitted on the engines' moe_ep_size 1 rows (aiconfigurator-core 0.12.0) and
    used at every EP size: their collectors' EP rows do not shard the work as TensorRT-LLM's do]"""
    ks = eff.kernels
    if engine is None or ks is None:
        return None
    own = ks.engine_moe.get(engine, {}).get(key)
    if own is None:
        return None
    return scaled_moe(own, eff.compute / ks.compute_ref, eff.memory / ks.memory_ref)

"""llama.cpp's GGUF block kernels: the dtype their matmuls run in, their compute share and the
tile padding of routed experts (precision.engine_weight_format, closedform.expert_tile_padding).
Expected values are worked out by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.case import case_deployment
from roofline.cases.casefiles import load_cases
from roofline.domain.precision import engine_weight_format, weight_format
from roofline.step.closedform import expert_tile_padding
from roofline.step.optime import expert_padding
from roofline.step.phases import engine_deployment, prefill

ROOT = Path(__file__).resolve().parents[1]


def test_llamacpp_runs_gguf_blocks_in_int8_on_cuda_and_fp16_on_metal():
    q8 = weight_format("q8_0")
    # CUDA with an int8 tensor peak: MMQ (int8 mma.sync), experts padded to 128-row tiles
    cuda = engine_weight_format(q8, "llamacpp", "nvidia", {"fp16": 1, "int8": 1})
    assert (cuda.compute, cuda.weight_only, cuda.block_kernels, cuda.expert_tile) == (
        "int8",
        True,
        True,
        128,
    )
    # Metal: blocks dequantised to half in the kernel, 32-row tiles
    metal = engine_weight_format(q8, "llamacpp", "apple", {"fp16": 1})
    assert (metal.compute, metal.block_kernels, metal.expert_tile) == ("fp16", True, 32)
    # MXFP4 is a GGUF type under llama.cpp (no FP4 mma in MMQ) but native FP4 elsewhere
    mx = weight_format("mxfp4")
    assert engine_weight_format(mx, "llamacpp", "nvidia", {"fp4": 1, "int8": 1}).compute == "int8"
    assert engine_weight_format(mx, "vllm", "nvidia", {"fp4": 1, "int8": 1}) is mx
    # other engines and non-GGUF formats are left alone
    assert engine_weight_format(q8, "vllm", "nvidia", {"int8": 1}) is q8
    awq = weight_format("int4")
    assert engine_weight_format(awq, "llamacpp", "nvidia", {"int8": 1}) is awq


def test_gb10_q8_prefill_ideal_is_at_the_int8_peak(cat):
    # Qwen2.5-7B Q8_0, pp2048 on a DGX Spark under llama.cpp: the matmuls run in int8 at
    # 48 SMs x 2048 FLOP/clk x ~2.54 GHz = 250 TOPS (twice the 125 TFLOPS FP16 figure)
    hw = cat.accelerator("nvidia-dgx-spark")
    assert hw.peak("int8") == pytest.approx(2 * hw.peak("fp16"))
    case = next(
        c
        for c in load_cases(ROOT / "validation/extra_cases.yaml")
        if c.id == "spark-llamacpp-qwen25-7b-q8-pp2048"
    )
    dep, _ = case_deployment(case)
    model = cat.model(case.model)
    p_cpp = prefill(model, hw, dep, 1, 2048, engine="llamacpp")
    p_vllm = prefill(model, hw, dep, 1, 2048, engine="vllm")
    assert (p_cpp.compute_dtype, p_vllm.compute_dtype) == ("int8", "fp16")
    # the MLP matmul is compute-bound in both: its ideal time halves at the doubled peak
    mlp = [next(r for r in p.ops if r.op.name == "mlp") for p in (p_cpp, p_vllm)]
    assert float(mlp[0].t_ideal_s) == pytest.approx(float(mlp[1].t_ideal_s) / 2, rel=1e-6)


def test_expert_tile_padding_by_hand():
    # gpt-oss-120b pp2048: 2048 rows x top-4 over 128 experts = 64 rows per expert on average;
    # Poisson(64) almost never exceeds 128, so every expert runs one 128-row tile: 128/64 = 2
    assert expert_tile_padding(2048, 4, 128, 128) == pytest.approx(2.0, rel=1e-3)
    # rows far beyond the tile: ceil(n/t) ~ n/t + 1/2, so the factor ~ 1 + t / (2 lambda)
    lam = 1e6 * 8 / 128
    assert expert_tile_padding(1e6, 8, 128, 128) == pytest.approx(1 + 128 / (2 * lam), rel=1e-3)
    # no tiles: no padding
    assert expert_tile_padding(2048, 8, 128, 0) == 1.0


@settings(max_examples=60, deadline=None)
@given(
    rows=st.floats(16, 1e5),
    top_k=st.integers(1, 8),
    experts=st.integers(8, 256),
    tile=st.sampled_from([16, 32, 64, 128]),
)
def test_expert_tile_padding_is_between_one_and_one_tile_extra(rows, top_k, experts, tile):
    # E[ceil(n/t)]·t lies between E[n] (no padding) and E[n] + t (at most one padded tile per
    # expert that runs), so the factor is within [1, 1 + t/lambda] (normal approximation: 2%)
    lam = rows * top_k / experts
    f = expert_tile_padding(rows, top_k, experts, tile)
    t = min(tile, 8 * -(-max(rows, 1) // 8))
    assert 0.98 <= f <= (1 + t / lam) * 1.02


def test_padding_slows_the_expected_moe_prefill_not_the_ideal(cat):
    # Qwen3-30B-A3B Q8_0 pp2048 on GB10: 2048 x 8 / 128 = 128 rows per expert, right at the MMQ
    # tile, so Poisson routing sends about half the experts a second tile: the factor is
    # 1 + P(n > 128) ~ 1.48; the ideal counts only the useful FLOPs
    hw = cat.accelerator("nvidia-dgx-spark")
    model = cat.model("qwen3-30b-a3b")
    case = next(
        c
        for c in load_cases(ROOT / "validation/heldout_cases.yaml")
        if c.id == "spark-llamacpp-qwen3-30b-a3b-q8-pp2048"
    )
    dep, _ = case_deployment(case)
    p = prefill(model, hw, dep, 1, 2048, engine="llamacpp")
    experts = next(r for r in p.ops if r.op.name == "moe.experts")
    run = engine_deployment(dep, hw, "llamacpp")
    assert expert_padding(experts.op, run) == pytest.approx(1.48, abs=0.01)
    peak, w = hw.peak("int8"), hw.memory_bandwidth_bytes_per_s
    ideal = max(float(experts.op.flops) / peak, float(experts.op.bytes) / w)
    assert float(experts.t_ideal_s) == pytest.approx(ideal)
    eff = hw.efficiency  # scalar shares: the padded FLOPs at the GGUF compute share
    padded = 1.48 * float(experts.op.flops) / (peak * eff.compute_dequant)
    assert float(experts.t_expected_s) == pytest.approx(padded, rel=0.01)

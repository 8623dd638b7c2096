"""The physics against hand derivations, the scaling book's worked examples and the seed essay."""

import numpy as np
import pytest

from roofline.domain.hardware import Tier
from roofline.domain.layout import Layout
from roofline.domain.model import ModelArch
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import ENGINES
from roofline.step.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
    weight_bytes_total,
)
from roofline.step.ops import Deployment, expected_experts, sum_capped
from roofline.step.phases import decode, prefill, request
from roofline.timing.collectives import allreduce_time_s

LLAMA2_13B = ModelArch(
    id="llama-2-13b",
    model_type="llama",
    hidden_size=5120,
    num_hidden_layers=40,
    num_attention_heads=40,
    vocab_size=32000,
    intermediate_size=13824,
)


# ---- KV cache ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("llama-3.1-405b", 2 * 8 * 128 * 126 * 2),  # 516,096 (DeepSeek ISCA'25 Table 1)
        ("deepseek-r1", 61 * (512 + 64) * 2),  # 70,272 (DeepSeek ISCA'25 Table 1)
        ("llama-3.1-8b", 2 * 8 * 128 * 32 * 2),  # 131,072
        ("llama-3.1-70b", 2 * 8 * 128 * 80 * 2),  # 327,680
    ],
)
def test_kv_bytes_per_token_bf16(cat, model, expected):
    assert kv_bytes_per_token(cat.model(model), 16) == expected


def test_scaling_book_llama2_13b_kv():
    # scaling book, inference chapter: 8192 · 40 · 128 · 40 · 2 · 2 = 6.71e9 bytes ("6.7 GB")
    dep = Deployment()
    assert kv_bytes_per_sequence(LLAMA2_13B, dep, 8192) == 8192 * 40 * 128 * 40 * 2 * 2


def test_sliding_windows_cap_kv(cat):
    gemma, dep = cat.model("gemma-3-27b"), Deployment()
    per_layer = 2 * 16 * 128 * 2  # 8,192 B per token per layer
    # at 32k: 10 global layers hold 32768 tokens, 52 local ones hold their 1024-token window
    assert kv_bytes_per_sequence(gemma, dep, 32768) == (10 * 32768 + 52 * 1024) * per_layer


def test_deepseek_v2_kv_reduction_vs_67b(cat):
    # DeepSeek-V2 abstract: −93.3% vs DeepSeek 67B = V2 at ~6 bits vs 67B at 16 bits;
    # at equal precision: 576·60 / (2·8·128·95) = 34,560 / 194,560 = 0.178 (−82.2%)
    v2 = kv_bytes_per_token(cat.model("deepseek-v2"), 16)
    base = kv_bytes_per_token(cat.model("deepseek-llm-67b"), 16)
    assert v2 / base == pytest.approx(34_560 / 194_560)
    assert 1 - (v2 * 6 / 16) / base == pytest.approx(0.933, abs=0.001)


def test_kv_heads_replicate_past_tp_equals_k(cat):
    m = cat.model("llama-3.1-70b")  # K = 8
    assert kv_bytes_per_token(m, 16, tp=8) == 327_680 / 8
    assert kv_bytes_per_token(m, 16, tp=16) == 327_680 / 8  # one head per rank, replicated
    mla = cat.model("deepseek-r1")  # the latent is replicated on every rank
    assert kv_bytes_per_token(mla, 16, tp=8) == 70_272


# ---- the roofline ------------------------------------------------------------------------------
def test_ridge_points(cat):
    assert cat.accelerator("h100").ridge_flops_per_byte("bf16") == pytest.approx(989.5 / 3.35)
    assert cat.accelerator("h100").ridge_flops_per_byte("bf16") == pytest.approx(295, abs=1)
    # scaling book: TPU v5e 1.97e14 / 8.2e11 ≈ 240
    assert cat.accelerator("tpu-v5e").ridge_flops_per_byte("bf16") == pytest.approx(240, rel=0.01)


def test_decode_is_about_one_flop_per_byte_and_memory_bound(cat):
    d = decode(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), 1, 1024)
    # 2 FLOPs per parameter over 2 bytes per parameter, plus a little attention
    assert 0.9 < float(d.arithmetic_intensity) < 1.3
    assert d.bound == "memory"
    # the seed: "hundreds of times below the ridge point"
    assert d.ridge_flops_per_byte / float(d.arithmetic_intensity) > 200


def test_decode_time_is_weights_plus_kv_over_bandwidth(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    d = decode(m, hw, Deployment(), 1, 1024)
    # bytes = all weights but the embedding table (one row is gathered) + 1024 tokens of KV
    weights = 2 * (8_030_261_248 - 128256 * 4096)
    kv = 1024 * 131_072
    assert float(d.t_ideal_s) == pytest.approx((weights + kv) / 3.35e12, rel=0.01)


def test_prefill_is_compute_bound(cat):
    p = prefill(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), 1, 4096)
    assert p.bound == "compute"
    assert float(p.arithmetic_intensity) > 1000


def test_causal_prefill_attention_flops(cat):
    m = cat.model("llama-3.1-8b")
    p = prefill(m, cat.accelerator("h100"), Deployment(), 1, 4096)
    core = next(r.op for r in p.ops if r.op.name == "attn.core")
    # 2·N·H·S·(S+1) per layer, not 4·N·H·S²
    assert float(core.flops) == 32 * 2 * 32 * 128 * 4096 * 4097


def test_mla_decode_attention_intensity(cat):
    d = decode(cat.model("deepseek-r1"), cat.accelerator("h200"), Deployment(), 1, 32768)
    core = next(r for r in d.ops if r.op.name == "attn.core")
    # N · 2176 / (576 · 2) = 128 · 2176 / 1152 ≈ 242 FLOP/B (the activations add a little)
    assert float(core.intensity) == pytest.approx(128 * 2176 / 1152, rel=0.01)


def test_gqa_decode_attention_intensity_is_n_over_k(cat):
    d = decode(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), 1, 32768)
    core = next(r for r in d.ops if r.op.name == "attn.core")
    assert float(core.intensity) == pytest.approx(32 / 8, rel=0.01)  # MHA ≈ 1, GQA × N/K


def test_expected_experts():
    assert expected_experts(256, 8, 1) == pytest.approx(8)
    assert expected_experts(256, 8, 10_000) == pytest.approx(256)
    assert expected_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2))  # 3.5


def test_moe_decode_weight_bytes_grow_with_batch(cat):
    m, hw = cat.model("mixtral-8x7b"), cat.accelerator("h100")
    dep = Deployment()
    w1 = float(decode(m, hw, dep, 1, 512).weight_bytes)
    w64 = float(decode(m, hw, dep, 64, 512).weight_bytes)
    expert = 3 * 4096 * 14336 * 2 * 32  # one expert across all layers, bf16
    assert w64 - w1 == pytest.approx((8 - 2) * expert, rel=0.01)  # 2 experts → nearly all 8


def test_sum_capped_closed_form():
    for a, b, w in [(1, 10, None), (1, 10, 4), (5, 20, 8), (30, 40, 8), (3, 2, 5)]:
        brute = sum(min(t, w) if w else t for t in range(a, b + 1))
        assert float(sum_capped(a, b, w)) == brute


def test_ring_allreduce_formula():
    link = Tier("l", "l", "link", bandwidth_bytes_per_s=100e9, latency_s=1e-6)
    # 8 ranks, 1 GB: α·14 + 14/8 · 1e9 / 1e11
    assert float(allreduce_time_s(link, 8, 1e9)) == pytest.approx(14e-6 + 1.75e-2)
    assert float(allreduce_time_s(link, 1, 1e9)) == 0


def test_tp_halves_weight_time(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    one = decode(m, hw, Deployment(weights=WEIGHT_FORMATS["fp8"]), 1, 1024)
    two = decode(m, hw, Deployment(weights=WEIGHT_FORMATS["fp8"], layout=Layout(tp=2)), 1, 1024)
    assert float(two.weight_bytes) == pytest.approx(float(one.weight_bytes) / 2, rel=0.01)


def test_request_closed_form_matches_step_by_step_decode(cat):
    # E2E = prefill + Σ of the O − 1 decode steps at KV lengths S+1 … S+O−1, summed one step at a
    # time here; the request uses the closed-form mean step (Σ KV(t) in closed form). The expected
    # times include every per-step cost, so a per-step term counted once per request would show.
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    s, o, b = 1000, 100, 4
    r = request(m, hw, Deployment(), b, s, o)
    steps = decode(m, hw, Deployment(), b, np.arange(s + 1, s + o), steps=1)
    pre = prefill(m, hw, Deployment(), b, s)
    for kind in ("ideal", "expected"):
        step_sum = float(np.sum(getattr(steps, f"t_{kind}_s")))
        e2e = float(getattr(pre, f"t_{kind}_s")) + step_sum
        assert float(getattr(r, kind).e2e_s) == pytest.approx(e2e, rel=1e-9), kind


def test_reasoning_trace_is_decode_dominated(cat):
    # the seed: reasoning traces past 10,000 tokens spend upwards of 99% of time in decode
    r = request(
        cat.model("deepseek-r1-distill-llama-8b"),
        cat.accelerator("h100"),
        Deployment(),
        1,
        500,
        10_000,
    )
    assert float(r.ideal.decode_time_fraction) > 0.99


def test_fp8_on_a100_falls_back_to_16_bit_compute(cat):
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"])
    assert dep.compute(cat.accelerator("a100")) == "bf16"
    assert dep.compute(cat.accelerator("h100")) == "fp8"


# ---- memory and capacity -----------------------------------------------------------------------
def test_weight_bytes_quantised_linear_layers_only(cat):
    m = cat.model("llama-3.1-8b")
    emb = 2 * 128256 * 4096  # embedding + head stay in 16 bit
    int4 = WEIGHT_FORMATS["int4"]
    assert weight_bytes_total(m, Deployment(weights=int4)) == pytest.approx(
        (8_030_261_248 - emb - 65 * 4096) * 4.125 / 8 + (emb + 65 * 4096) * 2
    )


def test_max_batch_ideal_engine_by_hand(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    plan = plan_memory(m, hw, Deployment(), ENGINES["ideal"])
    budget = 81559 * 2**20 - 2 * 8_030_261_248  # nvidia-smi capacity − bf16 weights
    assert plan.kv_budget_bytes == pytest.approx(budget)
    assert float(max_batch(plan, m, Deployment(), 8192)) == budget // (8192 * 131_072)


def test_engine_rules_differ(cat):
    m, hw, dep = cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment()
    vllm = plan_memory(m, hw, dep, ENGINES["vllm"])
    trt = plan_memory(m, hw, dep, ENGINES["trtllm"])
    cap, w = hw.usable_memory_bytes, vllm.weights_bytes
    # both profile a forward of 8,192 tokens: 8,192 x (2 x 4,096 + 3 x 14,336) x 2 B; TensorRT-LLM
    # adds fp32 logits of 256 rows, vLLM V1 runs its sampler over 1,024 rows (1,024 x 128,256 x
    # 6 B = 788 MB, below the forward's 839 MB)
    forward = 8192 * 51_200 * 2
    assert vllm.activation_bytes == forward
    assert trt.activation_bytes == forward + 256 * 128_256 * 4
    non_kv = vllm.activation_bytes + vllm.runtime_overhead_bytes
    assert vllm.kv_budget_bytes == pytest.approx(0.9 * cap - w - non_kv)
    # TensorRT-LLM starts from the CUDA runtime's total: 79.11 GiB on an H100, not 81,559 MiB
    non_kv = trt.activation_bytes + trt.runtime_overhead_bytes
    assert trt.kv_budget_bytes == pytest.approx(0.9 * (79.11 * 2**30 - w - non_kv), rel=1e-4)


def test_paged_blocks_round_up(cat):
    m = cat.model("llama-3.1-8b")
    assert kv_bytes_per_sequence(m, Deployment(), 17, block_tokens=16) == 32 * 131_072


def test_fp8_kv_halves_kv(cat):
    m = cat.model("llama-3.1-405b")
    assert kv_bytes_per_token(m, KV_FORMATS["fp8"].bits) == 516_096 / 2


def test_unified_memory_fraction(cat):
    m2 = cat.accelerator("apple-m2-ultra")  # 192 GiB: above 36 GiB, Metal wires 3/4
    assert m2.usable_memory_bytes == pytest.approx(192 * 2**30 * 0.75)
    m2 = cat.accelerator("apple-m2")  # 24 GiB: 2/3
    assert m2.usable_memory_bytes == pytest.approx(24 * 2**30 * 2 / 3)


def test_array_inputs_broadcast(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    batches = np.array([1, 8, 64])
    d = decode(m, hw, Deployment(), batches, 2048)
    singles = [float(decode(m, hw, Deployment(), int(b), 2048).t_ideal_s) for b in batches]
    assert d.t_ideal_s.shape == (3,)
    np.testing.assert_allclose(d.t_ideal_s, singles)

"""MoE layer curve and the DeepEP all-to-all (issue 11): byte counts and curve forms by hand,
and the fitted curves against measured points of aiconfigurator-core 0.12.0."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import weight_format
from roofline.step.ops import Deployment, ep_alltoall_bytes_per_value
from roofline.step.phases import decode
from roofline.timing.collectives import measured_alltoall_time_s
from roofline.timing.gemm import MoeCurve, moe_time_s

CAT = load_catalog()


def test_alltoall_bytes_per_value_by_hand():
    # fp8 experts: dispatch fp8 + one fp32 scale per 128 channels = 1 + 4/128 = 1.03125 B,
    # combine bf16 = 2 B; one op per call stands for both: (1.03125 + 2) / 2 = 1.515625
    assert ep_alltoall_bytes_per_value(Deployment(weights=weight_format("fp8"))) == 1.515625
    # 16-bit experts: bf16 both ways
    assert ep_alltoall_bytes_per_value(Deployment()) == 2.0
    # weight-only int4 runs 16-bit math: bf16 both ways
    assert ep_alltoall_bytes_per_value(Deployment(weights=weight_format("int4"))) == 2.0


def test_alltoall_message_in_the_deepseek_step():
    # DeepSeek-V3 (d = 7168, top-8), EP8 with attention-DP 8, 64 sequences decoding: each rank
    # sends 64·8·7168·1.515625 / 8 bytes per call = 695,296 B
    hw, m = CAT.accelerator("nvidia-h200-sxm"), CAT.model("deepseek-v3")
    dep = Deployment(weights=weight_format("fp8"), layout=Layout(tp=8, ep=8, attention_dp=8))
    op = next(r.op for r in decode(m, hw, dep, 64, 2048).ops if r.op.kind == "alltoall")
    assert float(op.message_bytes) == pytest.approx(64 * 8 * 7168 * 1.515625 / 8, rel=1e-12)


def test_moe_time_by_hand():
    c = MoeCurve(eta_max=0.5, m_half=84.0, eta_memory=0.8, eta_act=0.25, latency_s=1e-5)
    # M = 84: compute F·(1 + 84/100)/(P·0.5) = 1e12·1.84/(1e15·0.5) = 3.68 ms
    # weights 4e9/(4e12·0.8) = 1.25 ms; activations 1e9/(4e12·0.25) = 1 ms; 2 kernels · 10 µs
    t = moe_time_s(1e12, 4e9, 1e9, 84.0, 1e15, 4e12, c, 2.0)
    assert float(t) == pytest.approx(2e-5 + 3.68e-3 + 1e-3, rel=1e-12)
    t = moe_time_s(1e10, 4e9, 1e9, 84.0, 1e15, 4e12, c, 2.0)  # weight-bound: 1.25 ms
    assert float(t) == pytest.approx(2e-5 + 1.25e-3 + 1e-3, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    f=st.floats(1e6, 1e15),
    qw=st.floats(1e3, 1e11),
    qa=st.floats(0, 1e10),
    m=st.floats(1, 1e5),
    eta=st.floats(0.05, 1.0),
)
def test_moe_time_never_beats_the_roofline(f, qw, qa, m, eta):
    c = MoeCurve(eta_max=eta, m_half=m, eta_memory=eta, eta_act=eta)
    p, w = 1e15, 3e12
    t = float(moe_time_s(f, qw, qa, m, p, w, c, 2.0))
    assert t >= max(f / p, (qw + qa) / w) * (1 - 1e-12)


def test_moe_curve_against_a_measured_h200_layer():
    # aiconfigurator-core 0.12.0, h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet: DeepSeek-R1
    # MoE (d 7168, width 2048, 256 experts, top-8), EP8, fp8_block, balanced, 1,024 tokens:
    # 0.445 ms. Per rank: 1,024 rows over the 32 local experts (all touched), M = 32;
    # F = 6·7168·2048·1024, Q_w = 32·3·7168·2048·(1 + 4/128²), Q_act = 1024·(2·7168 + 3·2048)·2
    hw = CAT.accelerator("nvidia-h200-sxm")
    c = CAT.kernels["nvidia-hopper"].kernels.moe["fp8"]
    f = 6 * 7168 * 2048 * 1024
    qw = 32 * 3 * 7168 * 2048 * (1 + 4 / 128**2)
    qa = 1024 * (2 * 7168 + 3 * 2048) * 2
    t = moe_time_s(f, qw, qa, 32, hw.peak("fp8"), hw.memory_bandwidth_bytes_per_s, c, 2.0)
    assert float(t) == pytest.approx(0.445e-3, rel=0.25)


def test_tp_sharded_experts_see_every_routed_row_at_full_width():
    # DeepSeek-R1 (d 7168, width 2048, top-8) fp8 at TP8 without EP, 8,192 tokens, 58 MoE
    # layers: every rank permutes all 8,192·8 routed rows in and out at d = 7168 and holds a
    # 2048/8 = 256-wide slice of the 3f intermediate: 65,536·(2·7168 + 3·256)·2 B
    # = 1,979,711,488 B per layer (not 1/8 of 65,536·(2·7168 + 3·2048)·2 = 339,738,624 B)
    hw, m = CAT.accelerator("nvidia-h200-sxm"), CAT.model("deepseek-r1")
    dep = Deployment(weights=weight_format("fp8"), layout=Layout(tp=8))
    steps = decode(m, hw, dep, 8192, 2.0, engine="trtllm").ops  # TensorRT-LLM's module
    r = next(r for r in steps if r.op.name == "moe.experts")
    assert float(r.op.act_bytes) / r.op.layers == pytest.approx(1_979_711_488, rel=1e-12)
    # aiconfigurator-core 0.12.0, h200_sxm/moe/trtllm/1.3.0rc20/moe_perf.parquet, the same
    # layer, fp8_block, moe_tp_size 8, moe_ep_size 1, balanced, 8,192 tokens: 4.980 ms
    assert float(r.t_expected_s) / r.op.layers == pytest.approx(4.980e-3, rel=0.25)
    # with EP8 each rank keeps whole experts: 65,536/8 rows of (2·7168 + 3·2048)·2 B, but
    # the rows per rank carry the expected load imbalance, so compare against that factor
    ep = Deployment(weights=weight_format("fp8"), layout=Layout(tp=8, ep=8))
    r = next(r for r in decode(m, hw, ep, 8192, 2.0).ops if r.op.name == "moe.experts")
    per_rank = 65536 / 8 * (2 * 7168 + 3 * 2048) * 2
    flops_ratio = float(r.op.flops) / r.op.layers / (6 * 7168 * 2048 * 65536 / 8)  # imbalance
    assert float(r.op.act_bytes) / r.op.layers == pytest.approx(per_rank * flops_ratio, rel=1e-9)


# DeepEP dispatch + combine pairs measured by aiconfigurator-core 0.12.0
# (<chip>/comm/trtllm/1.3.0rc11/moe_a2a_perf.parquet), EP8, against the model's two calls of
# T·k·d·b bytes each (every top-k copy; b = 1.515625 for fp8 + scales in, bf16 back):
# - H200, low-latency, d 7168, top-8, 128 tokens a rank: dispatch fp8 73.06 µs + combine bf16
#   67.36 µs = 140.4 µs;
# - B200, low-latency, d 7168, top-8, 256 experts, 256 tokens a rank: dispatch fp8 77.84 µs +
#   combine bf16 78.25 µs = 156.1 µs (one curve fitted on both kernel families read 242 µs);
# - H200, normal (high-throughput, prefill), bf16, d 7168, top-6, 384 experts, 8,192 tokens a
#   rank: dispatch 1,570.5 + combine 1,769.4 = 3,339.9 µs (the Hopper curves are fitted on
#   H100's tables: H200, the same NVLink 4, is measured apart).
DEEPEP_PAIRS = (
    ("nvidia-h200-sxm", "nvidia-hopper", "ep_alltoall", 128 * 8 * 7168 * 1.515625, 140.4e-6),
    ("nvidia-b200-hgx", "nvidia-blackwell", "ep_alltoall", 256 * 8 * 7168 * 1.515625, 156.1e-6),
    ("nvidia-h200-sxm", "nvidia-hopper", "ep_alltoall_prefill", 8192 * 6 * 7168 * 2, 3339.9e-6),
)


@pytest.mark.parametrize(("hw_id", "group", "family", "message", "measured"), DEEPEP_PAIRS)
def test_deepep_alltoall_against_measured_pairs(hw_id, group, family, message, measured):
    hw = CAT.accelerator(hw_id)
    curve = getattr(CAT.kernels[group].kernels, family)
    assert curve is not None
    t = 2 * measured_alltoall_time_s(hw.scale_up, curve, 8, np.float64(message))
    assert float(t) == pytest.approx(measured, rel=0.15)


def test_prefill_exchange_takes_the_normal_kernels_curve():
    # DeepEP's normal kernels serve prefill, its low-latency ones decode (deepseek-ai/DeepEP
    # README); collective_curves hands each phase its own, NCCL's where neither was measured
    from roofline.timing.collectives import collective_curves

    hw = CAT.accelerator("nvidia-b200-hgx")
    ks = CAT.kernels["nvidia-blackwell"].kernels
    link = hw.scale_up
    _, pre, _ = collective_curves(link, link, ks, (), None, "prefill")
    _, dec, _ = collective_curves(link, link, ks, (), None, "decode")
    assert pre is ks.ep_alltoall_prefill and dec is ks.ep_alltoall and pre is not dec


def test_four_bit_experts_borrow_the_fp8_fused_moe_curve(cat):
    # the fitted moe_perf tables hold bf16 and fp8 only: an NVFP4 expert layer on B200 and an
    # MXFP4 one on H200 (weight-only there: no 4-bit math) run through the fused MoE module's
    # curve, the generation's fp8 one, not the dense GEMM plateau
    from roofline.domain.precision import KV_FORMATS
    from roofline.step.optime import MOE, _plan, kernel_view

    for hw_id, fmt in (("b200", "nvfp4"), ("h200", "mxfp4")):
        hw = cat.accelerator(hw_id)
        eff = hw.efficiency
        assert kernel_view(eff, "fp4").moe == eff.kernels.moe["fp8"]
        m = cat.model("qwen3-30b-a3b")
        dep = Deployment(weights=weight_format(fmt), kv=KV_FORMATS["fp8"])
        ops = decode(m, hw, dep, 256, 1024, 1).ops
        plans = _plan([r.op for r in ops], hw, dep, eff, "decode")
        experts = [p for r, p in zip(ops, plans, strict=True) if r.op.name == "moe.experts"]
        assert experts and all(p.how == MOE for p in experts)

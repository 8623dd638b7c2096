"""MXFP4 MoE weights on a chip without FP4 tensor cores (Hopper): the fused MoE module takes the
family's measured weight-only MXFP4 curve (hardware/kernels.yaml moe.mxfp4), not the bf16 one.

Reference figures, from aiconfigurator-core 0.12.0 (systems/data/h200_sxm/moe/trtllm/1.3.0rc20/
moe_perf.parquet, moe_dtype w4a16_mxfp4, kernel moe_torch_flow, balanced routing): gpt-oss-120b's
MoE layer (hidden 2880, expert width 2880, 128 experts, top-4, no TP/EP) on one H200 takes
0.741 ms at 512 tokens and 4.302 ms at 8,192 tokens.
"""

from __future__ import annotations

import pytest

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill

CAT = load_catalog([])
M = CAT.model("gpt-oss-120b")


def _moe_per_layer_s(phase) -> float:
    op = next(o for o in phase.ops if o.op.name == "moe.experts")
    return float(op.t_expected_s) / op.op.layers


def _dep(weights: str) -> Deployment:
    return Deployment(weights=weight_format(weights), layout=Layout(tp=1))


def test_hopper_mxfp4_moe_follows_the_measured_weight_only_module():
    hw = CAT.accelerator("nvidia-h200-sxm")
    # decode, 512 sequences = 512 tokens through the layer: measured 0.741 ms; the curve's
    # median fit error is 22.5% (kernels.yaml), so within 25%
    t_dec = _moe_per_layer_s(decode(M, hw, _dep("mxfp4"), 512, 1024))
    assert t_dec == pytest.approx(0.741e-3, rel=0.25)
    # prefill of 8,192 tokens: measured 4.302 ms. By hand the layer's 8192 x 4 routed rows do
    # 6 x 2880 x 2880 FLOP each: 1.63 TFLOP, 1.65 ms at the H200's 989 TFLOPS bf16 peak, so
    # the dequantising kernel runs at 0.38 of that peak. The shared MoE form overshoots this
    # shape at large M (roofline/step/optime.py moe_curve docstring): at most 1.7x
    t_pre = _moe_per_layer_s(prefill(M, hw, _dep("mxfp4"), 1, 8192))
    assert 4.302e-3 * 0.75 <= t_pre <= 4.302e-3 * 1.7
    # against native fp8 MMAs (fp8 block weights), the dequantising path cannot be faster once
    # compute-bound: the same 1.63 TFLOP at fp8's 1979 TFLOPS
    assert t_pre > _moe_per_layer_s(prefill(M, hw, _dep("fp8"), 1, 8192))


def test_chips_with_fp4_mma_keep_their_own_moe_curve():
    # Blackwell runs MXFP4 on its FP4 tensor cores: not weight-only, so no Hopper-style
    # dequantising curve applies; its moe time is the same as before this curve existed,
    # which the family table shows: no mxfp4 entry in nvidia-blackwell's moe
    assert "mxfp4" in CAT.kernels["nvidia-hopper"].kernels.moe
    assert "mxfp4" not in CAT.kernels["nvidia-blackwell"].kernels.moe
    hw = CAT.accelerator("nvidia-b200-hgx")
    dep = _dep("mxfp4")
    assert dep.compute(hw) != "bf16"  # native FP4 MMA, not dequantised to bf16

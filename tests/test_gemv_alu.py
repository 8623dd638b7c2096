"""The ALU floor of llama.cpp's block mat-vec kernels (roofline/timing/gemv.py). Expected values are
worked out by hand in the comments."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.precision import weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode, engine_deployment
from roofline.timing.gemv import GEMV_MAX_ROWS, alu_flops_per_weight, gemv_alu_time_s


def test_ops_per_weight_by_backend():
    # Metal: one instruction per FP32 lane-cycle = 2 FLOPs of the FP32 peak; q4_0 4.3 instr
    assert alu_flops_per_weight("q4_0", "apple") == pytest.approx(8.6)
    # Q4_K_M: 0.86 x 5.8 (Q4_K) + 0.14 x 10 (Q6_K) = 6.388 instructions, x 2
    assert alu_flops_per_weight("q4_k_m", "apple") == pytest.approx(12.776)
    # CUDA GA10x: the integer pipe runs at half the FP32 lanes: 4 FLOPs per instruction
    assert alu_flops_per_weight("q4_0", "nvidia") == pytest.approx(8.4)
    # not counted: CPU backends, and non-GGUF formats
    assert alu_flops_per_weight("q4_0", "intel") == 0.0
    assert alu_flops_per_weight("int4", "apple") == 0.0


def test_gemv_alu_time_by_hand():
    # 1e9 Q4_0 weights (0.5625 B each), one column: F = 2e9, MACs 1e9; 8.6 FLOP-eq per weight
    # at 10 TFLOPS: 1e9 x 8.6 / 1e13 = 0.86 ms
    t = gemv_alu_time_s(2e9, 0.5625e9, 0.5625, 8.6, 1e13)
    assert t == pytest.approx(8.6e-4)
    # 16 rows: the matrix-matrix kernels, no mat-vec floor
    assert gemv_alu_time_s(32e9, 0.5625e9, 0.5625, 8.6, 1e13) == 0.0


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, GEMV_MAX_ROWS),
    weights=st.floats(1e6, 1e11),
    alu=st.floats(1.0, 40.0),
    peak=st.floats(1e12, 1e15),
)
def test_alu_time_is_linear_in_columns_and_weights(rows, weights, alu, peak):
    f = 2.0 * weights * rows
    t = gemv_alu_time_s(f, weights * 0.5, 0.5, alu, peak)
    assert t == pytest.approx(weights * rows * alu / peak, rel=1e-9)


def test_alu_floor_slows_m1_max_q4km_decode_not_the_ideal(cat):
    # Llama-3-8B Q4_K_M on the M1 Max (10.4 TFLOPS FP32, 400 GB/s): ~7e9 linear weights x
    # 12.8 FLOP-eq / 10.4e12 = 8.6 ms at the full ALU peak, against 7e9 x 4.85/8 / 400e9 =
    # 10.6 ms of bytes (~16 ms at the fitted 0.68 share, + the Q6_K head): at an ALU share of
    # 0.4 the ALU (21 ms) sets the step
    hw, model = cat.accelerator("apple-m1-max"), cat.model("llama-3-8b")
    dep = Deployment(weights=weight_format("q4_k_m"))
    slow = replace(hw, efficiency=replace(hw.efficiency, alu_weight_only=0.4))
    fast = replace(hw, efficiency=replace(hw.efficiency, alu_weight_only=1.0))
    d_slow = decode(model, slow, dep, 1, 512, engine="llamacpp")
    d_fast = decode(model, fast, dep, 1, 512, engine="llamacpp")
    assert float(d_slow.t_ideal_s) == pytest.approx(float(d_fast.t_ideal_s))
    assert float(d_slow.t_expected_s) > 1.2 * float(d_fast.t_expected_s)
    run = engine_deployment(dep, hw, "llamacpp")
    assert run.weights.alu_flops == pytest.approx(12.776)
    lin = sum(float(r.op.weight_bytes) for r in d_slow.ops if r.op.quantized)
    t_alu = lin / run.linear_bits * 8 * 12.776 / (10.4e12 * 0.4)
    assert t_alu == pytest.approx(21e-3, rel=0.1)
    assert float(d_slow.t_expected_s) >= t_alu
    # other engines (vLLM on the same file) keep the plain weight-only path
    assert engine_deployment(dep, hw, "vllm").weights.alu_flops == 0.0

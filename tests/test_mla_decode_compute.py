"""MLA's absorbed decode with all 128 query heads on one rank (attention data-parallel) is
compute-bound, and runs at the family's measured MLA decode share of the bf16 peak
(hardware/kernels.yaml decode_attention.eta_compute), not at the GEMM plateau.

Reference: aiconfigurator-core 0.12.0, systems/data/h200_sxm/mla/trtllm/1.3.0rc20/
generation_mla_perf.parquet: 128 heads, bf16 latent cache, batch 256, isl 1 + step 4095
(4,096 cached tokens): 0.503 ms per layer. By hand: F = 2 x 256 x 4096 x 128 x (576 + 512)
= 2.92e11 FLOP, 0.295 ms at the H200's 989 TFLOPS bf16 peak, so 0.59 of the peak (FlashMLA
reports 580 TFLOPS on H800, deepseek-ai/FlashMLA README); the GEMM plateau would give 0.34 ms.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode
from roofline.timing.attention import mla_tile_padding

CAT = load_catalog([])


def test_attention_dp_mla_decode_runs_at_the_measured_share():
    m, hw = CAT.model("deepseek-r1"), CAT.accelerator("nvidia-h200-sxm")
    lay = Layout(tp=8, ep=8, attention_dp=8)
    dep = Deployment(weights=weight_format("fp8"), kv=kv_format("bf16"), layout=lay)
    d = decode(m, hw, dep, 8 * 256, 4096)  # 256 sequences per attention-DP rank
    ops = [o for o in d.ops if o.op.name == "attn.core"]
    per_layer = sum(float(o.t_expected_s) for o in ops) / sum(o.op.layers for o in ops)
    assert per_layer == pytest.approx(0.503e-3, rel=0.15)
    assert per_layer > 2.92e11 / (989e12 * 0.8)  # slower than the GEMM plateau would make it


def test_memory_bound_mla_decode_is_unchanged_by_the_compute_share():
    # TP8: 16 heads per rank, 2 x 16 x 1088 / 1152 = 30 FLOP per latent byte, far below the
    # ridge: the bandwidth term decides and eta_compute cannot move it
    m, hw = CAT.model("deepseek-r1"), CAT.accelerator("nvidia-h200-sxm")
    dep = Deployment(weights=weight_format("fp8"), kv=kv_format("bf16"), layout=Layout(tp=8))
    d = decode(m, hw, dep, 64, 4096)
    for o in (o for o in d.ops if o.op.name == "attn.core"):
        assert o.bound == "memory"


def test_tp8_mla_decode_pays_the_kernels_64_row_tiles():
    # Reference: aiconfigurator-core 0.12.0, systems/data/h200_sxm/mla/trtllm/1.3.0rc20/
    # generation_mla_perf.parquet, fp8 latent cache, batch 256, isl 1 + step 4095: 16 heads a
    # rank (TP8) 0.224 ms per layer, 64 heads 0.239 ms: the time does not fall with the heads.
    # By hand: FlashMLA computes 64 query rows a tile (BLOCK_SIZE_M), so 16 heads cost as 64:
    # F = 2 x 256 x 4096 x 64 x 1088 = 1.46e11 FLOP, 0.148 ms at the 989 TFLOPS peak, about
    # 0.23 ms at the measured ~0.63 share; the latent cache alone, 256 x 4096 x 576 B = 0.60 GB,
    # is 0.126 ms at the H200's 4.8 TB/s: a memory-bound model is 1.8x too fast here.
    m, hw = CAT.model("deepseek-r1"), CAT.accelerator("nvidia-h200-sxm")
    dep = Deployment(weights=weight_format("fp8"), kv=kv_format("fp8"), layout=Layout(tp=8))
    d = decode(m, hw, dep, 256, 4096)
    ops = [o for o in d.ops if o.op.name == "attn.core"]
    per_layer = sum(float(o.t_expected_s) for o in ops) / sum(o.op.layers for o in ops)
    assert per_layer == pytest.approx(0.224e-3, rel=0.15)
    assert per_layer > 1.4 * 0.60e9 / 4.8e12


@given(st.floats(0.5, 512.0), st.sampled_from([0.0, 16.0, 64.0, 128.0]))
def test_tile_padding_never_removes_work(group, tile):
    # the kernel computes at least the heads it is given, and a whole tile at most extra
    pad = float(mla_tile_padding(group, tile))
    assert pad >= 1.0
    if tile:
        assert pad * group < group + tile + 1e-9
    assert float(mla_tile_padding(0.0, tile)) == 1.0  # not MLA decode: untouched

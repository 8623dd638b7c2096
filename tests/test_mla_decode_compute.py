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

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode

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

"""The early-2025 engines' block-scaled FP8 path for DeepSeek-V3/R1 (issue 34; hardware/
engines.yaml vllm-v0 and sglang-v0.4 `block_fp8_prefill_factor`, `block_fp8_moe_layer_us`;
roofline/timing/host.py kernel_time_factor kind "fp8_prefill" and block_fp8_moe_layer_s, applied
in roofline/step/phases.py _own_kernels): where each acts, derived by hand from a step's own op
rows; a dense per-tensor FP8 model and a later engine never pay them; the catalog refuses bad
figures; and SGLang 0.4.1's own published DeepSeek-V3 decode speeds (sgl-project/sglang pull
request #2643, the figures the per-layer time is read from) come out within 15%."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import MIN_ENGINE
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.serving import run_serving_case
from roofline.catalog.kernels import engine_profile
from roofline.catalog.load import load_catalog
from roofline.domain.errors import CatalogError
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill

CAT = load_catalog([])
H200 = CAT.accelerator("nvidia-h200-sxm")
R1 = CAT.model("deepseek-r1")
DEP = Deployment(weights=weight_format("fp8"), kv=kv_format("bf16"), layout=Layout(tp=8))
OLD = "sglang-v0.4"


def _with(hw, factor: float, layer_us: float, engine: str = OLD):
    """The chip with `engine` at this prefill factor and per-layer decode time on its family."""
    engines = dict(hw.efficiency.engines)
    fam = hw.family
    engines[engine] = replace(
        engines[engine],
        block_fp8_prefill_factor=((fam, factor),) if factor != 1.0 else (),
        block_fp8_moe_layer_s=((fam, layer_us * 1e-6),) if layer_us else (),
    )
    return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


def _rows(res) -> dict[str, tuple[float, bool]]:
    """Each op name's expected time summed over its layer groups, and whether it is block-scaled."""
    out: dict[str, tuple[float, bool]] = {}
    for r in res.ops:
        t, _ = out.get(r.op.name, (0.0, False))
        out[r.op.name] = (t + float(r.t_expected_s), bool(r.op.block_scaled))
    return out


def test_a_decode_step_pays_the_fixed_time_on_each_moe_layer():
    """DeepSeek-R1 has 61 layers, the first 3 dense (first_k_dense_replace), so 58 MoE layers:
    at 345 us a layer the decode step grows by 58 x 345 us = 20.01 ms, all of it on the routed
    experts' row, at batch 1 and at batch 64 alike (a fixed time, not a factor)."""
    for batch in (1, 64):
        base = decode(R1, _with(H200, 1.0, 0.0), DEP, batch, 3200, engine=OLD)
        own = decode(R1, _with(H200, 1.0, 345.0), DEP, batch, 3200, engine=OLD)
        b, o = _rows(base), _rows(own)
        assert float(own.t_expected_s) - float(base.t_expected_s) == pytest.approx(20.01e-3)
        assert o["moe.experts"][0] - b["moe.experts"][0] == pytest.approx(20.01e-3)
        for name in b.keys() - {"moe.experts"}:
            assert o[name][0] == pytest.approx(b[name][0]), name
        assert float(own.t_ideal_s) == pytest.approx(float(base.t_ideal_s))  # the ideal is kept


def test_prefill_scales_the_block_scaled_gemms_only():
    """At x3 every block-scaled matmul row of a prefill is 3x its time at x1; the attention core,
    the all-reduces and the 16-bit router keep theirs; decode is untouched by the factor."""
    base = prefill(R1, _with(H200, 1.0, 0.0), DEP, 4, 2048, engine=OLD)
    own = prefill(R1, _with(H200, 3.0, 0.0), DEP, 4, 2048, engine=OLD)
    b, o = _rows(base), _rows(own)
    scaled = [n for n, (_, blk) in b.items() if blk]
    assert "moe.experts" in scaled and len(scaled) >= 3
    for name, (t, blk) in b.items():
        assert o[name][0] == pytest.approx(3.0 * t if blk else t), name
    d0 = decode(R1, _with(H200, 1.0, 0.0), DEP, 8, 2048, engine=OLD)
    d1 = decode(R1, _with(H200, 3.0, 0.0), DEP, 8, 2048, engine=OLD)
    assert float(d1.t_expected_s) == pytest.approx(float(d0.t_expected_s), rel=1e-12)


@settings(max_examples=8, deadline=None)
@given(batch=st.sampled_from([1, 8, 64, 256]), engine=st.sampled_from(["sglang", "vllm"]))
def test_never_faster_and_never_paid_by_a_dense_model_or_a_later_engine(batch, engine):
    """Physics: a fixed time and a factor >= 1 never make a step faster than without them, and
    never touch the ideal. Llama 3.1 70B FP8 (per-tensor scales, dense) pays nothing; neither do
    SGLang 0.4.4+ and vLLM 0.8+ (no such figure in their profiles)."""
    with_f = decode(R1, _with(H200, 3.0, 345.0), DEP, batch, 2048, engine=OLD)
    without = decode(R1, _with(H200, 1.0, 0.0), DEP, batch, 2048, engine=OLD)
    assert float(with_f.t_expected_s) > float(without.t_expected_s)
    assert float(with_f.t_ideal_s) == pytest.approx(float(without.t_ideal_s))
    assert float(with_f.t_ideal_s) <= float(with_f.t_expected_s)
    llama = CAT.model("llama-3.1-70b")
    a = prefill(llama, _with(H200, 3.0, 345.0), DEP, batch, 2048, engine=OLD)
    b = prefill(llama, _with(H200, 1.0, 0.0), DEP, batch, 2048, engine=OLD)
    assert float(a.t_expected_s) == pytest.approx(float(b.t_expected_s), rel=1e-12)
    later = H200.efficiency.engines[engine]
    assert later.block_fp8_prefill_factor == () and later.block_fp8_moe_layer_s == ()


def test_the_catalog_refuses_bad_figures():
    entry = MIN_ENGINE
    for bad in (0, -2.0, True):
        with pytest.raises(CatalogError, match=r"block_fp8_prefill_factor\.nvidia-datacenter"):
            engine_profile(
                "engines.yaml", {**entry, "block_fp8_prefill_factor": {"nvidia-datacenter": bad}}
            )
    with pytest.raises(CatalogError, match=r"block_fp8_moe_layer_us\.nvidia-datacenter"):
        engine_profile(
            "engines.yaml", {**entry, "block_fp8_moe_layer_us": {"nvidia-datacenter": -1}}
        )
    ok = engine_profile("engines.yaml", {**entry, "block_fp8_moe_layer_us": {"amd-instinct": 250}})
    assert ok.block_fp8_moe_layer_s == (("amd-instinct", pytest.approx(250e-6)),)


# sgl-project/sglang pull request #2643 (v0.4.1.post2, 2024-12-29, DeepSeek-V3 at TP8, CUDA graphs
# and tuned FP8 GEMMs): 128 in / 256 out at batch 1, 8 and 32 -> 30.29, 206.32 and 760.52 output
# tokens/s, i.e. 33.0, 38.8 and 42.1 ms per token of each sequence.
PR2643 = {1: 30.29, 8: 206.32, 32: 760.52}


@pytest.mark.parametrize("batch", sorted(PR2643))
def test_sglang_041_deepseek_decode_speeds_of_its_own_release_notes(batch):
    case = {
        "id": f"sglang-pr2643-b{batch}",
        "model": "deepseek-r1",  # DeepSeek-V3's architecture and FP8 block checkpoint
        "hardware": "nvidia-h200-sxm",
        "tp": 8,
        "weights": "fp8",
        "kv": "bf16",
        "engine": "sglang",
        "engine_version": "0.4.1.post2",
        "frontend": "none",
        "arrivals": "burst",
        "requests": batch,
        "prompt": 128,
        "output": 256,
        "metric": "output_tokens_per_s",
        "measured": PR2643[batch],
        "source": "https://github.com/sgl-project/sglang/pull/2643",
    }
    r = run_serving_case(case, CAT)
    assert abs(r.expected / PR2643[batch] - 1.0) < 0.15

"""The engines' own fused-MoE and MLA decode kernels on a hardware family (issue 34 mechanism (a);
hardware/engines.yaml moe_time_factor / mla_decode_time_factor, roofline/timing/host.py
kernel_time_factor, applied in roofline/step/phases.py): where the factor acts, a step derived
by hand from its own op rows, the catalog's refusal of a bad factor, and the shipped figure
within its leave-one-source-out spread, the Triton era's derived from the AITER era's and AMD's
figures (validation/fit_stack_kernels.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import MIN_ENGINE
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.kernels import engine_profile
from roofline.catalog.load import load_catalog
from roofline.domain.errors import CatalogError
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.engines.versions import pick_profile
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill
from roofline.timing.host import kernel_time_factor
from validation.serving_crossval import STACK_FIT

CAT = load_catalog([])
MI300X = CAT.accelerator("amd-mi300x")
R1 = CAT.model("deepseek-r1")
DEP = Deployment(weights=weight_format("fp8"), kv=kv_format("bf16"), layout=Layout(tp=8))


def _at(hw, moe: float, mla: float, engine: str = "sglang"):
    """The chip with `engine` running its MoE and MLA decode at these factors on its family."""
    engines = dict(hw.efficiency.engines)
    fam = hw.family
    engines[engine] = replace(
        engines[engine], moe_time_factor=((fam, moe),), mla_decode_time_factor=((fam, mla),)
    )
    return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


def _rows(res) -> dict[str, float]:
    """Each op name's expected time, summed over the layer groups that run it."""
    out: dict[str, float] = {}
    for r in res.ops:
        out[r.op.name] = out.get(r.op.name, 0.0) + float(r.t_expected_s)
    return out


def test_a_decode_step_by_hand_from_its_op_rows():
    """DeepSeek-R1, TP8 on 8x MI300X, SGLang, 64 sequences at 3,200 tokens. With the factors at
    1 the step's rows give t_moe (moe.experts) and t_mla (attn.core); at moe x3 and mla x8 the
    step must grow by exactly (3 - 1) t_moe + (8 - 1) t_mla, and every other row stay put."""
    base = decode(R1, _at(MI300X, 1.0, 1.0), DEP, 64, 3200, engine="sglang")
    own = decode(R1, _at(MI300X, 3.0, 8.0), DEP, 64, 3200, engine="sglang")
    b, o = _rows(base), _rows(own)
    t_moe, t_mla = b["moe.experts"], b["attn.core"]
    assert t_moe > 0 and t_mla > 0
    added = float(own.t_expected_s) - float(base.t_expected_s)
    assert added == pytest.approx(2.0 * t_moe + 7.0 * t_mla, rel=1e-9)
    assert o["moe.experts"] == pytest.approx(3.0 * t_moe)
    assert o["attn.core"] == pytest.approx(8.0 * t_mla)
    for name in b.keys() - {"moe.experts", "attn.core"}:
        assert o[name] == pytest.approx(b[name]), name
    assert float(own.t_ideal_s) == pytest.approx(float(base.t_ideal_s))  # the ideal is kept


def test_prefill_runs_mla_unabsorbed_and_pays_only_the_moe_factor():
    base = prefill(R1, _at(MI300X, 1.0, 1.0), DEP, 4, 2048, engine="sglang")
    own = prefill(R1, _at(MI300X, 3.0, 8.0), DEP, 4, 2048, engine="sglang")
    b, o = _rows(base), _rows(own)
    assert o["attn.core"] == pytest.approx(b["attn.core"])
    assert o["moe.experts"] == pytest.approx(3.0 * b["moe.experts"])


@settings(max_examples=6, deadline=None)
@given(batch=st.sampled_from([1, 16, 128]), hw=st.sampled_from(["nvidia-h200-sxm", "amd-mi300x"]))
def test_a_dense_model_and_another_family_never_pay_it(batch, hw):
    """Llama (dense, GQA) on MI300X, and DeepSeek-R1 on H200 (the factor is amd-instinct's):
    the step is the same with and without the factors."""
    chip = CAT.accelerator(hw)
    engines = dict(chip.efficiency.engines)
    amd_only = replace(
        engines["sglang"],
        moe_time_factor=(("amd-instinct", 3.0),),
        mla_decode_time_factor=(("amd-instinct", 8.0),),
    )
    plain = replace(engines["sglang"], moe_time_factor=(), mla_decode_time_factor=())
    with_f = replace(
        chip, efficiency=replace(chip.efficiency, engines={**engines, "sglang": amd_only})
    )
    without = replace(
        chip, efficiency=replace(chip.efficiency, engines={**engines, "sglang": plain})
    )
    model = R1 if hw.startswith("nvidia") else CAT.model("llama-3.1-70b")
    a = decode(model, with_f, DEP, batch, 2048, engine="sglang")
    b = decode(model, without, DEP, batch, 2048, engine="sglang")
    assert float(a.t_expected_s) == pytest.approx(float(b.t_expected_s), rel=1e-12)


def test_kernel_time_factor_reads_the_family_entry_of_the_version_profile():
    """SGLang before 0.4.4 (Triton MoE and MLA on ROCm) pays the derived factors on AMD Instinct;
    SGLang since and vLLM 0.8+ (AITER's fused MoE, the same aiter.fused_moe call in both) pay
    one MoE factor and no MLA one (AITER's assembly decode); every engine elsewhere pays none."""
    engines = MI300X.efficiency.engines
    old = engines[pick_profile("sglang", "0.4.2.post4", engines)]
    assert old.id == "sglang-v0.4"
    assert kernel_time_factor(old, "amd-instinct", "mla") > 1.0  # hardware/engines.yaml
    assert kernel_time_factor(old, "nvidia-datacenter", "moe") == 1.0
    new = engines[pick_profile("sglang", "0.5.5", engines)]
    vllm = engines[pick_profile("vllm", "0.14.0", engines)]
    assert (new.id, vllm.id) == ("sglang", "vllm")
    moe = kernel_time_factor(vllm, "amd-instinct", "moe")
    assert moe > 1.0 and kernel_time_factor(new, "amd-instinct", "moe") == moe  # borrowed
    for prof in (new, vllm):
        assert kernel_time_factor(prof, "amd-instinct", "mla") == 1.0
        assert kernel_time_factor(prof, "nvidia-datacenter", "moe") == 1.0
    assert kernel_time_factor(None, "amd-instinct", "mla") == 1.0


def test_the_catalog_refuses_a_factor_that_is_not_positive():
    entry = MIN_ENGINE
    for bad in (0, -1.5, True, "2"):
        with pytest.raises(CatalogError, match=r"moe_time_factor\.amd-instinct"):
            engine_profile("engines.yaml", {**entry, "moe_time_factor": {"amd-instinct": bad}})
    ok = engine_profile("engines.yaml", {**entry, "mla_decode_time_factor": {"amd-instinct": 4}})
    assert ok.mla_decode_time_factor == (("amd-instinct", 4.0),)


@pytest.mark.parametrize("engine", ["vllm-v0", "sglang-v0.4"])
def test_the_triton_era_factors_are_the_aiter_eras_times_amds_own_gains(engine):
    """vLLM 0.7.3 and SGLang 0.4.2 on ROCm ran Triton fused_moe and Triton MLA decode; AMD puts
    AITER's kernels at up to 3x and 17x those (ROCm blog 'Supercharge DeepSeek-R1 Inference on
    AMD Instinct MI300X', 2025-03-21: "+3X MoE", "+17x MLA decode"). The AITER era's vLLM runs
    its MoE at x2 the CDNA 3 curves and MLA decode at x1 (fitted on the vLLM blog's AITER runs),
    so the Triton era pays 2 x 3 = 6 and 1 x 17 = 17 there, and nothing elsewhere. The 3x is
    AITER's block-scale fused MoE over Triton's: it is written apart (block_fp8_moe) and a
    16-bit expert pays the 2 alone."""
    from validation.fit_stack_kernels import triton_era

    prof = MI300X.efficiency.engines[engine]
    moe = kernel_time_factor(prof, "amd-instinct", "moe")
    assert moe == pytest.approx(2.0)
    assert moe * kernel_time_factor(prof, "amd-instinct", "block_fp8_moe") == pytest.approx(6.0)
    assert kernel_time_factor(prof, "amd-instinct", "mla") == pytest.approx(1.0 * 17.0)
    assert triton_era(CAT, engine) == pytest.approx((6.0, 17.0))
    assert kernel_time_factor(prof, "nvidia-datacenter", "moe") == 1.0
    assert engine not in STACK_FIT  # fitted on no case, so nothing is refitted out of sample


def test_the_size_table_marks_a_thin_band_and_says_what_it_rests_on():
    """issue 34: a band resting on under 5 points or one source is marked in the table (†) and
    the legend names its points and sources (here the fit block `size` JSON carries)."""
    from roofline.render.sizing import THIN, _thin, _thin_note

    thin = {"rel": 0.7, "high": 4.37, "fit": {"n": 12, "sources": 1, "thin": True}}
    fine = {"rel": 0.5, "high": 2.1, "fit": {"n": 40, "sources": 9, "thin": False}}
    mi = {"hardware": "amd-mi300x", "bands": {"tpot_p99": thin, "throughput": fine}}
    h100 = {"hardware": "nvidia-h100-sxm", "bands": {"tpot_p99": fine, "throughput": fine}}
    assert _thin(mi["bands"], "tpot_p99") == THIN
    assert _thin(mi["bands"], "throughput") == ""
    assert _thin(h100["bands"], "tpot_p99") == ""
    note = _thin_note([mi, h100])
    assert note.startswith(THIN) and "mi300x TPOT 12 points/1 source(s)" in note
    assert "h100" not in note
    assert _thin_note([h100]) == ""


def test_sglang_v0_4_keeps_its_own_band_where_it_runs_apart_from_sglang(cat):
    """sglang-v0.4 reads SGLang's cell on a family only where it runs there as SGLang does
    (validation/bands.py _as_base, hardware/bands.json `shares`). SGLang 0.4.4+ runs its own
    measured Triton fused_moe on Hopper (hardware/engines.yaml sglang moe_kernel) while the
    early-2025 sglang-v0.4 keeps the family's MoE curve, so they differ on NVIDIA as well as on
    AMD Instinct: each is banded on its own points there, nothing borrowed."""
    from roofline.catalog.bands import band
    from validation.bands import shares

    assert cat.engines["sglang"].moe_kernel == "sglang"
    assert cat.engines["sglang-v0.4"].moe_kernel is None
    assert "sglang-v0.4" not in shares().get("nvidia-datacenter", {})
    old, new = (
        band("tpot_p50", "nvidia-datacenter", "sglang-v0.4"),
        band("tpot_p50", "nvidia-datacenter", "sglang"),
    )
    assert old is not None and new is not None
    assert (old.engine, new.engine) == ("sglang-v0.4", "sglang") and old.n != new.n
    amd = band("tpot_p50", "amd-instinct", "sglang-v0.4")
    assert amd is not None and amd.engine == "sglang-v0.4"


def test_a_one_source_fit_leaves_nothing_out_of_sample():
    """vLLM 0.8+'s MoE factor rests on one post (STACK_FIT 'vllm'): its own cases, predicted
    with that source left out, run at the curves' time (no factor on any family), while a
    source it was not fitted on keeps the shipped x2."""
    from validation.serving_crossval import patch_without

    (blog,) = STACK_FIT["vllm"]
    left, _ = patch_without(blog, MI300X)
    assert left[("vllm", "moe_time_factor")] == ()
    kept, _ = patch_without("https://example.org/another-source", MI300X)
    assert ("vllm", "moe_time_factor") not in kept
    assert kernel_time_factor(MI300X.efficiency.engines["vllm"], "amd-instinct", "moe") == 2.0


def test_the_block_scale_gain_acts_on_block_scaled_fp8_experts_alone():
    """vLLM 0.6 (vllm-v0) on 8x MI300X: DeepSeek-R1's routed experts are block-scaled FP8, so
    they pay moe x block_fp8_moe (2 x 3) over the curves; Mixtral-8x7B's 16-bit experts pay the
    moe factor (2) alone. By hand from each step's moe.experts row at the factors set to 1."""
    engines = dict(MI300X.efficiency.engines)
    v0 = engines["vllm-v0"]
    flat = replace(v0, moe_time_factor=(), block_fp8_moe_time_factor=())
    at_1 = replace(
        MI300X, efficiency=replace(MI300X.efficiency, engines={**engines, "vllm-v0": flat})
    )
    bf16 = Deployment(weights=weight_format("bf16"), kv=kv_format("bf16"), layout=Layout(tp=2))
    for model, dep, x in ((R1, DEP, 6.0), (CAT.model("mixtral-8x7b"), bf16, 2.0)):
        own = _rows(decode(model, MI300X, dep, 64, 1024, engine="vllm-v0"))["moe.experts"]
        base = _rows(decode(model, at_1, dep, 64, 1024, engine="vllm-v0"))["moe.experts"]
        assert own == pytest.approx(x * base, rel=1e-9), model.id

"""SGLang's default mem_fraction_static per device and layout (roofline.engines.scheduler
sglang_static_fraction, sgl-project/sglang PR #10975) and the KV budget it leaves (issue 34 c)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import engine
from roofline.engines.scheduler import sglang_static_fraction
from roofline.step.memory import plan_memory
from roofline.step.ops import Deployment

MIB = 1024**2
H100 = 81_559 * MIB  # nvidia-smi memory.total of an H100 SXM 80GB
H200 = 143_771 * MIB


def test_one_h100_by_hand():
    # 8k chunk and 256 graphs below 160 GiB at TP1: reserved 512 + 1.5 x 8,192 + 2 x 256
    # + 1 x 1 / 8 x 1,024 = 13,440 MiB; (81,559 - 13,440) / 81,559 = 0.8352. sgl-project/sglang
    # issue #29092 reads 0.828 for Qwen3-32B on one H100 under a later release
    f = sglang_static_fraction("0.5.5.post1", H100, 1, 1, 1)
    assert f == pytest.approx(0.835)
    assert f == pytest.approx(0.828, abs=0.01)


def test_tp8_and_attention_dp_by_hand():
    # TP8: 512 graphs, reserved 512 + 12,288 + 1,024 + 1,024 = 14,848 -> 66,711 / 81,559 = 0.818
    assert sglang_static_fraction("0.5.5", H100, 8, 1, 1) == pytest.approx(0.818)
    # H200 TP8 with attention DP 8: + 3 x 512 x 8 = 12,288 and + 1.5 x 512 x 8 = 6,144 (above
    # 300 graphs): reserved 33,280, (143,771 - 33,280) / 143,771 = 0.7685
    assert sglang_static_fraction("0.6", H200, 8, 1, 8) == pytest.approx(0.769)


def test_earlier_or_unstated_releases_keep_the_default():
    # between the TP-size rule (before 0.4.6) and the derived one (0.5.5): the caller's 0.88
    assert sglang_static_fraction("0.4.7", H100, 1, 1, 1) is None
    assert sglang_static_fraction("0.5.3", H200, 8, 1, 1) is None
    assert sglang_static_fraction("", H100, 1, 1, 1) is None


def test_releases_before_0_4_6_take_the_tp_size_rule():
    # ServerArgs.__post_init__ in the sglang 0.4.0.post1, 0.4.3.post2, 0.4.4 and 0.4.5 wheels:
    # 0.88 at TP1, 0.87 at TP2, 0.85 at TP4, 0.81 at TP8, 0.79 at TP16, on any device; the
    # 0.3.0 wheel 0.83 at TP8
    for tp, want in ((1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)):
        assert sglang_static_fraction("0.4.3.post2", H200, tp, 1, 1) == want
        assert sglang_static_fraction("0.4.0.post1", H100, tp, 1, 8) == want
    assert sglang_static_fraction("0.3.0", H100, 8, 1, 1) == 0.83
    assert sglang_static_fraction("0.4.5", H100, 4, 1, 1) == 0.85


def test_dstack_deepseek_r1_on_8_h200_keeps_0_81():
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    m, h200 = cat.model("deepseek-r1"), cat.accelerator("nvidia-h200-sxm")
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["bf16"], layout=Layout(tp=8))
    old = replace(engine("sglang"), memory_fraction=0.88, fraction_given=True)
    new = engine("sglang", h200, "0.4.3.post2")
    lost = plan_memory(m, h200, dep, old).kv_budget_bytes
    lost -= plan_memory(m, h200, dep, new).kv_budget_bytes
    # (0.88 - 0.81) x 143,771 MiB = 10,064 MiB less KV; an MLA token is (512 + 64) x 61 layers
    # x 2 B = 70,272 B on every TP rank, so about 150,200 fewer tokens
    assert lost == pytest.approx(0.07 * H200, rel=1e-6)
    assert lost / 70_272 == pytest.approx(150_200, rel=0.001)


@given(
    gib=st.floats(16, 300),
    tp=st.sampled_from([1, 2, 4, 8]),
    dp=st.sampled_from([1, 2, 8]),
)
def test_a_fraction_and_more_parallelism_reserves_more(gib, tp, dp):
    f = sglang_static_fraction("0.5.5", gib * 1024**3, tp, 1, 1)
    assert f is not None and 0.0 < f < 1.0
    g = sglang_static_fraction("0.5.5", gib * 1024**3, tp, 1, dp)
    assert g is not None and g <= f


def _budget(eng, hw, tp=1):
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    dep = Deployment(weights=WEIGHT_FORMATS["bf16"], kv=KV_FORMATS["bf16"], layout=Layout(tp=tp))
    return plan_memory(cat.model("qwen3-32b"), cat.accelerator(hw), dep, eng).kv_budget_bytes


def test_the_derived_fraction_sets_the_kv_budget_and_a_given_one_wins():
    hw = "nvidia-h100-sxm"
    old, new = engine("sglang"), engine("sglang", version="0.5.5.post1")
    # Qwen3-32B's bf16 weights (about 61 GiB) leave 0.88 x 79.6 - 61 = 9 GiB at the old default
    # and 0.835 x 79.6 - 61 = 5.5 GiB at the derived one: about 3.6 GiB less
    assert _budget(old, hw) - _budget(new, hw) == pytest.approx(0.045 * H100, rel=0.01)
    given_ = replace(new, memory_fraction=0.88, fraction_given=True)
    assert _budget(given_, hw) == pytest.approx(_budget(old, hw))

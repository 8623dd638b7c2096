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
    assert sglang_static_fraction("0.4.0.post1", H100, 1, 1, 1) is None
    assert sglang_static_fraction("", H100, 1, 1, 1) is None


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

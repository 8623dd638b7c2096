"""SGLang's host time per running sequence on NVIDIA datacenter parts (issue 34): the figure the
catalog ships and where the step pays it (roofline/step/phases.py: one attention-DP rank's
sequences)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode
from roofline.timing.host import per_seq_host_s

CAT = load_catalog([])
HW = CAT.accelerator("nvidia-h200-sxm")
US = 1e-6


def _without_seq_cost(hw):
    """The chip with SGLang paying no per-sequence host time."""
    engines = dict(hw.efficiency.engines)
    engines["sglang"] = replace(engines["sglang"], cpu_per_seq_s=())
    return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


def test_sglang_pays_40_us_per_sequence_on_nvidia_datacenter_only():
    prof = HW.efficiency.engines["sglang"]
    # hardware/engines.yaml: 40 us (validation/fit_seq_cost.py); 128 sequences: 5.12 ms by hand
    assert per_seq_host_s(prof, 128, "nvidia-datacenter") == pytest.approx(5.12e-3)
    assert per_seq_host_s(prof, 128, "amd-instinct") == 0.0


@settings(max_examples=8, deadline=None)
@given(adp=st.sampled_from([1, 2, 4, 8]), per_rank=st.integers(1, 256))
def test_the_step_pays_one_attention_dp_ranks_sequences(adp, per_rank):
    """Each attention-DP rank runs its own scheduler: a step of adp x n sequences adds n x 40 us,
    not adp x n x 40 us (the rest of the step is the same with and without the cost)."""
    m = CAT.model("deepseek-v2-lite")
    lay = Layout(tp=adp, ep=1, attention_dp=adp)
    dep = Deployment(weights=weight_format("bf16"), kv=kv_format("bf16"), layout=lay)
    with_cost = decode(m, HW, dep, adp * per_rank, 1024, engine="sglang")
    without = decode(m, _without_seq_cost(HW), dep, adp * per_rank, 1024, engine="sglang")
    added = float(with_cost.t_expected_s) - float(without.t_expected_s)
    assert added == pytest.approx(per_rank * 40 * US, rel=1e-6)

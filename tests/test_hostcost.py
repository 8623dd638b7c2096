"""The engine's per-sequence host cost (hardware/engines.yaml cpu_per_seq_us,
roofline/timing/host.py): its formula by hand, that it enters every expected step (decode and
prefill) as c·B and never the ideal, and that the fit only separates it from cpu_step when a family
ran at two batch sizes (the shipped figure is the fit's: tests/test_validate.py)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.case import Case
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill
from roofline.timing.host import EngineProfile, per_seq_host_s
from validation.crossval import Base, fit, slope_evidence


def test_per_seq_host_by_hand():
    p = EngineProfile("x", 0.0, 0.0, 0.0, 1.0, cpu_per_seq_s=(("amd", 70e-6),))
    # 70 µs × 64 sequences = 4.48 ms on the named family; any other family pays nothing
    assert per_seq_host_s(p, 64, "amd") == pytest.approx(4.48e-3)
    got = per_seq_host_s(p, np.array([1.0, 128.0]), "amd")
    assert list(got) == pytest.approx([70e-6, 8.96e-3])
    assert per_seq_host_s(p, 64, "nvidia") == 0.0
    assert per_seq_host_s(None, 64, "amd") == 0.0


def _eff(cat, c_s: float):
    hw = cat.accelerator("h100")
    vllm = cat.engines["vllm"]
    prof = EngineProfile(**{**vllm.__dict__, "cpu_per_seq_s": ((hw.efficiency.family, c_s),)})
    return hw, replace(hw.efficiency, engines={**hw.efficiency.engines, "vllm": prof})


@settings(max_examples=15, deadline=None)
@given(batch=st.integers(1, 256), c_us=st.floats(0.0, 200.0))
def test_step_grows_by_c_times_batch_ideal_untouched(cat, batch, c_us):
    m = cat.model("llama-3.1-8b")
    hw, e0 = _eff(cat, 0.0)
    _, e1 = _eff(cat, c_us * 1e-6)
    for phase in (
        lambda e: decode(m, hw, Deployment(), batch, 512, 1, e, engine="vllm"),
        lambda e: prefill(m, hw, Deployment(), batch, 128, e, engine="vllm"),
    ):
        a, b = phase(e0), phase(e1)
        assert float(b.t_expected_s - a.t_expected_s) == pytest.approx(
            c_us * 1e-6 * batch, abs=1e-12
        )
        assert float(b.t_ideal_s) == float(a.t_ideal_s)


class _B:
    def __init__(self, family, batch):
        self.family, self.batch = family, batch


def test_slope_needs_two_batch_sizes():
    # a family's cases at bs8 only (H200 and A100 tables): c·8 and cpu_step cannot be told apart
    assert not slope_evidence([_B("nvidia", 8), _B("nvidia", 8)])  # type: ignore[list-item]
    assert slope_evidence([_B("amd", 1), _B("amd", 64)])  # type: ignore[list-item]


def test_fit_separates_the_slope_by_hand():
    # one family, a 10 ms GPU step, measured 11 ms at batch 1 and 21 ms at batch 101:
    # 10 + cpu + c = 11 and 10 + cpu + 101·c = 21 give c = 100 µs, cpu = 0.9 ms (both on the grids)
    case = Case("x", "llama-3.1-8b", "nvidia-h100-sxm", 1, 1, 1, 1, "bf16", "bf16", 1, 128,
                128, "tpot_ms", 10.0, "test")  # fmt: skip

    def base(b: int, ms: float) -> Base:
        c = replace(case, id=f"b{b}", measured=ms)
        return Base(c, "g", "fam", "vllm", "decode", True, False, 1, b,
                    0.0, 10e-3, 1.0, 1.0, 1.0, ms)  # fmt: skip

    bases = [base(1, 11.0), base(101, 21.0)]
    params = fit(bases, {"compute": 0.8, "memory": 0.8})
    assert params["seq:vllm:fam"] == pytest.approx(100e-6, abs=1e-9)
    assert params["cpu:vllm"] == pytest.approx(0.9e-3, abs=1e-9)

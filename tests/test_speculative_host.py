"""The engine's speculative host cost (hardware/engines.yaml spec_round_cpu_us,
spec_draft_step_cpu_us): its formula by hand, which drafters pay per step, that the ideal never
sees it, and that the shipped figures are exactly what validation/calibrate.py fits."""

from dataclasses import replace

import numpy as np
import pytest

from roofline.levers.speculative import draft_host_time_s, host_draft_steps, speculate
from roofline.step.ops import Deployment
from roofline.timing.host import EngineProfile

PROFILE = EngineProfile("x", 0.0, 0.0, 0.0, 1.0, draft_round_cpu_s=1e-3, draft_step_cpu_s=5e-4)


def test_host_time_by_hand():
    # EAGLE, γ = 4: 1 ms + 4·0.5 ms = 3 ms a round; Medusa (one pass), n-gram (no model) and a
    # separate draft model (its steps are engine steps already) pay the round's 1 ms only
    assert float(draft_host_time_s(PROFILE, "eagle", 4)) == pytest.approx(3e-3)
    assert float(draft_host_time_s(PROFILE, "mtp", 1)) == pytest.approx(1.5e-3)
    for kind in ("medusa", "ngram", "draft"):
        assert float(draft_host_time_s(PROFILE, kind, 4)) == pytest.approx(1e-3)
    assert float(draft_host_time_s(None, "eagle", 4)) == 0.0
    assert list(host_draft_steps("eagle3", np.array([1.0, 3.0]))) == [1.0, 3.0]


def _run(cat, profile, drafter="eagle", gamma=4.0):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    eff = replace(hw.efficiency, engines={**hw.efficiency.engines, "vllm": profile})
    return speculate(m, None, hw, Deployment(), None, 1.0, 2048, gamma, 0.8, eff,
                     drafter=drafter, engine="vllm")  # fmt: skip


def test_host_cost_enters_the_expected_round_only(cat):
    vllm = cat.engines["vllm"]
    none = _run(cat, replace(vllm, draft_round_cpu_s=0.0, draft_step_cpu_s=0.0))
    some = _run(cat, replace(vllm, draft_round_cpu_s=1e-3, draft_step_cpu_s=5e-4))
    # TPOT grows by (1 ms + 4·0.5 ms) / E, E = 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616
    extra = float(some.tpot_expected_s - none.tpot_expected_s)
    assert extra == pytest.approx(3e-3 / 3.3616, rel=1e-6)
    assert float(some.t_draft_host_s) == pytest.approx(3e-3)
    assert float(some.tpot_ideal_s) == float(none.tpot_ideal_s)  # the ideal never changes
    assert float(some.tpot_baseline_expected_s) == float(none.tpot_baseline_expected_s)


def test_catalog_spec_figures_come_from_the_calibration(cat):
    from validation.calibrate import run_speculative

    fits, rows = run_speculative(cat)
    assert set(fits) == {"sglang", "vllm"}
    for name, (r, d) in fits.items():
        assert cat.engines[name].draft_round_cpu_s == pytest.approx(round(r) * 1e-6), name
        assert cat.engines[name].draft_step_cpu_s == pytest.approx(round(d) * 1e-6), name
    for name in set(cat.engines) - set(fits):
        prof = cat.engines[name]
        if prof.base in fits:  # a version profile: its engine's fitted figures or none
            base = cat.engines[prof.base]
            own = (prof.draft_round_cpu_s, prof.draft_step_cpu_s)
            assert own in {(base.draft_round_cpu_s, base.draft_step_cpu_s), (0.0, 0.0)}, name
            continue
        assert prof.draft_round_cpu_s == 0.0 == prof.draft_step_cpu_s, name
    assert all(meas > 0 and fin > 0 and fout > 0 for _, _, meas, fin, fout in rows)

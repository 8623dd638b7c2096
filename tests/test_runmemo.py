"""A simulation repeated with the same inputs inside a shared_runs block is the first run (its
record, or its stop on a missed SLO); any input changed runs anew, and outside a block every
call runs (sim.runmemo)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.engines.scheduler import EngineRules
from roofline.serving.sim import scheduler
from roofline.serving.sim.runmemo import shared_runs
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.sim.slostop import SloMissed, SloStop
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment


@pytest.fixture
def runs(monkeypatch) -> list[int]:
    """One entry per simulation actually run (the scheduler's loop)."""
    ran: list[int] = []
    loop = scheduler._Sim.run

    def counted(self, until):
        ran.append(self.n)
        return loop(self, until)

    monkeypatch.setattr(scheduler._Sim, "run", counted)
    return ran


def _inputs(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    steps = StepModel(m, hw, Deployment(), 64, 1100, ideal=False, max_tokens=2200)
    rules = EngineRules(64, 4000, 16, 2048, True, "recompute", 64e9)
    arrival = np.arange(40) * 0.05
    return steps, arrival, np.full(40, 1000), np.full(40, 100), rules


def test_a_repeated_simulation_is_the_first_run(cat, runs):
    steps, arrival, prompts, outputs, rules = _inputs(cat)
    alone = simulate_requests(steps, arrival, prompts, outputs, rules)
    with shared_runs() as store:
        first = simulate_requests(steps, arrival, prompts, outputs, rules)
        again = simulate_requests(steps, arrival.copy(), prompts.copy(), outputs, rules)
        assert again is first and len(store) == 1  # equal arrays: the same inputs
        assert np.array_equal(first.finish_s, alone.finish_s) and first.busy_s == alone.busy_s
        other = prompts.copy()
        other[7] += 1  # one request's prompt one token longer: another simulation
        changed = simulate_requests(steps, arrival, other, outputs, rules)
        assert changed is not first and changed.finish_s[7] != first.finish_s[7]
        with shared_runs():  # a block inside shares the outer one's runs
            assert simulate_requests(steps, arrival, prompts, outputs, rules) is first
    assert runs == [40, 40, 40]  # alone, first, changed
    simulate_requests(steps, arrival, prompts, outputs, rules)  # outside a block: runs again
    assert len(runs) == 4


def test_a_stopped_run_stops_again_on_the_same_metric(cat, runs):
    steps, arrival, prompts, outputs, rules = _inputs(cat)
    # 40 requests in 2 s against a 1 ms TTFT: the first token is over it at once
    stop = SloStop.of(0.001, None, 99.0, 40)
    with shared_runs():
        for _ in range(2):
            with pytest.raises(SloMissed) as miss:
                simulate_requests(steps, arrival, prompts, outputs, rules, stop=stop)
            assert miss.value.metric == "TTFT"
        whole = simulate_requests(steps, arrival, prompts, outputs, rules)  # no stop: another run
    assert len(runs) == 2 and np.isfinite(whole.finish_s).all()


def test_the_store_keeps_runs_within_its_limit_oldest_out_first(cat, runs):
    # three different runs (one request's prompt a token longer each time): a limit of one byte
    # keeps only the newest (the store never empties itself), a large one keeps all three, and
    # a block inside shares the outer one's store and count
    steps, arrival, prompts, outputs, rules = _inputs(cat)
    variants = []
    for i in range(3):
        p = prompts.copy()
        p[i] += 1
        variants.append(p)
    with shared_runs(limit_bytes=1) as store:
        recs = [simulate_requests(steps, arrival, p, outputs, rules) for p in variants]
        assert len(store) == 1
        assert simulate_requests(steps, arrival, variants[2], outputs, rules) is recs[2]
        assert simulate_requests(steps, arrival, variants[0], outputs, rules) is not recs[0]
    with shared_runs() as store:
        for p in variants:
            simulate_requests(steps, arrival, p, outputs, rules)
        with shared_runs() as inner:
            assert inner is store
            simulate_requests(steps, arrival, variants[0], outputs, rules)
        assert len(store) == 3
    assert len(runs) == 3 + 1 + 3  # the first block's three and its evicted first again

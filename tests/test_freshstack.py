"""The simulator's event loop runs on a fresh frame stack (roofline.serving.sim.freshstack): its
result and its errors come back as from a plain call, and its figures do not depend on the
depth of the caller's stack."""

from __future__ import annotations

import cProfile
import threading

import numpy as np
import pytest

from roofline.domain.errors import InputError
from roofline.serving.sim import scheduler
from roofline.serving.sim.freshstack import on_fresh_stack
from roofline.serving.sim.scheduler import EngineRules, simulate_requests
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment


def test_the_result_and_the_error_come_back():
    assert on_fresh_stack(lambda: 6 * 7) == 42
    with pytest.raises(InputError, match="too deep"):
        on_fresh_stack(lambda: (_ for _ in ()).throw(InputError("too deep")))


def test_under_a_profiler_the_loop_runs_where_it_is_called():
    here = threading.current_thread()
    assert on_fresh_stack(threading.current_thread) is not here  # its own thread
    with cProfile.Profile():  # a profiler follows one thread: the loop stays in the caller's
        assert on_fresh_stack(threading.current_thread) is here


def _padded(depth: int, fn):
    return fn() if depth == 0 else _padded(depth - 1, fn)


def test_the_loop_runs_on_its_own_stack_and_its_figures_do_not_depend_on_the_depth(
    cat, monkeypatch
):
    """20 requests, 1,000-token prompts and 100-token answers every 0.1 s on Llama-3.1-8B/H100,
    simulated from 0 to 90 frames deep: every record is the same to the bit (the thread changes
    where the loop runs, not what it computes), and the loop ran outside the caller's thread."""
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    steps = StepModel(m, hw, Deployment(), 64, 1100, ideal=False, max_tokens=2200)
    rules = EngineRules(64, 4000, 16, 2048, True, "recompute", 64e9)
    arrival_s = np.arange(20) * 0.1
    prompts, outputs = np.full(20, 1000), np.full(20, 100)
    threads = []
    run = scheduler._Sim.run

    def spy(self, until):
        threads.append(threading.current_thread())
        return run(self, until)

    monkeypatch.setattr(scheduler._Sim, "run", spy)
    records = [
        _padded(d, lambda: simulate_requests(steps, arrival_s, prompts, outputs, rules))
        for d in range(0, 91, 10)
    ]
    assert threading.current_thread() not in threads and len(threads) == len(records)
    first = records[0]
    assert np.all(np.isfinite(first.finish_s))
    for rec in records[1:]:
        assert np.array_equal(rec.finish_s, first.finish_s)
        assert np.array_equal(rec.itl_s, first.itl_s) and rec.busy_s == first.busy_s

"""The simulator's shortcuts answer as the plain rules they stand for (issue 32: a faster suite
through product speed, outputs byte-identical): BlockCache.fit evicts k blocks at once where the
rule takes them one at a time, chunk_head and span_s take a lone prompt in prefill without their
loop, and make_replica builds the ideal step model only when something reads it."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.engines.engine import engine
from roofline.serving.metrics import Slo
from roofline.serving.serve import make_replica, serve
from roofline.serving.sim.blockcache import BlockCache, hashed_info
from roofline.serving.sim.chunked import chunk_head
from roofline.serving.sim.steps import StepModel
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment


def _fit_one_at_a_time(idle: int, bpb: int, lru: list[int], free: float) -> tuple[int, float, int]:
    """The eviction rule as written down (BlockCache.fit's docstring): the least recently freed
    idle block goes, one at a time, until the idle blocks fit in `free`: (idle blocks left,
    blocks evicted, blocks still cached)."""
    over, evicted, left = idle - max(free, 0.0), 0.0, list(lru)
    while over > 0 and left:
        left.pop(0)
        idle -= bpb
        evicted += bpb
        over -= bpb
    return idle, evicted, len(left)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 300),
    st.sampled_from([1, 2, 32]),
    st.floats(-50.0, 20_000.0, allow_nan=False),
    st.integers(0, 3),
)
def test_fit_evicts_what_one_block_at_a_time_would(n, bpb, free, quarter):
    cache = BlockCache(hashed_info([np.arange(3)]), 512 // bpb)
    assert cache.bpb == bpb
    keys = list(range(n))
    cache.lru = OrderedDict.fromkeys(keys)
    cache.idle_blocks = n * bpb
    free = free if quarter == 0 else math.floor(free) + quarter / 4  # whole and fractional room
    want_idle, want_evicted, want_left = _fit_one_at_a_time(n * bpb, bpb, keys, free)
    cache.fit(free)
    assert (cache.idle_blocks, cache.evicted, len(cache.lru)) == (
        want_idle,
        want_evicted,
        want_left,
    )
    assert list(cache.lru) == keys[n - want_left :]  # the least recently freed went first


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=6), st.integers(1, 20_000))
def test_chunk_head_is_the_queue_up_to_the_budget(left, budget):
    """chunk_head: the prompts in queue order up to the first whose tokens left, with those
    before it, reach the budget (all of them if none does)."""
    queue = list(range(len(left)))
    cum = np.cumsum(left)
    upto = int(np.searchsorted(cum, budget)) + 1  # first index whose running sum reaches it
    want = queue[: min(upto, len(queue))]
    assert chunk_head(queue, left, budget) == (want, [left[r] for r in want])


def test_a_lone_prompt_in_prefill_costs_its_chunk(cat):
    """span_s with one prompt in prefill: its chunk is min(left, k × room) tokens, and the time
    is the decodes' plus lin(n + chunk/k) − lin(n) per step and the chunk's attention A(upto) −
    A(done) (steps.py module docstring); a prompt behind one that fills the span changes
    nothing (chunked.py)."""
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    s = StepModel(m, hw, Deployment(), 64, 4096, False)
    n, k, total, room = 8, 3, 8 * 900.0, 500
    for left, done in ((400, 0), (2000, 100)):
        t, t_dec, got = s.span_s(n, None, total, k, (room, [left], [done]))
        chunk = min(left, k * room)
        assert got == [chunk]
        pf = (s.lin(n + chunk / k) - s.lin(n)) * k
        pf += s.attn_list[done + chunk] - s.attn_list[done]
        assert math.isclose(t - t_dec, pf, rel_tol=1e-12)
        assert math.isclose(t_dec, s.decode_n_s(n, k, total), rel_tol=1e-12)
    # 2,000 tokens left fill the span's 3 x 500: a second prompt behind gets none
    two = s.span_s(n, None, total, k, (room, [2000, 50], [100, 0]))
    assert two == (t, t_dec, [1500, 0])


def test_an_expected_only_run_never_builds_the_ideal_step_model(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    eng = engine("vllm", hw)
    rep = make_replica(m, hw, Deployment(), eng, 1300)
    w = make_workload(1000, 200, rate=1.0, requests=60, seed=0)
    serve(rep, w, Slo(2.0, 0.05), capacity=None, expected_only=True)
    assert rep.ideal_steps.built is None  # the expected half alone: never read
    ideal = rep.ideal  # read: built once, kept
    assert rep.ideal is ideal and rep.ideal_steps.built is ideal
    fresh = StepModel(m, hw, Deployment(), rep.rules.max_seqs, 1300, True, engine=eng.profile_id)
    assert np.array_equal(fresh.base_s, ideal.base_s)  # the η = 1 step times
    assert (ideal.base_s < rep.expected.base_s).all()

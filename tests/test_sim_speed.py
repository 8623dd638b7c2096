"""The serving simulator's fast paths (roofline.serving.sim: chunked.chunk_head, the decoders'
base buffer, StepModel.blocks_one) agree with the plain computations they replace."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.sim.chunked import chunk_head
from roofline.serving.sim.decoders import Decoders
from roofline.serving.sim.steps import StepModel, kv_groups
from roofline.step.ops import Deployment, cached_tokens_cap


def test_chunk_head_stops_at_the_budget():
    # tokens left 5, 3, 4, 9 with a budget of 8: 5 + 3 = 8 reaches it, so the 4 and 9 get none
    assert chunk_head([7, 2, 4, 1], [0, 9, 3, 0, 4, 0, 0, 5], 8) == ([7, 2], [5, 3])
    # a budget beyond every prompt's tokens: the whole queue
    assert chunk_head([7, 2], [0, 9, 3, 0, 4, 0, 0, 5], 100) == ([7, 2], [5, 3])


class _Blocks(StepModel):
    def __init__(self, groups):  # only the KV layout, no step times
        self.kv_groups = groups


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.001, 1.0), st.one_of(st.none(), st.integers(1, 10**6))),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 10**7),
    st.sampled_from([1, 16, 64]),
)
def test_blocks_one_is_blocks_bit_for_bit(groups, tokens, block):
    s = _Blocks(tuple(groups))
    assert s.blocks_one(tokens, block) == float(s.blocks(tokens, block))


class _Set(Decoders):
    def __init__(self, n: int):
        self.base, self.decoding, self.fin, self.heap, self.fresh = {}, {}, {}, [], []
        self.S = self.G = self.F = self.spans = 0
        self.gen, self.prompts, self.outputs = [0] * n, [10 + i for i in range(n)], [50] * n
        self.base_arr, self.last_tok, self.last_shared = None, [0.0] * n, 0.0
        self.simple_kv = False  # the contexts kept in the buffer only


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), max_size=300), st.booleans())
def test_ctx_is_the_contexts_in_joining_order(moves, track):
    s, nxt = _Set(400), 0
    s._track = track  # False: no buffer, the bases read from `base` (a run without windows)
    for join, dg in moves:
        if join or not s.decoding:
            s.join(nxt)
            nxt += 1
        else:
            s.leave(next(iter(s.decoding)) if dg % 2 else list(s.decoding)[-1])
        s.G += dg
        want = [s.base[r] + s.G for r in s.decoding]
        assert s.ctx().tolist() == want
        assert np.sum(s.ctx()) == s.S + len(s.decoding) * s.G


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.001, 1.0), st.sampled_from([None, 100, 4096])),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.integers(1, 10**6), min_size=1, max_size=40),
)
def test_blocks_of_many_is_each_ones(groups, tokens):
    s = _Blocks(tuple(groups))
    got = s.blocks(np.array(tokens), 16).tolist()
    assert got == [s.blocks_one(t, 16) for t in tokens]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.001, 1.0), st.sampled_from([None, 1, 100, 4096, 4097])),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.integers(1, 10**5), max_size=60),
    st.sampled_from([1, 16, 24, 64]),
)
def test_blocks_total_is_the_sum_of_blocks(groups, tokens, block):
    s = _Blocks(tuple(groups))
    t = np.array(tokens, dtype=np.int64)
    assert s.blocks_total(t, block) == float(s.blocks(t, block).sum())


def test_slo_search_memo_gives_the_same_rate_and_is_reused():
    """A memo shared by two SLO searches (size --confidence) changes neither answer, and the
    second search reads the rates the first visited (at least its first one: the saturation
    rate, where both start)."""
    from roofline import Deployment, load_catalog
    from roofline.engines.engine import engine
    from roofline.serving.metrics import Slo
    from roofline.serving.search import max_rate_within_slo, replica_capacity
    from roofline.serving.serve import make_replica
    from roofline.serving.workload import make_workload

    cat = load_catalog()
    rep = make_replica(
        cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), engine("vllm"), 1200
    )
    w = make_workload(1000, 200, rate=20.0, requests=100, seed=0)
    sat = replica_capacity(rep, w).expected.requests_per_s
    loose, tight = Slo(1.0, 0.05, 50.0), Slo(0.5, 0.03, 50.0)
    plain = [max_rate_within_slo(rep, w, s, sat) for s in (loose, tight)]
    memo: dict = {}
    first = max_rate_within_slo(rep, w, loose, sat, memo=memo)
    runs = len(memo)
    second = max_rate_within_slo(rep, w, tight, sat, memo=memo)
    assert [first, second] == plain
    assert len(memo) < 2 * runs  # the shared rates were not run again


def test_deepseek_kv_is_one_whole_group(cat):
    # 3 dense + 58 MoE layers, every one uncapped MLA KV: 61/61 of a block per block, the
    # simulator's whole-block (integer) count
    assert kv_groups(cat.models["deepseek-r1"], Deployment()) == ((1.0, None),)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([1, 16, 64, 128]))
def test_kv_groups_hold_what_the_layer_groups_hold(cat, tokens, block):
    # by hand, in exact fractions: each layer group's share × its whole blocks, capped groups
    # at their cap, summed over the model's own layer groups (before any merging)
    dep = Deployment()
    for name in ("deepseek-r1", "gemma-3-27b", "llama-4-maverick", "llama-3.1-8b"):
        m = cat.models[name]
        want = sum(
            Fraction(g.count, m.num_hidden_layers)
            * -(-min(tokens, tokens if cap is None else cap) // block)
            for g in m.layer_groups
            for cap in [cached_tokens_cap(g.window, dep)]
        )
        got = kv_groups(m, dep)
        assert len({cap for _, cap in got}) == len(got)  # one group per cap
        total = sum(s * -(-min(tokens, tokens if c is None else c) // block) for s, c in got)
        assert abs(total - float(want)) <= 1e-12 * max(float(want), 1.0)

"""The decoders' KV blocks after `extra` more steps (Decoders.blocks_ahead, kept per G + extra
until the set changes) are blocks_sum over the contexts, bit for bit, through any sequence of
joins, leaves and steps, for one layer group (whole blocks summed as integers) and for several
(DeepSeek's 3 dense and 58 MoE layers: 3/61 + 58/61 of a block is not always one block in
floating point, so the figure is a float sum in the decoders' order)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.sim.decoders import Decoders
from roofline.serving.sim.steps import StepModel


class _Blocks(StepModel):
    def __init__(self, groups):  # only the KV layout, no step times
        self.kv_groups = groups


class _Set(Decoders):
    def __init__(self, n: int, groups, block: int):
        self.base, self.decoding, self.fin, self.heap, self.fresh = {}, {}, {}, [], []
        self.S = self.G = self.F = self.spans = 0
        self.gen = [0] * n
        self.prompts = [(37 * i) % 5000 + 1 for i in range(n)]
        self.outputs = [4000] * n
        self.base_arr, self.last_tok, self.last_shared = None, [0.0] * n, 0.0
        self.steps = _Blocks(groups)
        self.rules = SimpleNamespace(block_tokens=block)
        self.simple_kv = groups == ((1.0, None),)


DEEPSEEK = ((3 / 61, None), (58 / 61, None))


def test_deepseek_shares_are_not_one_block_in_floating_point():
    # why the several-group figure must be summed as the floats it is, in order
    assert 3 / 61 * 5 + 58 / 61 * 5 != 5.0


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([((1.0, None),), DEEPSEEK, ((0.5, None), (0.5, 4096))]),
    st.sampled_from([1, 16, 64]),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 600)), max_size=150),
)
def test_blocks_ahead_is_blocks_sum_through_joins_leaves_and_steps(groups, block, moves):
    s, nxt = _Set(400, groups, block), 0
    for move, extra, dg in moves:
        if move == 0 or not s.decoding:
            s.join(nxt)
            nxt += 1
        elif move == 1:
            s.leave(next(iter(s.decoding)))
        elif move == 2:
            s.G += dg  # a span of dg steps: the set unchanged, the figures kept
        if not s.decoding:
            continue
        want = s.blocks_sum(s.ctx(), extra)
        assert s.blocks_ahead(extra) == want
        assert s.blocks_ahead(extra) == want  # read again from what was kept
        if s.simple_kv:
            ctx = np.array([s.base[r] + s.G for r in s.decoding])
            assert want == float(np.ceil((ctx + extra) / block).sum())


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from([((1.0, None),), DEEPSEEK]),
    st.sampled_from([1, 16, 64]),
    st.lists(st.integers(0, 900), min_size=1, max_size=60),
    st.integers(0, 5000),
    st.integers(1, 700),
    st.integers(0, 700),
    st.sampled_from([-1.0, -0.5, 0.0, 0.5]),
)
def test_steps_within_is_the_most_steps_whose_blocks_fit(groups, block, joins, g, k, at, off):
    # every x from 1 to k tried by hand: the most whose blocks_sum over the contexts fits (0 if
    # none), what a span the KV budget cuts short runs; the room at (or just off) the figure
    # of some step count, where an off-by-one remainder would show
    s = _Set(1000, groups, block)
    for i, before in enumerate(joins):  # joined at different G: bases spread over remainders
        s.G = before
        s.join(i)
    s.G = 900 + g
    room = s.blocks_sum(s.ctx(), min(at, k)) + off
    fits = [x for x in range(1, k + 1) if s.blocks_sum(s.ctx(), x) <= room]
    assert s.steps_within(k, room) == (max(fits) if fits else 0)

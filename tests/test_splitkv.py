"""FlashAttention-2's split-KV rule (roofline/timing/attention.py), its decode-attention form
(roofline/timing/attention.py) and the large-M GEMM step (roofline/timing/gemm.py), against
hand-derived cases. Every expected value is worked out in the comments from flash_api.cpp's
num_splits_heuristic, not from the code."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.layout import Layout
from roofline.timing.attention import AttentionCurve, attention_decode_time_s, fa2_num_splits
from roofline.timing.gemm import GemmCurve, gemm_time_s


def test_fa2_splits_the_example_in_flash_api_cpp():
    # flash_api.cpp's own comment: batch·heads = 48 on 108 SMs → 2 splits (efficiency 0.89)
    # beats 3 (0.67). By hand with 64 KV blocks: e(1) = 48/108 = 0.44, e(2) = 0.89, e(3) = 0.67,
    # …, e(9) = 432/108 = 4 waves = 1.0 (the best); the smallest with e ≥ 0.85 is 2.
    assert float(fa2_num_splits(48, 108, 64)) == 2.0


def test_fa2_splits_by_hand():
    # u ≥ 0.8·slots: never splits (87 ≥ 86.4)
    assert float(fa2_num_splits(87, 108, 64)) == 1.0
    # one KV block: nothing to split
    assert float(fa2_num_splits(10, 216, 1)) == 1.0
    # 3 blocks, 10 units on 216 slots: e = 10s/216 grows with s; s = 2 (⌈3/2⌉ = 2 ≠ 3) and s = 3
    # (1 ≠ 2) are eligible; best e(3) = 0.139, 0.85·0.139 = 0.118 > e(2) = 0.093 → 3
    assert float(fa2_num_splits(10, 216, 3)) == 3.0
    # 4 blocks: s = 3 is not eligible (⌈4/3⌉ = ⌈4/2⌉ = 2), best e(4) = 0.185 → 4
    assert float(fa2_num_splits(10, 216, 4)) == 4.0
    # vectorised: the same cases in one call
    got = fa2_num_splits(np.array([48, 87, 10, 10]), 108, np.array([64, 64, 3, 4]))
    assert got.tolist() == [2.0, 1.0, 3.0, 4.0]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 400),
    st.sampled_from([216.0, 264.0, 296.0, 284.0]),
    st.integers(1, 4096),
)
def test_fa2_splits_bounds(units, slots, n_blocks):
    # 1 ≤ splits ≤ min(128, slots, blocks), and 1 once the grid almost fills the slots
    s = float(fa2_num_splits(units, slots, n_blocks))
    assert 1.0 <= s <= min(128.0, slots, n_blocks)
    if units >= 0.8 * slots:
        assert s == 1.0


FA2 = AttentionCurve(
    eta_memory=1.0,
    latency_s=10e-6,
    block_bw_bytes_per_s=1e10,
    sm_count=108.0,
    split_rule="fa2",
    swap_s=1e-6,
    copy_s=5e-6,
    combine_s=3e-6,
)


def test_fa2_decode_attention_by_hand():
    mib = 1024.0 * 1024.0
    # 32 query heads on 8 KV streams (g = 4, grouped: swapped path), 1 MiB of KV per stream =
    # 16 blocks of 64 KiB; 8 units on 216 slots: e(s) = 8s/216, eligible s ∈ {1,2,3,4,6,8,16},
    # best e(16) = 0.593, 0.85·0.593 = 0.504 → s ≥ 13.6 → 16 splits, 1 wave.
    # Memory: max(8 MiB / 1e12 = 8.389 µs, 1 · (1 MiB / 16) / 1e10 = 6.554 µs) = 8.389 µs;
    # fixed: 10 + swap 1 + combine 3 = 14 µs (kv_heads 8 → batch 1: q's re-layout is a view)
    t = attention_decode_time_s(0.0, 8 * mib, 1e15, 1e12, FA2, 1.0, 32, 8, kv_heads=8)
    assert float(t) == pytest.approx(14e-6 + 8 * mib / 1e12)
    # batch 2 with 4 KV heads (same 8 streams): q is copied, + 5 µs; kv_heads unknown: assumed
    t2 = attention_decode_time_s(0.0, 8 * mib, 1e15, 1e12, FA2, 1.0, 32, 8, kv_heads=4)
    assert float(t2) == pytest.approx(19e-6 + 8 * mib / 1e12)
    t3 = attention_decode_time_s(0.0, 8 * mib, 1e15, 1e12, FA2, 1.0, 32, 8)
    assert float(t3) == pytest.approx(float(t2))
    # MHA (rows = streams): no swap, no split; one block streams its 1 MiB at 1e10 B/s:
    # 10 µs + 104.858 µs
    t4 = attention_decode_time_s(0.0, 8 * mib, 1e15, 1e12, FA2, 1.0, 8, 8, kv_heads=8)
    assert float(t4) == pytest.approx(10e-6 + mib / 1e10)


def test_large_m_step_by_hand():
    # compute-bound GEMM M = N = K = 8192 at P = 1e15, η_max 1: F = 2·8192³ = 1.0995e12 → 1.0995
    # ms; from M = 8192 on the plateau is 0.5 → 2.199 ms; M = 4096 (F/2) stays at 0.550 ms
    c = GemmCurve(eta_max=1.0, eta_memory=1.0, m_large=8192.0, large_ratio=0.5)
    f = 2.0 * 8192.0**3
    assert float(gemm_time_s(f, 0.0, 8192, 8192, 1e15, 1e12, c)) == pytest.approx(2 * f / 1e15)
    assert float(gemm_time_s(f / 2, 0.0, 4096, 8192, 1e15, 1e12, c)) == pytest.approx(f / 2e15)


def test_decode_step_passes_kv_heads_per_gpu():
    # phases gives decode attention its KV heads per GPU: Llama-3.1-70B has 8 KV heads, so TP8
    # leaves 1 per GPU (FA2's q re-layout is a view: no copy) and TP1 leaves 8 (batch 4: copied)
    from roofline import load_catalog
    from roofline.step.ops import Deployment
    from roofline.step.phases import _attention_shape

    m = load_catalog().model("llama-3.1-70b")
    rows, streams, kv = _attention_shape(m, Deployment(layout=Layout(tp=8)), 4, 1.0)
    assert (float(rows), float(streams), kv) == (4 * 64 / 8, 4.0, 1.0)
    rows, streams, kv = _attention_shape(m, Deployment(), 4, 1.0)
    assert (float(rows), float(streams), kv) == (4 * 64, 32.0, 8.0)
    mib = 1024.0 * 1024.0
    # the same 4 streams and 32 rows (g = 8): 1 KV head per GPU, no copy; 2 heads of 2
    # sequences, copied (+5 µs)
    one = attention_decode_time_s(0.0, 4 * mib, 1e15, 1e12, FA2, 1.0, 32, 4, kv_heads=1.0)
    two = attention_decode_time_s(0.0, 4 * mib, 1e15, 1e12, FA2, 1.0, 32, 4, kv_heads=2.0)
    assert float(two) - float(one) == pytest.approx(5e-6)

"""The kernel-curve forms of roofline/timing/gemm.py and roofline/timing/attention.py against
hand-derived cases: wave quantisation of a tile grid (NVIDIA, "Matrix Multiplication Background
User's Guide"), split-K, grouped GEMMs and the split-KV decode-attention limit. Every expected
value is worked out in the comments."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.timing.attention import AttentionCurve, attention_decode_time_s
from roofline.timing.gemm import GemmCurve, gemm_time_s, wave_quantisation

TILED = GemmCurve(eta_max=0.5, eta_memory=1.0, tile_m=128, tile_n=128, sm_count=100)


def test_wave_quantisation_by_hand():
    # M 256, N 1280: 2 × 10 = 20 tiles on 100 SMs, no split-K: 1 wave of 100 slots, 20 busy
    # → u = 256·1280 / (1·100·128·128) = 327680 / 1638400 = 0.2
    u, w = wave_quantisation(256, 1280, TILED)
    assert (float(u), float(w)) == pytest.approx((0.2, 1.0))
    # split-K up to 4: ⌊100/20⌋ = 5 → 4 pieces, 80 blocks in one wave → u = 0.8
    split4 = GemmCurve(0.5, 1.0, tile_m=128, tile_n=128, split_k_max=4, sm_count=100)
    assert float(wave_quantisation(256, 1280, split4)[0]) == pytest.approx(0.8)
    # M 129, N 12800: 2 × 100 = 200 tiles → 2 full waves, but row tile 2 holds 1 of 128 rows:
    # u = 129·12800 / (2·100·16384) = 1651200 / 3276800
    u, w = wave_quantisation(129, 12800, TILED)
    assert (float(u), float(w)) == pytest.approx((1651200 / 3276800, 2.0))
    # M 128, N 12928: 101 tiles → a second wave for one tile: u = 128·12928 / (2·100·16384)
    assert float(wave_quantisation(128, 12928, TILED)[0]) == pytest.approx(1654784 / 3276800)
    # exact multiples stay exact: 192 rows in 96-row tiles × 8448/128 = 66 columns = 132 tiles on
    # 132 SMs is one full wave, u = 192·8448 / (132·96·128) = 1
    odd = GemmCurve(0.5, 1.0, tile_m=96, tile_n=128, sm_count=132)
    assert tuple(map(float, wave_quantisation(192, 8448, odd))) == (1.0, 1.0)
    # a grouped GEMM (groups = ∞) keeps only the padding: 100 rows in a 128-row tile → 0.78125
    u, w = wave_quantisation(100, 128, TILED, groups=np.inf)
    assert (float(u), float(w)) == pytest.approx((100 / 128, 0.0))
    # an unknown shape (attention without its own curve) and a curve without a tile: u = 1, w = 0
    assert tuple(map(float, wave_quantisation(np.inf, np.inf, TILED))) == (1.0, 0.0)
    assert tuple(map(float, wave_quantisation(7, 9, GemmCurve(0.5, 1.0)))) == (1.0, 0.0)


def test_tiled_gemm_time_by_hand():
    c = GemmCurve(
        eta_max=0.5,
        eta_memory=1.0,
        latency_s=5e-6,
        tile_m=128,
        tile_n=128,
        sm_count=100,
        wave_latency_s=1e-6,
    )
    # M 256, N 12800, K 4096: 200 tiles = 2 full waves (u = 1): 2·256·12800·4096 = 2.684e10
    # FLOPs / (1e15 · 0.5) = 53.69 µs, + 2 waves × 1 µs + t₀ 5 µs
    f = 2.0 * 256 * 12800 * 4096
    t = gemm_time_s(f, 1.0, 256, 12800, 1e15, 1e12, c)
    assert float(t) == pytest.approx(f / 5e14 + 2e-6 + 5e-6, rel=1e-12)
    # one row more: 3 × 100 tiles = 3 waves, u = 257·12800 / (3·100·16384)
    f2 = 2.0 * 257 * 12800 * 4096
    t2 = gemm_time_s(f2, 1.0, 257, 12800, 1e15, 1e12, c)
    assert float(t2) == pytest.approx(f2 / (5e14 * 3289600 / 4915200) + 3e-6 + 5e-6, rel=1e-12)
    # two kernels (e.g. 2 layers) pay t₀ and the waves twice
    t3 = gemm_time_s(2 * f, 1.0, 256, 12800, 1e15, 1e12, c, kernels=2)
    assert float(t3) == pytest.approx(2 * f / 5e14 + 4e-6 + 10e-6, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    m=st.floats(1, 1e5),
    n=st.floats(16, 1e5),
    k=st.floats(16, 1e5),
    tile=st.sampled_from([(64, 64), (128, 128), (128, 256)]),
    split=st.sampled_from([1, 4, 16]),
    groups=st.sampled_from([1.0, np.inf]),
)
def test_tiled_gemm_never_beats_the_roofline(m, n, k, tile, split, groups):
    c = GemmCurve(1.0, 1.0, tile_m=tile[0], tile_n=tile[1], split_k_max=split, sm_count=132)
    u, w = wave_quantisation(m, n, c, groups)
    assert 0.0 < float(u) <= 1.0 + 1e-12 and float(w) >= 0.0
    f, q = 2.0 * m * n * k, 2.0 * n * k
    t = gemm_time_s(f, q, m, n, 1e15, 3e12, c, groups=groups)
    assert float(t) >= max(f / 1e15, q / 3e12) * (1 - 1e-12)


def test_split_kv_decode_attention_by_hand():
    c = AttentionCurve(
        eta_memory=1.0,
        split_bytes=65536.0,
        split_min_group=2.0,
        block_bw_bytes_per_s=1e9,
        sm_count=100,
    )
    # 10 streams of 1 MB, one query head per KV head (no split): 10 blocks in one wave, each
    # streams 1 MB at 1 GB/s = 1 ms; the whole 10 MB at 1 TB/s would take only 10 µs
    t = attention_decode_time_s(1.0, 1e7, 1e15, 1e12, c, 1.0, rows=10, streams=10)
    assert float(t) == pytest.approx(1e-3, rel=1e-12)
    # 4 query heads per KV head: split into ⌈1e6/65536⌉ = 16 pieces, 160 blocks = 2 waves of
    # 62.5 kB each → 2 · 62500 / 1e9 = 125 µs
    t = attention_decode_time_s(1.0, 1e7, 1e15, 1e12, c, 1.0, rows=40, streams=10)
    assert float(t) == pytest.approx(125e-6, rel=1e-12)
    # per layer fixed costs: 2 layers × (t₀ 5 µs + 40 rows × 1 ns + 10 streams × 10 ns)
    c2 = AttentionCurve(eta_memory=0.5, latency_s=5e-6, per_row_s=1e-9, per_stream_s=1e-8)
    t = attention_decode_time_s(1.0, 1e7, 1e15, 1e12, c2, 1.0, rows=40, streams=10, layers=2)
    assert float(t) == pytest.approx(2 * (5e-6 + 40e-9 + 100e-9) + 1e7 / 5e11, rel=1e-12)


def test_catalog_refuses_a_tile_grid_without_an_sm_count():
    from roofline.catalog.kernels import kernel_entry
    from roofline.domain.errors import CatalogError

    curve = {"eta_max": 0.8, "eta_memory": 0.8, "m_half": 0, "n_half": 0, "latency_us": 5}
    entry = {
        "id": "g",
        "accelerators": [],
        "borrowed_by": [],
        "gemm": {"bf16": {**curve, "tile_m": 128, "tile_n": 128}},
        "gemm_source": "test",
    }
    with pytest.raises(CatalogError, match="sm_count"):
        kernel_entry("k.yaml: kernel 'g'", entry)
    with pytest.raises(CatalogError, match="tile_n"):  # one of the two tile sides missing
        kernel_entry("k", {**entry, "gemm": {"bf16": {**curve, "tile_m": 128}}})
    ok = kernel_entry("k", {**entry, "sm_count": 132, "sm_count_source": "test"})
    assert ok.kernels.gemm["bf16"].sm_count == 132 and ok.kernels.gemm["bf16"].tile_n == 128


def test_vllm_sm89_fp8_tile_rule_by_hand():
    """The tiles of vLLM's scaled_mm_c2x_sm89_fp8_dispatch.cuh, read off its configs by hand:
    M = 1, N = 4096 (np2 4096 ≤ 8192): 16×64; M = 20, N = 12288 (np2 16384): 32×128;
    M = 200, N = 5120 (np2 8192 > 4096): 128×128; M = 300, N = 8192: 256×128."""
    from roofline.timing.gemm import VLLM_SM89_FP8, rule_tiles, rule_tiles_one

    m = np.array([1.0, 20.0, 200.0, 300.0])
    n = np.array([4096.0, 12288.0, 5120.0, 8192.0])
    want = [(16.0, 64.0), (32.0, 128.0), (128.0, 128.0), (256.0, 128.0)]
    tm, tn = rule_tiles(VLLM_SM89_FP8, m, n)
    assert list(zip(tm.tolist(), tn.tolist(), strict=True)) == want
    assert [rule_tiles_one(VLLM_SM89_FP8, a, b) for a, b in zip(m, n, strict=True)] == want
    # M = 300, N = 8192 on 142 SMs: ⌈300/256⌉·⌈8192/128⌉ = 128 tiles, one wave, no split-K:
    # u = 300·8192 / (142·256·128) = 0.5282
    c = GemmCurve(1.0, 1.0, sm_count=142, tile_rule=VLLM_SM89_FP8)
    u, w = wave_quantisation(300.0, 8192.0, c)
    assert float(w) == 1.0
    assert float(u) == pytest.approx(300 * 8192 / (142 * 256 * 128))


def test_quant_pass_adds_its_bytes_outside_the_max():
    """A GEMV-sized GEMM (memory-bound) with a 3-byte quantisation pass: M·K = 16·4096 values,
    3 B each over 1 TB/s at η_mem 1 = 196.608 ns more than without."""
    f = 2.0 * 16 * 4096 * 4096
    base = GemmCurve(1.0, 1.0)
    quant = GemmCurve(1.0, 1.0, quant_bytes=3.0)
    t0 = float(gemm_time_s(f, 1e7, 16, 4096, 1e15, 1e12, base))
    t1 = float(gemm_time_s(f, 1e7, 16, 4096, 1e15, 1e12, quant))
    assert t1 - t0 == pytest.approx(16 * 4096 * 3 / 1e12)


@settings(max_examples=60, deadline=None)
@given(m=st.floats(1.0, 1e5), n=st.floats(1.0, 1e5))
def test_tile_rule_waves_are_a_share_of_the_sms(m, n):
    """Under vLLM's sm89 FP8 tile rule every shape runs in whole waves of padded tiles: the
    useful share u lies in (0, 1] and the waves cover the tiles (w·SMs ≥ ⌈M/t_m⌉·⌈N/t_n⌉)."""
    from roofline.timing.gemm import VLLM_SM89_FP8, rule_tiles_one

    c = GemmCurve(1.0, 1.0, sm_count=142, tile_rule=VLLM_SM89_FP8)
    u, w = (float(x) for x in wave_quantisation(m, n, c))
    tm, tn = rule_tiles_one(VLLM_SM89_FP8, m, n)
    assert 0.0 < u <= 1.0 + 1e-12
    assert w * 142 >= math.ceil(m / tm) * math.ceil(n / tn)

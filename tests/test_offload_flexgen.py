"""FlexGen-style streaming with the KV cache in host RAM (attention on the CPU, one DRAM shared by
the weight copies and the CPU's KV reads), the prefill under streaming and FlexGen's generation
throughput, by hand."""

import pytest

from roofline.levers.offload import generation_throughput, offload, offload_prefill, placement_bytes
from roofline.step.ops import Deployment
from roofline.step.phases import prefill

# Llama-3.1-8B: per layer 218,103,808 linear weights + 8,192 norm weights (+ 128, the final norm's
# share), 2 bytes each: 436.2 MB; KV per token and layer 2·8 heads·128·2 B = 4,096 B.
LAYER_W = (218_103_808 + 8192 + 128) * 2
KV_TOKEN_LAYER = 2 * 8 * 128 * 2


def test_kv_in_host_ram_shares_the_dram_with_the_copies(cat):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("gh200"), cat.accelerator("grace")
    b, ctx = 64, 1024
    kv_layer = b * ctx * KV_TOKEN_LAYER  # 268.4 MB the CPU reads per layer
    # ideal, all 32 layers streamed: per layer the copy over NVLink-C2C takes 436.2 MB / 450 GB/s
    # = 0.97 ms, the GPU's ops 0.11 ms, the CPU's attention 268.4 MB / 512 GB/s = 0.52 ms; but the
    # DRAM serves both the copy and the KV reads: (436.2 + 268.4) MB / 512 GB/s = 1.376 ms
    o = offload(m, gpu, host, Deployment(), 0, b, ctx, mode="stream", kv_host=True, ideal=True)
    dram_s = (LAYER_W + kv_layer) / 512e9
    # + the head (1.05 GB at 4 TB/s, 0.26 ms) and the activations over the link (~0.16 ms)
    assert float(o.tpot_overlap_s) == pytest.approx(32 * dram_s, rel=0.02)
    assert float(o.t_copy_s) == pytest.approx(32 * LAYER_W / 450e9)
    assert float(o.tpot_serial_s) >= float(o.tpot_overlap_s)
    gw, _, gkv, hkv = placement_bytes(m, Deployment(), 0, False, b, ctx, "stream", kv_host=True)
    assert gkv == 0.0
    assert hkv == pytest.approx(32 * kv_layer, rel=0.01)
    assert gw == pytest.approx(525_336_576 * 2 + 2 * LAYER_W, rel=0.01)  # head + double buffer


def test_kv_host_needs_streaming(cat):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("rtx-4090"), cat.accelerator("9950x")
    with pytest.raises(Exception, match="--mode stream"):
        offload(m, gpu, host, Deployment(), 0, 1, 16, kv_host=True)


def test_prefill_streams_each_layer_once_per_block(cat):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("rtx-4090"), cat.accelerator("9950x")
    # ideal, all layers streamed, a block of 2 batches of 4 prompts of 512 tokens: per layer the
    # GPU computes the block (2 x the prefill's per-layer time), the copy takes 436.2 MB / 32 GB/s
    p = prefill(m, gpu, Deployment(), 4, 512, eff=gpu.efficiency)
    body = sum(float(r.t_ideal_s) for r in p.ops if r.op.name not in ("embed", "lm_head")) / 32
    fixed = 2 * sum(float(r.t_ideal_s) for r in p.ops if r.op.name in ("embed", "lm_head"))
    copy = LAYER_W / 32e9
    serial, overlap = offload_prefill(m, gpu, host, Deployment(), 0, 4, 512, block=2, ideal=True)
    assert serial == pytest.approx(fixed + 32 * (2 * body + copy), rel=1e-6)
    assert overlap == pytest.approx(fixed + 32 * max(2 * body, copy), rel=1e-6)


def test_generation_throughput_by_hand():
    # 48 x 3 sequences, 32 tokens each: 4,608 tokens in 100 s of prefill + 31 steps of 3 x 1 s
    assert generation_throughput(100.0, 1.0, 48, 3, 32) == pytest.approx(4608 / 193)


def test_flexgen_cpu_attention_copies_the_cache_before_reading_it(cat):
    from roofline.levers.offload import cpu_attention_traffic

    # fp16 cache: permute+reshape copy (2 read + 2 write), .float() (2 read + 4 write), bmm reads
    # the fp32 copy (4): 14 B per 2-B value = 7x; an fp32 cache: (4+4) + (4+4) + 4 = 20 B = 5x
    assert cpu_attention_traffic(2.0) == pytest.approx(7.0)
    assert cpu_attention_traffic(4.0) == pytest.approx(5.0)
    # expected figures only: Grace's 512 GB/s at its 0.6 share reads 7 x 268.4 MB per layer in
    # 6.1 ms, which bounds every layer of an all-streamed Llama-3.1-8B (batch 64, 1,024 tokens)
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("gh200"), cat.accelerator("grace")
    b, ctx = 64, 1024
    kv_layer = b * ctx * KV_TOKEN_LAYER
    o = offload(m, gpu, host, Deployment(), 0, b, ctx, mode="stream", kv_host=True)
    dram_eff = 512e9 * host.efficiency.memory
    assert float(o.tpot_overlap_s) >= 32 * (LAYER_W + 7 * kv_layer) / dram_eff
    ideal = offload(m, gpu, host, Deployment(), 0, b, ctx, mode="stream", kv_host=True, ideal=True)
    assert float(ideal.tpot_overlap_s) == pytest.approx(32 * (LAYER_W + kv_layer) / 512e9, rel=0.02)


def test_cpu_attention_traffic_properties():
    from hypothesis import given
    from hypothesis import strategies as st

    from roofline.levers.offload import cpu_attention_traffic

    @given(st.floats(0.25, 8.0), st.floats(0.25, 8.0))
    def check(a: float, b: float) -> None:
        # every copy reads the cache at least three times; narrower caches pay more per byte
        assert cpu_attention_traffic(a) > 3.0
        if a < b * (1 - 1e-6):  # (3b + 8)/b = 3 + 8/b: a float rounds equal for a ≈ b
            assert cpu_attention_traffic(a) > cpu_attention_traffic(b)

    check()

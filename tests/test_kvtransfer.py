"""The KV transfer between pools of different layouts: bytes per port on each side, by hand."""

import numpy as np
import pytest

from roofline.domain.layout import Layout
from roofline.serving.disagg import disaggregate
from roofline.serving.kvtransfer import KvLink, kv_shares, kv_transfer_s
from roofline.step.ops import Deployment

# Llama-3.1-70B, bf16 KV: 80 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 327,680 B/token;
# one KV head per layer on a GPU: 80 × 2 × 128 × 2 = 40,960 B/token
# DeepSeek-R1 (MLA), bf16: 61 layers × (512 latent + 64 RoPE) × 2 B = 70,272 B/token, the whole
# latent on every attention-TP rank (35,136 B/token at fp8)


def dep(tp: int, adp: int = 1, pp: int = 1) -> Deployment:
    return Deployment(layout=Layout(tp=tp, pp=pp, ep=tp if adp > 1 else 1, attention_dp=adp))


def test_llama_70b_tp2_to_tp8_and_back(cat):
    m = cat.model("llama-3.1-70b")
    # TP2 -> TP8: each decode GPU receives one head (40,960 B/token); the 8 shards leave the 2
    # prefill GPUs, 4 each = 163,840 B/token: the senders bind
    s = kv_shares(m, dep(2), dep(8), 16)
    assert (s.received_per_gpu, s.sent_per_gpu) == (40_960, 163_840)
    assert s.port_bytes == 163_840
    # TP8 -> TP2: each decode GPU receives 4 heads (163,840), each prefill GPU sends its one
    s = kv_shares(m, dep(8), dep(2), 16)
    assert (s.received_per_gpu, s.sent_per_gpu) == (163_840, 40_960)
    assert s.port_bytes == 163_840
    # the same TP: each GPU sends its own shard, as before (TP4: 2 heads, 81,920 B/token)
    assert kv_shares(m, dep(4), dep(4), 16).port_bytes == 81_920


def test_r1_mla_into_attention_dp(cat):
    m = cat.model("deepseek-r1")
    # prefill TP8 (attention-TP 8) -> decode TP8·EP8·ADP8 (attention-TP 1): the one decode GPU of
    # the prompt's attention-DP group receives the whole latent, 70,272 B/token; the 8 prefill
    # GPUs share the sending, 8,784 each
    s = kv_shares(m, dep(8), dep(8, adp=8), 16)
    assert (s.received_per_gpu, s.sent_per_gpu) == (70_272, 8_784)
    # ADP8 prefill (one GPU holds the prompt) -> TP8 decode: all 8 decode GPUs need the latent,
    # which the one prefill GPU sends 8 times (vLLM NixlConnector: each of tp_ratio decode
    # workers reads the whole MLA block)
    s = kv_shares(m, dep(8, adp=8), dep(8), 8)
    assert (s.received_per_gpu, s.sent_per_gpu) == (35_136, 8 * 35_136)


def test_transfer_time_follows_the_busiest_port(cat):
    m, ndr = cat.model("llama-3.1-70b"), cat.tier("infiniband-ndr")
    # 8,000 tokens, TP2 -> TP8: 163,840 × 8,000 = 1.311 GB through each prefill GPU's 50 GB/s
    # NDR port at RDMA's 87% = 30.1 ms, + NDR's 2 µs
    t = kv_transfer_s(m, dep(2), 16, KvLink(ndr), np.array([8000]), 0.0, dep(8))[0]
    assert t == pytest.approx(163_840 * 8000 / (0.87 * 50e9) + 2e-6)
    # disaggregate takes the decode layout for the transfer too
    hw = cat.accelerator("h100")
    r = disaggregate(m, hw, hw, dep(2), dep(8), ndr, 8, 8000, 100)
    assert r.kv_transfer_s == pytest.approx(t)


def test_pp_stages_split_the_bytes(cat):
    m = cat.model("llama-3.1-70b")
    # decode TP4 PP2: a receiving GPU holds 40 of 80 layers × 2 heads = 40,960 B/token; the TP4
    # PP1 prefill GPUs send all 80 layers of 2 heads, 81,920 B/token
    s = kv_shares(m, dep(4), dep(4, pp=2), 16)
    assert (s.received_per_gpu, s.sent_per_gpu) == (40_960, 81_920)
    assert (s.senders, s.receivers) == (4, 8)


def test_cli_disagg_reports_each_sides_bytes(run):
    doc = run("disagg", "llama-3.1-70b", "--prefill", "h100", "--decode", "h200",
              "--prefill-tp", "2", "--decode-tp", "8", "--weights", "fp8", "--batch", "64",
              "--prompt", "8k", "--output", "1k", "--format", "json").json()  # fmt: skip
    # bf16 KV, 8,000 tokens: 327,680 × 8,000 = 2.62 GB a request; the 2 prefill GPUs send half
    # each, each of the 8 decode GPUs receives its one KV head of eight (an eighth)
    assert doc["kv_bytes_per_request"] == 327_680 * 8000
    assert (doc["kv_sending_gpus"], doc["kv_receiving_gpus"]) == (2, 8)
    assert doc["kv_bytes_per_sending_gpu"] == 327_680 * 8000 / 2
    assert doc["kv_bytes_per_receiving_gpu"] == 327_680 * 8000 / 8
    # 1.31 GB through one 50 GB/s NDR port at 87% = 30.1 ms, + 2 µs
    assert doc["kv_transfer_s"] == pytest.approx(327_680 * 8000 / 2 / (0.87 * 50e9) + 2e-6)

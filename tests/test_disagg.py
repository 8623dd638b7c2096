"""Disaggregation in closed form: identities that follow from the cycle accounting."""

import pytest

from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.serving.disagg import disaggregate
from roofline.step.ops import Deployment

DEP = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["fp8"], layout=Layout(tp=4))


def test_same_hardware_same_work_less_interference(cat):
    m, hw, link = cat.model("llama-3.1-70b"), cat.accelerator("h200"), cat.tier("infiniband-ndr")
    r = disaggregate(m, hw, hw, DEP, DEP, link, 64, 8000, 1000)
    # the same total work on the same chips: tokens/s per GPU match; (the KV transfer overlaps)
    assert r.disaggregated.output_tokens_per_s_per_gpu == pytest.approx(
        r.colocated.output_tokens_per_s_per_gpu
    )
    # but decode no longer waits for prefills: TPOT = one decode step, lower than colocated
    assert r.disaggregated.tpot_s == pytest.approx(r.decode_step_s)
    assert r.colocated.tpot_s == pytest.approx(r.decode_step_s + 64 * r.prefill_s / 999)
    # prefill replicas per decode replica keep the pools balanced: B·t_p / ((O − 1)·t_d)
    assert r.prefill_replicas_per_decode_replica == pytest.approx(
        64 * r.prefill_s / (999 * r.decode_step_s)
    )


def test_kv_transfer_by_hand(cat):
    m, hw, link = cat.model("llama-3.1-70b"), cat.accelerator("h100"), cat.tier("infiniband-ndr")
    r = disaggregate(m, hw, hw, DEP, DEP, link, 8, 8000, 100)
    # fp8 KV: 80 layers × 2 × 8 heads × 128 × 1 B = 163,840 B/token; TP4: each GPU sends a
    # quarter over its own 50 GB/s NDR port at RDMA's 87% (Mooncake's 87 GB/s of 100) + 2 µs
    assert r.kv_bytes_per_request == 163_840 * 8000
    assert r.kv_transfer_s == pytest.approx(163_840 * 8000 / 4 / (0.87 * 50e9) + 2e-6)


def test_cli_disagg(run):
    doc = run(
        "disagg",
        "llama-3.1-70b",
        "--prefill",
        "b200",
        "--decode",
        "h200",
        "--prefill-tp",
        "4",
        "--decode-tp",
        "4",
        "--weights",
        "fp8",
        "--format",
        "json",
    ).json()
    for key in ("colocated", "disaggregated"):
        assert {"ttft_s", "tpot_s", "output_tokens_per_s_per_gpu"} <= set(doc[key])
    assert doc["disaggregated"]["tpot_s"] < doc["colocated"]["tpot_s"]


def test_disaggregated_ttft_is_the_colocated_path_plus_the_kv_transfer(run):
    """At 0.05 req/s nobody waits: the disaggregated request takes the colocated one's whole path
    (its prefill and the API server's 19 ms) plus the KV's trip. It had left 11.25 ms of the
    API path out of TTFT (so disaggregated came out faster) and counted the other 7.75 ms as
    queue. 8B bf16 KV: 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B a token; 2,000 tokens
    over one 50 GB/s NDR port at 87% + 2 us = 6.03 ms."""
    doc = run("disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--prompt", "2k",
              "--output", "200", "--rate", "0.05", "--slo-ttft", "1s", "--slo-tpot", "40ms",
              "--requests", "200", "--pools", "1:1", "-f", "json").json()  # fmt: skip
    c, d = (doc["traffic"][k]["metrics"] for k in ("colocated", "disaggregated"))
    t_x = 131_072 * 2000 / (0.87 * 50e9) + 2e-6
    assert d["ttft_s"]["p50"] - c["ttft_s"]["p50"] == pytest.approx(t_x, rel=0.01)
    assert c["queue_s"]["p50"] == d["queue_s"]["p50"] == 0.0


def test_the_launch_split_keeps_the_decode_servers_fed():
    """70B 8k/1k on H100 TP4 prefill, H200 TP4 decode at batch 64 needs 1.2575 prefill servers
    a decode server: 5:4 (1.25) left the decode pool waiting for prompts; the nearest split
    with at most 8 of each at or above the ratio is 4:3 (1.333; 8:6 ties, the smaller wins)."""
    from types import SimpleNamespace

    from roofline.cli.disagg_json import pool_split

    assert pool_split(SimpleNamespace(prefill_replicas_per_decode_replica=1.2575), None) == (4, 3)
    assert pool_split(SimpleNamespace(prefill_replicas_per_decode_replica=0.5), None) == (1, 2)

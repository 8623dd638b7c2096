"""Weights split between the GPU and host RAM: llama.cpp's -ngl placement, the serial and
overlapped bounds, streaming with FlexGen's block, by hand; the CLI's fit checks."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.levers.offload import (
    layer_weight_bytes,
    offload,
    placement,
    shared_bandwidth,
)
from roofline.step.ops import Deployment

# Llama-3.1-8B: per layer 41,943,040 attention + 176,160,768 MLP = 218,103,808 linear params
# (+ 2·4096 norm weights); embedding and head 128,256·4096 = 525,336,576 each; 32 layers.
LAYER_PARAMS = 218_103_808
HEAD_PARAMS = 525_336_576


def test_placement_follows_llama_cpp():
    class M:
        num_hidden_layers = 80

    assert placement(M, 99) == (80, True)  # -ngl 99: every layer and the output head
    assert placement(M, 81) == (80, True)
    assert placement(M, 80) == (80, False)  # all repeating layers, the head stays on the CPU
    assert placement(M, 40) == (40, False)


def test_layer_bytes_by_hand(cat):
    m = cat.model("llama-3.1-8b")
    # bf16: 218,103,808·2 B of linear weights + 8,192 norm weights·2 B (the final norm's 4,096 / 32)
    assert layer_weight_bytes(m, Deployment()) == pytest.approx((LAYER_PARAMS + 8192 + 128) * 2)


def test_cpu_mode_by_hand(cat):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("rtx-4090"), cat.accelerator("9950x")
    # -ngl 0, ideal: every byte is read by the CPU from 89.6 GB/s DDR5: 32 layers + head
    # = (32·218.1M + 525.3M)·2 B = 15.01 GB -> 0.1676 s (the embedding is a gather of 8 kB)
    o = offload(m, gpu, host, Deployment(), 0, 1, 1, ideal=True)
    assert float(o.t_host_s) == pytest.approx(
        (32 * LAYER_PARAMS + HEAD_PARAMS) * 2 / 89.6e9, rel=0.01
    )
    assert float(o.t_gpu_s) == 0.0
    # the serial bound is the sum of the tiers (plus activations crossing the link)
    half = offload(m, gpu, host, Deployment(), 16, 1, 1, ideal=True)
    assert float(half.tpot_serial_s) == pytest.approx(
        float(half.t_gpu_s + half.t_host_s + half.t_transfer_s)
    )
    assert float(half.tpot_overlap_s) == pytest.approx(
        max(float(half.t_gpu_s), float(half.t_host_s)) + float(half.t_transfer_s)
    )
    # 16 GPU layers at 1.008 TB/s: 16·218.1M·2 B = 6.98 GB -> 6.92 ms
    assert float(half.t_gpu_s) == pytest.approx(16 * LAYER_PARAMS * 2 / 1.008e12, rel=0.01)


def test_stream_mode_by_hand(cat):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("rtx-4090"), cat.accelerator("9950x")
    w = (LAYER_PARAMS + 8192 + 128) * 2  # 436.2 MB per layer
    # one copy of 436.2 MB over PCIe Gen4 x16 (32 GB/s): η = 0.83·s/(s + 32e9·10 µs) = 0.82939
    eta = 0.83 * w / (w + 320_000)
    o = offload(m, gpu, host, Deployment(), 0, 1, 1, mode="stream")
    assert o.host_bandwidth_bytes_per_s == pytest.approx(32e9 * eta)
    assert float(o.t_copy_s) == pytest.approx(32 * w / (32e9 * eta))  # 0.526 s
    # FlexGen's block of 4 batches per copy: a batch pays a quarter
    blk = offload(m, gpu, host, Deployment(), 0, 1, 1, mode="stream", block=4)
    assert float(blk.t_copy_s) == pytest.approx(float(o.t_copy_s) / 4)
    # serial: sum; overlapped: per streamed layer the slower of compute and copy
    assert float(o.tpot_serial_s) == pytest.approx(float(o.t_gpu_s + o.t_host_s + o.t_copy_s))
    per_layer = float(o.t_host_s) / 32
    copy = float(o.t_copy_s) / 32
    assert float(o.tpot_overlap_s) == pytest.approx(float(o.t_gpu_s) + 32 * max(per_layer, copy))


def test_shared_bandwidth_by_hand():
    # eight GPUs on one 307.2 GB/s DDR5 socket each get 38.4 GB/s, not the 64 GB/s of their link
    assert float(shared_bandwidth(307.2e9, 64e9, 8)) == pytest.approx(38.4e9)
    assert float(shared_bandwidth(307.2e9, 64e9, 1, 0.83)) == pytest.approx(53.12e9)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 31))
def test_more_gpu_layers_never_slower(cat, n):
    m, gpu, host = cat.model("llama-3.1-8b"), cat.accelerator("rtx-4090"), cat.accelerator("9950x")
    a = offload(m, gpu, host, Deployment(), n, 1, 2048)
    b = offload(m, gpu, host, Deployment(), n + 1, 1, 2048)
    assert float(b.tpot_serial_s) <= float(a.tpot_serial_s) + 1e-12
    assert float(a.tpot_overlap_s) <= float(a.tpot_serial_s) + 1e-12


def test_cli_70b_on_a_24gb_card_runs(run):
    doc = run("offload", "llama-3.1-70b", "rtx-4090", "--format", "json").json()
    i, r = doc["inputs"], doc["result"]
    assert i["host"] == "amd-ryzen-9-9950x" and 0 < i["gpu_layers"] < 80
    assert r["gpu_memory_needed_bytes"] <= i["gpu_capacity_bytes"]
    assert 0 < r["decode_tokens_per_s_serial"] <= r["decode_tokens_per_s_overlap"]


def test_cli_offload_errors(run):
    for args in (
        ("llama-3.1-70b", "rtx-4090", "--gpu-layers", "81"),  # 70B bf16 does not fit 24 GB
        ("llama-3.1-405b", "rtx-4090"),  # 810 GB of bf16 weights exceed the 192 GB host
        ("llama-3.1-8b", "rtx-4090", "--mode", "disk"),
        ("llama-3.1-8b", "rtx-4090", "--gpu-layers", "3", "--gpu-fraction", "0.5"),
    ):
        r = run("offload", *args)
        assert r.code == 2 and r.stdout == "" and r.stderr.startswith("error:"), args
    sweep = run("offload", "llama-3.1-8b", "rtx-4090", "--sweep", "--format", "json").json()
    assert sweep["sweep"][-1]["gpu_layers"] == 33 and sweep["inputs"]["gpu_layers"] == 33


def test_offload_case_through_validate(run, tmp_path):
    """An offload case (schema of validation/levers_cases.yaml): the ideal (overlapped, η = 1)
    is never slower than the expected (serial, calibrated) rate."""
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n- {id: ngl20, model: llama-3.1-70b, hardware: rtx-4090, gpus: 1, tp: 1, pp: 1,\n"
        "   ep: 1, weights: q4_k_m, kv: fp16, batch: 1, prompt: 0, output: 128,\n"
        "   metric: decode_tokens_per_s_per_user, measured: 2.0, source: synthetic,\n"
        "   offload: {host: ryzen-9950x, gpu_layers: 20}}\n"
    )
    doc = run("validate", str(path), "--format", "json").json()
    (case,) = doc["cases"]
    assert case["regime"] == "decode" and case["ideal"] >= case["expected"] > 0
    path.write_text(path.read_text().replace("gpu_layers: 20", "gpu_layerz: 20"))
    r = run("validate", str(path))
    assert r.code == 2 and "gpu_layerz" in r.stderr

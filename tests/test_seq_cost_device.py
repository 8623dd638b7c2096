"""vLLM V1's per-sequence cost on AMD Instinct is device work, paid up to the batch where the step
turns compute bound (issue 34; roofline/timing/host.py compute_turn_rows, seq_cost_rows;
hardware/engines.yaml vllm cpu_per_seq_device)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode
from roofline.timing.host import EngineProfile, compute_turn_rows, per_seq_host_s, seq_cost_rows

CAT = load_catalog([])
MI300X = CAT.accelerator("amd-mi300x")
US = 1e-6


def test_turn_rows_by_hand():
    # a step of 4 sequences, 8 GFLOP at 1 ps a FLOP (8 ms), weights streamed in 2 ms: it turns
    # compute bound at 4 x 2 / 8 = 1 sequence; no FLOPs: it never turns
    got = compute_turn_rows(np.array([4.0, 4.0]), np.array([8e9, 0.0]), 1e-12, 2e-3)
    assert got[0] == pytest.approx(1.0)
    assert got[1] == np.inf


def test_mi300x_fp8_turns_near_92_rows():
    """CDNA 3's FP8 curve (hardware/kernels-amd.yaml: plateau 0.271 of 2,614.9 TFLOPS, memory
    share 0.731 of 5.3 TB/s): a 1-byte weight does 2 FLOPs a row, so the turn is at
    0.271 x 2614.9e12 / (2 x 0.731 x 5.3e12) = 91.5 rows, whatever the weights' size."""
    curve = MI300X.efficiency.kernels.gemm_curve("fp8")
    assert curve.eta_max == pytest.approx(0.271)
    assert curve.eta_memory == pytest.approx(0.731)
    w = 8.8e9  # bytes of FP8 weights per GPU (Llama 3.1 70B at TP8)
    t_ref = 1.0 / (0.271 * MI300X.expected_peak("fp8"))
    t_w = w / (0.731 * MI300X.memory_bandwidth_bytes_per_s)
    for b in (1.0, 64.0, 3200.0):
        assert float(compute_turn_rows(b, 2 * w * b, t_ref, t_w)) == pytest.approx(91.5, rel=0.01)


def test_device_cost_stops_at_the_turn_host_cost_does_not():
    dev = EngineProfile("x", 0.0, 0.0, 0.0, 1.0, cpu_per_seq_s=(("amd", 65 * US),))
    dev = replace(dev, per_seq_device=("amd",))
    host = replace(dev, per_seq_device=())
    # 65 µs x min(3200, 92) = 5.98 ms on the device; the host's grows to 65 µs x 3200 = 208 ms
    assert per_seq_host_s(dev, 3200, "amd", 92.0) == pytest.approx(5.98e-3)
    assert per_seq_host_s(host, 3200, "amd", 92.0) == pytest.approx(0.208)
    # below the turn both pay every sequence: 65 µs x 64 = 4.16 ms
    assert per_seq_host_s(dev, 64, "amd", 92.0) == pytest.approx(4.16e-3)
    assert per_seq_host_s(dev, 3200, "amd") == pytest.approx(0.208)  # no turn given: linear


@settings(max_examples=20, deadline=None)
@given(b=st.floats(0.0, 1e5), turn=st.floats(0.0, 1e5))
def test_cost_rows_never_above_the_batch_or_the_turn(b, turn):
    rows = seq_cost_rows(b, turn)
    assert rows <= b and rows <= turn and rows == min(b, turn)


def test_vllm_v1_on_mi300x_pays_the_capped_cost_and_v0_the_linear():
    """The shipped profiles: vLLM V1 names amd-instinct in cpu_per_seq_device, V0 (whose 70 µs is
    its engine loop's output processing, vLLM issue #6913) does not."""
    assert "amd-instinct" in CAT.engines["vllm"].per_seq_device
    assert CAT.engines["vllm-v0"].per_seq_device == ()
    m = CAT.model("llama-3.1-70b")
    dep = Deployment(weights=weight_format("fp8"), kv=kv_format("fp8"), layout=_tp8())
    engines = dict(MI300X.efficiency.engines)
    engines["vllm"] = replace(engines["vllm"], cpu_per_seq_s=())
    bare = replace(MI300X, efficiency=replace(MI300X.efficiency, engines=engines))
    for b, paid in ((32, 32), (3200, 91.5)):
        added = float(decode(m, MI300X, dep, b, 1152, engine="vllm").t_expected_s) - float(
            decode(m, bare, dep, b, 1152, engine="vllm").t_expected_s
        )
        # 60 µs a sequence on min(B, ~91.5) sequences (attention FLOPs move the turn a little)
        assert added == pytest.approx(60 * US * paid, rel=0.03)


def _tp8():
    from roofline.domain.layout import Layout

    return Layout(tp=8)

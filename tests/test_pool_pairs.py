"""Which prefill/decode pairs an engine can run (launch.pools_refusal): vLLM's NixlConnector
computes tp_ratio = divide(decode TP, prefill TP), and vllm/distributed/utils.py's divide asserts
the division whole (hardware/engine_flags.yaml cites both), so under vLLM `size --disagg` leaves
out a decode pool whose attention TP is not a multiple of the prefill pool's; SGLang and
TensorRT-LLM keep every pair."""

import pytest

import roofline.serving.sizepools as sizepools
from roofline.catalog.engine_flags import engine_flags
from roofline.engines.engine import engine
from roofline.engines.launch import pools_refusal
from roofline.serving.kvtransfer import KvLink
from roofline.serving.metrics import Slo
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment


@pytest.mark.parametrize(
    ("engine_id", "prefill_tp", "decode_tp", "runs"),
    [
        ("vllm", 2, 1, False),  # 1 / 2 is not whole: "Decode TP cannot be smaller"
        ("vllm", 2, 3, False),  # 3 / 2 is not whole
        ("vllm", 2, 4, True),  # tp_ratio 2
        ("vllm", 1, 1, True),
        ("sglang", 2, 1, True),
        ("trtllm", 2, 1, True),
    ],
)
def test_only_vllm_needs_the_decode_tp_a_multiple_of_the_prefill(
    engine_id, prefill_tp, decode_tp, runs
):
    assert (pools_refusal(engine_flags(), engine_id, prefill_tp, decode_tp) is None) is runs


def test_size_disagg_under_vllm_leaves_out_the_pair_vllm_cannot_run(cat, monkeypatch):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    base = Deployment()
    pre, dec = base.with_layout(tp=2), base  # hand-built: prefill TP2, decode TP1
    monkeypatch.setattr(sizepools, "pool_layouts", lambda *a, **k: ([pre], [dec]))
    w = make_workload(1000, 100, rate=2.0, requests=60, seed=0)
    slo, link = Slo(2.0, 0.1, 99.0), KvLink(cat.tier("infiniband-ndr"))
    rows = {}
    for name in ("vllm", "sglang"):
        eng = engine(name, hw)
        found, pending = sizepools._disaggregated(
            m, [hw], base, eng, w, slo, {}, link, 0, None, None
        )
        with pending:
            rows[name] = found + pending.result()
    (v,) = rows["vllm"]
    assert not v.meets_slo and v.gpus == 0 and "NixlConnector" in (v.note or "")
    assert "prefill TP2 with decode TP1" in (v.note or "")
    (s,) = rows["sglang"]  # SGLang pairs them: simulated, its prefill pool TP2
    assert s.prefill_pool is not None and s.prefill_pool["tp"] == 2 and s.gpus > 0

"""Disaggregated serving against published measurements, attention-DP prefill interference and
the KV link model: hand-derived checks."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.case import summarize
from roofline.cases.casefiles import load_cases
from roofline.cases.disagg import check_disagg, step_s
from roofline.cases.evaluate import evaluate
from roofline.domain.errors import CatalogError, InputError
from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.serving.attention_dp import colocated_prefill_s
from roofline.serving.disagg import disaggregate
from roofline.serving.kvtransfer import KvLink, default_link_efficiency
from roofline.step.ops import Deployment, Op
from roofline.step.phases import OpResult, PhaseResult

ROOT = Path(__file__).resolve().parent.parent


def _phase(times_ms: dict[tuple[str, str], float], overhead_ms: float) -> PhaseResult:
    """A phase whose ops take the given times (ms), plus a host overhead."""
    z = np.float64(0.0)
    ops = tuple(
        OpResult(Op(name, kind, 1, z, z, z, z), z, 1.0, np.array("compute"), t / 1e3, t / 1e3)
        for (name, kind), t in times_ms.items()
    )
    total = (sum(times_ms.values()) + overhead_ms) / 1e3
    return PhaseResult("prefill", "bf16", ops, z, z, z, z, z, 1.0, total, total)


PHASE = _phase(
    {("attn", "attention"): 4.0, ("moe.experts", "matmul"): 10.0, ("ep.alltoall", "alltoall"): 3.0},
    1.0,
)


def test_attention_dp_prefill_is_paid_rank_by_rank():
    # TRT-LLM ADP-balance blog, baseline: the 8 ranks' contexts run one after another, each
    # costing its attention (4 ms) while the others wait; experts + all-to-all (13 ms) and the
    # host overhead (1 ms) are paid once: 8 × 4 + 13 + 1 = 46 ms
    dep = Deployment(layout=Layout(tp=8, ep=8, attention_dp=8))
    assert colocated_prefill_s(PHASE, dep) == pytest.approx(46e-3)
    # without attention-DP nothing changes: 18 ms; the ideal never carries the term
    assert colocated_prefill_s(PHASE, Deployment(layout=Layout(tp=8, ep=8))) == pytest.approx(18e-3)
    assert colocated_prefill_s(PHASE, dep, ideal=True) == pytest.approx(46e-3)


def test_two_batch_overlap_hides_the_smaller_of_compute_and_all_to_all():
    # compute 4 + 10 = 14 ms overlaps the 3 ms all-to-all: 14 + 1 ms overhead = 15 ms (sum: 18)
    assert step_s(PHASE, False, two_batch_overlap=True) == pytest.approx(15e-3)
    assert step_s(PHASE, False) == pytest.approx(18e-3)


def test_link_efficiency_by_tier_kind(cat):
    # RDMA: Mooncake's 87 GB/s of 100; PCIe protocol 0.83 (roofline.levers.offload)
    assert default_link_efficiency(cat.tier("infiniband-ndr")) == pytest.approx(0.87)
    assert default_link_efficiency(cat.tier("pcie5-x16")) == pytest.approx(0.83)
    assert KvLink(cat.tier("roce-400g"), 0.5).eta == 0.5
    with pytest.raises(InputError):
        KvLink(cat.tier("infiniband-ndr"), 1.5)


def test_rate_matched_throughput_is_trtllm_formula(cat):
    # TRT-LLM tech blog 5: output tokens/s / (ctx GPUs × gen req rate / ctx req rate + gen GPUs)
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["fp8"], layout=Layout(tp=4))
    b, s, o, pb = 64, 4000, 500, 4
    r = disaggregate(m, hw, hw, dep, dep, cat.tier("infiniband-ndr"), b, s, o, prefill_batch=pb)
    gen_rate = b / ((o - 1) * r.decode_step_s)  # requests/s one decode replica finishes
    ctx_rate = pb / r.prefill_s  # requests/s one prefill replica prefills
    out = b * o / ((o - 1) * r.decode_step_s)
    want = out / (4 * gen_rate / ctx_rate + 4)
    assert r.disaggregated.output_tokens_per_s_per_gpu == pytest.approx(want)
    assert r.prefill_tokens_per_s_per_gpu == pytest.approx(pb * s / r.prefill_s / 4)


def test_attention_dp_makes_colocation_costlier(cat):
    # the same DeepSeek-R1 decode pool: with attention-DP, a colocated prompt stalls all 8
    # ranks for its whole rank-local prefill, so colocated TPOT grows; disaggregated does not
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    base = Deployment(
        weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["bf16"], layout=Layout(tp=8, ep=8)
    )
    adp = base.with_layout(attention_dp=8)
    link = cat.tier("infiniband-ndr")
    r = disaggregate(m, hw, hw, adp, adp, link, 512, 1024, 1024)
    assert r.disaggregated.tpot_s < r.colocated.tpot_s
    ideal = disaggregate(m, hw, hw, adp, adp, link, 512, 1024, 1024, ideal=True)
    assert ideal.colocated.ttft_s < r.colocated.ttft_s


def test_disagg_keys_are_checked(tmp_path):
    with pytest.raises(InputError, match="measures"):
        check_disagg("case 'x'", {"pool": "prefill"}, "tpot_ms")
    text = (ROOT / "validation/disagg_cases.yaml").read_text()
    for bad, message in (
        ("{pool: decode, speed: 1}", "unknown key 'speed'"),
        ("{pool: pair, prefill_tp: '8'}", "key 'prefill_tp' must be an integer"),
    ):
        path = tmp_path / "cases.yaml"
        path.write_text(text.replace("disagg: {pool: prefill}", f"disagg: {bad}", 1))
        with pytest.raises(CatalogError, match=message):
            load_cases(path)


def test_prefill_pool_below_the_flop_bound(cat):
    # input tokens/s per GPU can never beat peak FLOP/s / (2 × active params) (attention only adds)
    c = next(iter(load_cases(ROOT / "validation/disagg_cases.yaml")))
    m, hw = cat.model(c.model), cat.accelerator(c.hardware)
    r = evaluate(c, m, hw, catalog=cat)
    assert r.ideal <= hw.peak("fp8") / (2 * m.params_active)
    assert r.expected < r.ideal


def test_disagg_cases_hold_the_bound(cat):
    rs = [
        evaluate(c, cat.model(c.model), cat.accelerator(c.hardware), catalog=cat)
        for c in load_cases(ROOT / "validation/disagg_cases.yaml")
    ]
    s = summarize(rs)
    assert s["bound_violations"] == 0
    assert {"prefill", "decode"} <= set(s["regimes"])


def test_cli_disagg_takes_per_pool_layouts(run):
    doc = run(
        "disagg",
        "deepseek-r1",
        "--prefill",
        "h200",
        "--decode",
        "h200",
        "--prefill-tp",
        "8",
        "--prefill-ep",
        "8",
        "--prefill-attention-dp",
        "8",
        "--prefill-batch",
        "8",
        "--decode-tp",
        "8",
        "--decode-ep",
        "8",
        "--decode-attention-dp",
        "8",
        "--weights",
        "fp8",
        "--batch",
        "256",
        "--format",
        "json",
    ).json()
    assert doc["inputs"]["decode_attention_dp"] == 8
    assert doc["inputs"]["link_efficiency"] == pytest.approx(0.87)
    assert doc["disaggregated"]["tpot_s"] < doc["colocated"]["tpot_s"]


@settings(max_examples=40, deadline=None)
@given(
    dp=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
    attn_ms=st.floats(0.0, 100.0),
    experts_ms=st.floats(0.0, 100.0),
    a2a_ms=st.floats(0.0, 100.0),
)
def test_attention_dp_prefill_properties(dp, attn_ms, experts_ms, a2a_ms):
    # one rank's prompts at a time: never faster than the batched prefill, never slower than
    # every op paid dp times, and the rank-local part grows linearly in dp
    p = _phase(
        {
            ("attn", "attention"): attn_ms,
            ("moe.experts", "matmul"): experts_ms,
            ("ep.alltoall", "alltoall"): a2a_ms,
        },
        0.0,
    )
    dep = Deployment(layout=Layout(tp=64, ep=64, attention_dp=dp))
    t = float(p.t_expected_s)
    got = colocated_prefill_s(p, dep)
    assert t - 1e-12 <= got <= dp * t + 1e-12
    assert got == pytest.approx(t + (dp - 1) * attn_ms / 1e3, abs=1e-12)
    # two-batch overlap: between the larger part and the sum
    tbo = step_s(p, False, two_batch_overlap=True)
    assert max(attn_ms + experts_ms, a2a_ms) / 1e3 == pytest.approx(tbo, abs=1e-12)

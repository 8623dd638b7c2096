"""Attention-DP balance (serialised vs balanced prompt scheduling) and TensorRT-LLM's two-stream
shared expert: hand-derived step times and physics properties."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.serving.attention_dp import colocated_prefill_s, default_balance
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment, Op
from roofline.step.optime import OpResult
from roofline.step.overlap import OVERLAP_OP, overlaps, shared_expert_overlap
from roofline.step.phases import PhaseResult, decode


def _tables(balanced_ranks: int) -> StepModel:
    """A step model with linear tables, every figure chosen by hand: lin(x) = 1 ms + 2 µs·x,
    its rank-local part local(x) = 0.5 ms + 1 µs·x, a prompt's attention A(L) = 1 ns·L²."""
    s = object.__new__(StepModel)
    grid = np.arange(0.0, 4097.0)
    s.grid = s.token_grid = grid
    s.lin_s = 1e-3 + 2e-6 * grid
    s.local_s = 0.5e-3 + 1e-6 * grid
    s.attn_cum_s = 1e-9 * grid**2
    s.balanced_ranks = balanced_ranks
    s.base_s = np.full(64, 5e-3)
    s.groups = [(np.zeros(64), None)]
    s._tables()
    return s


def test_balanced_prompts_share_the_rank_local_time_by_hand():
    # four prompts of 100 tokens in one non-chunked prefill step on 4 attention-DP ranks:
    # serialised (one rank after another): lin(400) + ΣA = 1.8 ms + 4 × 0.01 ms = 1.84 ms;
    # balanced (one prompt per rank, the same step): the rank-local part local(400) = 0.9 ms and
    # the attention 0.04 ms are paid once per rank, a quarter each:
    # 1.8 − (1 − 1/4) × 0.9 + 0.04 / 4 = 1.8 − 0.675 + 0.01 = 1.135 ms
    lens = [100, 100, 100, 100]
    assert _tables(1).prefill_step_s(lens) == pytest.approx(1.84e-3)
    assert _tables(4).prefill_step_s(lens) == pytest.approx(1.135e-3)
    # one prompt alone has nothing to share: 1 + 0.2 + 0.01 = 1.21 ms either way
    assert _tables(4).prefill_step_s([100]) == pytest.approx(_tables(1).prefill_step_s([100]))
    assert _tables(1).prefill_step_s([100]) == pytest.approx(1.21e-3)


def test_balanced_chunked_step_by_hand():
    # one step (k = 1) with 10 decodes (base 5 ms, attention slope 0) and two prompts of 50
    # tokens fitting its 100-token room: prefill part lin(110) − lin(10) = 0.2 ms, attention
    # 2 × 2.5 µs = 5 µs; serialised 5.205 ms; balanced on 2 ranks takes half of local(110) −
    # local(10) = 0.1 ms and of the attention: 5.205 − 0.5 × (0.1 + 0.005) = 5.1525 ms
    ctx = np.full(10, 11.0)
    pf = (100, [50, 50], [0, 0])
    t_ser = _tables(1).span_s(10, ctx, float(ctx.sum()), 1, pf)[0]
    t_bal = _tables(2).span_s(10, ctx, float(ctx.sum()), 1, pf)[0]
    assert t_ser == pytest.approx(5.205e-3)
    assert t_bal == pytest.approx(5.1525e-3)


def _phase(times_ms: dict[tuple[str, str], float]) -> PhaseResult:
    z = np.float64(0.0)
    ops = tuple(
        OpResult(Op(name, kind, 1, z, z, z, z), z, 1.0, np.array("compute"), t / 1e3, t / 1e3)
        for (name, kind), t in times_ms.items()
    )
    total = sum(times_ms.values()) / 1e3
    return PhaseResult("prefill", "bf16", ops, z, z, z, z, z, 1.0, total, total)


def test_static_cycle_balanced_pays_the_rank_local_part_once():
    # attention 4 ms rank-local, experts 10 + all-to-all 3 shared: serialised on 8 ranks
    # 17 + 7 × 4 = 45 ms (TRT-LLM tech blog 10 baseline); balanced: the batched 17 ms
    phase = _phase({("attn", "attention"): 4.0, ("moe.experts", "matmul"): 10.0,
                    ("ep.alltoall", "alltoall"): 3.0})  # fmt: skip
    ser = Deployment(layout=Layout(tp=8, ep=8, attention_dp=8))
    bal = Deployment(layout=Layout(tp=8, ep=8, attention_dp=8, attention_dp_balance="balanced"))
    assert colocated_prefill_s(phase, ser) == pytest.approx(45e-3)
    assert colocated_prefill_s(phase, bal) == pytest.approx(17e-3)


def test_engine_defaults_and_bad_value():
    # all three engines schedule the ranks' prompts at their own steps unless told otherwise
    assert {default_balance(e) for e in ("trtllm", "sglang", "vllm", "vllm-v0", None)} == {
        "serialised"
    }
    with pytest.raises(InputError, match="attention-dp-balance"):
        Layout(tp=8, ep=8, attention_dp=8, attention_dp_balance="even")


def _result(name: str, kind: str, ideal_ms: float, expected_ms: float) -> OpResult:
    z = np.float64(0.0)
    op = Op(name, kind, 1, z, z, z, z)
    return OpResult(op, z, 1.0, np.array("memory"), ideal_ms / 1e3, expected_ms / 1e3)


def test_shared_expert_overlap_by_hand():
    # routed path 10 ms (ideal 6), shared expert 2 ms (ideal 1.5): the pair takes
    # max(10, 2, 6 + 1.5) = 10 ms, the shared expert's 2 ms hidden
    rs = [_result("moe.experts", "matmul", 6, 10), _result("moe.shared", "matmul", 1.5, 2)]
    row = shared_expert_overlap(rs)
    assert row is not None and row.op.name == OVERLAP_OP
    assert float(row.t_expected_s) == pytest.approx(-2e-3)
    assert float(row.t_ideal_s) == 0.0
    # routed 7 ms at ideal 6.5: the two groups share HBM, so the pair is never under the sum
    # of their speeds of light, 6.5 + 1.5 = 8 ms: only 7 + 2 − 8 = 1 ms is hidden
    rs = [_result("moe.experts", "matmul", 6.5, 7), _result("moe.shared", "matmul", 1.5, 2)]
    assert float(shared_expert_overlap(rs).t_expected_s) == pytest.approx(-1e-3)
    # no shared expert, nothing to overlap
    assert shared_expert_overlap([_result("moe.experts", "matmul", 6, 10)]) is None


def test_overlap_only_in_trtllm_decode(cat):
    # TensorRT-LLM runs the shared expert on its aux stream in CUDA-graph (decode) steps only
    assert overlaps("trtllm", "decode") and not overlaps("trtllm", "prefill")
    assert not overlaps("vllm", "decode") and not overlaps("sglang", "decode")
    m, hw = cat.model("deepseek-r1"), cat.accelerator("nvidia-b200-hgx")
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["fp8"], layout=Layout(tp=8, ep=8))
    trt = decode(m, hw, dep, 64, 1025, engine="trtllm")
    vllm = decode(m, hw, dep, 64, 1025, engine="vllm")
    assert OVERLAP_OP in [r.op.name for r in trt.ops]
    assert OVERLAP_OP not in [r.op.name for r in vllm.ops]
    # the rows still add up to the step, and the step is never under its speed of light
    rows = sum(float(r.t_expected_s) for r in trt.ops)
    assert rows + float(trt.t_overhead_s) == pytest.approx(float(trt.t_expected_s))
    assert float(trt.t_expected_s) >= float(trt.t_ideal_s)


_MODELS: dict[str, tuple[StepModel, StepModel, StepModel]] = {}


def _steps(cat) -> tuple[StepModel, StepModel, StepModel]:
    """DeepSeek-V2-Lite on 4 H100 with attention-DP 4: (serialised expected, balanced expected,
    balanced ideal) step models, built once."""
    if not _MODELS:
        m, hw = cat.model("deepseek-v2-lite"), cat.accelerator("nvidia-h100-sxm")
        lay = Layout(tp=4, ep=4, attention_dp=4)
        ser = Deployment(layout=lay)
        bal = Deployment(layout=Layout(tp=4, ep=4, attention_dp=4, attention_dp_balance="balanced"))
        _MODELS["x"] = (
            StepModel(m, hw, ser, 32, 2048, False, engine="sglang"),
            StepModel(m, hw, bal, 32, 2048, False, engine="sglang"),
            StepModel(m, hw, bal, 32, 2048, True, engine="sglang"),
        )
    return _MODELS["x"]


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 32),
    prompts=st.lists(st.integers(1, 1500), min_size=1, max_size=6),
    room=st.integers(64, 4096),
)
def test_balanced_never_slower_than_serialised_nor_faster_than_ideal(cat, n, prompts, room):
    ser, bal, ideal = _steps(cat)
    ctx = np.full(n, 300.0)
    pf = (room, prompts, [0] * len(prompts))
    t_ser = ser.span_s(n, ctx, float(ctx.sum()), 1, pf)[0]
    t_bal = bal.span_s(n, ctx, float(ctx.sum()), 1, pf)[0]
    t_ideal = ideal.span_s(n, ctx, float(ctx.sum()), 1, pf)[0]
    assert t_bal <= t_ser * (1 + 1e-12)
    assert t_bal >= t_ideal * (1 - 1e-9)
    whole = prompts[: max(1, len(prompts))]
    assert bal.prefill_step_s(whole) <= ser.prefill_step_s(whole) * (1 + 1e-12)
    assert bal.prefill_step_s(whole) >= ideal.prefill_step_s(whole) * (1 - 1e-9)


def test_cli_option_in_json_and_bad_value(run):
    args = ["analyze", "deepseek-v2-lite", "h100", "--tp", "4", "--ep", "4", "--attention-dp",
            "4", "--batch", "8", "--prompt", "512", "--output", "64"]  # fmt: skip
    r = run(*args, "--attention-dp-balance", "balanced", "--format", "json")
    assert r.code == 0
    assert json.loads(r.stdout)["inputs"]["attention_dp_balance"] == "balanced"
    r = run(*args, "--format", "json")
    assert json.loads(r.stdout)["inputs"]["attention_dp_balance"] == "serialised"
    r = run(*args, "--attention-dp-balance", "even")
    assert r.code == 2
    assert "attention-dp-balance" in r.stderr and "Traceback" not in r.stderr

"""vLLM V0 multi-step scheduling and JetStream's one-prompt prefill steps (scheduler rules),
checked on hand-worked schedules and on published figures."""

import numpy as np
import pytest

from roofline.domain.errors import InputError
from roofline.engines.scheduler import EngineRules
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.sim.steps import StepModel


class StubSteps(StepModel):
    """Hand-checkable step times: decode step d(B) = 1 + 0.5·B s, prefill p(L) = 0.1·L s."""

    def __init__(self) -> None:
        self.base_s = np.array([1.5, 2.0, 2.5, 3.0])
        self.groups = []
        self.kv_bytes_per_token = 1.0

    def prefill_step_s(self, lengths, cached=None):
        return float(0.1 * np.sum(lengths))


def _run(arrivals, prompts, outputs, **rules):
    r = EngineRules(max_seqs=4, budget_blocks=1000, block_tokens=4, **rules)
    return simulate_requests(
        StubSteps(), np.array(arrivals, float), np.array(prompts), np.array(outputs), r
    )


def test_multi_step_schedules_only_at_batch_ends():
    # N = 4. r0 (prompt 4, output 6) at t = 0, r1 (prompt 4, output 3) at t = 1.
    # 0.0  prefill r0: 0.4 s, its first token at 0.4.
    # 0.4  a 4-step batch of r0 alone: 4 x d(1) = 6.0 s to 6.4; r1 arrived at 1.0 and waits.
    #      Its 4 tokens reach the client together: one gap of 6.0 s.
    # 6.4  prefill r1: 0.4 s, first token at 6.8 (TTFT 5.8; single-step: cut at 1.9, 1.3 s).
    # 6.8  a batch of r0 (1 token left) and r1 (2 left): 1 step at d(2) = 2.0 s to 8.8, r0 has
    #      its last token; 1 step of r1 alone, 1.5 s to 10.3, its last: nobody left, the batch
    #      ends; both are seen at 10.3: gaps 10.3 - 6.4 = 3.9 (r0) and 10.3 - 6.8 = 3.5 (r1).
    rec = _run([0.0, 1.0], [4, 4], [6, 3], scheduler_steps=4)
    assert rec.first_token_s == pytest.approx([0.4, 6.8])
    assert rec.finish_s == pytest.approx([10.3, 10.3])
    order = np.argsort(rec.itl_s)
    assert rec.itl_s[order] == pytest.approx([3.5, 3.9, 6.0])
    assert rec.itl_weight[order] == pytest.approx([1.0, 1.0, 1.0])


def test_streamed_multi_step_outputs_reach_the_client_at_their_own_step():
    # The schedule above, streamed step by step (vLLM 0.6.3+: --multi-step-stream-outputs):
    # admission still waits for the batch's end (r1's first token at 6.8), but every token and
    # finish reaches the client at its own step.
    # 0.4-6.4 r0's 4 steps at d(1) = 1.5 s: gaps 1.5 (the first from its first token at 0.4).
    # 6.8  r0 and r1 step at d(2) = 2.0 to 8.8: r0's gap 8.8 - 6.4 = 2.4 (the prefill between),
    #      r0 ends there (finish 8.8, not 10.3); r1's first gap 2.0; r1 alone 1.5 s to 10.3.
    rec = _run([0.0, 1.0], [4, 4], [6, 3], scheduler_steps=4, stream_steps=True)
    assert rec.first_token_s == pytest.approx([0.4, 6.8])
    assert rec.finish_s == pytest.approx([8.8, 10.3])
    gaps = sorted(zip(rec.itl_s.tolist(), rec.itl_weight.tolist(), strict=True))
    assert sum(w for _, w in gaps) == pytest.approx(5 + 2)  # one gap per token after the first
    assert sum(v * w for v, w in gaps) == pytest.approx((8.8 - 0.4) + (10.3 - 6.8))
    assert max(v for v, _ in gaps) == pytest.approx(2.4)  # bunched, the longest was 6.0


def test_the_versions_that_stream_each_step():
    # vllm PR #9047 turned --multi-step-stream-outputs on by default for v0.6.3
    from roofline.serving.sim.multistep import streams_each_step

    assert not streams_each_step("0.6.0") and not streams_each_step("0.6.2")
    assert streams_each_step("0.6.3") and streams_each_step("0.6.4.post1")
    assert streams_each_step("0.7.3") and streams_each_step("")


def test_one_step_still_cuts_at_the_arrival():
    # the same requests with N = 1: r0 decodes from 0.4; r1 arrives at 1.0, admitted after the
    # step ending at 1.9, prefilled by 2.3 (TTFT 1.3)
    rec = _run([0.0, 1.0], [4, 4], [6, 3])
    assert rec.first_token_s[1] == pytest.approx(2.3)


def test_one_prompt_per_prefill_step():
    # prompts 4 and 6 at t = 0, packed: one prefill of 10 tokens, both first tokens at 1.0;
    # one at a time (JetStream): r0's at 0.4, r1's at 0.4 + 0.6 = 1.0
    packed = _run([0.0, 0.0], [4, 6], [2, 2])
    assert packed.first_token_s == pytest.approx([1.0, 1.0])
    single = _run([0.0, 0.0], [4, 6], [2, 2], prefill_seqs=1)
    assert single.first_token_s == pytest.approx([0.4, 1.0])


def test_multi_step_light_load_ttft_matches_the_published_run(cat):
    # SGLang's vLLM 0.6.0 benchmark (benchmark/benchmark_vllm_060/README.md), Llama 3.1 8B on one
    # A100, --num-scheduler-steps 10, 4 req/s: median TTFT 100.48 ms. By hand: a prefill of ~224
    # tokens (~46 ms at that load) plus half a 10-step batch of ~14 ms steps (the published
    # median TPOT 14.14 ms): 46 + 5 x 14 = 116 ms; single-step scheduling predicted 46 ms.
    from pathlib import Path

    from roofline.cases.serving import run_serving_case
    from roofline.catalog.files import safe_load_yaml

    text = (Path(__file__).parent.parent / "validation/engine_sweeps.yaml").read_text()
    cases = safe_load_yaml(text)["cases"]
    case = next(c for c in cases if c["id"] == "sglbench060-vllm-8b-tp1-sharegpt-rps4-ttft_p50")
    r = run_serving_case(case, cat)
    assert 80 < r.expected < 130
    with pytest.raises(InputError, match="multi-step"):
        run_serving_case({**case, "engine": "sglang", "engine_version": None}, cat)


def test_bad_scheduler_steps():
    with pytest.raises(InputError, match="scheduler steps"):
        EngineRules(max_seqs=4, budget_blocks=10, block_tokens=4, scheduler_steps=0)


def test_serve_num_scheduler_steps(run):
    # tokens come in bunches of 10 steps: the median gap between them is about 10 steps while
    # TPOT stays the mean step (a sequence's first and last bunches are shorter, the prefill
    # steps inside a gap make it longer: between 9 and 11 TPOT)
    args = ["serve", "llama-3.1-8b", "a100-80gb", "--rate", "4", "--prompt", "224"]
    args += ["--output", "189", "--requests", "200", "--format", "json"]
    doc = run(*args, "--engine", "vllm@0.6", "--num-scheduler-steps", "10").json()
    e = doc["points"][0]["expected"]
    assert 9 < e["itl_s"]["p50"] / e["tpot_s"]["p50"] < 11
    r = run(*args, "--num-scheduler-steps", "10")  # vLLM V1 has no multi-step scheduling
    assert r.code == 2 and "multi-step" in r.stderr and r.stdout == ""
    streamed = run(*args, "--engine", "vllm@0.6.4", "--num-scheduler-steps", "10").json()
    e = streamed["points"][0]["expected"]
    assert 0.8 < e["itl_s"]["p50"] / e["tpot_s"]["p50"] < 1.2  # from 0.6.3: step by step

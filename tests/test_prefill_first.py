"""SGLang runs a waiting prompt's prefill as a step of its own, ahead of the running decodes
(issue 34 c, TTFT under load): its scheduler's run_step tries get_new_batch_prefill first and
decodes only when no prefill batch forms, and mixes the running decodes into a prefill batch
only under --enable-mixed-chunk, off by default (sgl-project/sglang
python/sglang/srt/managers/scheduler.py at d51c1c21; server_args.py enable_mixed_chunk False).
vLLM V1 and TensorRT-LLM carry prompts beside the decodes in one step (the simulator's chunked
mode)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.serving import run_serving_case
from roofline.catalog.load import load_catalog
from roofline.engines.scheduler import version_defaults

CAT = load_catalog([])
H200 = CAT.accelerator("nvidia-h200-sxm")


@pytest.mark.parametrize(
    "engine, chunked, want",
    [
        # sglang server_args.py: chunked_prefill_size 8192 below 160 GB (H200: 141 GB), the
        # prefill batch's budget; mixed with decodes only when told (--enable-mixed-chunk)
        ("sglang", None, (256, 8192, False)),
        ("sglang", True, (256, 8192, True)),
        # vLLM V1 (arg_utils.py, >= 70 GiB, not A100): 1024 sequences, 8192 tokens, mixed
        ("vllm", None, (1024, 8192, True)),
        # TensorRT-LLM (llm_args.py): 2048 / 8192, context phases in the generation step
        ("trtllm", None, (2048, 8192, True)),
    ],
)
def test_only_sglang_runs_prompts_in_steps_of_their_own(engine, chunked, want):
    assert version_defaults(engine, H200, None, 2048, chunked) == want


def _case(n: int, prompt: int, output: int, metric: str, mixed: bool | None) -> dict:
    c = {
        "id": "t",
        "model": "llama-3.1-8b",
        "hardware": "nvidia-h200-sxm",
        "weights": "bf16",
        "kv": "bf16",
        "engine": "sglang",
        "arrivals": "burst",
        "requests": n,
        "prompt": prompt,
        "output": output,
        "metric": metric,
        "measured": 1.0,
        "source": "test",
    }
    if mixed is not None:
        c["chunked_prefill"] = mixed
    return c


@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(20, 200),
    prompt=st.sampled_from([256, 1024, 3000, 4096]),
    output=st.sampled_from([16, 128, 512]),
)
def test_prompts_first_never_delay_a_bursts_first_tokens(n, prompt, output):
    """Physics of the policy: a prefill-only step gives the whole token budget to prompts and
    carries no decode token, so the burst's prompts finish no later than when each step shares
    the budget with the running decodes: TTFT p50 no higher (a 1 ms step boundary of slack).
    Prompts up to the budget: each prefill batch fills the 8,192 tokens with a chunk of the next
    prompt, as SGLang's PrefillAdder does (before it filled whole prompts only, 3,000-token ones
    6,000 of the 8,192, and hypothesis found n = 37 where the mixed steps' packing won, 1,255
    against 1,306 ms; 1,245 ms filled)."""
    first = run_serving_case(_case(n, prompt, output, "ttft_p50_ms", None), CAT).expected
    mixed = run_serving_case(_case(n, prompt, output, "ttft_p50_ms", True), CAT).expected
    assert first <= mixed + 1.0


def test_no_decode_step_before_the_bursts_last_prompt():
    """40 requests of 4,000 prompt tokens and 2 output tokens at t = 0 on one H200 (an 8B
    model's KV for all 40, 40 x 4,002 x 128 KiB = 21 GB, fits): prompts first, the 20 prefill
    batches of two prompts (8,000 of the 8,192-token budget) all run before the one decode step
    that gives every request its second token, so the median request ends after the last
    request's first token: E2E p50 >= TTFT p99. Mixed steps decode the first requests' second
    tokens beside the later prompts, so there the median request ends well before it."""
    e2e = run_serving_case(_case(40, 4000, 2, "e2e_p50_ms", None), CAT).expected
    last_first = run_serving_case(_case(40, 4000, 2, "ttft_p99_ms", None), CAT).expected
    assert e2e >= last_first
    e2e_mixed = run_serving_case(_case(40, 4000, 2, "e2e_p50_ms", True), CAT).expected
    last_mixed = run_serving_case(_case(40, 4000, 2, "ttft_p99_ms", True), CAT).expected
    assert e2e_mixed < 0.8 * last_mixed


def test_a_prefill_batch_fills_its_budget_with_a_chunk_of_the_next_prompt():
    """Three 3,000-token prompts at t = 0 under SGLang's 8,192-token prefill batches: the first
    batch runs prompts 1 and 2 whole and 2,192 tokens of prompt 3 (8,192 in all), the second its
    last 808 (3,000 - 2,192, attending the 2,192 before them): two batches, where whole prompts
    alone would run [3,000, 3,000] then [3,000]. So requests 1 and 2 get their first token
    together, request 3 later, and before the unfilled schedule would give it (the same step
    model's two whole-prompt batches: a 3,000-token batch costs more than an 808-token chunk
    attending 2,192). Mixed steps (--enable-mixed-chunk) are not this path."""
    from roofline.domain.deployment import Deployment
    from roofline.engines.engine import engine
    from roofline.serving.serve import make_replica
    from roofline.serving.sim.scheduler import simulate_requests

    m = CAT.model("llama-3.1-8b")
    rep = make_replica(m, H200, Deployment(), engine("sglang", H200), 3002)
    assert rep.rules.prefill_fill and not rep.rules.chunked_prefill
    assert rep.rules.max_batched_tokens == 8192
    prompts, outputs = np.full(3, 3000), np.full(3, 2)
    rec = simulate_requests(rep.expected, np.zeros(3), prompts, outputs, rep.rules)
    ttft = rec.first_token_s - rec.arrival_s
    assert ttft[0] == ttft[1] < ttft[2]
    whole = rep.expected.prefill_step_s([3000, 3000]) + rep.expected.prefill_step_s([3000])
    assert ttft[2] < whole
    filled = rep.expected.prefill_step_s([3000, 3000, 2192]) + rep.expected.prefill_step_s(
        [808], [2192]
    )
    assert ttft[2] == pytest.approx(filled, rel=1e-9)

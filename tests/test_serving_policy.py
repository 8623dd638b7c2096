"""The engine's scheduler policy, the API server's latency and the closed-loop client: values
derived by hand (in the comments) or quoted from the engines' sources."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.engines.engine import engine
from roofline.engines.scheduler import Frontend, batch_defaults
from roofline.levers.kvcache import eos_stop_probability, parse_lengths
from roofline.serving.metrics import Slo, metrics
from roofline.serving.serve import make_replica, run_replicas
from roofline.serving.workload import Workload, make_workload
from roofline.step.ops import Deployment


@pytest.mark.parametrize(
    ("eng", "hw", "want"),
    [
        # vllm/engine/arg_utils.py get_batch_defaults, OpenAI server: >= 70 GiB and not A100
        ("vllm", "h100", (1024, 8192)),
        ("vllm", "nvidia-a100-80gb-sxm", (256, 2048)),
        ("vllm", "nvidia-rtx-4090", (256, 2048)),
        # sglang server_args.py: chunked_prefill_size 2048 < 35 GB, 4096 < 60 GB, 8192 < 160 GB
        ("sglang", "nvidia-rtx-4090", (256, 2048)),
        ("sglang", "nvidia-l40s", (256, 4096)),
        ("sglang", "h100", (256, 8192)),
        ("sglang", "amd-mi300x", (256, 16384)),
        # tensorrt_llm/llmapi/llm_args.py BaseLlmArgs: max_batch_size 2048, max_num_tokens 8192
        ("trtllm", "h100", (2048, 8192)),
        ("trtllm", "nvidia-rtx-4090", (2048, 8192)),
    ],
)
def test_batch_defaults_follow_the_engines_sources(cat, eng, hw, want):
    assert batch_defaults(eng, cat.accelerator(hw)) == want


def test_eos_stop_probability_by_hand():
    # cap 2, h = 1/2: L = 1 with probability 1/2, else 2: E[L] = 1.5
    assert eos_stop_probability(1.5, 2) == pytest.approx(0.5, rel=1e-9)
    # cap 128, mean 100.2: (1 − (1−h)^128)/h = 100.2 at h ≈ 0.00402 (60% reach the cap)
    h = eos_stop_probability(100.2, 128)
    assert (1 - (1 - h) ** 128) / h == pytest.approx(100.2, rel=1e-9)
    assert (1 - h) ** 128 == pytest.approx(0.60, abs=0.005)
    assert eos_stop_probability(128, 128) == 0.0


@settings(max_examples=25, deadline=None)
@given(cap=st.integers(2, 4000), share=st.floats(0.05, 0.99))
def test_eos_lengths_have_the_asked_mean_and_cap(cap, share):
    mean = max(1.0, share * cap)
    v, _ = parse_lengths(f"eos:mean={mean},max={cap}", 10**6, 40_000, 7)
    assert v.max() <= cap and v.min() >= 1
    # sample mean of 40,000 draws: standard error <= cap/sqrt(40000) = cap/200
    assert abs(v.mean() - mean) <= 4 * cap / 200 + 0.5


def test_eos_spec_rejects_a_mean_above_the_cap():
    with pytest.raises(InputError):
        parse_lengths("eos:mean=200,max=128", 10**6, 10, 0)
    with pytest.raises(InputError):
        Frontend(-1.0)


@pytest.fixture(scope="module")
def rep4090(cat):
    m, hw = cat.model("mistral-7b-v0.1"), cat.accelerator("nvidia-rtx-4090")
    return make_replica(m, hw, Deployment(), engine("vllm"), 256 + 128)


def _closed(rep, users: int, outputs: np.ndarray, latency_s: float) -> object:
    w = make_workload(256, 128, concurrency=users, requests=len(outputs))
    w = Workload(w.arrival_s, w.prompts, outputs, None, users, None, w.description)
    r = dataclasses.replace(rep, frontend=Frontend(latency_s))
    return metrics(run_replicas(r, w, 1, ideal=False), Slo(), 1)


def test_one_user_cycle_carries_the_front_end_latency_once(rep4090):
    # one user, no queueing: request k is sent when the client sees request k−1 end, so the
    # window is n·(D + L) for an engine time D per request: 1/throughput grows by exactly L,
    # and TTFT (sent → first token at the client) grows by L too
    out = np.full(20, 128, dtype=np.int64)
    a, b = _closed(rep4090, 1, out, 0.0), _closed(rep4090, 1, out, 0.025)
    assert 1 / b.requests_per_s - 1 / a.requests_per_s == pytest.approx(0.025, rel=1e-6)
    assert b.ttft_s.mean - a.ttft_s.mean == pytest.approx(0.025, rel=1e-6)
    assert b.tpot_s.mean == pytest.approx(a.tpot_s.mean, rel=1e-9)


def test_identical_users_run_in_lockstep_and_eos_answers_break_it(rep4090):
    # 8 users with identical answers (--ignore-eos) finish in the same step and send together:
    # every round's 8 prompts (2048 tokens, one token budget) share one prefill step, so every
    # TTFT is the same. Answers ending at EOS finish apart, the users drift, and most prompts
    # then find the engine with room for them alone: the mean TTFT falls.
    fixed = _closed(rep4090, 8, np.full(160, 128, dtype=np.int64), 0.0)
    assert fixed.ttft_s.p99 == pytest.approx(fixed.ttft_s.p50, rel=0.02)
    eos, _ = parse_lengths("eos:mean=100.2,max=128", 10**6, 160, 3)
    drift = _closed(rep4090, 8, eos.astype(np.int64), 0.0)
    assert drift.ttft_s.mean < 0.6 * fixed.ttft_s.mean


def test_sglang_running_cap_follows_its_kv_pool():
    # model_runner._resolve_max_num_reqs: clamp(KV tokens / context x 512, 2048, 4096), at most
    # half the KV tokens. 1,000,000 tokens at a 131,072 context: 3,906; 100,000: 390 -> 2,048;
    # 3,000 tokens at 4,096: 375 -> 2,048 -> 1,500 (half the pool); 10M tokens: 39,062 -> 4,096
    from roofline.engines.scheduler import output_reserve, sglang_max_running

    assert sglang_max_running(1_000_000, 131_072) == 3906
    assert sglang_max_running(100_000, 131_072) == 2048
    assert sglang_max_running(3_000, 4_096) == 1500
    assert sglang_max_running(10_000_000, 131_072) == 4096
    # what each scheduler holds back before it starts a request: vLLM nothing, SGLang its initial
    # new_token_ratio (SGLANG_INIT_NEW_TOKEN_RATIO 0.7), TensorRT-LLM's GUARANTEED_NO_EVICT all
    assert [output_reserve(e) for e in ("vllm", "sglang", "trtllm")] == [0.0, 0.7, 1.0]

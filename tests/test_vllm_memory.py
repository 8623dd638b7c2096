"""vLLM V1's memory profile reserves the larger of its max_num_batched_tokens forward and its dummy
sampler run over max_num_seqs rows of the full vocabulary (vllm/v1/worker/gpu_model_runner.py
profile_run -> _dummy_sampler_run, from 0.8: vllm-project/vllm PR #13594, issue #13507);
roofline.step.memory profile_peak_bytes. The figures below are derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import engine
from roofline.step.memory import (
    activation_peak_bytes,
    plan_memory,
    profile_peak_bytes,
    vllm_sampler_peak_bytes,
)
from roofline.step.ops import Deployment

MIB = 2**20


def _dep(tp: int) -> Deployment:
    return Deployment(weights=WEIGHT_FORMATS["bf16"], kv=KV_FORMATS["bf16"], layout=Layout(tp=tp))


def test_gpt_oss_sampler_is_the_allocation_vllm_issue_27508_fails_on():
    m = load_catalog().model("gpt-oss-120b")
    # the fp32 copy of 1,024 rows x 201,088 tokens: 1,024 x 201,088 x 4 B = 823,656,448 B, the
    # 'Tried to allocate 786.00 MiB' of vllm-project/vllm issue #27508 (gpt-oss-120b, one H100)
    fp32_copy = vllm_sampler_peak_bytes(m, 1024) * 4 / 6
    assert fp32_copy / MIB == pytest.approx(786.0, abs=0.5)
    # with the 16-bit logits it is copied from, both alive: x (2 + 4) / 4 = 1,178.3 MiB
    assert vllm_sampler_peak_bytes(m, 1024) == 1024 * 201_088 * 6
    assert vllm_sampler_peak_bytes(m, 1024) / MIB == pytest.approx(1178.25, abs=0.01)


def test_qwen3_235b_at_tp8_on_h100_reserves_the_sampler_not_the_forward():
    cat = load_catalog()
    m, h100 = cat.model("qwen3-235b-a22b"), cat.accelerator("nvidia-h100-sxm")
    dep = _dep(8)
    # V1's defaults on an H100 (80 GB, not an A100): 1,024 sequences, 8,192 tokens a step.
    # Forward: 8,192 x (2 x 4,096 + 3 x 8 x 1,536 / 8) x 2 B = 8,192 x 12,800 x 2 = 209.7 MB;
    # sampler: 1,024 x 151,936 x 6 B = 933.5 MB, not divided by TP (logits gathered on every rank)
    assert float(activation_peak_bytes(m, dep, 8192, sampled_rows=0)) == 8192 * 12_800 * 2
    got = profile_peak_bytes(m, h100, dep, engine("vllm", h100, "0.11.0"))
    assert got == 1024 * 151_936 * 6
    assert got / 1e6 == pytest.approx(933.5, abs=0.1)


def test_qwen3_32b_on_a100_reserves_a_2048_token_forward():
    cat = load_catalog()
    m, a100 = cat.model("qwen3-32b"), cat.accelerator("nvidia-a100-80gb-sxm")
    # an A100 keeps V1's small defaults, 256 sequences and 2,048 tokens: forward 2,048 x
    # (2 x 5,120 + 3 x 25,600) x 2 B = 356.5 MB above the sampler's 256 x 151,936 x 6 = 233.4 MB
    got = profile_peak_bytes(m, a100, _dep(1), engine("vllm", a100, "0.11.0"))
    assert got == 2048 * 87_040 * 2
    assert got > 256 * 151_936 * 6


def test_vllm_v0_keeps_its_profile():
    cat = load_catalog()
    m, h100 = cat.model("qwen3-32b"), cat.accelerator("nvidia-h100-sxm")
    v0 = engine("vllm", h100, "0.6.3")
    assert v0.profile_id == "vllm-v0"
    # V0 profiles 8,192 tokens and fp32 logits of 256 rows / TP (activation_peak_bytes)
    want = 8192 * 87_040 * 2 + 256 * 151_936 * 4
    assert profile_peak_bytes(m, h100, _dep(1), v0) == want
    plan = plan_memory(m, h100, _dep(1), v0)
    assert plan.activation_bytes == want


@given(tp=st.sampled_from([1, 2, 4, 8]), vocab=st.integers(32_000, 262_144))
def test_the_profile_never_reserves_less_than_either_run(tp, vocab):
    from dataclasses import replace

    cat = load_catalog()
    h100 = cat.accelerator("nvidia-h100-sxm")
    m = replace(cat.model("qwen3-235b-a22b"), vocab_size=vocab)
    dep, eng = _dep(tp), engine("vllm", h100, "0.11.0")
    got = profile_peak_bytes(m, h100, dep, eng)
    assert got >= vllm_sampler_peak_bytes(m, 1024)
    assert got >= float(activation_peak_bytes(m, dep, 8192, sampled_rows=0))
    # a larger vocabulary never leaves more KV
    bigger = replace(m, vocab_size=vocab + 10_000)
    assert plan_memory(bigger, h100, dep, eng).kv_budget_bytes <= (
        plan_memory(m, h100, dep, eng).kv_budget_bytes
    )


def test_a_runs_own_limits_are_what_v1_profiles():
    cat = load_catalog()
    m, mi300x = cat.model("llama-3.1-405b"), cat.accelerator("amd-mi300x")
    eng = engine("vllm", mi300x, "0.10.0")
    # AMD's dev-docker throughput runs: --max-num-batched-tokens 131072, --max-num-seqs 1500.
    # Forward: 131,072 x (2 x 16,384 + 3 x 53,248 / 8) x 2 B = 131,072 x 105,472 = 13.82 GB,
    # above the sampler's 1,500 x 128,256 x 6 B = 1.15 GB; at the defaults (1,024 rows, 8,192
    # tokens) the forward's 8,192 x 105,472 = 864 MB is above the sampler's 788 MB
    got = profile_peak_bytes(m, mi300x, _dep(8), eng, (1500, 131_072))
    assert got == 131_072 * 105_472
    assert profile_peak_bytes(m, mi300x, _dep(8), eng) == 8192 * 105_472
    smaller = plan_memory(m, mi300x, _dep(8), eng, limits=(1500, 131_072)).kv_budget_bytes
    assert plan_memory(m, mi300x, _dep(8), eng).kv_budget_bytes - smaller == pytest.approx(
        (131_072 - 8192) * 105_472
    )

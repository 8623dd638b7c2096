"""A step's prompts share one attention kernel call per layer (roofline/serving/sim/steps.py
shared_attention_s): vLLM V1's FlashAttention backend runs one flash_attn_varlen_func over the
step's cu_seqlens, SGLang's FlashInfer one batch-prefill call, so the call's fixed cost is paid
once per layer, not once per prompt; the prompts' work stays their own (the ideal)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment

CAT = load_catalog([])


def _steps(ideal: bool) -> StepModel:
    hw = CAT.accelerator("nvidia-h100-sxm")
    m = CAT.model("llama-3.1-8b")
    dep = Deployment(weights=weight_format("bf16"), kv=kv_format("bf16"), layout=Layout())
    return StepModel(m, hw, dep, 64, 4096, ideal, max_tokens=8192, engine="vllm")


def test_a_steps_prompts_share_one_attention_call():
    exp, ideal = _steps(False), _steps(True)
    one = exp.prefill_attention_s([0], [216])
    assert one == pytest.approx(exp.attn_list[216])  # one prompt: its own curve, as before
    many = exp.prefill_attention_s([0] * 38, [216] * 38)
    # 38 calls' fixed cost paid once: less than 38 prompts one by one, never under the ideal
    assert many < 38 * one
    assert many >= ideal.prefill_attention_s([0] * 38, [216] * 38) * (1 - 1e-9)
    # the ideal is the prompts' exact work, shared or not
    assert ideal.prefill_attention_s([0] * 38, [216] * 38) == pytest.approx(
        38 * ideal.prefill_attention_s([0], [216])
    )


@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 2048), min_size=2, max_size=12))
def test_shared_attention_between_the_ideal_and_the_one_by_one_charge(lengths):
    exp, ideal = _steps(False), _steps(True)
    zeros = [0] * len(lengths)
    shared = exp.prefill_attention_s(zeros, lengths)
    alone = sum(exp.attn_list[n] for n in lengths)
    assert ideal.prefill_attention_s(zeros, lengths) * (1 - 1e-9) <= shared <= alone * (1 + 1e-9)


def test_pipeline_micro_batches_keep_their_own_calls():
    exp = copy.copy(_steps(False))
    exp.pp = 2  # the same tables under two stages: each micro-batch a call of its own
    assert exp.prefill_attention_s([0, 0], [216, 216]) == pytest.approx(2 * exp.attn_list[216])


def test_short_prompts_fixed_cost_by_hand():
    """38 ShareGPT prompts of 216 tokens (Qwen3-235B's step at TP8 on H100, issue 34): one by
    one each pays the attention curve's floor, ~16 us a layer; in one call the floor once. Here
    (Llama-3.1-8B, 32 layers): the shared call costs A(S_eff) x (38 prompts' work / S_eff's work)
    with S_eff = 216 x sqrt(38) = 1,331.5, 1,332 tokens (the same causal work in one prompt)."""
    exp, ideal = _steps(False), _steps(True)
    s_eff = round(216 * 38**0.5)
    assert s_eff == 1332  # sqrt(38 x 216^2) = 1331.5, rounded
    work = 38 * ideal.attn_list[216]
    want = work * exp.attn_list[s_eff] / ideal.attn_list[s_eff]
    assert exp.prefill_attention_s([0] * 38, [216] * 38) == pytest.approx(want)

"""Pipeline parallelism in the serving simulator (steps.StepModel.pipe): micro-batches stay in
flight from step to step (vLLM's PP virtual engines), and the `burst:` validate cases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from roofline.cases.casefiles import load_cases
from roofline.cases.evaluate import evaluate
from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment
from roofline.step.phases import decode


@pytest.fixture(scope="module")
def pp4(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("nvidia-l4")
    dep = Deployment(layout=Layout(pp=4))
    return m, hw, dep, StepModel(m, hw, dep, 16, 512, False, engine="vllm")


def test_a_full_pipeline_step_does_not_drain(pp4):
    # 4 stages, 4 micro-batches: a flushed step (phases.decode, one round) takes GPipe's
    # m + pp − 1 = 7 stage times; with the micro-batches in flight a step takes m = 4
    m, hw, dep, s = pp4
    for b in (4, 8, 16):
        flushed = float(decode(m, hw, dep, b, 1.0, engine="vllm").t_expected_s)
        assert s.base_s[b - 1] == pytest.approx(flushed * 4 / 7, rel=1e-12)
    # two sequences: 2 micro-batches, each token still crosses 4 stages: 4 stage times a round
    # against a flushed 2 + 4 − 1 = 5
    flushed = float(decode(m, hw, dep, 2, 1.0, engine="vllm").t_expected_s)
    assert s.base_s[1] == pytest.approx(flushed * 4 / 5, rel=1e-12)
    # one sequence: nothing to overlap, the step is the whole pass either way
    one = float(decode(m, hw, dep, 1, 1.0, engine="vllm").t_expected_s)
    assert s.base_s[0] == pytest.approx(one, rel=1e-12)


def test_pipelined_attention_and_prefill_shares(pp4):
    _, _, _, s = pp4
    # 8 sequences in 4 micro-batches: each stage runs 2 of them for a quarter of the layers, 4
    # times a round: the attention of the 8 takes 4·(2/8)·(1/4) = 1/4 of its unpipelined time
    ctx = np.full(8, 300)
    unpiped = s.attention_decode_s(ctx, 1)
    assert s.decode_n_s(8, 1, float(ctx.sum())) - s.base_s[7] == pytest.approx(unpiped / 4)
    # one prompt alone costs its whole pass; four prompts of 200 go as 4 micro-batches of one
    assert s.prefill_step_s([200]) == pytest.approx(s.lin(200) + s.prefill_attention_s([0], [200]))
    four = s.prefill_step_s([200] * 4)
    assert four == pytest.approx(s.lin(200) + s.prefill_attention_s([0], [200]), rel=1e-9)


def test_without_pipeline_nothing_changes(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("nvidia-l4")
    s = StepModel(m, hw, Deployment(), 8, 256, False, engine="vllm")
    assert s.pipe(8) == (1, 1.0)
    flushed = np.asarray(
        decode(m, hw, Deployment(), np.arange(1, 9.0), 1.0, engine="vllm").t_expected_s
    )
    assert s.base_s == pytest.approx(flushed, rel=1e-12)


def test_a_burst_case_runs_through_the_serving_simulator(cat):
    # the L4 PP2 x TP4 layout case as the burst it was: 1,000 requests at once; the ideal
    # bounds the expected figure, and a static-batch metric is refused
    cases = {c.id: c for c in load_cases(Path("validation/layout_cases.yaml"))}
    c = cases["layout-vllm-l4x8-llama31-70b-fp8-pp2-tp4"]
    burst = {"requests": 200, "prompt": 233, "output": 175, "max_seqs": 128}
    m, hw = cat.model(c.model), cat.accelerator(c.hardware)
    r = evaluate(dataclasses.replace(c, burst=burst), m, hw, catalog=cat)
    assert r.regime == "throughput" and r.batch == 200
    assert 0 < r.expected < r.ideal
    bad = dataclasses.replace(c, burst=burst, metric="tpot_ms")
    with pytest.raises(InputError):
        evaluate(bad, m, hw, catalog=cat)
    # an offline harness (no API server) is never slower; unknown keys and values are refused
    offline = evaluate(
        dataclasses.replace(c, burst={**burst, "frontend": "none"}), m, hw, catalog=cat
    )
    assert offline.expected >= r.expected * (1 - 1e-9)
    for extra, msg in (({"speed": 2}, "unknown burst key 'speed'"), ({"frontend": "x"}, "api")):
        with pytest.raises(InputError, match=msg):
            evaluate(dataclasses.replace(c, burst={**burst, **extra}), m, hw, catalog=cat)

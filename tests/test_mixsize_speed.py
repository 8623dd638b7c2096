"""The pool sizing of a workload file (roofline.serving.mixsize) runs less than a full evaluation
at every count it tries (issue 32), and answers as the full evaluation would."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from roofline.engines.engine import engine
from roofline.serving.metrics import Slo
from roofline.serving.mix import mix_workload
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.mixsize import past_capacity, replicas_needed
from roofline.serving.serve import make_replica, serve
from roofline.serving.workloadfile import read_workload
from roofline.step.ops import Deployment

CHAT_BATCH = Path(__file__).resolve().parent.parent / "examples/workloads/chat-batch.yaml"


def test_the_pool_sized_on_expected_runs_alone_is_the_full_runs_fewest(cat):
    """replicas_needed runs only the expected half (serve's expected_only): its count is still
    the fewest whose full run (ideal and expected) meets every class's SLOs, and its expected
    figures are that full run's, all but each replica's own figures (which it does not keep)."""
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    w = mix_workload(read_workload(CHAT_BATCH), 200, 0, 40.0)
    rep = make_replica(m, hw, Deployment(), engine("vllm", hw), int(w.prompts.max() + 500))
    slo = Slo(None, None)  # the classes' own SLOs (chat: TTFT 1 s; batch: 60 s)
    sized = replicas_needed(rep, w, slo)
    cap = mix_capacity(rep, w)

    full = {  # the full runs (ideal and expected halves) at every count up to its answer
        n: serve(rep, w, slo, n, capacity=cap, router="least-loaded")
        for n in range(1, sized.replicas + 1)
    }
    at = full[sized.replicas]
    assert at.expected.meets_slo
    assert sized.replicas == 1 or not full[sized.replicas - 1].expected.meets_slo
    assert at.ideal is not at.expected and sized.result.ideal is sized.result.expected
    assert len(at.expected.per_replica) == (sized.replicas if sized.replicas > 1 else 0)
    assert replace(at.expected, per_replica=()) == sized.result.expected

    # the counts it did not run: their full run is past saturation (no SLO met), and only those
    skipped = [n for n in full if past_capacity(w, n, cap)]
    assert skipped and sized.replicas not in skipped  # (rate 40/s > one replica's capacity)
    for n, res in full.items():
        assert (n in skipped) == bool(res.expected.unbounded)
        assert n not in skipped or not res.expected.meets_slo

"""A `validate` case measured as a burst through a serving engine (a `burst:` mapping): every
request sent at once (`vllm benchmark_serving.py --request-rate inf`, no concurrency cap), the
engine's continuous batching drains them, and the case's metric is the run's output tokens/s
(all GPUs, or per GPU): total output tokens / the window from the send to the last token. A
static batch of mean-length requests misses such a run: its ramp-down tail, where the longest
answers decode at a small batch, sets much of the window.

Keys: requests (how many are sent), prompt/output (a token count or a length spec, e.g.
lognormal:mean=…,sigma=…; default the case's means), max_seqs and max_batched_tokens (the
engine's limits; default its own), chunked_prefill (default true), frontend (api, the default:
through the engine's API server as benchmark_serving.py sends them; none: an offline harness
such as vLLM's LLM class or trtllm-bench). The layout is the case's
(`gpus / (tp·pp)` replicas, requests dealt round robin); the serving simulator
(roofline.serving.sim.scheduler) runs ideal and expected step times.
"""

from __future__ import annotations

from roofline.cases.case import Case, served_engine
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.serving.metrics import Slo
from roofline.serving.serve import make_replica, serve
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment

BURST_METRICS = ("output_tokens_per_s", "output_tokens_per_s_per_gpu")
BURST_KEYS = (
    "requests",
    "prompt",
    "output",
    "max_seqs",
    "max_batched_tokens",
    "chunked_prefill",
    "frontend",
)


def evaluate_burst(
    case: Case, model: ModelArch, hw: Accelerator, dep: Deployment, replicas: int, eng_name: str
) -> tuple[str, int, float, float]:
    """(regime, requests, ideal, expected) of a burst case's metric."""
    b = case.burst or {}
    where = f"case '{case.id}'"
    if case.metric not in BURST_METRICS:
        raise InputError(f"{where}: a burst case measures {' or '.join(BURST_METRICS)}")
    unknown = sorted(set(b) - set(BURST_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown burst key '{unknown[0]}' (use {', '.join(BURST_KEYS)})")
    if "requests" not in b:
        raise InputError(f"{where}: a burst needs requests (how many are sent at once)")
    eng = served_engine(eng_name, hw, where, frontend=b.get("frontend", "api"))
    n = int(b["requests"])
    w = make_workload(
        b.get("prompt", case.prompt), b.get("output", case.output), concurrency=n, requests=n
    )
    rep = make_replica(
        model,
        hw,
        dep,
        eng,
        w.max_len,
        max_seqs=b.get("max_seqs"),
        max_batched_tokens=b.get("max_batched_tokens"),
        chunked_prefill=bool(b.get("chunked_prefill", True)),
    )
    r = serve(rep, w, Slo(), replicas=replicas, capacity=None)  # measured: the window
    per_gpu = case.metric == "output_tokens_per_s_per_gpu"
    ideal, expected = (
        (m.output_tokens_per_s_per_gpu if per_gpu else m.output_tokens_per_s)
        for m in (r.ideal, r.expected)
    )
    return "throughput", n, float(ideal), float(expected)

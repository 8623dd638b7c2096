"""Serving predictions against published measurements under traffic (validation/serving_cases.yaml).

Each case names a model, an accelerator, a layout, an arrival process (`arrivals`: poisson at
`rate` requests/s, closed loop of `concurrency` users, or burst: every request sent at t = 0, a
closed loop of as many users as requests), lengths, the engine (`engine`, default vllm; its
`engine_version` picks the version profile of hardware/engines.yaml whose range holds it,
roofline.engines.versions; `chunked_prefill` as the source ran it, default the version's) and what
sends it the requests (`frontend`: api, the engine's API server, the default, or none, an
offline harness such as vLLM's LLM class or trtllm-bench), the API server's detokenizer path
(`tokenizer`: fast, the default, or slow, e.g. vLLM's --tokenizer-mode mistral), the engine
settings the source states (`max_num_seqs`, `max_num_batched_tokens`, `gpu_memory_utilization`:
the KV memory fraction; default the engine's own on that device, roofline.engines.scheduler and
roofline.step.memory; `harness`: trtllm-bench or trtllm-bench-build, a harness that picks the
first two itself from the dataset, roofline.engines.scheduler.trtllm_bench_limits;
`num_scheduler_steps`: vLLM V0's multi-step scheduling, roofline.serving.sim.multistep) and one
measured metric; the simulator serves the same workload with both step times. `requests`
defaults to the concurrency of a burst, else 1,000.
error = expected / measured − 1 (for throughput, a positive error is an over-prediction).
`validate` (owned elsewhere) turns these rows into a table; this module only computes them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.cases.case import served_engine
from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.scheduler import TOKENIZERS, TRTLLM_BENCH_HARNESSES, trtllm_bench_limits
from roofline.serving.attention_dp import default_balance
from roofline.serving.metrics import Slo
from roofline.serving.serve import make_replica, serve
from roofline.serving.workload import Workload, make_workload
from roofline.step.ops import Deployment

METRICS = {
    "ttft_mean_ms": lambda m: m.ttft_s.mean * 1e3,
    "ttft_p50_ms": lambda m: m.ttft_s.p50 * 1e3,
    "ttft_p99_ms": lambda m: m.ttft_s.p99 * 1e3,
    "itl_p50_ms": lambda m: m.itl_s.p50 * 1e3,
    "e2e_p50_ms": lambda m: m.e2e_s.p50 * 1e3,
    "tpot_mean_ms": lambda m: m.tpot_s.mean * 1e3,
    "tpot_p50_ms": lambda m: m.tpot_s.p50 * 1e3,
    "tpot_p99_ms": lambda m: m.tpot_s.p99 * 1e3,
    "requests_per_s": lambda m: m.requests_per_s,
    "output_tokens_per_s": lambda m: m.output_tokens_per_s,
    "output_tokens_per_s_per_gpu": lambda m: m.output_tokens_per_s_per_gpu,
}


@dataclass(frozen=True)
class ServingCaseResult:
    id: str
    model: str
    hardware: str
    metric: str
    ideal: float
    expected: float
    measured: float
    error_expected: float
    source: str


def _length(v: Any) -> int | str:
    return int(v) if isinstance(v, int) else str(v)


ARRIVALS = ("poisson", "closed", "burst")
DEFAULT_REQUESTS = 1000


def _workload(case: dict[str, Any], where: str) -> Workload:
    """The case's requests: Poisson at `rate`, a closed loop of `concurrency` users, or a burst
    (every request at t = 0: as many users as requests)."""
    prompt, output, kind = _length(case["prompt"]), _length(case["output"]), case["arrivals"]
    requests = case.get("requests", DEFAULT_REQUESTS)
    if kind == "poisson":
        if "rate" not in case:
            raise InputError(f"{where}: poisson arrivals need a rate (requests/s)")
        return make_workload(prompt, output, rate=float(case["rate"]), requests=requests)
    if kind == "closed":
        if "concurrency" not in case:
            raise InputError(f"{where}: closed arrivals need a concurrency (users)")
        return make_workload(prompt, output, concurrency=case["concurrency"], requests=requests)
    if kind == "burst":
        n = case.get("requests", case.get("concurrency"))
        if n is None:
            raise InputError(f"{where}: burst arrivals need requests (all sent at t = 0)")
        return make_workload(prompt, output, concurrency=n, requests=n)
    raise InputError(f"{where}: arrivals must be {', '.join(ARRIVALS)}, got '{kind}'")


def _scheduler_steps(case: dict[str, Any], where: str) -> int:
    steps = case.get("num_scheduler_steps", 1)
    if not isinstance(steps, int) or steps < 1:
        raise InputError(f"{where}: num_scheduler_steps must be a positive integer, got {steps}")
    return steps


def _limits(case: dict[str, Any], m, hw, w: Workload, fraction: float, where: str):
    """(max sequences, token budget) per rank as the case ran them: its `max_num_seqs` and
    `max_num_batched_tokens`, or, when it names a `harness` that picks its own and gives not
    both, the harness's (roofline.engines.scheduler.trtllm_bench_limits, at the dataset's mean
    and longest lengths); None: the engine's defaults."""
    seqs, tokens = case.get("max_num_seqs"), case.get("max_num_batched_tokens")
    harness = case.get("harness")
    if harness is not None and harness not in TRTLLM_BENCH_HARNESSES:
        raise InputError(f"{where}: harness must be {' or '.join(TRTLLM_BENCH_HARNESSES)}")
    if harness is None or (seqs is not None and tokens is not None):
        return seqs, tokens
    lengths = (float(w.prompts.mean()), float(w.outputs.mean()), int(w.prompts.max()))
    try:
        bs, budget = trtllm_bench_limits(
            m,
            hw,
            case.get("tp", 1),
            case.get("pp", 1),
            case["weights"],
            case["kv"],
            lengths,
            fraction,
            harness,
        )
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return seqs or bs, tokens or budget


def run_serving_case(case: dict[str, Any], cat, expected_only: bool = False) -> ServingCaseResult:
    """One case: build its workload and replica, serve it, read the metric. `expected_only`: the
    expected simulation alone (serve's; the result's ideal repeats the expected figure), for a fit
    that reads only the expected one."""
    where = f"case '{case['id']}'"
    if case["metric"] not in METRICS:
        raise InputError(f"{where}: unknown metric '{case['metric']}' (use {', '.join(METRICS)})")
    try:
        weights, kv = WEIGHT_FORMATS[case["weights"]], KV_FORMATS[case["kv"]]
    except KeyError as exc:
        raise InputError(f"{where}: unknown format {exc}") from None
    m, hw = cat.model(case["model"]), cat.accelerator(case["hardware"])
    tp, pp = case.get("tp", 1), case.get("pp", 1)
    name, version = case.get("engine", "vllm"), case.get("engine_version")
    balance = case.get("attention_dp_balance") or default_balance(name)
    try:
        lay = Layout(
            tp=tp,
            pp=pp,
            ep=case.get("ep", 1),
            attention_dp=case.get("attention_dp", 1),
            attention_dp_balance=balance,
        )
    except InputError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None
    dep = Deployment(weights=weights, kv=kv, layout=lay)
    w = _workload(case, where)
    eng = served_engine(name, hw, where, version, case.get("frontend", "api"))
    util = case.get("gpu_memory_utilization")
    if util is not None:
        if not 0 < util <= 1:
            raise InputError(f"{where}: gpu_memory_utilization must be in (0, 1], got {util}")
        eng = replace(eng, memory_fraction=float(util), fraction_given=True)
    tok = case.get("tokenizer", "fast")
    if tok not in TOKENIZERS:
        raise InputError(f"{where}: tokenizer must be fast or slow, got '{tok}'")
    seqs, tokens = _limits(case, m, hw, w, eng.memory_fraction, where)
    rep = make_replica(
        m,
        hw,
        dep,
        eng,
        w.max_len,
        max_seqs=seqs,
        max_batched_tokens=tokens,
        chunked_prefill=case.get("chunked_prefill"),
        tokenizer=tok,
        scheduler_steps=_scheduler_steps(case, where),
        cache_tokens=case.get("max_cache_length"),
    )
    # measured runs report their window
    r = serve(rep, w, Slo(), capacity=None, expected_only=expected_only)
    pick = METRICS[case["metric"]]
    ideal, expected = float(pick(r.ideal)), float(pick(r.expected))
    measured = float(case["measured"])
    return ServingCaseResult(
        case["id"],
        m.id,
        hw.id,
        case["metric"],
        ideal,
        expected,
        measured,
        expected / measured - 1.0,
        case["source"],
    )


def run_serving_cases(cases: list[dict[str, Any]], cat) -> list[dict[str, Any]]:
    """Rows for `validate`: id, model, hardware, metric, ideal, expected, measured, error, and
    (as for step cases) the speed ratio against the ideal and whether a measurement beat it."""
    rows = []
    for c in cases:
        r = vars(run_serving_case(c, cat))
        time_like = r["metric"].endswith("_ms")
        ratio = r["ideal"] / r["measured"] if time_like else r["measured"] / r["ideal"]
        rows.append(
            {
                **r,
                "regime": "serving",
                "batch": None,
                "speed_ratio_ideal": ratio,
                "bound_violation": ratio > 1 + 1e-9,
            }
        )
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Cases, bound violations, median and largest absolute error of the expected prediction and
    the median share of the speed of light: the shape of roofline.validate.summarize."""
    errs = np.abs([r["error_expected"] for r in rows])
    stats = {
        "cases": len(rows),
        "bound_violations": sum(bool(r["bound_violation"]) for r in rows),
        "median_abs_error": float(np.median(errs)) if len(errs) else None,
        "max_abs_error": float(errs.max()) if len(errs) else None,
        "median_speed_ratio_ideal": float(np.median([r["speed_ratio_ideal"] for r in rows]))
        if rows
        else None,
    }
    return {**stats, "regimes": {"serving": dict(stats)}}

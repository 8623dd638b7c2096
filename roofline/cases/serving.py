"""Serving predictions against published measurements under traffic (validation/serving_cases.yaml).

Each case names a model, an accelerator, a layout, an arrival process (Poisson rate or closed
loop of N users), lengths, the API server's detokenizer path (`tokenizer`: fast, the default,
or slow, e.g. vLLM's --tokenizer-mode mistral) and one measured metric; the simulator serves
the same workload with the engine's defaults on that device (roofline.serving.policy) and both
step times. error = expected / measured − 1 (for throughput, a positive error is an
over-prediction).
`validate` (owned elsewhere) turns these rows into a table; this module only computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.errors import InputError
from roofline.layout import Layout
from roofline.memory import engine
from roofline.ops import Deployment
from roofline.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.serving.policy import TOKENIZERS
from roofline.serving.serve import ServeMetrics, Slo, make_replica, serve
from roofline.serving.workload import make_workload

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


def run_serving_case(case: dict[str, Any], cat) -> ServingCaseResult:
    """One case: build its workload and replica, serve it, read the metric."""
    where = f"case '{case['id']}'"
    if case["metric"] not in METRICS:
        raise InputError(f"{where}: unknown metric '{case['metric']}' (use {', '.join(METRICS)})")
    try:
        weights, kv = WEIGHT_FORMATS[case["weights"]], KV_FORMATS[case["kv"]]
    except KeyError as exc:
        raise InputError(f"{where}: unknown format {exc}") from None
    m, hw = cat.model(case["model"]), cat.accelerator(case["hardware"])
    tp, pp = case.get("tp", 1), case.get("pp", 1)
    dep = Deployment(weights=weights, kv=kv, layout=Layout(tp=tp, pp=pp, ep=case.get("ep", 1)))
    if case["arrivals"] == "poisson":
        w = make_workload(
            _length(case["prompt"]),
            _length(case["output"]),
            rate=float(case["rate"]),
            requests=case["requests"],
        )
    elif case["arrivals"] == "closed":
        w = make_workload(
            _length(case["prompt"]),
            _length(case["output"]),
            concurrency=case["concurrency"],
            requests=case["requests"],
        )
    else:
        raise InputError(f"{where}: arrivals must be poisson or closed")
    eng = engine(case.get("engine", "vllm"), hw)
    tok = case.get("tokenizer", "fast")
    if tok not in TOKENIZERS:
        raise InputError(f"{where}: tokenizer must be fast or slow, got '{tok}'")
    rep = make_replica(m, hw, dep, eng, int(np.max(w.prompts) + np.max(w.outputs)), tokenizer=tok)
    r = serve(rep, w, Slo(), capacity=None)  # measured runs report their window
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


__all__ = ["METRICS", "ServeMetrics", "run_serving_case", "run_serving_cases", "summary"]

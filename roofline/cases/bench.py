"""A user's benchmark run (roofline/cases/benchfiles.py) served by the serving model: the same
arrivals (the requests' own send times when the file holds them, else the file's Poisson rate and
burstiness drawn with seed 0, its closed loop of users, or every request at t = 0), the same
number of requests and their lengths (per request when the file holds them, else the file's
means), on the model, chip, layout and engine the command line names, with the
engine's defaults on that device (roofline.engines.scheduler), as `validate` serves the published
serving cases (roofline/cases/serving.py). Figures are the benchmark window's
(benchmark_serving's convention: completions over first send to last finish).
error = expected / measured − 1 (for throughput a positive error is an over-prediction).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.cases.benchfiles import METRICS, BenchRun
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.engines.engine import engine
from roofline.serving.metrics import ServeMetrics, Slo, metrics
from roofline.serving.serve import make_replica, run_replicas
from roofline.serving.workload import Workload, replayed, with_rate
from roofline.step.ops import Deployment

PICK = {
    "ttft_p50_ms": lambda m: m.ttft_s.p50 * 1e3,
    "ttft_p99_ms": lambda m: m.ttft_s.p99 * 1e3,
    "tpot_p50_ms": lambda m: m.tpot_s.p50 * 1e3,
    "tpot_p99_ms": lambda m: m.tpot_s.p99 * 1e3,
    "output_tokens_per_s": lambda m: m.benchmark_output_tokens_per_s,
}
assert set(PICK) == set(METRICS)


def workload_of(run: BenchRun, seed: int = 0) -> Workload:
    """The run's requests: its own lengths or its means, arriving as the file says."""
    if run.per_request:
        p, o = run.prompts, run.outputs
    else:
        p = np.full(run.requests, max(round(run.prompt_mean), 1), dtype=np.int64)
        o = np.full(run.requests, max(round(run.output_mean), 1), dtype=np.int64)
    assert p is not None and o is not None
    desc = {
        "arrivals": run.arrivals_text,
        "requests": len(p),
        "duration_s": None,
        "seed": seed,
        "prompt_lengths": run.lengths_text,
        "output_lengths": run.lengths_text,
        "prompt_tokens_mean": float(p.mean()),
        "output_tokens_mean": float(o.mean()),
    }
    if run.arrival_s is not None:
        return replayed(run.arrival_s, p, o, run.arrivals_text, run.lengths_text, run.lengths_text)
    conc = run.concurrency if run.rate is None else None
    base = Workload(np.zeros(len(p)), p, o, None, conc, None, desc, None, run.burstiness)
    if run.rate is None:
        return base
    return with_rate(base, run.rate, seed)


def simulate(
    run: BenchRun,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    engine_name: str,
    tokenizer: str = "fast",
    ideal: bool = False,
) -> ServeMetrics:
    """The serving model's figures for the run (expected, or ideal), one replica."""
    w = workload_of(run)
    eng = engine(engine_name, hw)
    rep = make_replica(model, hw, dep, eng, w.max_len, tokenizer=tokenizer)
    return metrics(run_replicas(rep, w, 1, ideal), Slo(), rep.gpus)


def predicted(m: ServeMetrics, run: BenchRun) -> dict[str, float]:
    """The serving figures the run measured, from the model's metrics."""
    return {name: float(PICK[name](m)) for name in run.measured}


def compare(
    run: BenchRun,
    model: ModelArch,
    hw: Accelerator,
    ideal_m: ServeMetrics,
    expected_m: ServeMetrics,
) -> list[dict[str, Any]]:
    """One row per metric the run measured: ideal, expected, measured, error and speed ratio
    (the shape of validate's serving rows), from `simulate`'s ideal and expected metrics. A
    measurement faster than the ideal is a bound violation, except an open loop's throughput,
    which its arrival rate sets."""
    ideal, expected = predicted(ideal_m, run), predicted(expected_m, run)
    rows = []
    for name in METRICS:
        if name not in run.measured:
            continue
        meas = run.measured[name]
        time_like = name.endswith("_ms")
        ratio = ideal[name] / meas if time_like else meas / ideal[name]
        # an open loop's throughput is its arrivals' (below saturation), not bounded by the ideal
        bounded = time_like or run.rate is None
        rows.append(
            {
                "id": run.where,
                "model": model.id,
                "hardware": hw.id,
                "metric": name,
                "ideal": ideal[name],
                "expected": expected[name],
                "measured": meas,
                "error_expected": expected[name] / meas - 1.0,
                "speed_ratio_ideal": ratio,
                "bound_violation": bool(bounded and ratio > 1 + 1e-9),
                "tool": run.tool,
                "arrivals": run.arrivals_text,
                "requests": run.requests,
                "lengths": run.lengths_text,
            }
        )
    return rows

"""Fit one engine's host costs on one chip to a user's own benchmark runs, and write them as a
user-catalog override (the shipped catalog never changes).

The serving model's step (roofline/timing/host.py, roofline/phases.py) is the kernels' time plus the
engine's host costs, and a request's TTFT adds the API server's path (roofline/serving/policy.py
Frontend). Three of those costs are what a cluster's own software and host CPU set, and what
measured latencies pin:

    cpu_step_us          per step, every step (TPOT and TTFT),
    cpu_per_seq_us       per running sequence per step, for the chip's family (TPOT's slope in
                         the batch: it needs runs at two or more loads to separate from cpu_step),
    request_latency_us   per request, outside the steps (TTFT only).

The fit minimises Σ ln(expected / measured)² over every metric of every run (TTFT and TPOT p50
and p99, output throughput) by Levenberg–Marquardt on the simulator itself (Levenberg 1944,
Marquardt 1963: Gauss–Newton with a damped diagonal; forward-difference Jacobian), each cost kept
non-negative. Simulations are deterministic (one seed), so the objective has no noise of its own.
The kernel curves (efficiency shares) are not fitted: serving aggregates cannot tell a slower
kernel from a slower host, and the kernel curves come from kernel measurements
(validation/calibrate_kernels.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from roofline.benchfiles import BenchRun
from roofline.errors import InputError
from roofline.hardware import Accelerator

US = 1e-6
PARAMS = ("cpu_step_us", "cpu_per_seq_us", "request_latency_us")
# forward-difference steps: 5% of the value, at least these (µs)
_STEP_FLOOR_US = {"cpu_step_us": 50.0, "cpu_per_seq_us": 2.0, "request_latency_us": 500.0}
_MAX_ITER = 40
# the medians and the TPOT tail: smooth in the costs; a TTFT tail and a window's throughput are
# set by a few requests' queueing and the run's last completions (steps, not slopes)
FIT_METRICS = ("ttft_p50_ms", "tpot_p50_ms", "tpot_p99_ms")
_TOL = 1e-4  # stop when the cost falls by less than this share

Simulate = Callable[[Accelerator, BenchRun], dict[str, float]]


@dataclass(frozen=True)
class HostFit:
    engine: str
    hardware: str
    family: str
    catalog_us: dict[str, float]
    fitted_us: dict[str, float]
    held: tuple[str, ...]  # parameters not fitted (kept at the catalog's), with why in `notes`
    runs: int
    rms_log_error_before: float
    rms_log_error_after: float
    iterations: int
    notes: tuple[str, ...]


def host_costs_us(hw: Accelerator, engine_name: str) -> dict[str, float]:
    """The catalog's three fitted costs of an engine on a chip (µs)."""
    prof = _profile(hw, engine_name)
    per = dict(prof.cpu_per_seq_s)
    return {
        "cpu_step_us": prof.cpu_step_s / US,
        "cpu_per_seq_us": per.get(hw.efficiency.family, 0.0) / US,
        "request_latency_us": prof.request_latency_s / US,
    }


def _profile(hw: Accelerator, engine_name: str):
    engines = hw.efficiency.engines or {}
    if engine_name not in engines:
        raise InputError(f"engine '{engine_name}' has no host costs in the catalog for {hw.id}")
    return engines[engine_name]


def with_host_costs(hw: Accelerator, engine_name: str, costs_us: dict[str, float]) -> Accelerator:
    """The chip with the engine's costs replaced (a new object: identity caches stay correct)."""
    prof = _profile(hw, engine_name)
    per = dict(prof.cpu_per_seq_s)
    per[hw.efficiency.family] = costs_us["cpu_per_seq_us"] * US
    new = replace(
        prof,
        cpu_step_s=costs_us["cpu_step_us"] * US,
        cpu_per_seq_s=tuple(sorted((k, v) for k, v in per.items() if v > 0)),
        request_latency_s=costs_us["request_latency_us"] * US,
    )
    engines = {**hw.efficiency.engines, engine_name: new}
    return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


def _residuals(hw, engine_name, runs, simulate, costs_us) -> np.ndarray:
    trial = with_host_costs(hw, engine_name, costs_us)
    out = []
    for run in runs:
        pred = simulate(trial, run)
        for name, meas in run.measured.items():
            if name in FIT_METRICS:
                out.append(math.log(max(pred[name], 1e-12) / meas))
    return np.asarray(out)


def fit_host_costs(
    runs: Sequence[BenchRun], hw: Accelerator, engine_name: str, simulate: Simulate
) -> HostFit:
    """Fit cpu_step, cpu_per_seq (for hw's family) and request_latency to the runs."""
    if not runs:
        raise InputError("--calibrate needs at least one benchmark run")
    start = host_costs_us(hw, engine_name)
    notes = []
    loads = {(r.rate, r.concurrency) for r in runs}
    free = list(PARAMS)
    if len(loads) < 2:
        free.remove("cpu_per_seq_us")
        notes.append(
            "cpu_per_seq_us kept at the catalog's: it needs runs at two or more loads "
            "(rates or concurrencies) to separate from cpu_step_us"
        )
    x = np.array([start[p] for p in free])
    fixed = {p: start[p] for p in PARAMS if p not in free}

    def costs(v: np.ndarray) -> dict[str, float]:
        return {**fixed, **dict(zip(free, (float(a) for a in v), strict=True))}

    def res(v: np.ndarray) -> np.ndarray:
        return _residuals(hw, engine_name, runs, simulate, costs(v))

    r = res(x)
    cost0 = cost = float(r @ r)
    lam, it = 1e-3, 0
    while it < _MAX_ITER:
        it += 1
        jac = np.empty((len(r), len(x)))
        for j, name in enumerate(free):
            h = max(0.05 * abs(x[j]), _STEP_FLOOR_US[name])
            xh = x.copy()
            xh[j] += h
            jac[:, j] = (res(xh) - r) / h
        jtj, g = jac.T @ jac, jac.T @ r
        improved = False
        while lam < 1e8:
            a = jtj + lam * np.diag(np.maximum(np.diag(jtj), 1e-12))
            step = np.linalg.solve(a, -g)
            xn = np.maximum(x + step, 0.0)
            rn = res(xn)
            cn = float(rn @ rn)
            if cn < cost:
                improved = True
                x, r, lam = xn, rn, max(lam / 4.0, 1e-6)
                break
            lam *= 4.0
        if not improved:
            break
        drop = (cost - cn) / max(cost, 1e-30)
        cost = cn
        if drop < _TOL:
            break
    fitted = costs(x)
    for p in free:
        if fitted[p] == 0.0:
            notes.append(f"{p} fitted at its bound, 0 (the runs ask for less than none)")
    n = max(len(r), 1)
    return HostFit(
        engine_name,
        hw.id,
        hw.efficiency.family,
        start,
        fitted,
        tuple(p for p in PARAMS if p not in free),
        len(runs),
        math.sqrt(cost0 / n),
        math.sqrt(cost / n),
        it,
        tuple(notes),
    )


def override_text(fit: HostFit, hw: Accelerator, sources: Sequence[str]) -> str:
    """The engine's whole catalog entry (an override replaces an entry by id) with the fitted
    costs, as YAML (JSON-quoted strings are YAML), for a user catalog directory."""
    prof = _profile(hw, fit.engine)
    per = {k: v / US for k, v in prof.cpu_per_seq_s}
    per[fit.family] = fit.fitted_us["cpu_per_seq_us"]
    per = {k: v for k, v in sorted(per.items()) if v > 0}
    src = (
        f"calibrated by roofline validate --calibrate on {fit.runs} benchmark run(s) of "
        f"{fit.engine} on {fit.hardware} ({', '.join(sources)}): cpu_step_us, "
        f"request_latency_us and cpu_per_seq_us.{fit.family} fitted to the runs' TTFT, TPOT "
        f"and throughput (roofline/hostfit.py); every other figure as the shipped entry "
        f"({prof.source})"
    )

    def num(v: float) -> str:
        return f"{v:.6g}"

    lines = [
        "# Written by `roofline validate --calibrate`: an override of the shipped engine entry,",
        f"# read with --catalog DIR. cpu_step_us and request_latency_us apply to {fit.engine} on",
        "# every chip while this catalog is loaded; cpu_per_seq_us to the fitted family only.",
        "engines:",
        f"- id: {fit.engine}",
        f"  name: {json.dumps(fit.engine + ' (calibrated)')}",
        f"  cpu_step_us: {num(fit.fitted_us['cpu_step_us'])}",
        "  cpu_per_seq_us: {" + ", ".join(f"{k}: {num(v)}" for k, v in per.items()) + "}",
        f"  launch_us: {num(prof.launch_s / US)}",
        f"  gap_us: {num(prof.gap_s / US)}",
        f"  kernels_per_layer: {num(prof.kernels_per_layer)}",
        f"  cuda_graphs_decode: {str(prof.graphs_decode).lower()}",
        f"  cuda_graphs_prefill: {str(prof.graphs_prefill).lower()}",
        f"  allreduce_kernel: {prof.allreduce_kernel}",
        f"  spec_round_cpu_us: {num(prof.spec_round_cpu_s / US)}",
        f"  spec_draft_step_cpu_us: {num(prof.spec_draft_step_cpu_s / US)}",
        f"  request_latency_us: {num(fit.fitted_us['request_latency_us'])}",
        f"  api_request_us: {num(prof.api_request_s / US)}",
        f"  api_token_fast_us: {num(prof.api_token_fast_s / US)}",
        f"  api_token_slow_us: {num(prof.api_token_slow_s / US)}",
        f"  source: {json.dumps(src)}",
    ]
    return "\n".join(lines) + "\n"


def override_filename(engine_name: str) -> str:
    return f"engines-{engine_name}-calibrated.yaml"


__all__ = [
    "PARAMS",
    "HostFit",
    "fit_host_costs",
    "host_costs_us",
    "override_filename",
    "override_text",
    "with_host_costs",
]

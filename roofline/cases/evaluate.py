"""One case through its kind's module: levers (speculative decoding, offloading), disaggregated
pools, every request at once through the serving simulator (all at t = 0), or a static batch.
The catalog is passed in (the draft models, links and networks a case names)."""

from __future__ import annotations

from typing import Any

from roofline.cases.all_at_t0 import evaluate_burst
from roofline.cases.case import (
    DISAGG_METRICS,
    METRICS,
    SCALE_OUT,
    Case,
    CaseResult,
    case_deployment,
    case_engine,
    with_case_links,
)
from roofline.cases.disagg import evaluate_disagg
from roofline.cases.levers import evaluate_lever
from roofline.cases.static import base_times, evaluate_static
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch


def evaluate(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    efficiency: Efficiency | None = None,
    engine_name: str | None = None,
    host: Accelerator | None = None,
    *,
    catalog: Any,
) -> CaseResult:
    """Ideal and expected predictions of one case's metric (`catalog`:
    roofline.catalog.load.Catalog, for the draft models, links and networks the case names)."""
    where = f"case '{case.id}'"
    if case.metric not in METRICS:
        raise InputError(
            f"{where}: unknown metric '{case.metric}'", hint=f"use one of {', '.join(METRICS)}"
        )
    if case.speculative is not None or case.offload is not None:
        dep, _ = case_deployment(case)
        eff = efficiency or hw.efficiency
        regime, batch, ideal, expected = evaluate_lever(case, model, hw, dep, eff, host, catalog)
        speed = case.measured / ideal
        err = expected / case.measured - 1.0
        return CaseResult(case, regime, batch, ideal, expected, case.measured, speed, err)
    if case.disagg is None and case.metric in DISAGG_METRICS:
        raise InputError(f"{where}: metric '{case.metric}' needs a disagg: mapping")
    if case.disagg is not None:
        dep, _ = case_deployment(case)
        eff = efficiency or hw.efficiency
        regime, batch, ideal, expected = evaluate_disagg(
            case, model, hw, dep, eff, engine_name or case_engine(case), catalog
        )
        kind = METRICS[case.metric][1]
        speed = ideal / case.measured if kind == "time" else case.measured / ideal
        err = expected / case.measured - 1.0
        return CaseResult(case, regime, batch, ideal, expected, case.measured, speed, err)
    network = catalog.tier(SCALE_OUT)
    if case.burst is not None:
        dep, reps = case_deployment(case)
        linked = with_case_links(dep, hw, network, reps)
        regime, batch, ideal, expected = evaluate_burst(
            case, model, hw, linked, reps, engine_name or case_engine(case)
        )
        speed = case.measured / ideal
        err = expected / case.measured - 1.0
        return CaseResult(case, regime, batch, ideal, expected, case.measured, speed, err)
    return evaluate_static(case, base_times(case, model, hw, network, efficiency, engine_name))

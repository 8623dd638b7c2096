"""`validate` on a user's own benchmark results (roofline/cases/benchfiles.py): parse the options,
serve each run through the serving model (roofline/cases/bench.py), fit the chip's shares and the
engine's host costs with --calibrate DIR (roofline/cases/fit.py) and write the calibration there,
render."""

from pathlib import Path
from typing import Any

import numpy as np

from roofline import render
from roofline.cases.bench import compare, predicted, simulate
from roofline.cases.benchfiles import TOOLS, read_bench_file
from roofline.cases.fit import (
    FIT_METRICS,
    calibration_filename,
    calibration_text,
    fit_runs,
    with_values,
)
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli.app import catalog, note
from roofline.domain.errors import InputError
from roofline.engines.engine import engine
from roofline.engines.scheduler import TOKENIZERS


def validate_bench(
    files: list[Path],
    model: str | None,
    hardware: str | None,
    tp: int,
    pp: int,
    ep: int,
    weights: str,
    kv_dtype: str,
    engine_name: str,
    tokenizer: str,
    calibrate: Path | None,
    fmt: render.RowFmt,
) -> None:
    if model is None or hardware is None:
        raise InputError(
            "a benchmark file needs --model and --hardware (and the layout: --tp, --weights, ...)"
        )
    if tokenizer not in TOKENIZERS:
        raise InputError(f"--tokenizer must be fast or slow, got '{tokenizer}'")
    runs = [run for f in files for run in read_bench_file(f)]
    if calibrate is not None:  # a directory that cannot be written fails before the fit
        try:
            calibrate.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"--calibrate {calibrate}: cannot create ({exc.strerror})") from None
    cat = catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = opt.deployment(weights, kv_dtype, opt.ACT_DTYPE, tp, pp, ep, model=m)
    opt.check_formats(dep, hw)
    eng = engine(engine_name, hw).name
    rows: list[dict[str, Any]] = []
    for run in runs:
        sims = [simulate(run, m, hw, dep, eng, tokenizer, ideal) for ideal in (True, False)]
        rows.extend(compare(run, m, hw, *sims))
    inputs = {
        "files": [str(f) for f in files],
        **convert.deployment_inputs(m, hw, dep),
        **convert.formats_json(dep),
        "engine": eng,
        "tokenizer": tokenizer,
        "runs": [
            {
                "run": r.where,
                "tool": TOOLS[r.tool],
                "arrivals": r.arrivals_text,
                "requests": r.requests,
                "lengths": r.lengths_text,
            }
            for r in runs
        ],
        "model_used": "the serving model under traffic (roofline serve), seed 0",
    }
    result: dict[str, Any] = {"cases": rows, "summary": _summary(rows, "error_expected")}
    if calibrate is not None:
        result["calibration"] = _calibrate(runs, m, hw, dep, eng, tokenizer, calibrate, rows)
        result["summary_calibrated"] = _summary(rows, "error_calibrated")
    doc = render.document("validate", inputs, **result)
    render.emit(doc, fmt, doc["cases"], render.bench_table)


def _calibrate(runs, m, hw, dep, eng, tokenizer, directory: Path, rows) -> dict[str, Any]:
    def sim(trial, run):
        return predicted(simulate(run, m, trial, dep, eng, tokenizer), run)

    fit = fit_runs(runs, hw, eng, sim)
    text = calibration_text(fit, sorted({r.where.split(" line ")[0] for r in runs}))
    path = directory / calibration_filename(eng, hw.id)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"--calibrate {directory}: cannot write {path.name} ({exc.strerror})"
        ) from None
    note(f"wrote {path} (read it with: roofline --catalog {directory} ...)")
    after_hw = with_values(hw, eng, fit.fitted)
    after = {r.where: sim(after_hw, r) for r in runs}
    for row in rows:
        pred = after[row["id"]][row["metric"]]
        row["expected_calibrated"] = pred
        row["error_calibrated"] = pred / row["measured"] - 1.0
    return {
        "engine": fit.engine,
        "hardware": fit.hardware,
        "family": fit.family,
        "parameters": [
            {
                "name": p.name,
                "unit": "share of peak" if p.name in ("compute", "memory") else "us",
                "catalog": p.catalog,
                "fitted": p.fitted,
                "sigma": p.sigma,
                "prior_sigma": p.prior_sigma,
                "identified": p.identified,
            }
            for p in fit.params
        ],
        "fitted_metrics": list(FIT_METRICS),
        "errors": _per_metric(rows),
        "rms_log_error_catalog": fit.rms_log_error_before,
        "rms_log_error_fitted": fit.rms_log_error_after,
        "sigma_data": fit.sigma_data,
        "iterations": fit.iterations,
        "override": str(path),
    }


def _per_metric(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per metric over the runs: the median |error| with the catalog's figures and fitted."""
    out = []
    for name in dict.fromkeys(r["metric"] for r in rows):
        mine = [r for r in rows if r["metric"] == name]
        out.append(
            {
                "metric": name,
                "runs": len(mine),
                "fitted": name in FIT_METRICS,
                "median_abs_error_catalog": float(
                    np.median([abs(r["error_expected"]) for r in mine])
                ),
                "median_abs_error_calibrated": float(
                    np.median([abs(r["error_calibrated"]) for r in mine])
                ),
            }
        )
    return out


def _summary(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    errs = np.abs([r[key] for r in rows])
    return {
        "metrics": len(rows),
        "bound_violations": sum(bool(r["bound_violation"]) for r in rows),
        "median_abs_error": float(np.median(errs)) if len(errs) else None,
        "max_abs_error": float(errs.max()) if len(errs) else None,
    }

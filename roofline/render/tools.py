"""Tables of the batch tools: validate (against measurements), check (CI assertions), sweep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from roofline.render.core import csec, num
from roofline.render.width import (
    NOTE,
    SUB,
    Col,
    N,
    T,
    inputs_header,
    print_rows,
    say,
    split_constant,
    table_output,
    wrap_items,
)


# ---- validate -------------------------------------------------------------------------------
@table_output
def validate_table(doc: Mapping[str, Any], con: Console) -> None:
    rows = [_case_cells(c, c["id"]) for c in doc["cases"]]
    cols = (
        T("case"),
        SUB("metric"),
        N("ideal"),
        N("expected"),
        N("measured"),
        N("meas/\nideal"),
        N("error"),
    )
    print_rows(
        con,
        "Predictions against published measurements (! = faster than the speed of light)",
        cols,
        rows,
    )
    s = doc["summary"]
    regimes = [("all", s), *s["regimes"].items()]
    print_rows(
        con,
        "Summary (error of the expected prediction; meas/ideal = share of the speed of light)",
        (
            T("regime"),
            N("cases"),
            N("bound\nviolations"),
            N("median\n|error|"),
            N("max\n|error|"),
            N("median\nmeas/ideal"),
        ),
        [
            (
                name,
                str(r["cases"]),
                str(r["bound_violations"]),
                f"{r['median_abs_error']:.1%}",
                f"{r['max_abs_error']:.1%}",
                num(r["median_speed_ratio_ideal"]),
            )
            for name, r in regimes
        ],
    )


def _case_cells(c: Mapping[str, Any], name: str) -> list[str]:
    """One predicted case's cells: name, metric, ideal, expected, measured, measured/ideal (!
    where faster than the speed of light) and the expected's signed error."""
    return [
        name,
        c["metric"],
        num(c["ideal"]),
        num(c["expected"]),
        num(c["measured"]),
        f"{c['speed_ratio_ideal']:.2f}" + (" !" if c["bound_violation"] else ""),
        f"{c['error_expected']:+.0%}",
    ]


@table_output
def bench_table(doc: Mapping[str, Any], con: Console) -> None:
    """A user's benchmark runs against the serving model: per run and metric the ideal, the
    expected (and with --calibrate the calibrated expected), the measured, the errors."""
    cal = "calibration" in doc
    runs = doc["inputs"]["runs"]
    label = {r["run"]: f"#{k}" for k, r in enumerate(runs, 1)}
    rows = []
    for c in doc["cases"]:
        row = _case_cells(c, label[c["id"]])
        if cal:
            row += [num(c["expected_calibrated"]), f"{c['error_calibrated']:+.0%}"]
        rows.append(row)
    cols = [T("run"), SUB("metric"), N("ideal"), N("expected"), N("measured")]
    cols += [N("meas/\nideal"), N("error")]
    if cal:
        cols += [N("calibrated"), N("error\ncalibrated")]
    print_rows(
        con,
        "Benchmark runs vs the serving model (! = faster than the speed of light)",
        cols,
        rows,
    )
    for r in runs:
        say(
            con,
            f"{label[r['run']]} {r['run']}: {r['tool']}; arrivals {r['arrivals']}; "
            f"{r['requests']} requests; lengths {r['lengths']}",
        )
    con.print()
    sums = [("catalog", doc["summary"])]
    if cal:
        sums.append(("calibrated", doc["summary_calibrated"]))
    print_rows(
        con,
        "Summary (error = expected / measured - 1)",
        (T("figures"), N("metrics"), N("median\n|error|"), N("max\n|error|")),
        [
            (name, str(s["metrics"]), f"{s['median_abs_error']:.1%}", f"{s['max_abs_error']:.1%}")
            for name, s in sums
        ],
    )
    if cal:
        _calibration_tables(doc["calibration"], con)


def _calibration_tables(c: Mapping[str, Any], con: Console) -> None:
    """--calibrate's fit: each parameter with its catalog value, fitted value, ± (the
    posterior's standard deviation) and whether the runs identified it; the error per metric."""
    print_rows(
        con,
        f"Calibration of {c['hardware']} (family {c['family']}) under {c['engine']}",
        (T("parameter"), N("catalog"), N("fitted"), N("±"), SUB("identified?")),
        [
            (
                p["name"],
                num(p["catalog"]),
                num(p["fitted"]),
                num(p["sigma"]),
                "yes" if p["identified"] else "no: prior",
            )
            for p in c["parameters"]
        ],
    )
    print_rows(
        con,
        "Median |error| per metric over the runs",
        (T("metric"), N("runs"), N("catalog"), N("calibrated"), SUB("fitted?")),
        [
            (
                e["metric"],
                str(e["runs"]),
                f"{e['median_abs_error_catalog']:.1%}",
                f"{e['median_abs_error_calibrated']:.1%}",
                "yes" if e["fitted"] else "no",
            )
            for e in c["errors"]
        ],
    )
    say(
        con,
        "shares as shares of peak, host costs in µs; ± is the posterior's standard deviation; "
        "identified: the runs narrowed the catalog's prior to half its width or less (else the "
        f"fit stays near the catalog's); rms log error {c['rms_log_error_catalog']:.3f} with the "
        f"catalog's figures, {c['rms_log_error_fitted']:.3f} fitted; written to {c['override']}",
    )


# ---- check ----------------------------------------------------------------------------------
_DEPLOYMENT_KEYS = (
    "model",
    "hardware",
    "tp",
    "pp",
    "ep",
    "gpus",
    "weights",
    "kv_dtype",
    "batch",
    "prompt_tokens",
    "output_tokens",
    "context_tokens",
    "workload",  # a workload file's classes in place of the one shape (cli.specs.spec_json)
    "classes",
    "arrivals",  # a log's or trace's lengths in place of the one shape (cli.specs.spec_json)
    "prompt_tokens_mean",
    "output_tokens_mean",
    "engine",
)


@table_output
def check_table(doc: Mapping[str, Any], con: Console) -> None:
    for d in doc.get("deployments", []):
        shown = {k: d[k] for k in _DEPLOYMENT_KEYS if k in d}
        if "arrivals" in shown:  # the log's kind and file name; its path and columns: JSON
            kind, _, path = shown["arrivals"].split(" (")[0].rpartition(" ")
            shown["arrivals"] = f"{kind} {path.rsplit('/', 1)[-1]}".strip()
        inputs_header(con, shown, label=d.get("name", "deployment"))
    rows = [
        (r["deployment"], r["name"], "ok" if r["ok"] else "FAIL", r["detail"])
        for r in doc["checks"]
    ]
    verdict = "all assertions hold" if doc["ok"] else "some assertions FAIL"
    print_rows(
        con,
        f"roofline check: {verdict}",
        (T("deployment"), T("check"), T("result"), NOTE("detail")),
        rows,
    )


# ---- sweep ----------------------------------------------------------------------------------
@table_output
def sweep_table(doc: Mapping[str, Any], con: Console, limit: int = 60) -> None:
    pts = doc["points"]
    rows: Sequence[Sequence[str]] = [
        (
            p["model"],
            p["hardware"],
            str(p["tp"]),
            p["weights"],
            p["kv_dtype"],
            f"{p['batch']:,}",
            f"{p['prompt_tokens']:,}",
            f"{p['output_tokens']:,}",
            csec(p["batch_prefill_s"]),
            csec(p["tpot_s"]),
            "—" if p["output_tokens_per_s"] is None else f"{p['output_tokens_per_s']:,.0f}",
            num(p["fits"]) if not p.get("error") else "error",
        )
        for p in pts[:limit]
    ]
    cols: Sequence[Col] = (
        T("model"),
        T("hardware"),
        N("TP"),
        T("weights"),
        T("KV"),
        N("batch"),
        N("prompt"),
        N("output"),
        N("batch\nprefill"),
        N("TPOT"),
        N("tok/s"),
        T("fits"),
    )
    more = (
        f" (first {limit} of {len(pts):,}; use --format jsonl or csv)" if len(pts) > limit else ""
    )
    same, cols, rows = split_constant(cols, rows)
    if same:  # printed once, never dropped (no number hidden)
        wrap_items(con, ["same in every row:", *same], sep=" ")
    print_rows(con, f"Sweep, expected times{more}", cols, rows)
    for error in dict.fromkeys(p["error"] for p in pts if p.get("error")):
        say(con, f"error: {error}")

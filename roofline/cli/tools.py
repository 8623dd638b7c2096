"""Commands for CI, pipes and people: `check` (capacity and SLO assertions with exit codes),
`sweep` (a vectorized grid, one row per point), `plot` (the roofline chart) and `validate`
(predictions against published measurements)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from roofline import render
from roofline.checks import Limits, TrafficLimits, run_checks, run_traffic_checks
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded, note
from roofline.errors import InputError, RooflineError
from roofline.memory import engine
from roofline.phases import decode, prefill
from roofline.plot import check_output, save_roofline, text_roofline
from roofline.precision import kv_format, weight_format
from roofline.sweep import COLUMNS, Grid, chunk_count, sweep_chunks
from roofline.units import parse_seconds
from roofline.userfiles import is_serving_case_file, load_cases, load_serving_cases, load_spec
from roofline.validate import evaluate, summarize


def _evaluate_spec(d: dict[str, Any], ideal: bool) -> dict[str, Any]:
    cat = catalog()
    where = f"deployment '{d['name']}'"
    try:
        m, hw = cat.model(d["model"]), cat.accelerator(d["hardware"])
        dep = opt.deployment(
            d.get("weights", opt.WEIGHTS),
            d.get("kv_dtype", "bf16"),
            "bf16",
            d.get("tp", 1),
            d.get("pp", 1),
            d.get("ep", 1),
            None,
            None,
            model=m,
        )
        _, replicas = opt.replicas(dep, d.get("gpus"), d.get("dp", 1))
        prompt = opt.tokens(str(d.get("prompt", "1k")), "prompt", 0)
        output = opt.tokens(str(d.get("output", "1k")), "output", 1)
        context = opt.tokens(str(d.get("context", prompt + output)), "context", 1)
        c = d["checks"]
        limits = Limits(
            min_batch=c.get("min_batch"),
            min_concurrency=c.get("min_concurrency"),
            max_tpot_s=None
            if c.get("max_tpot") is None
            else parse_seconds(str(c["max_tpot"]), "max_tpot"),
            max_ttft_s=None
            if c.get("max_ttft") is None
            else parse_seconds(str(c["max_ttft"]), "max_ttft"),
            min_throughput=c.get("min_throughput"),
            fits=bool(c.get("fits", False)),
        )
        traffic = _traffic_limits(d)
        if not (
            traffic is not None
            or limits.fits
            or any(
                x is not None
                for x in (
                    limits.min_batch,
                    limits.min_concurrency,
                    limits.max_tpot_s,
                    limits.max_ttft_s,
                    limits.min_throughput,
                )
            )
        ):
            raise InputError(
                "no assertion given (--fits, --min-batch, --max-tpot, --max-ttft, --min-throughput)"
            )
        if limits.min_batch is not None and limits.min_batch < 1:
            raise InputError(f"min_batch must be at least 1, got {limits.min_batch}")
        batch = d["batch"] if d.get("batch") is not None else (limits.min_batch or 1)
        if not 1 <= batch <= 10**7:
            raise InputError(f"batch must be from 1 to 1e7, got {batch}")
        memory = d.get("memory")
        cap = opt.capacity(hw, None if memory is None else str(memory))
        eng = engine(d.get("engine", "auto"), hw)
    except RooflineError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None
    checks = run_checks(
        m,
        hw,
        dep,
        eng,
        batch=batch,
        prompt=prompt,
        output=output,
        context=context,
        limits=limits,
        replicas=replicas,
        capacity_bytes=cap,
        ideal=ideal,
    )
    if traffic is not None:
        checks += run_traffic_checks(
            m,
            hw,
            dep,
            eng,
            prompt=prompt,
            output=output,
            limits=traffic,
            replicas=replicas,
            capacity_bytes=cap,
            ideal=ideal,
            requests=d.get("requests") or 1000,
            seed=d.get("seed", 0),
        )
    return {
        "name": d["name"],
        "model": m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "batch": batch,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "context_tokens": context,
        "ok": all(c.ok for c in checks),
        "checks": [
            {
                "name": c.name,
                "ok": c.ok,
                "limit": c.limit,
                "value": c.value,
                "unit": c.unit,
                "detail": c.detail,
            }
            for c in checks
        ],
    }


def _traffic_limits(d: dict[str, Any]) -> TrafficLimits | None:
    """--rate with --max-ttft-p99, --max-tpot-p99, --min-goodput (spec keys of the same names)."""
    c = d["checks"]
    keys = ("max_ttft_p99", "max_tpot_p99", "min_goodput")
    given = {k: c.get(k) for k in keys if c.get(k) is not None}
    if d.get("rate") is None:
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise InputError(f"{flags}: requires --rate")
        return None
    rates = topt.rates(str(d["rate"]))
    if len(rates) != 1:
        raise InputError("check takes one --rate")
    if not given:
        raise InputError("--rate needs --max-ttft-p99, --max-tpot-p99 or --min-goodput")
    g = given.get("min_goodput")
    if g is not None and not (isinstance(g, int | float) and g >= 0):
        raise InputError(f"--min-goodput must be a rate >= 0, got {g}")
    return TrafficLimits(
        rates[0],
        parse_seconds(given["max_ttft_p99"], "--max-ttft-p99") if "max_ttft_p99" in given else None,
        parse_seconds(given["max_tpot_p99"], "--max-tpot-p99") if "max_tpot_p99" in given else None,
        g,
    )


@app.command()
@guarded
def check(
    model: Annotated[str | None, typer.Argument(help="model id (or use --spec)")] = None,
    hardware: Annotated[str | None, typer.Argument(help="accelerator id")] = None,
    spec: Annotated[
        str | None, typer.Option(help="YAML/JSON file of one or many deployments ('-' for stdin)")
    ] = None,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    batch: opt.BatchOrAuto = None,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    min_batch: Annotated[int | None, typer.Option(help="assert max batch ≥ N at --context")] = None,
    min_concurrency: Annotated[
        int | None,
        typer.Option(help="assert sequences in flight over all replicas ≥ N at --context"),
    ] = None,
    max_tpot: Annotated[str | None, typer.Option(help="assert TPOT ≤, e.g. 50ms")] = None,
    max_ttft: Annotated[str | None, typer.Option(help="assert TTFT ≤, e.g. 2s")] = None,
    min_throughput: Annotated[
        float | None, typer.Option(help="assert output tokens/s (all replicas) ≥")
    ] = None,
    fits: Annotated[bool, typer.Option("--fits", help="assert weights + batch KV fit")] = False,
    rate: topt.Rate = None,
    requests: opt.Requests = None,
    seed: opt.Seed = 0,
    max_ttft_p99: Annotated[
        str | None, typer.Option(help="under --rate: assert p99 TTFT ≤, e.g. 2s")
    ] = None,
    max_tpot_p99: Annotated[
        str | None, typer.Option(help="under --rate: assert p99 TPOT ≤, e.g. 50ms")
    ] = None,
    min_goodput: Annotated[
        float | None, typer.Option(help="under --rate: assert goodput ≥ requests/s")
    ] = None,
    ideal: opt.Ideal = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="report, never exit 1")] = False,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Capacity and SLO assertions for CI, with exit codes.

    Exit 0 when all hold, 1 when any fails, 2 on bad input; --batch defaults to --min-batch (or 1).
    Example: roofline check llama-3.1-70b h100 --tp 4 --weights fp8 --context 32k
    --min-batch 64 --max-tpot 50ms --max-ttft 2s"""
    if spec is not None:
        if model or hardware:
            raise InputError("give MODEL HARDWARE or --spec, not both")
        deployments = load_spec(spec)
    else:
        if not (model and hardware):
            raise InputError("give MODEL HARDWARE, or --spec FILE")
        d: dict[str, Any] = {
            "name": f"{model} on {hardware}",
            "model": model,
            "hardware": hardware,
            "tp": tp,
            "pp": pp,
            "ep": ep,
            "gpus": gpus,
            "dp": dp,
            "weights": weights,
            "kv_dtype": kv_dtype,
            "engine": engine_name,
            "prompt": prompt,
            "output": output,
            "batch": batch,
            "checks": {
                "min_batch": min_batch,
                "min_concurrency": min_concurrency,
                "max_tpot": max_tpot,
                "max_ttft": max_ttft,
                "min_throughput": min_throughput,
                "fits": fits,
                "max_ttft_p99": max_ttft_p99,
                "max_tpot_p99": max_tpot_p99,
                "min_goodput": min_goodput,
            },
        }
        if rate is not None:
            d["rate"] = rate
            d["requests"] = requests
            d["seed"] = seed
        if context is not None:
            d["context"] = context
        if memory is not None:
            d["memory"] = memory
        deployments = [d]
    results = [_evaluate_spec(d, ideal) for d in deployments]
    ok = all(r["ok"] for r in results)
    rows = [{"deployment": r["name"], **c} for r in results for c in r["checks"]]
    doc = render.document(
        "check", {"spec": spec, "ideal": ideal}, ok=ok, deployments=results, checks=rows
    )
    render.emit(doc, fmt, rows, render.check_table)
    if not ok:
        failed = [f"{r['deployment']}: {r['name']}" for r in rows if not r["ok"]]
        render.stderr_console().print(f"check failed: {', '.join(failed)}", markup=False)
        if not exit_zero:
            raise typer.Exit(1)


def _auto_formats(models: list[Any]) -> list[str]:
    return sorted({opt.resolve_weights("auto", m) for m in models})


def _names(spec: str) -> list[str]:
    return [x.strip() for x in spec.split(",") if x.strip()]


class SweepFmt(str, Enum):
    """Row formats, plus parquet (to a file, through the optional `parquet` extra)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"
    parquet = "parquet"


@app.command()
@guarded
def sweep(
    model: Annotated[str, typer.Option(help="model ids, comma-separated")] = "llama-3.1-8b",
    hardware: Annotated[str, typer.Option(help="accelerator ids, comma-separated")] = "h100",
    weights: Annotated[
        str, typer.Option("--weights", help="weight formats, comma-separated (auto: as shipped)")
    ] = opt.WEIGHTS,
    kv_dtype: Annotated[
        str, typer.Option("--kv-dtype", help="KV formats, comma-separated")
    ] = "bf16",
    tp: Annotated[str, typer.Option("--tp", help="tensor-parallel degrees: 1,2,4,8")] = "1",
    batch: Annotated[
        str, typer.Option("--batch", help="sequences per replica: 1,8,64 | 1..1024 | 8..256:8")
    ] = str(opt.BATCH),
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    engine_name: opt.Engine = opt.ENGINE,
    price: topt.Price = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="write rows to FILE (needed for parquet)"),
    ] = None,
    fmt: Annotated[
        SweepFmt,
        typer.Option("--format", "-f", help="table, json, jsonl, csv, markdown or parquet (-o)"),
    ] = SweepFmt.jsonl,
) -> None:
    """A grid of analyze summaries, one row per point.

    Every option takes a comma list or a range (1..1024, 8..256:8): model, hardware, formats, TP,
    batch, prompt and output through the vectorized core; expected and ideal per point. CSV,
    JSONL and Parquet stream column-wise in chunks (up to 10^7 points in flat memory); CSV writes
    per-point floats to 7 significant digits (%.7g), JSONL and Parquet exactly.
    Example: roofline sweep --batch 1,8,64 --hardware h100,h200,mi300x --weights bf16,fp8,int4"""
    if fmt is SweepFmt.parquet:
        if out is None:
            raise InputError("--format parquet writes a file: give -o FILE.parquet")
        if not render.parquet_available():
            raise InputError(render.PARQUET_MISSING)
    if out is not None and fmt not in (SweepFmt.csv, SweepFmt.jsonl, SweepFmt.parquet):
        raise InputError("-o/--out takes --format csv, jsonl or parquet")
    cat = catalog()

    def count(text: str) -> int:
        return opt.tokens(text, "a token count", 0)

    models = [cat.model(x) for x in _names(model)]
    # auto: the formats the models' checkpoints ship in (bf16 where none is recorded)
    formats = [f for x in _names(weights) for f in ([x] if x != "auto" else _auto_formats(models))]
    grid = Grid(
        models=models,
        hardware=[cat.accelerator(x) for x in _names(hardware)],
        weights=list(dict.fromkeys(weight_format(x).name for x in formats)),
        kv_dtypes=[kv_format(x).name for x in _names(kv_dtype)],
        tps=opt.int_list(tp, "--tp", int),
        batches=opt.int_list(batch, "--batch", count),
        prompts=opt.int_list(prompt, "--prompt", count),
        outputs=opt.int_list(output, "--output", count),
    )
    if min(grid.batches) < 1 or min(grid.outputs) < 1 or min(grid.tps) < 1:
        raise InputError("--batch, --output and --tp values must be at least 1")
    if grid.points > 10_000_000:
        raise InputError(f"{grid.points:,} points is more than the 10,000,000 a sweep allows")
    engine(engine_name)  # an unknown name fails before any work
    usd = {h: (p.usd_per_gpu_hour if p else None) for h, p in topt.price_table(cat, price).items()}
    names = (*COLUMNS, "cost_per_million_output_tokens")
    chunks = sweep_chunks(grid, engine_name, usd_per_gpu_hour=usd)
    if grid.points > 200_000:
        chunks = render.progress_bar("sweep", chunk_count(grid))(chunks)
    if fmt in (SweepFmt.csv, SweepFmt.jsonl, SweepFmt.parquet):
        if fmt is SweepFmt.parquet:
            render.write_parquet(chunks, names, str(out))
        elif out is None:
            render.write_columns(chunks, names, fmt.value, sys.stdout)
        else:
            with open(out, "w", encoding="utf-8", newline="") as f:
                render.write_columns(chunks, names, fmt.value, f)
        if out is not None:
            note(f"wrote {grid.points:,} rows to {out}")
        return
    rows = [
        dict(zip(names, values, strict=True))
        for chunk in chunks
        for values in _chunk_rows(chunk, names)
    ]
    inputs = {
        "engine": engine_name,
        "points": grid.points,
        "efficiency": "expected columns use each accelerator's family efficiencies",
    }
    # the whole document is only built where it is printed (json) or drawn (table)
    whole = fmt in (SweepFmt.json, SweepFmt.table)
    doc = render.document("sweep", inputs, points=rows) if whole else {}
    render.emit(doc, render.RowFmt(fmt.value), rows, render.sweep_table)


def _chunk_rows(chunk: dict[str, Any], names: tuple[str, ...]) -> list[tuple]:
    """A chunk of columns as rows of Python values (NaN as None), for the row-by-row formats."""
    n = chunk["batch"].size
    cols = []
    for name in names:
        v = chunk[name]
        if np.ndim(v) == 0:
            cols.append([v.item() if isinstance(v, np.generic) else v] * n)
        else:
            cols.append(render.to_jsonable(np.asarray(v).tolist()))
    return list(zip(*cols, strict=True))


@app.command()
@guarded
def plot(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    batch: opt.Batch = opt.BATCH,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="write the chart to FILE.svg|png|pdf (roofline[plot])"),
    ] = None,
    width: Annotated[int, typer.Option(help="terminal chart width in characters")] = 80,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """The roofline chart with the workload's ops on it.

    Attainable FLOP/s against intensity, the bandwidth slope and a compute roof per dtype, the
    ridge; the decode step is at --context (default prompt + output). A terminal chart, the
    chart's data with --format json, or an SVG/PNG/PDF with -o.
    Example: roofline plot llama-3.1-8b h100 --batch 8 --prompt 4k -o roofline.svg"""
    if out is not None:
        check_output(out)
    cat = catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = opt.deployment(weights, kv_dtype, opt.ACT_DTYPE, tp, pp, ep, model=m)
    s, o, ctx = opt.workload(prompt, output, context)
    s = max(s, 1)
    batch = opt.batch(batch)
    if not 30 <= width <= 400:
        raise InputError(f"--width must be from 30 to 400, got {width}")
    p, d = prefill(m, hw, dep, batch, s), decode(m, hw, dep, batch, ctx)
    doc = render.document(
        "plot",
        {
            "model": m.id,
            "hardware": hw.id,
            "batch": batch,
            "prompt_tokens": s,
            "output_tokens": o,
            "context_tokens": ctx,
            "compute_dtype": d.compute_dtype,
            "ridge_flops_per_byte": d.ridge_flops_per_byte,
        },
        hardware=convert.hardware_json(hw),
        prefill=convert.phase_json(p),
        decode=convert.phase_json(d),
    )
    if out is not None:
        save_roofline(doc, out)
        note(f"wrote {out}")
        return
    if fmt is opt.Fmt.json:
        render.emit_json(doc)
        return
    sys.stdout.write(text_roofline(doc, width=width - 28) + "\n")


# ---- validate -------------------------------------------------------------------------------
@app.command()
@guarded
def validate(
    cases: Annotated[
        Path, typer.Argument(help="cases YAML (schema of validation/public_cases.yaml)")
    ],
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Predictions against published measurements.

    Ideal, expected, measured, the speed ratio and the error per case, with a summary.
    Example: roofline validate validation/public_cases.yaml --format json | jq .summary"""
    cat = catalog()
    if is_serving_case_file(cases):
        from roofline.serving.validation import run_serving_cases, summary

        rows = run_serving_cases(load_serving_cases(cases), cat)
        doc = render.document(
            "validate",
            {"cases": str(cases), "model": "the serving model under traffic (roofline serve)"},
            cases=rows,
            summary=summary(rows),
        )
        render.emit(doc, fmt, doc["cases"], render.validate_table)
        return
    results = []
    for case in load_cases(cases):
        try:
            m, hw = cat.model(case.model), cat.accelerator(case.hardware)
            host = cat.accelerator(case.offload["host"]) if case.offload else None
        except RooflineError as exc:
            raise InputError(f"case '{case.id}': {exc}", hint=exc.hint) from None
        results.append(evaluate(case, m, hw, host=host))
    rows = [
        {
            "id": r.case.id,
            "model": r.case.model,
            "hardware": r.case.hardware,
            "metric": r.case.metric,
            "regime": r.regime,
            "batch": r.batch,
            "ideal": r.ideal,
            "expected": r.expected,
            "measured": r.measured,
            "speed_ratio_ideal": r.speed_ratio_ideal,
            "error_expected": r.error_expected,
            "bound_violation": r.bound_violation,
            "efficiency_source": cat.accelerator(r.case.hardware).efficiency.source,
        }
        for r in results
    ]
    doc = render.document("validate", {"cases": str(cases)}, cases=rows, summary=summarize(results))
    render.emit(doc, fmt, doc["cases"], render.validate_table)

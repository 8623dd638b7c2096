"""Commands for pipes and people: `sweep` (a vectorized grid, one row per point), `plot` (the
roofline chart) and `validate` (predictions against published measurements). `check` is in
cli/check.py."""

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from roofline import render
from roofline.cases.case import summarize
from roofline.cases.casefiles import is_serving_case_file, load_cases, load_serving_cases
from roofline.cases.evaluate import evaluate
from roofline.cli import convert
from roofline.cli import groups as grp
from roofline.cli import options as opt
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded_stream, note
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.precision import kv_format, weight_format
from roofline.engines.engine import engine
from roofline.render.charts import check_output, save_roofline, text_roofline
from roofline.step.phases import decode, prefill
from roofline.step.sweep import COLUMNS, Grid, chunk_count, sweep_chunks


def _auto_formats(models: list[Any]) -> list[str]:
    return sorted({opt.resolve_weights("auto", m) for m in models})


def _names(text: str, what: str = "--model") -> list[str]:
    return opt.comma_items(text, what)


class SweepFmt(str, Enum):
    """Row formats, plus parquet (to a file, through the optional `parquet` extra)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"
    parquet = "parquet"


@app.command()
@guarded_stream
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
    grid = _grid(cat, model, hardware, weights, kv_dtype, tp, batch, prompt, output)
    engine(engine_name)  # an unknown name fails before any work
    usd = {h: (p.usd_per_gpu_hour if p else None) for h, p in topt.price_table(cat, price).items()}
    names = (*COLUMNS, "cost_per_million_output_tokens")
    chunks = sweep_chunks(grid, engine_name, usd_per_gpu_hour=usd)
    if grid.points > 200_000:
        chunks = render.progress_bar("sweep", chunk_count(grid))(chunks)
    if fmt in (SweepFmt.csv, SweepFmt.jsonl, SweepFmt.parquet):
        _write_stream(chunks, names, fmt, out, grid.points)
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


def _grid(cat, model, hardware, weights, kv_dtype, tp, batch, prompt, output) -> Grid:
    """The sweep's axes from the comma lists and ranges of its options, checked."""

    def count(text: str) -> int:
        return opt.tokens(text, "a token count", 0)

    models = [cat.model(x) for x in _names(model)]
    # auto: the formats the models' checkpoints ship in (bf16 where none is recorded)
    formats = [
        f
        for x in _names(weights, "--weights")
        for f in ([x] if x != "auto" else _auto_formats(models))
    ]
    grid = Grid(
        models=models,
        hardware=[cat.accelerator(x) for x in _names(hardware, "--hardware")],
        weights=list(dict.fromkeys(weight_format(x).name for x in formats)),
        kv_dtypes=[kv_format(x).name for x in _names(kv_dtype, "--kv-dtype")],
        tps=opt.int_list(tp, "--tp", int),
        batches=opt.int_list(batch, "--batch", count),
        prompts=opt.int_list(prompt, "--prompt", count),
        outputs=opt.int_list(output, "--output", count),
    )
    if min(*grid.batches, *grid.prompts, *grid.outputs, *grid.tps) < 1:
        raise InputError("--batch, --prompt, --output and --tp values must be at least 1")
    for m in grid.models:
        opt.positions(m, max(grid.prompts) + max(grid.outputs))
    if grid.points > 10_000_000:
        raise InputError(f"{grid.points:,} points is more than the 10,000,000 a sweep allows")
    return grid


def _write_stream(chunks, names: tuple[str, ...], fmt, out, points: int) -> None:
    """CSV, JSONL or Parquet, column-wise chunk by chunk, to stdout or -o FILE."""
    if fmt is SweepFmt.parquet:
        render.write_parquet(chunks, names, str(out))
    elif out is None:
        render.write_columns(chunks, names, fmt.value, sys.stdout)
    else:
        with open(out, "w", encoding="utf-8", newline="") as f:
            render.write_columns(chunks, names, fmt.value, f)
    if out is not None:
        note(f"wrote {points:,} rows to {out}")


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


@grp.command()
def plot(
    pl: grp.SimplePlacement,
    sb: grp.StaticBatch = grp.STATIC,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="write the chart to FILE.svg|png|pdf (roofline[plot])"),
    ] = None,
    width: Annotated[
        int | None,
        typer.Option(
            help="terminal chart width in characters (default: 80, or a narrower terminal's)"
        ),
    ] = None,
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
    m, hw = pl.tg.load(cat)
    dep = pl.deployment(m)
    batch, s, o, ctx = sb.parse(m)
    s = max(s, 1)
    if width is None:
        from roofline.render.core import console_width

        width = min(console_width(), 80)
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
        if fmt is not opt.Fmt.json:  # the chart's data still reaches a pipe (as cliff, edge)
            return
    if fmt is opt.Fmt.json:
        render.emit_json(doc)
        return
    sys.stdout.write(text_roofline(doc, width=width - 28, cols=width) + "\n")


# ---- validate -------------------------------------------------------------------------------
_BENCH_ONLY = "--model, --hardware and --calibrate apply to benchmark files"


@grp.command()
def validate(
    cases: Annotated[
        list[Path],
        typer.Argument(
            help="cases YAML (schema of validation/public_cases.yaml), or benchmark results "
            "(vLLM bench serve JSON, SGLang bench_serving JSONL, genai-perf profile export JSON; "
            "by content)",
            show_default=False,
        ),
    ],
    model: Annotated[
        str | None, typer.Option("--model", help="model id of the benchmark files' runs")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", help="accelerator id of the benchmark files' runs")
    ] = None,
    dg: grp.Degrees = grp.DEGREES,
    fm: grp.Formats = grp.FORMATS,
    engine_name: opt.Engine = opt.ENGINE,
    tokenizer: Annotated[
        str, typer.Option("--tokenizer", help="the API server's detokenizer: fast or slow")
    ] = "fast",
    calibrate: Annotated[
        str | None,
        typer.Option(
            "--calibrate",
            help="fit the chip's kernel shares and the engine's host costs to the benchmark "
            "runs and write them to this user catalog directory (read with --catalog DIR)",
        ),
    ] = None,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Predictions against published measurements.

    Ideal, expected, measured, the speed ratio and the error per case, with a summary. Given
    your own benchmark results instead (vLLM bench serve, SGLang bench_serving, genai-perf;
    with --model, --hardware and the layout), the serving model serves each run's rate and
    lengths and the error per metric is printed; --calibrate DIR fits the chip's shares and the
    engine's host costs on it.
    Example: roofline validate validation/public_cases.yaml --format json | jq .summary"""
    from roofline.cases.benchfiles import is_bench_file

    bench = [is_bench_file(f) for f in cases]
    if any(bench):
        if not all(bench):
            bad = cases[bench.index(False)]
            raise InputError(
                f"{bad}: not a vLLM, SGLang or genai-perf result (no key 'mean_ttft_ms' or "
                "'time_to_first_token'); a cases YAML file is validated on its own"
            )
        from roofline.cli.benchcmd import validate_bench

        validate_bench(
            cases,
            model,
            hardware,
            dg.tp,
            dg.pp,
            dg.ep,
            fm.weights,
            fm.kv_dtype,
            engine_name,
            tokenizer,
            Path(calibrate) if calibrate is not None else None,
            fmt,
        )
        return
    if model is not None or hardware is not None or calibrate is not None:
        raise InputError(
            f"{cases[0]}: not a vLLM, SGLang or genai-perf result (no key 'mean_ttft_ms' or "
            f"'time_to_first_token'); {_BENCH_ONLY}"
        )
    if len(cases) != 1:
        raise InputError("give one cases YAML file (benchmark result files may be several)")
    _validate_cases(cases[0], fmt)


def _validate_cases(cases: Path, fmt: render.RowFmt) -> None:
    """The published cases of one YAML file (step cases or serving cases under traffic)."""
    cat = catalog()
    if is_serving_case_file(cases):
        from roofline.cases.serving import run_serving_cases, summary

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
        results.append(evaluate(case, m, hw, host=host, catalog=cat))
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

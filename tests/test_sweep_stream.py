"""Column-wise sweep output (functional, not timing): the streamed JSONL equals what the
row-by-row writer (render.emit) prints for the same points, and the streamed CSV equals it once
per-point floats are written as '%.7g' (the CSV's documented precision); chunk boundaries change
nothing, the chunks hold the core's per-point values, and Parquet round-trips when pyarrow is
installed. The numpy formatters themselves are checked against Python's own formatting."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math

import numpy as np
import pytest

from roofline import render
from roofline.step.ops import Deployment
from roofline.step.phases import request
from roofline.step.sweep import COLUMNS, Grid, chunk_count, run_sweep, sweep_chunks

NAMES = (*COLUMNS, "cost_per_million_output_tokens")


def _g7(values: list) -> list:
    """Per-point floats as the CSV writes them: '%.7g', NaN/inf as missing."""
    return [("%.7g" % v) if math.isfinite(v) else None for v in values]  # noqa: UP031


def _rows(chunks, names, g7: bool = False):
    """The row-by-row form: one dict of Python values per point (per-point floats as '%.7g'
    text when `g7`)."""
    rows = []
    for c in chunks:
        n = next(np.size(v) for v in c.values() if np.ndim(v))
        cols = [
            [c[k].item() if isinstance(c[k], np.generic) else c[k]] * n
            if np.ndim(c[k]) == 0
            else _g7(np.asarray(c[k]).tolist())
            if g7 and np.asarray(c[k]).dtype.kind == "f"
            else np.asarray(c[k]).tolist()
            for k in names
        ]
        rows += [dict(zip(names, r, strict=True)) for r in zip(*cols, strict=True)]
    return rows


def _row_by_row(rows, fmt: render.RowFmt) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        render.emit({}, fmt, rows, lambda doc: None)
    return out.getvalue()


def _streamed(chunks, names, fmt: str) -> str:
    out = io.StringIO()
    render.write_columns(chunks, names, fmt, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def grid(cat):
    return Grid(
        [cat.model("llama-3.1-8b"), cat.model("llama-3.1-70b")],
        [cat.accelerator("h100"), cat.accelerator("a100")],
        ["bf16", "fp8"],
        ["bf16"],
        [1, 4],
        [1, 7, 64],
        [0, 1000, 4096],
        [1, 300],
    )


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_streamed_equals_row_by_row(grid, fmt):
    # a price for one accelerator only: the other's cost column is empty (NaN -> '' / null)
    usd = {grid.hardware[0].id: 2.5}
    chunks = list(sweep_chunks(grid, "vllm", chunk_points=5, usd_per_gpu_hour=usd))
    assert len(chunks) == chunk_count(grid, 5)
    rows = _rows(chunks, NAMES, g7=fmt == "csv")
    assert len(rows) == grid.points
    assert _streamed(chunks, NAMES, fmt) == _row_by_row(rows, render.RowFmt(fmt))


def test_chunk_size_changes_nothing(grid):
    small = _streamed(sweep_chunks(grid, "vllm", chunk_points=7), COLUMNS, "csv")
    whole = _streamed(sweep_chunks(grid, "vllm", chunk_points=10**6), COLUMNS, "csv")
    assert small == whole
    assert small.count("\n") == grid.points + 1  # a header and one line per point


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_awkward_values_match_the_row_writer(fmt):
    """Quotes, commas, NaN/inf, booleans, ints, a '%' in a shared value, and a one-point chunk."""
    chunks = [
        {
            "label": 'a,"b"',
            "pct": "50%",
            "x": np.array([1.5, math.nan, -math.inf, 1e16, 1e-7]),
            "ok": np.array([True, False, True, False, True]),
            "n": np.array([1, 2, 3, -4, 10**12]),
            "kind": np.array(["memory", "compute", "memory", "x\ny", "memory"]),
            "shared": 2.0,
        },
        {
            "label": "plain",
            "pct": "1",
            "x": np.array([0.1]),
            "ok": np.array([False]),
            "n": np.array([0]),
            "kind": np.array(["compute"]),
            "shared": math.nan,
        },
    ]
    names = ("label", "pct", "x", "ok", "n", "kind", "shared")
    expected = _row_by_row(_rows(chunks, names, g7=fmt == "csv"), render.RowFmt(fmt))
    assert _streamed(chunks, names, fmt) == expected
    if fmt == "csv":  # and the csv module reads back what went in
        back = list(csv.DictReader(io.StringIO(expected)))
        assert back[0]["label"] == 'a,"b"' and back[3]["kind"] == "x\ny" and back[1]["x"] == ""
    else:
        assert json.loads(expected.splitlines()[1])["x"] is None


def test_chunks_hold_the_core_per_point(grid, cat):
    """Every point equals a scalar call of the core, in batch-major, prompt, output order."""
    sub = Grid(grid.models[:1], grid.hardware[:1], ["bf16"], ["bf16"], [1], [1, 64], [0, 4096], [1])
    cols = run_sweep(sub, "vllm")
    order = [(b, s, o) for b in sub.batches for s in sub.prompts for o in sub.outputs]
    got = zip(cols["batch"], cols["prompt_tokens"], cols["output_tokens"], strict=True)
    assert list(got) == order
    for k, (b, s, o) in enumerate(order):
        r = request(sub.models[0], sub.hardware[0], Deployment(), b, s, o)
        assert cols["tpot_s"][k] == pytest.approx(float(r.expected.tpot_s), rel=1e-12)
        prefill_s = float(r.expected.batch_prefill_s)
        assert cols["batch_prefill_s"][k] == pytest.approx(prefill_s, rel=1e-12)


def test_cli_csv_matches_jsonl(run):
    args = ["sweep", "--batch", "1..40:1", "--prompt", "1,2k", "--hardware", "h100,b200"]
    csv_rows = list(csv.DictReader(io.StringIO(run(*args, "-f", "csv").stdout)))
    jsonl = [json.loads(line) for line in run(*args, "-f", "jsonl").stdout.splitlines()]
    assert len(csv_rows) == len(jsonl) == 40 * 2 * 2
    for c, j in zip(csv_rows, jsonl, strict=True):
        assert set(c) == set(NAMES) == set(j)
        # 7 significant digits: within half a unit of the 7th, at most 5e-7 relative
        assert float(c["tpot_s"]) == pytest.approx(j["tpot_s"], rel=5e-7, abs=0)
        assert int(c["batch"]) == j["batch"] and c["max_batch"] == str(j["max_batch"])


def test_cli_out_file(run, tmp_path):
    out = tmp_path / "grid.csv"
    r = run("sweep", "--batch", "1,2,3", "-f", "csv", "-o", str(out))
    assert r.code == 0 and r.stdout == "" and "wrote 3 rows" in r.stderr
    assert out.read_text().count("\n") == 4
    bad = run("sweep", "--batch", "1,2", "-f", "table", "-o", str(out))
    assert bad.code == 2 and "-o/--out" in bad.stderr


def test_parquet_needs_a_file_and_pyarrow(run, monkeypatch, tmp_path):
    r = run("sweep", "-f", "parquet")
    assert r.code == 2 and "-o FILE" in r.stderr
    monkeypatch.setattr(render, "parquet_available", lambda: False)
    r = run("sweep", "-f", "parquet", "-o", str(tmp_path / "x.parquet"))
    assert r.code == 2 and "roofline[parquet]" in r.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_parquet_round_trips(run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "grid.parquet"
    args = ["sweep", "--batch", "1..30:1", "--prompt", "1k,8k", "--hardware", "h100,a100"]
    r = run(*args, "-f", "parquet", "-o", str(out))
    assert r.code == 0, r.stderr
    table = pq.read_table(out).to_pylist()
    jsonl = [json.loads(line) for line in run(*args, "-f", "jsonl").stdout.splitlines()]
    assert len(table) == len(jsonl) == 120
    assert table == jsonl  # same columns, same values (NaN as null), same order

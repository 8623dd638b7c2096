"""Tables never hide a number: every table-producing command, rendered at 60, 80 and 120
columns on a non-terminal (the width Rich assumes for pipes, files and CI logs is 80), prints
no elided cell (`…`), no line wider than the console, and the figures a reader came for."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from roofline.render import console_width
from roofline.render.width import NOTE, SUB, N, T, print_rows

WIDTHS = (60, 80, 120)

# One representative invocation per table variant; small --requests keeps `cliff` fast.
COMMANDS = [
    ["hardware", "list"],
    ["hardware", "show", "h100"],
    ["hardware", "tiers"],
    ["hardware", "families"],
    ["models", "list"],
    ["models", "show", "deepseek-r1"],
    ["kv", "llama-3.1-70b", "--context", "32k", "--batch", "8"],
    ["kv", "gemma-3-27b", "--kv-budget", "4k"],
    ["kv", "llama-3.1-70b", "--compare"],
    ["kv", "llama-3.1-70b", "--compare", "--baseline", "llama-3.1-8b"],
    ["kv", "llama-3.1-70b", "--allocation", "paged", "--lengths", "100,200"],
    ["analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--output", "512"],
    ["analyze", "deepseek-r1", "h200", "--tp", "8", "--ep", "8", "--weights", "fp8"],
    ["capacity", "llama-3.1-405b", "h100", "--tp", "8", "--weights", "fp8", "--context", "128k"],
    ["bytes", "llama-3.1-8b", "h100", "--batch", "32", "--context", "8192"],
    ["bytes", "llama-3.1-70b", "h100", "--tp", "4", "--levers"],
    ["speculate", "llama-3.1-70b", "h100", "--tp", "4", "--draft", "llama-3.1-8b"],
    ["offload", "llama-3.1-70b", "rtx-4090", "--weights", "q4_k_m", "--sweep"],
    ["edge", "llama-3.1-70b", "m4-max", "--weights", "q4_k_m", "--devices", "dgx-spark,rtx-4090"],
    ["tiers", "llama-3.1-70b", "h100", "--tp", "4", "--tier-capacity", "256GB", "--prefix", "8k"],
    [
        "tiers",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--tier",
        "cxl2-x16",
        "--tier-capacity",
        "256GB",
    ],
    ["cliff", "llama-3.1-8b", "h100", "--requests", "8", "--max-seqs", "4,8", "--output", "2k"],
    [
        "cliff",
        "llama-3.1-8b",
        "h100",
        "--requests",
        "8",
        "--max-seqs",
        "4,8",
        "--output",
        "2k",
        "--preemption",
        "swap",
    ],
    ["validate", "validation/public_cases.yaml"],
    ["serve", "llama-3.1-8b", "h100", "--rate", "4", "--requests", "50"],
    ["serve", "llama-3.1-8b", "h100", "--rate", "2,8,32", "--requests", "50"],
    ["size", "llama-3.1-8b", "--rate", "4", "--hardware", "h100,l4", "--requests", "40"],
    [
        "disagg",
        "llama-3.1-70b",
        "--prefill",
        "h100",
        "--decode",
        "h200",
        "--prefill-tp",
        "4",
        "--decode-tp",
        "4",
    ],
    ["plan", "llama-3.1-70b", "h100", "--gpus", "8"],
    ["check", "llama-3.1-70b", "h100", "--tp", "4", "--weights", "fp8", "--min-batch", "8"],
    ["check", "llama-3.1-70b", "h100", "--tp", "4", "--min-batch", "999", "--exit-zero"],
    ["sweep", "--batch", "1,8", "--hardware", "h100,h200", "--format", "table"],
    ["plot", "llama-3.1-8b", "h100"],  # its header was 117 columns
]


def _table(run, args: list[str], width: int) -> str:
    r = run(*args, env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert r.code == 0, r.stderr
    assert r.stdout.strip()
    return r.stdout


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_no_cell_is_elided(run, args, width, compute_once):
    """(compute_once: a serving command's simulation runs at the first width; the others render
    a copy of its result)"""
    out = _table(run, args, width)
    assert "…" not in out and "..." not in out, out
    too_wide = [line for line in out.splitlines() if len(line.rstrip()) > width]
    assert not too_wide, too_wide


def test_hardware_list_keeps_memory_and_bandwidth_at_80(run):
    out = _table(run, ["hardware", "list"], 80)
    row = next(line for line in out.splitlines() if line.split()[:1] == ["nvidia-h100-sxm"])
    # H100 SXM5: 80 GiB on the datasheet, nvidia-smi's 81,559 MiB usable = 79.65 GiB -> "79.6 d"
    # (d: the driver's figure); 3.35 TB/s HBM3; 989.5 dense bf16 TFLOPS (NVIDIA datasheet);
    # ridge 989.5e12 / 3.35e12 = 295.4 FLOP/B.
    assert " 80 " in row and "79.6 d" in row
    assert "3.35" in row and "989.5" in row and "295" in row
    # RTX 4090 side by side in the same convention: 24 GiB, nvidia-smi 24,564 MiB = 23.99 GiB
    row = next(line for line in out.splitlines() if line.split()[:1] == ["nvidia-rtx-4090"])
    assert " 24 " in row and "24.0 d" in row


def test_bytes_headline_share_is_whole(run):
    out = _table(run, ["bytes", "llama-3.1-8b", "h100", "--batch", "32", "--context", "8192"], 80)
    decode = next(line for line in out.splitlines() if line.strip().startswith("decode "))
    # Llama 3.1 8B decode at batch 32 x 8,192 tokens: KV = 32 layers x 8 KV heads x 128 x 2
    # (K, V) x 2 B = 131,072 B/token, x 8,192 x 32 = 34.36 GB; weights read = (8.03e9 - the
    # 128,256 x 4,096 embedding table, of which one row per token is read) x 2 B = 15.01 GB;
    # activations well under 0.5 GB, so the KV share is 34.36 / (49.37..49.87) = 69%.
    assert "34.4GB" in decode and "69%" in decode


def test_inputs_header_names_the_workload(run):
    # -v: every input under the table (by default one compact line; JSON always has all)
    out = _table(run, ["-v", "plan", "llama-3.1-70b", "h100", "--gpus", "8"], 80)
    head = " ".join(out.split())
    for item in ("model=llama-3.1-70b", "hardware=nvidia-h100-sxm", "gpus=8", "weights=bf16"):
        assert item in head
    # the workload defaults every command shares (1k in / 1k out) are echoed
    assert "prompt_tokens=1,000" in head and "output_tokens=1,000" in head


@pytest.mark.parametrize("value", ["0", "-5", "abc", "", "12", " 70 "])
def test_nonsense_columns_never_swallow_output(run, value):
    r = run("plan", "llama-3.1-70b", "h100", "--gpus", "8", env={"COLUMNS": value})
    assert r.code == 0 and "TP8 PP1 DP1" in r.stdout and "…" not in r.stdout


def test_errors_still_reach_stderr_with_nonsense_columns(run):
    r = run("analyze", "no-such-model", "h100", env={"COLUMNS": "0"})
    assert r.code == 2 and "no-such-model" in r.stderr and not r.stdout.strip()


@pytest.mark.parametrize(
    ("value", "expected"), [("100", 100), ("61", 61), ("12", 60), ("0", 80), ("x", 80)]
)
def test_console_width(monkeypatch, value, expected):
    # not a terminal under pytest: unset, zero or garbage COLUMNS fall back to Rich's 80
    monkeypatch.setenv("COLUMNS", value)
    assert console_width() == expected


def test_too_wide_table_is_stacked_with_every_number():
    con = Console(file=io.StringIO(), width=60, highlight=False, color_system=None)
    cols = [T("id"), *[N(f"metric {k}") for k in range(8)], NOTE("source")]
    values = [f"{math.pi * 10**k:,.1f}" for k in range(8)]
    print_rows(con, "wide", cols, [["row-a", *values, "a long provenance text " * 3]])
    out = con.file.getvalue()
    assert "…" not in out and all(v in out for v in values)
    assert "metric 7: 31,415,926.5" in out  # stacked: header: value
    assert "[1] a long provenance text" in out  # long text under the table


_number = st.one_of(
    st.integers(-(10**9), 10**12).map(lambda n: f"{n:,}"),
    st.floats(1e-3, 1e9, allow_nan=False).map(lambda x: f"{x:.3g}"),
    st.floats(0, 1).map(lambda x: f"{x:.1%}"),
)
_word = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(60, 200),
    kinds=st.lists(st.sampled_from("ntsx"), min_size=1, max_size=14),
    n_rows=st.integers(1, 4),
    data=st.data(),
)
def test_any_table_keeps_every_number_whole(width, kinds, n_rows, data):
    """Property: whatever the columns and the width (>= 60), every numeric cell appears whole
    on one line, nothing is elided, and no line is wider than the console."""
    make = {"n": N, "t": T, "s": SUB, "x": NOTE}
    cols = [T("key"), *(make[k](f"{k}{j}") for j, k in enumerate(kinds))]
    rows = []
    for _ in range(n_rows):
        cells = [data.draw(_word)]
        for k in kinds:
            text = " ".join(data.draw(st.lists(_word, min_size=1, max_size=6)))
            cells.append(data.draw(_number) if k == "n" else text)
        rows.append(cells)
    con = Console(file=io.StringIO(), width=width, highlight=False, color_system=None)
    print_rows(con, "t", cols, rows)
    out = con.file.getvalue()
    lines = out.splitlines()
    assert "…" not in out
    assert all(len(line.rstrip()) <= width for line in lines)
    for r in rows:
        for k, cell in zip(kinds, r[1:], strict=True):
            if k == "n":
                assert any(cell in line for line in lines), (cell, out)


@pytest.mark.parametrize(
    ("args", "answer"),
    [
        (["analyze", "llama-3.1-8b", "h100"], "TPOT"),
        (["serve", "llama-3.1-8b", "h100", "--rate", "5", "--requests", "100"], "TTFT p50 / p99"),
        (["size", "llama-3.1-8b", "--rate", "20", "--hardware", "h100", "--requests", "100"],
         "best:"),
        (["plan", "llama-3.1-70b", "h100", "--gpus", "8"], "best:"),
    ],
)  # fmt: skip
def test_the_answer_comes_first(run, args, answer, compute_once):
    """At 80 columns the answer is within the first 5 lines; the inputs follow it, one compact
    line (every input under -v and in JSON)."""
    out = _table(run, args, 80)
    lines = out.splitlines()
    assert any(answer in line for line in lines[:5]), lines[:6]
    assert lines[-1].startswith("inputs:") or any(x.startswith("inputs:") for x in lines[-12:])

"""Fuzzing the command line: argument lists built from every command's own options with hostile
values, and a corpus of the nastiest inputs found (tests/data/bad_inputs.txt). The contract on
every one: exit 0, 1 or 2 only (never a traceback or an internal error), nothing on stdout on
error, one line on stderr, no NaN or Infinity in the output."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.cli import app

ROOT = Path(__file__).resolve().parent
COMMANDS: dict[str, Any] = {}


def _walk(group: Any, prefix: tuple[str, ...] = ()) -> None:
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            _walk(cmd, (*prefix, name))
        else:
            COMMANDS[" ".join((*prefix, name))] = cmd


_walk(typer.main.get_command(app))
# commands that write files or run long simulations get small, fixed workloads in the corpus
SKIP = {"models import", "plot"}

HOSTILE = st.sampled_from(
    [
        "0", "-1", "1", "8", "1e9", "1e308", "nan", "inf", "-inf", "", " ", "1k", "32Ki", "1.5",
        "64..1", "1..8", "1,2,x", "99999999999999999999", "abc", "80", "80GB", "50ms", "2:4",
        "h100", "llama-3.1-8b", "fp8", "int4", "\n", "--", "-h",
    ]
)  # fmt: skip


@st.composite
def argv(draw: st.DrawFn) -> list[str]:
    path = draw(st.sampled_from(sorted(set(COMMANDS) - SKIP)))
    cmd = COMMANDS[path]
    args = path.split()
    for p in cmd.params:
        if p.param_type_name == "argument":
            args.append(draw(st.sampled_from(["llama-3.1-8b", "h100", "mixtral-8x7b", "nope"])))
    options = [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]
    chosen = (
        draw(st.lists(st.sampled_from(options), max_size=4, unique_by=lambda p: p.name))
        if options
        else []
    )
    for p in chosen:
        flag = max(p.opts, key=len)
        if p.is_flag:
            args.append(flag)
        else:
            args += [flag, draw(HOSTILE)]
    # keep simulations small: the contract, not the workload, is under test
    if path == "cliff":
        args += ["--max-seqs", "1,4", "--requests", "8", "--output", "64"]
    if path == "sweep":
        args += ["--prompt", "1k"]
    if path in ("serve", "size", "disagg"):
        args += ["--requests", "40"]
    if path == "serve":
        args += ["--no-saturation"]
    if path == "size":
        args += ["--hardware", "h100"]
    return args


def _contract(r: Any, args: list[str]) -> None:
    where = shlex.join(args)
    assert r.code in (0, 1, 2), f"{where}: exit {r.code}\n{r.stderr}"
    assert "Traceback" not in r.stderr, where
    if r.code == 2:
        assert r.stdout == "", where
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, f"{where}: {r.stderr!r}"
    if r.code == 0:
        for bad in ("NaN", "Infinity"):
            assert bad not in r.stdout, f"{where}: {bad} in the output"


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=argv())
def test_fuzzed_arguments_keep_the_contract(run_main, args):
    _contract(run_main(*args), args)


CORPUS = [
    line
    for line in (ROOT / "data" / "bad_inputs.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]


@pytest.mark.parametrize("line", CORPUS)
def test_corpus_of_bad_inputs(run_main, line):
    args = shlex.split(line)
    _contract(run_main(*args), args)

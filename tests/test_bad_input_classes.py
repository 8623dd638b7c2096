"""Bad input by class, not by case (issue 36): each class of bad input has one rule, applied where
every command meets it, and here a planted case per class. Bad input is one stderr line and exit 2,
nothing on stdout; never a traceback, never a silent answer."""

from __future__ import annotations

import pathlib

import pytest
from conftest import refused
from typer.testing import CliRunner

from roofline.cli import app

# --- files: permissions, directories, encodings, binary content, standard input ---------------


def test_a_file_behind_a_locked_directory_is_one_line_naming_it(run, tmp_path, monkeypatch):
    """Probing a path in a directory one may not enter raises PermissionError from stat (so from
    is_file and exists): any OSError that names a file is that file's one line."""
    locked = tmp_path / "locked" / "config.json"
    real_stat = pathlib.Path.stat

    def stat(self, *a, **k):
        if str(self).startswith(str(locked.parent)):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    refused(run("analyze", str(locked), "h100"), f"{locked}: Permission denied")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe\x00 not text \xc3\x28", "is not UTF-8 text"),  # Latin-1 / UTF-16 bytes
        (b"deployments:\x00\x01\x02 []\n", "is binary, not text"),  # valid UTF-8, but NULs
    ],
)
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_undecodable_or_binary_input_is_one_line_naming_it(run, tmp_path, content, says, where):
    if where == "file":
        spec = tmp_path / "spec.yaml"
        spec.write_bytes(content)
        refused(run("check", "--spec", str(spec)), f"{spec}: {says}")
    else:  # '-': read as bytes and decoded strictly, whatever the stream's own error handler
        r = CliRunner().invoke(app, ["check", "--spec", "-"], input=content)
        assert r.exit_code == 2 and r.stdout == "", r.stdout
        assert r.stderr.count("\n") == 1 and f"<stdin>: {says}" in r.stderr


def test_a_directory_where_a_file_belongs_is_one_line(run, tmp_path):
    refused(run("check", "--spec", str(tmp_path)), "is a directory")


# --- catalog numbers: finite, in a sane range per key, and every problem of an entry listed ---

GPU = """accelerators:
- id: {id}
  name: T
  vendor: test
  family: {family}
  memory: {{capacity_gib: {cap}, bandwidth_tb_s: {bw}}}
  dense_tflops: {{bf16: {tflops}}}
  sparsity_2_4: false
  source: a test
"""


@pytest.mark.parametrize(
    ("cap", "bw", "tflops", "says"),
    [
        (80, 3.35, "1.0e+308", "at most 1e+12"),  # finite in YAML, overflows in arithmetic
        (80, "1.0e-300", 989, "bandwidth_tb_s' must be from 0.001 to 1000"),  # divides to inf
        ("1.0e+9", 3.35, 989, "capacity_gib' must be from"),
        (80, ".nan", 989, "finite"),
    ],
)
def test_catalog_numbers_are_finite_and_in_range_at_load(run, tmp_path, cap, bw, tflops, says):
    (tmp_path / "h.yaml").write_text(
        GPU.format(id="odd", family="nvidia-datacenter", cap=cap, bw=bw, tflops=tflops)
    )
    refused(run("--catalog", str(tmp_path), "analyze", "llama-3.1-8b", "odd"), says)


def test_the_range_edges_give_finite_answers(run, tmp_path):
    """At either end of every span the arithmetic stays finite: no null, no warning."""
    (tmp_path / "h.yaml").write_text(
        GPU.format(id="top", family="nvidia-datacenter", cap=1e6, bw=1e3, tflops=1e6)
        + GPU.format(id="low", family="nvidia-datacenter", cap=80, bw=1e-3, tflops=1e-3)[14:]
    )
    for hw in ("top", "low"):
        r = run("--catalog", str(tmp_path), "capacity", "llama-3.1-8b", hw, "-f", "json")
        assert r.code == 0 and r.stderr == "", r.stderr


def test_an_unknown_family_is_refused_at_load_and_listed_by_validate(run, tmp_path):
    (tmp_path / "h.yaml").write_text(
        GPU.format(id="typo", family="nvidia-datacentre", cap=80, bw=3.35, tflops=989)
    )
    refused(
        run("--catalog", str(tmp_path), "analyze", "llama-3.1-8b", "h100"),
        "unknown family 'nvidia-datacentre' (did you mean 'nvidia-datacenter'?",
    )


def test_catalog_validate_lists_every_problem_of_an_entry(run, tmp_path):
    """An empty id, an unknown family, and value problems in three places of one entry: each is
    its own line (a bad value no longer hides the ones after it)."""
    (tmp_path / "h.yaml").write_text(
        GPU.format(id="''", family="nvidia-datacentre", cap=-16, bw=".inf", tflops="1.0e+308")
        + "  scale_up: {name: x, bandwidth_gb_s: 1.0e-300, latency_us: -1}\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    for says in (
        "key 'id' must not be empty", "capacity_gib' must not be negative", "bandwidth_tb_s",
        "bf16", "latency_us", "bandwidth_gb_s", "unknown family",
    ):  # fmt: skip
        assert sum(says in line for line in lines) == 1, (says, lines)
    assert len(lines) == 7


# --- token counts: at least 1 everywhere (opt.tokens' floor is 1 unless zero means none) --------


@pytest.mark.parametrize(
    "args",
    [
        ("analyze", "llama-3.1-8b", "h100", "--prompt", "0"),
        ("bytes", "llama-3.1-8b", "h100", "--prompt", "0"),
        ("plan", "llama-3.1-8b", "h100", "--gpus", "8", "--prompt", "0"),
        ("plot", "llama-3.1-8b", "h100", "--prompt", "0"),
        ("sweep", "--prompt", "0,1k"),
    ],
)
def test_a_token_count_of_zero_is_refused(run, args):
    refused(run(*args), "--prompt")


# --- a context past the model's positions: computed, and one warning (opt.positions) -----------


@pytest.mark.parametrize(
    "args",
    [
        ("capacity", "llama-3.1-8b", "h100", "--context", "200k"),
        ("bytes", "llama-3.1-8b", "h100", "--context", "200k"),
        ("kv", "llama-3.1-8b", "--context", "200k"),
        ("plan", "llama-3.1-8b", "h100", "--gpus", "8", "--prompt", "200k"),
        ("disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--prompt", "200k"),
        ("cliff", "llama-3.1-8b", "h100", "--prompt", "200k", "--max-seqs", "1", "--requests", "2"),
    ],
)
def test_a_context_past_the_models_positions_is_warned_in_every_command(run, args):
    r = run(*args, "-f", "json")
    assert r.code == 0 and r.stdout, r.stderr
    says = [line for line in r.stderr.splitlines() if "max_position_embeddings (131,072)" in line]
    assert len(says) == 1 and says[0].startswith("warning: ")


# --- unknown formats and names: every option is read, even where a mode does not use it ------


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (("--weights", "fp3"), "unknown weight format 'fp3' (did you mean 'fp32'?)"),
        (("--kv-dtype", "fp3"), "fp3"),
        (("--engine", "vlm"), "unknown engine 'vlm'"),
        (("--hardware", "h1000"), "did you mean 'h100'"),
    ],
)
@pytest.mark.parametrize("command", [("kv", "llama-3.1-8b"), ("analyze", "llama-3.1-8b", "h100")])
def test_an_unknown_format_or_name_is_refused(run, command, option, says):
    if command[0] == "analyze" and option[0] == "--hardware":
        option = ()  # analyze takes HARDWARE as an argument: swap it
        command = ("analyze", "llama-3.1-8b", "h1000")
    refused(run(*command, *option), says)


# --- a draft model with another vocabulary: refused in one line (speculative.same_vocabulary) --


@pytest.mark.parametrize(
    "args",
    [
        ("speculate", "llama-3.1-70b", "h100", "--tp", "4"),
        ("size", "llama-3.1-70b", "--hardware", "h100", "--rate", "1"),
    ],
)
def test_a_drafter_with_another_vocabulary_is_refused(run, args):
    r = run(*args, "--drafter", "draft", "--draft", "qwen2.5-0.5b")
    refused(r, "vocabulary of 151,936 tokens, llama-3.1-70b one of 128,256")


# --- batches beyond what fits: marked in the table and in JSON, not shown as if they ran -------


def test_speculate_marks_the_batches_that_do_not_fit(run):
    args = ("speculate", "llama-3.1-70b", "h100", "--tp", "4", "--context", "32k", "--gamma", "4")
    doc = run(*args, "--batches", "1,15,16,1024", "-f", "json").json()
    most = doc["memory"]["max_batch"]  # 15 at 32k tokens: KV budget / (KV per sequence)
    assert most == 15
    assert [(r["batch"], r["fits"]) for r in doc["by_batch"]] == [
        (1, True), (15, True), (16, False), (1024, False),
    ]  # fmt: skip
    table = run(*args, "--batches", "1,15,16,1024").stdout
    assert "16!" in table and "15!" not in table and "more than 15 sequences" in table


# --- a sweep point that cannot run: its own row, with an error and null metrics; exit 0 --------


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "json", "table"])
def test_a_sweep_writes_a_bad_point_as_a_row_and_goes_on(run, fmt):
    r = run("sweep", "--model", "llama-3.1-8b", "--tp", "1,3,2", "-f", fmt)
    assert r.code == 0 and "does not divide" in r.stdout, r.stderr
    if fmt == "jsonl":
        rows = [__import__("json").loads(line) for line in r.stdout.splitlines()]
        assert [(p["tp"], p["error"] is None, p["tpot_s"] is None) for p in rows] == [
            (1, True, False), (3, False, True), (2, True, False),
        ]  # fmt: skip
    if fmt == "csv":
        assert len(r.stdout.splitlines()) == 4  # a header and three rows


def test_a_context_warning_gives_way_to_an_error(run):
    """A command that fails after the warning was due prints its one error line alone."""
    args = ("--max-seqs", "1", "--requests", "2", "--output", "1e9")
    r = run("cliff", "llama-3.1-8b", "h100", *args)
    refused(r, "does not fit in the KV budget")  # serve's replica refuses it, as serve does

"""Issue #6: `check` exit codes and JSON, spec files, and the row formats (jsonl, csv, markdown)."""

import csv
import io
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_check_passes_exit_0(run):
    r = run(
        "check",
        "llama-3.1-8b",
        "h100",
        "--context",
        "8k",
        "--min-batch",
        "32",
        "--fits",
        "--batch",
        "32",
        "--format",
        "json",
    )
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["ok"] is True
    names = {c["name"] for c in doc["checks"]}
    assert names == {"fits", "min_batch"}
    for c in doc["checks"]:
        assert {"name", "ok", "limit", "value"} <= set(c)


def test_check_fails_exit_1_and_says_by_how_much(run):
    # Llama-3.1-8B bf16 on H100: budget 0.9·85.5 GB − 16.1 GB weights − ~2 GB ≈ 58.9 GB;
    # one 32k sequence holds 32,000 × 131,072 B = 4.2 GB, so at most ~14 fit, never 64
    r = run(
        "check", "llama-3.1-8b", "h100", "--context", "32k", "--min-batch", "64", "--format", "json"
    )
    assert r.code == 1
    doc = r.json()  # the report is still printed
    c = doc["checks"][0]
    assert c["name"] == "min_batch" and c["ok"] is False and c["limit"] == 64
    assert 10 <= c["value"] <= 16 and "-" in c["detail"]
    assert "check failed" in r.stderr


def test_check_exit_zero(run):
    r = run("check", "llama-3.1-8b", "h100", "--context", "32k", "--min-batch", "64", "--exit-zero")
    assert r.code == 0 and "FAIL" in r.stdout


def test_check_latency_limits(run):
    ok = run("check", "llama-3.1-8b", "h100", "--max-tpot", "1s", "--format", "json").json()
    assert ok["ok"]
    bad = run("check", "llama-3.1-8b", "h100", "--max-tpot", "1ms", "--format", "json")
    assert bad.code == 1
    c = bad.json()["checks"][0]
    assert c["value"] > c["limit"] == 0.001


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "llama-3.1-8b", "h100"], "no assertion"),
        (["check", "llama-3.1-8b"], "MODEL HARDWARE"),
        (["check", "llama-3.1-8b", "h100", "--max-tpot", "fast"], "max_tpot"),
        (["check", "--spec", "/nonexistent.yaml"], "no such file"),
    ],
)
def test_check_bad_input_exit_2(run, args, needle):
    r = run(*args)
    assert r.code == 2 and r.stdout == "" and needle in r.stderr


def test_check_spec_file_and_stdin(run, tmp_path):
    r = run("check", "--spec", str(ROOT / "examples/deploy.yaml"), "--format", "json")
    assert r.code == 0, r.stderr
    assert len(r.json()["deployments"]) == 2
    bad = tmp_path / "deploy.json"
    bad.write_text(
        json.dumps({"model": "llama-3.1-8b", "hardware": "h100", "checks": {"min_batch": 10000}})
    )
    assert run("check", "--spec", str(bad)).code == 1
    typo = tmp_path / "typo.yaml"
    typo.write_text("model: llama-3.1-8b\nhardware: h100\nchecks: {max_tpo: 50ms}\n")
    r = run("check", "--spec", str(typo))
    assert r.code == 2 and "max_tpo" in r.stderr and "did you mean" in r.stderr


def test_jsonl_lines_parse_one_by_one(run):
    r = run("validate", str(ROOT / "validation/public_cases.yaml"), "--format", "jsonl")
    lines = r.stdout.strip().splitlines()
    cases = (ROOT / "validation/public_cases.yaml").read_text().count("\n- id: ")
    assert len(lines) == cases == 14  # one line per case (14 rows in the file)
    for line in lines:
        assert "speed_ratio_ideal" in json.loads(line)


def test_csv_has_a_header_and_one_row_per_point(run, cat):
    r = run("hardware", "list", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == len(cat.accelerators) >= 22
    assert "memory_bandwidth_bytes_per_s" in rows[0]


def test_markdown_table(run, cat):
    r = run("models", "list", "--format", "markdown")
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("| id |") and set(lines[1]) <= {"|", "-"}
    assert len(lines) == 2 + len(cat.models)


def test_no_color_tables_are_plain(run):
    r = run("hardware", "list", env={"NO_COLOR": "1"})
    assert "\x1b[" not in r.stdout


def test_sweep_jsonl_one_line_per_point(run):
    r = run(
        *"sweep --model llama-3.1-8b,mixtral-8x7b --hardware h100,mi300x".split(),
        *"--weights bf16,fp8 --batch 1,8,64 --prompt 1k,4k".split(),
    )
    lines = r.stdout.strip().splitlines()
    assert r.code == 0 and len(lines) == 2 * 2 * 2 * 3 * 2
    rows = [json.loads(line) for line in lines]
    assert {"batch_prefill_s", "tpot_s", "output_tokens_per_s", "fits", "max_batch"} <= set(rows[0])


def test_sweep_matches_analyze(run):
    workload = "--tp 4 --weights fp8 --batch 32 --prompt 2k --output 512".split()
    row = json.loads(
        run("sweep", "--model", "llama-3.1-70b", "--hardware", "h100", *workload).stdout
    )
    doc = run("analyze", "llama-3.1-70b", "h100", *workload, "--format", "json").json()
    assert row["tpot_s"] == pytest.approx(doc["expected"]["tpot_s"])
    assert row["batch_prefill_ideal_s"] == pytest.approx(doc["ideal"]["batch_prefill_s"])
    assert row["max_batch"] == doc["memory"]["max_batch"]


def test_sweep_csv_and_ranges(run):
    r = run("sweep", "--batch", "1..64", "--output", "256,1k", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 7 * 2  # 1, 2, 4, ..., 64 × two outputs
    assert rows[0]["batch"] == "1" and "tpot_s" in rows[0]
    bad = run("sweep", "--batch", "1..x")
    assert bad.code == 2 and "--batch" in bad.stderr


def test_spec_with_a_rate_and_replicas(run, tmp_path):
    """A spec file takes the same traffic keys as the command line: at 8 req/s two TP4 replicas
    each see about 4 req/s, which one replica serves within the SLOs (and a single replica at 8
    req/s is past its saturation rate, where p99 TTFT runs away)."""
    spec = tmp_path / "spec.yaml"
    body = (
        "deployments:\n- name: chat\n  model: llama-3.1-70b\n  hardware: h100\n  tp: 4\n"
        "  dp: {dp}\n  weights: fp8\n  rate: 8\n  requests: 400\n  prompt: 2k\n  output: 300\n"
        "  checks: {{max_ttft_p99: 2s, max_tpot_p99: 50ms}}\n"
    )
    spec.write_text(body.format(dp=2))
    assert run("check", "--spec", str(spec)).code == 0
    spec.write_text(body.format(dp=1))
    assert run("check", "--spec", str(spec)).code == 1

"""The command-line contract: JSON parses, stdout is only results, errors exit 2 with one line."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_catalog import GOOD_ACCEL

JSON_COMMANDS = [
    ["hardware", "list"],
    ["hardware", "show", "h100"],
    ["hardware", "tiers"],
    ["hardware", "families"],
    ["models", "list"],
    ["models", "show", "deepseek-r1"],
    ["kv", "llama-3.1-405b", "--context", "32k"],
    ["analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--output", "512"],
    [
        "analyze",
        "deepseek-r1",
        "h200",
        "--tp",
        "8",
        "--ep",
        "8",
        "--weights",
        "fp8",
        "--batch",
        "32",
    ],
    ["analyze", "gemma-3-27b", "a100", "--weights", "int4", "--sparsity", "2:4"],
    ["analyze", "llama-3-8b", "apple-m2-ultra", "--weights", "q4_0", "--kv-dtype", "fp16"],
    ["capacity", "llama-3.1-405b", "h100", "--tp", "8", "--weights", "fp8", "--context", "128k"],
]


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_json_parses(run, args):
    r = run(*args, "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["schema_version"] == 1 and "inputs" in doc


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_tables_render(run, args):
    r = run(*args)
    assert r.code == 0, r.stderr
    assert r.stdout.strip()


def test_hardware_show_json_fields(run):
    h = run("hardware", "show", "h100", "--format", "json").json()["hardware"]
    assert h["memory_bandwidth_bytes_per_s"] == 3.35e12
    assert h["peak_flops_per_s"]["bf16"] == 989.5e12
    assert abs(h["ridge_flops_per_byte"]["bf16"] - 295.4) < 0.1
    assert h["memory_capacity_bytes"] == 81559 * 2**20


def test_models_show_json_fields(run):
    m = run("models", "show", "mixtral-8x7b", "--format", "json").json()["model"]
    assert abs(m["params_total"] / 46.7e9 - 1) < 0.002
    assert abs(m["params_active"] / 12.9e9 - 1) < 0.005


def test_kv_json(run):
    doc = run("kv", "deepseek-r1", "--context", "1000", "--batch", "4", "--format", "json").json()
    assert doc["kv_bytes_per_token"] == 70_272
    assert doc["kv_bytes_per_sequence"] == 70_272 * 1000
    assert doc["kv_bytes_total"] == 70_272 * 1000 * 4


def test_analyze_json_contract(run):
    doc = run(
        "analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--output", "1k", "--format", "json"
    ).json()
    assert doc["decode"]["bound"] == "memory" and doc["prefill"]["bound"] == "compute"
    assert 0.9 < doc["decode"]["arithmetic_intensity"] < 1.3
    assert doc["memory"]["fits"] is True
    calibrated = {"calibration", "tpot_band_s", "step_overhead_s", "bands"}  # expected only
    for key in ("ideal", "expected"):
        assert set(doc[key]) - calibrated == {
            "batch_prefill_s",
            "ttft_s",
            "tpot_s",
            "e2e_s",
            "output_tokens_per_s",
            "decode_time_fraction",
            "cost_per_million_output_tokens",
        }
        # $/h of the GPUs over output tokens per hour, per million (hardware/prices.yaml)
        usd = doc["inputs"]["price_usd_per_gpu_hour"] * doc["inputs"]["gpus"]
        want = usd / (doc[key]["output_tokens_per_s"] * 3600) * 1e6
        assert doc[key]["cost_per_million_output_tokens"] == pytest.approx(want)
    assert 0 < doc["decode_time_fraction"] < 1
    assert doc["inputs"]["efficiency"]["source"]
    # at batch 1 the static batch's prefill is the single request's TTFT
    assert doc["ideal"]["ttft_s"] == doc["ideal"]["batch_prefill_s"]
    # the TPOT band is the family's out-of-sample TPOT band (tests/test_bands.py derives it)
    exp, cal = doc["expected"], doc["expected"]["calibration"]
    assert cal["family"] == "nvidia-datacenter" and 0 < cal["error_band"] < 0.5
    # under the engine analyze runs (vllm) where that cell has 5 points; the measured TPOT's
    # 90% interval [tpot · low, tpot · high]
    band = exp["bands"]["tpot_p50"]
    assert band["engine"] in (None, cal["engine"]) and cal["engine"] == "vllm"
    lo, hi = exp["tpot_band_s"]
    assert lo == pytest.approx(exp["tpot_s"] * band["low"])
    assert hi == pytest.approx(exp["tpot_s"] * band["high"])
    assert 0 < band["low"] < 1 < band["high"]


def test_analyze_batch_prefill_is_not_a_requests_ttft(run):
    """64 prompts launched together take ~64x one prompt's prefill (compute-bound, linear in
    tokens); a single request's TTFT stays that of one prompt."""
    args = ("analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--batch", "64", "-f", "json")
    ideal = run(*args).json()["ideal"]
    assert 50 < ideal["batch_prefill_s"] / ideal["ttft_s"] < 70


def test_analyze_efficiency_override_is_echoed(run):
    doc = run(
        "analyze",
        "llama-3.1-8b",
        "h100",
        "--eta-memory",
        "0.5",
        "--overhead",
        "1ms",
        "--format",
        "json",
    ).json()
    assert doc["inputs"]["efficiency"]["memory"] == 0.5
    assert doc["expected"]["tpot_s"] > 2 * doc["ideal"]["tpot_s"]


def test_capacity_no_fit_is_reported_not_an_error(run):
    doc = run("capacity", "llama-3.1-405b", "h100", "--format", "json").json()
    assert doc["max_batch"] == 0 and "weights" in doc["reason"]


def _assert_error(r, *needles):
    assert r.code == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:")
    for n in needles:
        assert n in r.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["analyze", "llama-3.1-8c", "h100"], ["unknown model 'llama-3.1-8c'", "did you mean"]),
        (["analyze", "llama-3.1-8b", "h1000"], ["unknown hardware 'h1000'", "did you mean"]),
        (["hardware", "show", "nope-gpu"], ["unknown hardware"]),
        (["analyze", "llama-3.1-8b", "h100", "--prompt", "lots"], ["--prompt"]),
        (["analyze", "llama-3.1-8b", "h100", "--batch", "-3"], ["--batch"]),
        (["analyze", "llama-3.1-8b", "h100", "--batch", "100000000"], ["--batch"]),
        (["analyze", "llama-3.1-8b", "h100", "--tp", "0"], ["--tp"]),
        (["analyze", "llama-3.1-8b", "h100", "--output", "-5"], ["--output"]),
        (["analyze", "llama-3.1-8b", "h100", "--weights", "int3"], ["unknown weight format"]),
        (["analyze", "llama-3.1-8b", "h100", "--eta-memory", "1.5"], ["efficiency"]),
        (["analyze", "llama-3.1-405b", "h100"], ["needs", "raise --tp"]),
        (["analyze", "llama-3.1-8b", "h100", "--engine", "tgi"], ["unknown engine"]),
        (["capacity", "llama-3.1-8b", "h100", "--memory", "-80GB"], ["--memory"]),
        (["kv", "llama-3.1-8b", "--kv-dtype", "fp9"], ["KV-cache format"]),
        (["analyze", "mixtral-8x7b", "h100", "--tp", "4", "--ep", "3"], ["--ep"]),
    ],
)
def test_errors_exit_2_with_one_line(run, args, needles):
    _assert_error(run(*args), *needles)


def test_broken_user_catalog_exits_2(run, tmp_path):
    (tmp_path / "bad.yaml").write_text(GOOD_ACCEL.replace("bf16: 100", "bf16: 1e14"))
    _assert_error(run("--catalog", str(tmp_path), "hardware", "list"), "bad.yaml", "test-gpu")


def test_catalog_validate(run, tmp_path):
    (tmp_path / "bad.yaml").write_text(GOOD_ACCEL.replace("vendor: test", "vendr: test"))
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and "vendr" in r.stderr and r.stdout == ""
    assert run("catalog", "validate").code == 0


def test_model_that_does_not_fit_kv_warns(run):
    r = run(
        "analyze", "llama-3.1-8b", "rtx-4090", "--batch", "64", "--prompt", "8k", "--format", "json"
    )
    assert r.code == 0 and "warning" in r.stderr
    assert r.json()["memory"]["fits"] is False


def test_entry_point_runs_as_module():
    root = Path(__file__).resolve().parent.parent
    p = subprocess.run(
        [sys.executable, "-m", "roofline", "models", "show", "nope"],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert p.returncode == 2 and p.stdout == "" and "did you mean" not in p.stdout
    assert "Traceback" not in p.stderr


def test_readme_documents_every_command():
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text() + (root / "docs/COMMANDS.md").read_text()
    for cmd in (
        "hardware list",
        "hardware show",
        "hardware tiers",
        "models list",
        "models show",
        "roofline kv",
        "roofline analyze",
        "roofline capacity",
        "catalog validate",
        "make test",
        "make demo",
    ):
        assert cmd in readme, cmd


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["analyze", "llama-3.1-8b"], "Missing argument"),
        (["analyze", "llama-3.1-8b", "h100", "--batch", "abc"], "--batch"),
        (["analyze", "llama-3.1-8b", "h100", "--frobnicate"], "--frobnicate"),
        (["nope"], "No such command"),
    ],
)
def test_parser_errors_are_one_line_from_the_entry_point(run_main, args, needle):
    """Through roofline.cli.main in-process (run_main): the one-line rewrite of the parser's
    usage error lives there; `python -m roofline` reaching main: test_entry_point_runs_as_module."""
    p = run_main(*args)
    assert p.code == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]


def test_efficiency_override_keeps_the_other_catalog_figures(run):
    # --overhead alone must not drop the family's weight-only memory efficiency
    doc = run(
        "analyze",
        "llama-3.1-8b",
        "h100",
        "--weights",
        "int4",
        "--overhead",
        "0us",
        "--format",
        "json",
    ).json()
    from roofline.catalog.load import load_catalog

    family = load_catalog().families["nvidia-datacenter"].efficiency
    assert family.memory_weight_only != family.memory  # else the check below proves nothing
    assert doc["inputs"]["efficiency"]["memory_weight_only"] == family.memory_weight_only
    assert doc["inputs"]["efficiency"]["step_overhead_s"] == 0

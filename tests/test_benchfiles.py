"""A user's own benchmark results (issue 25, item 5): vLLM bench serve JSON, SGLang bench_serving
JSONL and genai-perf profile exports are read by content, served through the serving model at
their rate and lengths, and --calibrate fits the engine's host costs into a user catalog."""

import functools
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.benchfiles import METRICS, is_bench_file, read_bench_file
from roofline.catalog.load import load_catalog
from roofline.domain.errors import InputError

DATA = Path(__file__).parent / "data" / "bench"
ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ["--model", "llama-3.1-8b", "--hardware", "h100", "--weights", "bf16"]


def _json(name: str):
    return json.loads((DATA / name).read_text())


def test_vllm_detailed_replays_its_own_requests():
    raw = _json("vllm-detailed.json")
    (run,) = read_bench_file(DATA / "vllm-detailed.json")
    assert run.tool == "vllm" and run.per_request
    assert run.rate == raw["request_rate"] == 4.0 and run.concurrency is None
    assert run.requests == raw["completed"] == len(raw["input_lens"]) == 40
    assert run.prompts.tolist() == raw["input_lens"]
    assert run.outputs.tolist() == raw["output_lens"]
    assert run.measured == {
        "ttft_p50_ms": raw["median_ttft_ms"],
        "ttft_p99_ms": raw["p99_ttft_ms"],
        "tpot_p50_ms": raw["median_tpot_ms"],
        "tpot_p99_ms": raw["p99_tpot_ms"],
        "output_tokens_per_s": raw["output_throughput"],
    }
    # --save-detailed keeps each request's send time: the requests replay at those times
    from roofline.cases.bench import workload_of

    t = np.asarray(raw["start_times"])
    w = workload_of(run)
    np.testing.assert_allclose(w.arrival_s, np.sort(t - t.min()))
    assert w.prompts.sum() == raw["total_input_tokens"]


def test_aggregates_only_use_the_files_means():
    raw = _json("vllm-aggregate.json")
    (run,) = read_bench_file(DATA / "vllm-aggregate.json")
    assert not run.per_request
    # request_rate "inf" with --max-concurrency 16: a closed loop of 16 users
    assert run.rate is None and run.concurrency == 16
    assert run.prompt_mean == raw["total_input_tokens"] / raw["completed"] == 1000
    assert run.output_mean == raw["total_output_tokens"] / raw["completed"] == 200
    assert "means" in run.lengths_text


def test_sglang_jsonl_is_one_run_per_line():
    lines = [json.loads(x) for x in (DATA / "sglang-bench-serving.jsonl").read_text().splitlines()]
    runs = read_bench_file(DATA / "sglang-bench-serving.jsonl")
    assert [r.tool for r in runs] == ["sglang", "sglang"]
    assert [r.rate for r in runs] == [x["request_rate"] for x in lines] == [2.0, 8.0]
    assert [r.requests for r in runs] == [50, 50]
    assert runs[1].where.endswith("line 2")
    assert runs[1].measured["tpot_p99_ms"] == lines[1]["p99_tpot_ms"]


def test_genai_perf_export():
    raw = _json("profile_export_genai_perf.json")
    (run,) = read_bench_file(DATA / "profile_export_genai_perf.json")
    assert run.tool == "genai-perf" and run.concurrency == 8 and run.rate is None
    assert run.requests == raw["request_count"]["avg"] == 100
    assert run.prompt_mean == raw["input_sequence_length"]["avg"]
    # genai-perf's inter-token latency is the per-request TPOT
    assert run.measured["tpot_p99_ms"] == raw["inter_token_latency"]["p99"]
    assert run.measured["ttft_p50_ms"] == raw["time_to_first_token"]["p50"]


def test_detected_by_content_not_extension(tmp_path):
    odd = tmp_path / "results.yaml"
    shutil.copy(DATA / "sglang-bench-serving.jsonl", odd)
    assert is_bench_file(odd)
    assert not is_bench_file(ROOT / "validation" / "public_cases.yaml")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert not is_bench_file(other)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(1, 100_000), min_size=1, max_size=20),
    st.floats(0.01, 1e3),
    st.floats(0.1, 1e5),
)
def test_vllm_keys_round_trip(prompts, rate, value):
    """What vllm_result writes in vLLM's keys reads back unchanged (the parser and the writer
    agree on every key)."""
    p = np.asarray(prompts)
    o = p[::-1].copy()
    metrics = dict.fromkeys(METRICS, value)
    rec = json.loads(json.dumps(_make_samples().vllm_result(rate, p, o, metrics)))
    from roofline.cases.benchfiles import _serving_run

    run = _serving_run("x", rec, "vllm")
    assert run.rate == rate and run.measured == metrics
    assert run.prompts.tolist() == prompts and run.outputs.tolist() == o.tolist()


def test_validate_prints_the_error_per_metric(run):
    r = run("validate", str(DATA / "sglang-bench-serving.jsonl"), *LAYOUT, "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert [c["metric"] for c in doc["cases"]] == list(METRICS) * 2
    for c in doc["cases"]:
        assert c["error_expected"] == pytest.approx(c["expected"] / c["measured"] - 1)
        if c["metric"].endswith("_ms"):  # ideal never slower than expected
            assert c["ideal"] <= c["expected"] * (1 + 1e-9)
    assert all("means" in x["lengths"] for x in doc["inputs"]["runs"])
    table = run("validate", str(DATA / "profile_export_genai_perf.json"), *LAYOUT)
    assert (
        table.code == 0 and "the file's means" in table.stdout and "closed loop, 8" in table.stdout
    )


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("bad-vllm-no-completed.json", "missing key 'completed'"),
        ("bad-sglang-line2.jsonl", "line 2: key 'median_tpot_ms'"),
    ],
)
def test_a_bad_file_is_one_line_naming_file_and_key(run, name, said):
    r = run("validate", str(DATA / name), *LAYOUT)
    assert r.code == 2
    assert name in r.stderr and said in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_ramping_rate_is_refused(run, tmp_path):
    raw = _json("vllm-aggregate.json")
    raw.update(ramp_up_strategy="linear", ramp_up_start_rps=1, ramp_up_end_rps=20)
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(raw))
    r = run("validate", str(path), *LAYOUT)
    assert r.code == 2 and "key 'ramp_up_strategy'" in r.stderr


def test_bench_options_need_a_bench_file_and_a_bench_file_needs_them(run, tmp_path):
    r = run("validate", str(DATA / "vllm-aggregate.json"))
    assert r.code == 2 and "--model and --hardware" in r.stderr
    r = run("validate", str(ROOT / "validation" / "public_cases.yaml"), "--model", "llama-3.1-8b")
    assert r.code == 2 and "apply to benchmark files" in r.stderr


# ---- calibration ----------------------------------------------------------------------------
# Known figures, offset from the shipped ones: vLLM's host costs (hardware/engines.yaml:
# cpu_step_us 1700, request_latency_us 19000, no cpu_per_seq_us for NVIDIA, i.e. 0) and the H100's
# shares (hardware/families.yaml nvidia-datacenter: compute 0.79, memory 0.81), both x 0.8:
# 0.632 and 0.648. The samples are vLLM --save-detailed results the serving model gives with them
# (make_samples.py), generated here so that they follow the model as it changes.
SHIPPED = {
    "compute": 0.79,
    "memory": 0.81,
    "cpu_step_us": 1700.0,
    "cpu_per_seq_us": 0.0,
    "request_latency_us": 19000.0,
}
TRUTH = {
    "compute": 0.79 * 0.8,
    "memory": 0.81 * 0.8,
    "cpu_step_us": 2400.0,
    "cpu_per_seq_us": 40.0,
    "request_latency_us": 30000.0,
}


@functools.cache  # one load: the round-trip test asks for it per example
def _make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", DATA / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _figures(hw, engine="vllm"):
    prof = hw.efficiency.engines[engine]
    return {
        "compute": hw.efficiency.compute,
        "memory": hw.efficiency.memory,
        "cpu_step_us": prof.cpu_step_s * 1e6,
        "cpu_per_seq_us": dict(prof.cpu_per_seq_s).get(hw.efficiency.family, 0.0) * 1e6,
        "request_latency_us": prof.request_latency_s * 1e6,
    }


def _tree_digest(root: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.is_file():
            h.update(f.relative_to(root).as_posix().encode() + f.read_bytes())
    return h.hexdigest()


# docs/COMMANDS.md's calibration section runs these lines on the samples make_samples.py writes:
# read through docgen (script, data), the session makes the samples and fits them once (the
# documents' part and this test alike), the fit's directory copied into each worker's scratch
CAL_MAKE = "python tests/data/bench/make_samples.py cal"
CAL_FIT = (
    "roofline validate cal/vllm-prefill.json cal/vllm-busy.json cal/vllm-long.json"
    " --model llama-3.1-8b --hardware h100 --weights bf16 --calibrate cal/mycluster"
)
CAL_HELD = "validate cal/vllm-held.json --model llama-3.1-8b --hardware h100 --weights bf16"


def test_calibrate_recovers_known_shares_and_host_costs():
    """The fit on the three runs recovers the figures they were served with (within 10%), into
    a user catalog that changes the H100 alone; the run held back falls below a fifth of its
    error with the catalog's figures. (The lines docs/COMMANDS.md runs, through docgen: the
    session runs them once.)"""
    from docs import docgen

    mod = _make_samples()
    assert mod.calibration_truth(load_catalog().accelerator("h100")) == pytest.approx(TRUTH)
    shipped_digest = _tree_digest(ROOT / "hardware")
    docgen.script(CAL_MAKE)  # the samples, in docgen's scratch directory
    assert (docgen.workdir() / "cal/vllm-held.json").is_file()
    cal = docgen.data(CAL_FIT)["calibration"]
    user = docgen.workdir() / "cal/mycluster"
    assert all(p["identified"] for p in cal["parameters"])
    assert {p["name"]: p["catalog"] for p in cal["parameters"]} == pytest.approx(SHIPPED)
    cat = load_catalog([user])
    got = _figures(cat.accelerator("h100"))
    for key, value in TRUTH.items():
        assert got[key] == pytest.approx(value, rel=0.10), key
    # the chip only: another chip of the family keeps the family's shares and vLLM's costs, and
    # another engine on the chip keeps its costs (the shares are the chip's, under every engine)
    assert _figures(cat.accelerator("h200")) == pytest.approx(
        _figures(load_catalog().accelerator("h200"))
    )
    sg_user, sg_shipped = (
        c.accelerator("h100").efficiency.engines["sglang"] for c in (cat, load_catalog())
    )
    assert sg_user == sg_shipped
    # the shipped figures never change: the files, and the catalog loaded without the directory
    assert _tree_digest(ROOT / "hardware") == shipped_digest
    assert _figures(load_catalog().accelerator("h100")) == pytest.approx(SHIPPED)
    # the held-back run with the shipped figures, then with the user catalog
    before = docgen.data(f"roofline {CAL_HELD} -f json")["summary"]["median_abs_error"]
    after = docgen.data(f"roofline --catalog cal/mycluster {CAL_HELD} -f json")["summary"]
    assert before > 0.10 and after["median_abs_error"] < before / 5
    errors = {e["metric"]: e for e in cal["errors"]}
    assert (
        errors["tpot_p50_ms"]["median_abs_error_calibrated"]
        < errors["tpot_p50_ms"]["median_abs_error_catalog"] / 5
    )


def test_a_calibration_scales_the_chips_curves_and_its_engines_costs(tmp_path):
    """A hand-written calibration: the H100's bandwidth share 0.648 against the family's 0.81
    scales its kernel curves by 0.8 (optime.kernel_view, as --eta-memory does); vLLM's cpu_step
    on the H100 becomes 2,000 µs, on the H200 stays the shipped 1,700."""
    from roofline.step.optime import kernel_view

    (tmp_path / "c.yaml").write_text(
        "calibrations:\n- {id: mine, hardware: h100, engine: vllm, memory: 0.648,"
        " cpu_step_us: 2000, source: by hand}\n"
    )
    cat = load_catalog([tmp_path])
    h100, h200 = cat.accelerator("h100"), cat.accelerator("h200")
    view = kernel_view(h100.efficiency, "bf16")
    assert view.sm == pytest.approx(0.8) and view.sc == pytest.approx(1.0)
    assert h100.efficiency.engines["vllm"].cpu_step_s == pytest.approx(2000e-6)
    assert h100.efficiency.compute == 0.79 and "by hand" in h100.efficiency.source
    assert h200.efficiency.memory == 0.81
    assert h200.efficiency.engines["vllm"].cpu_step_s == pytest.approx(1700e-6)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            "{id: x, hardware: h100, engine: vllm, memory: 1.2, source: s}",
            "key 'memory' must be in (0, 1]",
        ),
        ("{id: x, hardware: h1000, engine: vllm, source: s}", "unknown hardware 'h1000'"),
        ("{id: x, hardware: h100, engine: vlm, source: s}", "unknown engine 'vlm'"),
        (
            "{id: x, hardware: h100, engine: vllm, cpu_step_us: -1, source: s}",
            "must not be negative",
        ),
    ],
)
def test_a_bad_calibration_is_one_line(run, tmp_path, entry, said):
    (tmp_path / "c.yaml").write_text(f"calibrations:\n- {entry}\n")
    r = run("--catalog", str(tmp_path), "hardware", "show", "h100")
    assert r.code == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1
    v = run("catalog", "validate", str(tmp_path))
    assert v.code == 2 and said in v.stderr


def test_two_calibrations_of_one_chips_shares_conflict(tmp_path):
    from roofline.domain.errors import CatalogError

    (tmp_path / "c.yaml").write_text(
        "calibrations:\n- {id: a, hardware: h100, engine: vllm, memory: 0.7, source: s}\n"
        "- {id: b, hardware: h100, engine: sglang, compute: 0.7, source: s}\n"
    )
    with pytest.raises(CatalogError, match="'b': sets the shares of nvidia-h100-sxm"):
        load_catalog([tmp_path])


def test_one_run_leaves_what_it_cannot_separate_at_the_prior():
    """One run at one load and one length: three figures for five parameters. The fit lowers the
    error, and what the run cannot separate is reported as held by the prior, near the catalog's
    (within its prior width)."""
    from roofline.cases.bench import predicted, simulate
    from roofline.cases.fit import fit_runs
    from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
    from roofline.step.ops import Deployment

    cat = load_catalog()
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    dep = Deployment(weights=WEIGHT_FORMATS["bf16"], kv=KV_FORMATS["bf16"])
    (run_,) = read_bench_file(DATA / "sglang-bench-serving.jsonl")[:1]
    fit = fit_runs([run_], hw, "vllm", lambda h, r: predicted(simulate(r, m, h, dep, "vllm"), r))
    held = [p for p in fit.params if not p.identified]
    assert held and fit.rms_log_error_after < fit.rms_log_error_before
    for p in held:
        assert abs(p.fitted - p.catalog) <= p.prior_sigma, p.name


def test_no_runs_is_refused():
    from roofline.cases.fit import fit_runs

    with pytest.raises(InputError):
        fit_runs([], load_catalog().accelerator("h100"), "vllm", lambda h, r: {})

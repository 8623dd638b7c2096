"""`roofline serve` and `roofline size`: JSON contract values, errors, narrow tables."""

import json
from pathlib import Path

import pytest

from roofline.domain.layout import Layout

SERVE = ["serve", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "100"]


def test_serve_json_keys_and_light_load(run):
    doc = run(*SERVE, "--rate", "0.01", "--requests", "50", "--format", "json").json()
    e = doc["expected"]
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert set(e[key]) == {"p50", "p90", "p99", "mean"}
    assert set(e["throughput"]) >= {
        "requests_per_s",
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
    }
    assert {"goodput_requests_per_s", "slo_attainment"} <= set(e)
    assert doc["saturation_rate"]["ideal"] >= doc["saturation_rate"]["expected"] > 0
    # one request at a time: p50 TTFT is one prefill, the same as `analyze` at batch 1, plus
    # (expected only) vLLM's request_latency_us = 19000 in hardware/engines.yaml
    a = run(
        "analyze", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "100", "--format", "json"
    ).json()
    assert doc["ideal"]["ttft_s"]["p50"] == pytest.approx(a["ideal"]["batch_prefill_s"], rel=1e-3)
    want = a["expected"]["batch_prefill_s"] + 0.019
    assert e["ttft_s"]["p50"] == pytest.approx(want, rel=1e-3)
    assert doc["ideal"]["ttft_s"]["p50"] <= e["ttft_s"]["p50"]
    # the bands of the figures with published measurements behind them (tests/test_validate.py
    # derives their values); saturation inherits the throughput band, $/Mtok and J/token it
    # inverted (issue 35: cost ∝ 1 / throughput, low = 1 / high, high = 1 / low), and say so
    b = doc["bands"]
    assert {"ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "throughput"} <= set(b)
    assert b["saturation"]["rel"] == b["throughput"]["rel"]
    assert b["saturation"]["basis"].startswith("the throughput band")
    for name in ("cost_per_million_output_tokens", "joules_per_output_token"):
        assert b[name]["low"] == pytest.approx(1 / b["throughput"]["high"])
        assert b[name]["high"] == pytest.approx(1 / b["throughput"]["low"])
        assert b[name]["basis"].startswith("the throughput band, inverted")
    assert b["tpot_p50"]["family"] == "nvidia-datacenter" and "n=" in b["tpot_p50"]["basis"]


def test_serve_rate_range_gives_rows_and_tpot_grows(run):
    doc = run(
        *SERVE,
        "--rate",
        "2..16",
        "--requests",
        "200",
        "--no-saturation",
        "--slo-tpot",
        "20ms",
        "--format",
        "json",
    ).json()
    assert [p["rate"] for p in doc["points"]] == [2, 4, 8, 16]
    tpots = [p["expected"]["tpot_s"]["mean"] for p in doc["points"]]
    assert tpots == sorted(tpots)  # more load, bigger batches, slower steps
    for p in doc["points"]:
        g, t = p["expected"]["goodput_requests_per_s"], p["expected"]["throughput"]
        assert g <= t["requests_per_s"] * (1 + 1e-9)


def test_serve_closed_loop(run):
    doc = run(*SERVE, "--concurrency", "4", "--requests", "100", "--format", "json").json()
    assert doc["inputs"]["concurrency"] == 4 and doc["saturation_rate"] is None
    # Little's law for N users with no think time: X · E2E = N
    e = doc["expected"]
    assert e["throughput"]["requests_per_s"] * e["e2e_s"]["mean"] == pytest.approx(4, rel=0.05)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "--rate"),
        (["--rate", "x"], "--rate"),
        (["--rate", "-1"], "--rate"),
        (["--rate", "1", "--slo-ttft", "fast"], "--slo-ttft"),
        (["--rate", "1", "--slo-pct", "0"], "--slo-pct"),
        (["--rate", "1", "--requests", "0"], "--requests"),
        (["--rate", "1", "--max-seqs", "1,2"], "--max-seqs"),
        (["--rate", "1", "--price", "h100=free"], "--price"),
    ],
)
def test_serve_bad_input_exits_2(run, args, needle):
    r = run(*SERVE, *args)
    assert r.code == 2 and needle in r.stderr and r.stdout == ""


def test_size_json_and_best(run):
    doc = run(
        "size",
        "llama-3.1-8b",
        "--rate",
        "20",
        "--hardware",
        "h100,l40s",
        "--prompt",
        "1k",
        "--output",
        "200",
        "--slo-ttft",
        "2s",
        "--slo-tpot",
        "50ms",
        "--requests",
        "150",
        # p50: the SLO search's runs hold max(150, 50 / (1 - 0.5)) = 150 requests, not the
        # 5,000 p99 needs (slosearch.slo_requests); the keys, the best row and the price are
        # read alike at any percentile
        "--slo-pct",
        "50",
        "--price",
        "l40s=1.0",
        "--format",
        "json",
    ).json()
    deps = doc["deployments"]
    keys = {
        "hardware",
        "tp",
        "pp",
        "ep",
        "dp",
        "replicas",
        "gpus",
        "cost_per_hour",
        "cost_per_million_output_tokens",
        "joules_per_output_token",
        "meets_slo",
    }
    assert keys <= set(deps[0])
    best = [d for d in deps if d["best"]]
    assert len(best) == 1 and best[0] == doc["best"]
    ok = [d for d in deps if d["meets_slo"]]
    assert best[0]["cost_per_hour"] == min(d["cost_per_hour"] for d in ok)
    l40s = [d for d in ok if d["hardware"] == "nvidia-l40s"]
    assert l40s  # the price check below reads a row
    for d in l40s:  # the --price override: $1.00 per GPU-hour
        assert d["cost_per_hour"] == pytest.approx(1.0 * d["gpus"])
    shipped = json.loads((Path(__file__).parent.parent / "hardware/bands.json").read_text())
    table = shipped["bands"]["throughput"]
    for d in deps:  # each deployment carries its own family's and engine's bands (null: pooled)
        b = d["bands"]["throughput"]
        want = table["families"][b["family"]] if b["family"] else table["pooled"]
        if b["engine"]:
            assert b["engine"] == doc["inputs"]["engine"]  # vllm: no version profile asked
            want = table["engines"][b["family"]][b["engine"]]
        assert b["rel"] == want["rel"] > 0 and b["n"] == want["n"]
        assert (b["low"], b["high"]) == (want["low"], want["high"])
        assert d["bands"]["ttft_p99"]["applies_to"] == ["ttft_s.p99"]


def test_size_errors(run):
    r = run("size", "llama-3.1-8b")
    assert r.code == 2 and "--rate" in r.stderr
    r = run("size", "llama-3.1-8b", "--rate", "1", "--hardware", "h1000")
    assert r.code == 2 and "h1000" in r.stderr
    r = run("size", "llama-3.1-8b", "--rate", "1", "--minimize", "speed")
    assert r.code == 2 and "--minimize" in r.stderr


@pytest.mark.parametrize("width", ["60", "80", "120"])
def test_tables_never_cut_a_cell(run, width, compute_once):
    """(compute_once: each command computes at the first width; the others render a copy)"""
    env = {"COLUMNS": width}
    outs = [
        run(*SERVE, "--rate", "5", "--requests", "40", env=env).stdout,
        run(*SERVE, "--rate", "1,4,8", "--requests", "40", "--no-saturation", env=env).stdout,
        run(
            "size",
            "llama-3.1-8b",
            "--rate",
            "10",
            "--hardware",
            "h100,l4",
            "--requests",
            "100",
            "--slo-ttft",
            "1s",
            "--slo-pct",
            "90",
            env=env,
        ).stdout,
        run(
            "cliff",
            "llama-3.1-8b",
            "h100",
            "--max-seqs",
            "1,8",
            "--requests",
            "8",
            "--output",
            "1k",
            "--preemption",
            "swap",
            env=env,
        ).stdout,
        run(
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
            env=env,
        ).stdout,
        run(
            "disagg",
            "llama-3.1-8b",
            "--prefill",
            "h100",
            "--decode",
            "h100",
            "--rate",
            "5",
            "--requests",
            "60",
            env=env,
        ).stdout,
    ]
    for out in outs:
        assert "…" not in out and out.strip()


def test_disagg_under_traffic_compares_capacity_per_gpu(run):
    doc = run(
        "disagg",
        "llama-3.1-8b",
        "--prefill",
        "h100",
        "--decode",
        "h100",
        "--prompt",
        "2k",
        "--output",
        "200",
        "--rate",
        "10",
        "--requests",
        "150",
        "--slo-ttft",
        "1s",
        "--slo-tpot",
        "40ms",
        # p50: the SLO search's runs hold max(150, 50 / (1 - 0.5)) = 150 requests, not the
        # 5,000 p99 needs (slosearch.slo_requests); the identities below hold at any percentile
        "--slo-pct",
        "50",
        "--format",
        "json",
    ).json()
    tr = doc["traffic"]
    for name in ("colocated", "disaggregated"):
        x = tr[name]
        # capacity per GPU = the highest rate one unit serves within the SLOs / its GPUs
        assert x["capacity_per_gpu"] == pytest.approx(x["max_rate_per_unit"] / x["gpus_per_unit"])
        if x["units"]:
            assert x["units"] * x["max_rate_per_unit"] >= 10 * (1 - 1e-9)
            assert x["gpus"] == x["units"] * x["gpus_per_unit"]
    assert tr["disaggregated"]["gpus_per_unit"] == (
        tr["disaggregated"]["prefill_replicas"] + tr["disaggregated"]["decode_replicas"]
    )
    best = max(("colocated", "disaggregated"), key=lambda n: tr[n]["capacity_per_gpu"])
    assert tr["better"] == best


def test_check_measures_tpot_at_the_given_context(run, cat):
    from roofline.domain.precision import WEIGHT_FORMATS
    from roofline.step.ops import Deployment
    from roofline.step.phases import decode

    doc = run(
        "check",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--weights",
        "fp8",
        "--batch",
        "8",
        "--context",
        "32k",
        "--max-tpot",
        "1s",
        "--format",
        "json",
    ).json()
    (c,) = doc["checks"]
    # the decode step of 8 sequences holding 32,000 tokens each, not the 1k/1k default mean
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], layout=Layout(tp=4))
    step = decode(cat.model("llama-3.1-70b"), cat.accelerator("h100"), dep, 8, 32_000)
    assert c["value"] == pytest.approx(float(step.t_expected_s))


def test_check_under_traffic_exit_codes(run):
    base = ["check", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "100", "--rate", "5"]
    ok = run(*base, "--max-ttft-p99", "5s", "--min-goodput", "1")
    assert ok.code == 0
    bad = run(*base, "--max-tpot-p99", "1us")
    assert bad.code == 1 and "max_tpot_p99" in bad.stderr
    r = run("check", "llama-3.1-8b", "h100", "--max-tpot-p99", "1s")
    assert r.code == 2 and "--rate" in r.stderr and r.stdout == ""


def test_check_min_concurrency_counts_every_replica(run):
    args = ["check", "llama-3.1-70b", "h100", "--tp", "4", "--weights", "fp8", "--context", "32k"]
    one = run(*args, "--min-batch", "1", "--format", "json").json()
    mb = one["checks"][0]["value"]  # max batch of one replica at 32k tokens
    two = run(*args, "--dp", "2", "--min-concurrency", str(2 * mb), "--format", "json").json()
    assert two["ok"] and two["checks"][0]["value"] == 2 * mb
    r = run(*args, "--dp", "2", "--min-concurrency", str(2 * mb + 1))
    assert r.code == 1


def test_sweep_prices_each_point(run):
    out = run(
        "sweep",
        "--batch",
        "1,64",
        "--hardware",
        "h100,rtx-4090",
        "--price",
        "h100=2.0",
        "--format",
        "json",
    ).json()
    for p in out["points"]:
        if p["hardware"] == "nvidia-h100-sxm":  # $2.00 x TP1 over tokens per hour, per million
            want = 2.0 / (p["output_tokens_per_s"] * 3600) * 1e6
            assert p["cost_per_million_output_tokens"] == pytest.approx(want)
        else:  # no list price for a consumer card
            assert p["cost_per_million_output_tokens"] is None


def test_size_disagg_adds_pool_deployments(run):
    doc = run(
        "size",
        "llama-3.1-8b",
        "--rate",
        "20",
        "--hardware",
        "h100",
        "--prompt",
        "2k",
        "--output",
        "200",
        "--slo-ttft",
        "1s",
        "--slo-tpot",
        "40ms",
        "--disagg",
        "--slo-pct",
        "90",
        "--requests",
        "150",
        "--format",
        "json",
    ).json()
    pools = [d for d in doc["deployments"] if d["prefill_replicas"]]
    assert pools and doc["inputs"]["disaggregated"]
    for d in pools:
        if d["meets_slo"]:  # units of P prefill + D decode replicas, each pool its TP x PP
            pre = d["prefill_pool"]
            per_unit = d["prefill_replicas"] * pre["tp"] * pre["pp"]
            per_unit += d["decode_replicas"] * d["tp"] * d["pp"]
            assert d["gpus"] == d["replicas"] * per_unit
            assert d["expected"]["ttft_s"]["p99"] <= 1.0 and d["expected"]["tpot_s"]["p99"] <= 0.04
            # the whole fleet's pools carry the 20 req/s; at the throughput band's edges its
            # bands under load, as the colocated rows': never above the rate it is offered
            thr = d["load_bands"]["throughput"]
            assert d["expected"]["throughput"]["requests_per_s"] == pytest.approx(20.0)
            assert thr["high"] == 1.0 and 0 < thr["low"] <= 1.0
    assert sum(d["best"] for d in doc["deployments"]) == 1

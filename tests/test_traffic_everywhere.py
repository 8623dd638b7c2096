"""Issue 33 item 4 and issue 35 item 3: the traffic a command sizes or checks against (an arrival
log, a workload file, a confidence) taken by check and report through one option group
(cli.traffic_options.ArrivalOptions), with one rule for what applies together."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.catalog.bands import band
from roofline.engines.engine import engine

ROOT = Path(__file__).resolve().parent.parent
AZURE = str(ROOT / "examples/arrivals/azure_sample.csv")
CURVE = str(ROOT / "examples/curves/sinusoid-day.csv")


def test_check_replays_a_log_as_serve_does(run):
    """check --arrivals serves the log through serve's path: the same p99 TTFT as
    `serve --dp 7 --arrivals` on it, at the log's own pace: 24 requests, 23 gaps over 10.56 s
    (the sample's first and last TIMESTAMP), x 40 = 87.1 req/s."""
    log = ["--arrivals", AZURE, "--speedup", "40", "--dp", "7"]
    chk = run("check", "llama-3.1-8b", "h100", *log, "--max-ttft-p99", "1s", "--format", "json")
    assert chk.code == 0, chk.stderr
    ttft = next(c for c in chk.json()["checks"] if c["name"] == "max_ttft_p99")
    assert "at 87.1" in ttft["detail"]  # 23 / 10.5624 x 40 = 87.107
    srv = run("serve", "llama-3.1-8b", "h100", *log, "--format", "json")
    assert ttft["value"] == pytest.approx(srv.json()["points"][0]["expected"]["ttft_s"]["p99"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--arrivals", AZURE, "--requests", "10"], "cannot cut it"),
        (["--arrivals", AZURE, "--burstiness", "0.5"], "keeps its own gaps"),
        (["--rate", "3", "--speedup", "2"], "give --arrivals too"),
        (
            [
                "--rate",
                "3",
                "--workload",
                "examples/workloads/chat-batch.yaml",
                "--arrivals",
                AZURE,
            ],
            "drop arrivals",
        ),
        (["--rate", "3", "--confidence", "p99"], "90% intervals"),
        (
            # a workload file's day is planned (tests/test_mix_day.py); a curve needs a day check
            ["--workload", "examples/workloads/chat-batch.yaml", "--traffic-curve", CURVE],
            "traffic_curve needs max_gpu_hours_per_day",
        ),
    ],
)
def test_options_that_cannot_apply_are_one_line_and_exit_2(run, args, says):
    r = run("check", "llama-3.1-8b", "h100", "--max-ttft-p99", "1s", *args)
    assert r.code == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_confidence_without_a_traffic_check_is_refused(run):
    r = run("check", "llama-3.1-8b", "h100", "--fits", "--confidence", "p90")
    assert r.code == 2 and "--confidence sizes traffic checks" in r.stderr
    # with --spec the option is set for every deployment (as report sets it), never dropped
    r = run("check", "--spec", str(ROOT / "examples/deploy.yaml"), "--confidence", "p90")
    assert r.code == 2 and "--confidence sizes traffic checks" in r.stderr


def test_check_at_p90_is_never_kinder_than_expected(run, cat):
    """At p90 each latency is the queue's at the rate / the throughput band's low edge (no
    shorter than at the rate itself) x its light-load band's high edge (the catalog's bands:
    H100's family under vLLM), so at least the expected one x that edge (named in the detail)."""
    base = ["check", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200", "--rate", "3"]
    lim = ["--max-ttft-p99", "10s", "--max-tpot-p99", "1s", "--requests", "200"]
    exp = {c["name"]: c for c in run(*base, *lim, "--format", "json").json()["checks"]}
    doc = run(*base, *lim, "--confidence", "p90", "--format", "json").json()
    p90 = doc["checks"]
    hw = cat.accelerator("h100")
    profile = engine("auto", hw).profile_id
    low = band("throughput", hw.efficiency.family, profile)
    assert low is not None  # the JSON names the edges, the catalog's band edges
    assert doc["deployments"][0]["confidence"]["capacity"] == pytest.approx(min(1.0, low.low))
    for c in p90:
        high = band(
            "ttft_light" if "ttft" in c["name"] else "tpot_light", hw.efficiency.family, profile
        )
        assert high is not None
        assert c["value"] >= exp[c["name"]]["value"] * max(1.0, high.high) * (1 - 1e-9)
        assert c["detail"].startswith("p90 edge at 3 req/s")


def test_report_takes_the_group_and_names_it(run, tmp_path):
    spec = tmp_path / "r.yaml"
    spec.write_text(
        "model: llama-3.1-8b\nprompt: 1k\noutput: 200\nrequests: 200\n"
        "checks: {max_ttft_p99: 2s, max_tpot_p99: 50ms}\n"
        "candidates:\n- {hardware: h100}\n"
    )
    r = run("report", str(spec), "--arrivals", AZURE, "--speedup", "4", "--format", "json")
    assert r.code == 2 and "cannot cut it" in r.stderr  # the spec's requests: a log is whole
    spec.write_text(spec.read_text().replace("requests: 200\n", ""))
    doc = run("report", str(spec), "--arrivals", AZURE, "--speedup", "4", "--format", "json").json()
    assert doc["inputs"]["arrivals"] == f"arrivals replayed from {AZURE}"
    from roofline.cli.report import winner_line

    assert winner_line(doc).startswith(f"best: h100 TP1 under arrivals replayed from {AZURE}:")
    assert doc["best"]["name"] == "h100 TP1"


def test_size_refuses_what_a_workload_file_does_not_take(run):
    w = "examples/workloads/chat-batch.yaml"
    r = run("size", "llama-3.1-8b", "--hardware", "h100", "--workload", w, "--disagg")
    assert r.code == 2 and "drop --disagg" in r.stderr


def test_report_names_a_workload_files_classes(run, tmp_path):
    """report over a spec naming a workload file: the candidates' headers and the inputs name
    the file and its classes, not the one-shape prompt and output it replaces."""
    spec = tmp_path / "r.yaml"
    w = Path("examples/workloads/chat-batch.yaml").resolve()
    spec.write_text(f"model: llama-3.1-8b\nworkload: {w}\nrequests: 200\nrate: 20\n"
                    "checks: {max_ttft_p99: 1s}\ncandidates:\n- {hardware: h100}\n")  # fmt: skip
    r = run("report", str(spec), "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["inputs"]["workload"] == str(w) and doc["inputs"]["prompt_tokens"] is None
    assert doc["candidates"][0]["classes"] == "chat, batch"


def test_a_replayed_log_gets_the_fewest_replicas_its_replay_needs(run):
    """The stated rule: the replay meets the SLOs at the answer N and misses them at N - 1
    (serve --dp on the same log, the same path)."""
    log = ("--arrivals", AZURE, "--speedup", "100")
    slo = ("--slo-ttft", "300ms", "--slo-tpot", "50ms")
    best = run("size", "llama-3.1-8b", "--hardware", "h100", *log, *slo, "-f", "json").json()
    n, tp = best["best"]["replicas"], str(best["best"]["tp"])
    assert n > 1

    def meets(dp: int) -> bool:
        args = ("serve", "llama-3.1-8b", "h100", "--tp", tp, "--dp", str(dp), *log, *slo)
        return run(*args, "--no-saturation", "-f", "json").json()["points"][0]["expected"][
            "meets_slo"
        ]

    assert meets(n) and not meets(n - 1)

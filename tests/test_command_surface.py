"""Issues 33 item 4, 37 item 1 and 38: the traffic options (cli.traffic_options.ArrivalOptions)
in serve as in size, check and report, with the same refusals; check specs naming a workload
file, the router and the KV tiers as the options do."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from conftest import AGENT

from roofline.cli import app

ROOT = Path(__file__).resolve().parent.parent
AZURE = str(ROOT / "examples/arrivals/azure_sample.csv")
CHAT_BATCH = str(ROOT / "examples/workloads/chat-batch.yaml")
GROUP = ("--arrivals", "--speedup", "--burstiness", "--workload", "--confidence")


def _options(command: str) -> dict[str, tuple]:
    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {
        o: (p.type.name, str(p.default), p.help)
        for p in cmd.params
        if p.param_type_name == "option"
        for o in p.opts
    }


def test_serve_takes_the_group_size_check_and_report_take():
    """One declaration: the five options in serve with the same type, default and help."""
    want = _options("size")
    for command in ("serve", "check", "report"):
        got = _options(command)
        for flag in GROUP:
            assert got.get(flag) == want[flag], (command, flag)


# (options, the refusal's words): each refused alike by serve and check (one rule,
# cli.traffic_rules), one line on stderr, exit 2
REFUSED = [
    (["--arrivals", AZURE, "--requests", "10"], "--requests cannot cut it"),
    (["--arrivals", AZURE, "--burstiness", "0.5"], "keeps its own gaps"),
    (["--rate", "3", "--speedup", "2"], "give --arrivals too"),
    (["--arrivals", AZURE, "--rate", "3", "--speedup", "2"], "--speedup compresses its own"),
    (["--rate", "3", "--workload", CHAT_BATCH, "--arrivals", AZURE], "drop arrivals"),
]


@pytest.mark.parametrize(("args", "says"), REFUSED)
def test_serve_refuses_what_check_refuses(run, args, says):
    srv = run("serve", "llama-3.1-8b", "h100", *args)
    chk = run("check", "llama-3.1-8b", "h100", "--max-ttft-p99", "1s", *args)
    for r in (srv, chk):
        assert r.code == 2 and says in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    # the same words (check names its deployment first): one rule
    assert chk.stderr.endswith(srv.stderr.removeprefix("error: "))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--rate", "3", "--confidence", "p90"], "serve reports the expected figures"),
        (["--arrivals", AZURE, "--concurrency", "4"], "--concurrency is a closed loop"),
        (["--arrivals", AZURE, "--duration", "60s"], "--duration cannot cut it"),
        (["--workload", CHAT_BATCH, "--concurrency", "4"], "drop concurrency"),
    ],
)
def test_serve_refuses_what_cannot_apply_to_it(run, args, says):
    """Before, --concurrency and --speedup beside a log were dropped without a word and
    --confidence was no option of serve."""
    r = run("serve", "llama-3.1-8b", "h100", *args)
    assert r.code == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_log_re_timed_at_a_rate_takes_burstiness_in_serve_and_check(run):
    """A log's lengths at --rate 2 with gamma gaps (burstiness 0.5): no longer refused, and the
    same requests in both commands: the 24 requests of the sample, each served once."""
    args = ["--arrivals", AZURE, "--rate", "2", "--burstiness", "0.5"]
    srv = run("serve", "llama-3.1-8b", "h100", *args, "--no-saturation", "-f", "json")
    assert srv.code == 0, srv.stderr
    e = srv.json()["points"][0]["expected"]
    assert e["requests"] == 24  # the sample's 24 rows
    chk = run("check", "llama-3.1-8b", "h100", *args, "--max-ttft-p99", "10s", "-f", "json")
    assert chk.code == 0, chk.stderr
    ttft = chk.json()["checks"][0]
    assert ttft["value"] == pytest.approx(e["ttft_s"]["p99"])


FLEET = [
    ("router", "round-robin", "retention", "drop"),
    ("router", "affinity", "retention", "offload"),
]


@pytest.mark.parametrize(("rk", "router", "tk", "retention"), FLEET)
def test_a_spec_names_workload_router_and_kv_as_the_flags_do(
    run, tmp_path, rk, router, tk, retention
):
    """Spec keys workload, router, kv_offload, retention give check's figures with the options of
    the same names, and serve's with the same flags (one evaluation path: serve_at builds the
    replica and capacity serve builds)."""
    (tmp_path / "agent.yaml").write_text(AGENT)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: llama-3.1-8b\nhardware: h100\ndp: 2\nrequests: 400\nworkload: agent.yaml\n"
        f"{rk}: {router}\nkv_offload: cpu:1GB\n{tk}: {retention}\n"
        "checks: {max_ttft_p99: 1s, min_prefix_hit_rate: 0.1}\n"
    )
    flags = ["--dp", "2", "--requests", "400", "--workload", str(tmp_path / "agent.yaml")]
    flags += ["--router", router, "--kv-offload", "cpu:1GB", "--retention", retention]
    by_spec = run("check", "--spec", str(spec), "--exit-zero", "-f", "json")
    by_flags = run("check", "llama-3.1-8b", "h100", *flags, "--max-ttft-p99", "1s",
                   "--min-prefix-hit-rate", "0.1", "--exit-zero", "-f", "json")  # fmt: skip
    assert by_spec.code == 0 and by_flags.code == 0, by_spec.stderr + by_flags.stderr
    a = {c["name"]: c["value"] for c in by_spec.json()["checks"]}
    b = {c["name"]: c["value"] for c in by_flags.json()["checks"]}
    assert a == b
    srv = run("serve", "llama-3.1-8b", "h100", *flags, "--no-saturation", "-f", "json")
    e = srv.json()["points"][0]["expected"]
    assert a["max_ttft_p99"] == pytest.approx(e["ttft_s"]["p99"])
    assert a["min_prefix_hit_rate"] == pytest.approx(e["prefix_cache"]["hit_rate"])
    assert srv.json()["inputs"]["router"] == router
    detail = next(c["detail"] for c in by_spec.json()["checks"] if c["name"] == "max_ttft_p99")
    assert f"over 2 replicas, {router}" in detail  # the router named in check's output too
    assert detail.startswith("expected at 2 arrivals/s (")  # the file's 2 sessions/s, not turns


def test_spec_kv_keys_are_checked_as_the_flags_are(run, tmp_path):
    """A misspelt key names the right one; a bad value gets the flag's own refusal; KV keys
    without a traffic check are refused (they apply to a served run only)."""
    spec = tmp_path / "s.yaml"
    base = "model: llama-3.1-8b\nhardware: h100\n"
    spec.write_text(base + "rate: 2\nkv_ofload: cpu:1GB\nchecks: {max_ttft_p99: 1s}\n")
    r = run("check", "--spec", str(spec))
    assert r.code == 2 and "did you mean 'kv_offload'" in r.stderr
    spec.write_text(base + "rate: 2\nrouter: random\nchecks: {max_ttft_p99: 1s}\n")
    r = run("check", "--spec", str(spec))
    assert r.code == 2 and "--router must be one of" in r.stderr
    spec.write_text(base + "retention: pinned\nchecks: {fits: true}\n")
    r = run("check", "--spec", str(spec))
    assert r.code == 2 and "retention: traffic keys need rate" in r.stderr
    spec.write_text(base + "rate: 2\nretention: pinned\nchecks: {max_ttft_p99: 1s}\n")
    r = run("check", "--spec", str(spec))  # nothing reused: as serve refuses it
    assert r.code == 2 and "need KV that is reused" in r.stderr


def test_report_takes_router_and_kv_flags_as_its_candidates_spec_keys(run, tmp_path):
    """report --router/--kv-offload/--retention set the spec keys of the same names for every
    candidate, as check does: the same figures as the keys written in the file; and dropping a
    session's KV between turns (--retention drop) finds fewer prefix hits than the default cache,
    which keeps the history of each session's earlier turns."""
    (tmp_path / "agent.yaml").write_text(AGENT)
    head = "model: llama-3.1-8b\nrequests: 400\nworkload: agent.yaml\n"
    tail = "checks: {max_ttft_p99: 1s, min_prefix_hit_rate: 0.1}\n"
    tail += "candidates:\n- {hardware: h100, dp: 2}\n"
    (tmp_path / "plan.yaml").write_text(head + tail)
    keys = "router: round-robin\nkv_offload: cpu:1GB\nretention: drop\n"
    (tmp_path / "keys.yaml").write_text(head + keys + tail)
    flags = ["--router", "round-robin", "--kv-offload", "cpu:1GB", "--retention", "drop"]

    def figures(*args: str) -> dict[str, float]:
        r = run("report", *args, "-f", "json")
        assert r.code == 0, r.stderr
        return {c["name"]: c["value"] for c in r.json()["candidates"][0]["checks"]}

    by_flags = figures(str(tmp_path / "plan.yaml"), *flags)
    assert by_flags == figures(str(tmp_path / "keys.yaml"))
    plain = figures(str(tmp_path / "plan.yaml"))
    assert by_flags["min_prefix_hit_rate"] < plain["min_prefix_hit_rate"]

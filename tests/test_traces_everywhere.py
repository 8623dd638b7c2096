"""Traces in sizing (issue 33 item 4): --prompt-dist reads the published formats --arrivals reads,
any length (a trace is never cut by size's default --requests); options that cannot apply to an
arrival log are errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "arrivals"


def _jsonl(path: Path, n: int) -> Path:
    # lengths cycle 300, 600, 900 in and 50, 100 out: means 600 and 75 by hand
    lines = (
        json.dumps({"input_tokens": 300 * (1 + i % 3), "output_tokens": 50 * (1 + i % 2)})
        for i in range(n)
    )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_size_takes_a_trace_longer_than_its_default_requests(run, tmp_path):
    trace = _jsonl(tmp_path / "t.jsonl", 1200)
    r = run("size", "llama-3.1-8b", "--rate", "2", "--hardware", "h100", "--prompt-dist",
            str(trace), "-f", "json")  # fmt: skip
    assert r.code == 0, r.stderr
    assert r.json()["inputs"]["prompt_lengths"].startswith("1200 from")


def test_prompt_dist_reads_the_published_formats(run):
    for name, n in (("azure_sample.csv", 24), ("mooncake_sample.jsonl", None)):
        path = EXAMPLES / name
        doc = run("serve", "llama-3.1-8b", "h100", "--prompt-dist", str(path), "--rate", "1",
                  "--no-saturation", "-f", "json").json()  # fmt: skip
        lengths = doc["inputs"]["prompt_lengths"]
        assert str(path) in lengths
        if n is not None:  # the sample's rows, counted by hand
            assert lengths.startswith(f"{n} from")


def test_arrivals_refuse_requests_and_duration(run):
    log = str(EXAMPLES / "azure_sample.csv")
    for extra in (("--requests", "10"), ("--duration", "60s")):
        r = run("serve", "llama-3.1-8b", "h100", "--arrivals", log, *extra)
        # the one rule's words, as check says them (cli.traffic_rules)
        assert r.code == 2 and f"a log is replayed whole; {extra[0]} cannot cut it" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout


LOG = str(EXAMPLES / "azure_sample.csv")
SERVE, SIZE = ("serve", "llama-3.1-8b", "h100"), ("size", "llama-3.1-8b", "--hardware", "h100")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((*SERVE, "--arrivals", LOG, "--prompt", "3k"), "the log holds"),
        ((*SIZE, "--arrivals", LOG, "--output", "3k"), "the log holds"),
        (
            (
                *SERVE,
                "--prompt-dist",
                str(EXAMPLES / "mooncake_sample.jsonl"),
                "--rate",
                "1",
                "--prompt",
                "3k",
            ),
            "the trace holds",
        ),
        ((*SERVE, "--prompt-dist", "100,200", "--rate", "1", "--prompt", "3k"), "draws"),
        (
            (
                *SERVE,
                "--workload",
                str(EXAMPLES.parent / "workloads" / "agent.yaml"),
                "--prompt",
                "3k",
            ),
            "the file holds",
        ),
    ],
    ids=["serve-log", "size-log", "trace", "dist", "workload"],
)
def test_a_length_given_beside_its_source_is_refused(run, args, words):
    """Issue 33 item 4: options that cannot apply are errors. A log, a trace, a length
    distribution or a workload file holds the lengths; a --prompt/--output beside it was
    silently dropped (serve --arrivals azure_sample.csv --prompt 3k ran on the log's lengths)."""
    r = run(*args)
    assert r.code == 2 and words in r.stderr and args[-2] in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout


def test_size_replays_an_arrival_log_and_serve_agrees(run):
    """size --arrivals sizes on the log as it came: N from a replica's capacity at the log's mean
    rate, then replicas added while the replayed log misses the SLOs. The fleet it answers is
    the fleet serve --dp N --arrivals evaluates: the same log, the same router, the same p99.
    The log's mean rate: 23 gaps over its 10.5617 s span (18:15:46.196 to 18:15:56.757), sped
    up 40x, 23 / 10.5617 x 40 = 87.107 req/s."""
    log = ("--arrivals", "examples/arrivals/azure_sample.csv", "--speedup", "40")
    slo = ("--slo-ttft", "1s", "--slo-tpot", "50ms")
    doc = run("size", "llama-3.1-8b", "--hardware", "h100", *log, *slo, "-f", "json").json()
    best = doc["best"]
    n = best["replicas"]
    served = run("serve", "llama-3.1-8b", "h100", "--tp", str(best["tp"]), "--dp", str(n), *log,
                 *slo, "-f", "json").json()  # fmt: skip
    assert served["points"][0]["expected"]["ttft_s"]["p99"] == best["expected"]["ttft_s"]["p99"]
    assert abs(doc["inputs"]["rate"] - 23 / 10.5617 * 40) < 0.01
    assert "an arrival log: N from a replica's capacity" in doc["inputs"]["search"]  # its rule
    bad = run("size", "llama-3.1-8b", "--hardware", "h100", *log, "--requests", "50")
    assert bad.code == 2 and "--arrivals" in bad.stderr
    bad = run("size", "llama-3.1-8b", "--hardware", "h100", *log, "--traffic-curve",
              "examples/curves/sinusoid-day.csv")  # fmt: skip
    assert bad.code == 2 and "give one" in bad.stderr


def test_check_header_names_the_log_not_the_default_shape(run):
    """check under an arrival log states the log and its mean lengths, not the spec's default
    1,000-in / 1,000-out shape it never served (issue 33: each output says under what workload):
    the means are those of the CSV's ContextTokens and GeneratedTokens columns, read here with
    the csv module."""
    import csv

    log = EXAMPLES / "azure_sample.csv"
    rows = list(csv.DictReader(log.read_text().splitlines()))
    prompt = sum(int(r["ContextTokens"]) for r in rows) / len(rows)
    output = sum(int(r["GeneratedTokens"]) for r in rows) / len(rows)
    args = ["check", "llama-3.1-8b", "h100", "--arrivals", str(log), "--max-ttft-p99", "2s"]
    d = run(*args, "-f", "json").json()["deployments"][0]
    assert "prompt_tokens" not in d and "azure log" in d["arrivals"]
    assert d["prompt_tokens_mean"] == pytest.approx(prompt)
    assert d["output_tokens_mean"] == pytest.approx(output)
    out = run(*args).stdout
    assert "arrivals=azure log azure_sample.csv" in out and "prompt_tokens=" not in out

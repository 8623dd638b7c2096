"""Arrival logs (roofline.serving.arrivals): each sample replays to the requests and lengths it
holds, --speedup scales its times, and a bad row names the file, line and column."""

import csv
import json
from pathlib import Path

import pytest

from roofline.serving.arrivals import read_arrivals

SAMPLES = Path(__file__).resolve().parent.parent / "examples" / "arrivals"


def _held(name: str) -> tuple[int, float, float]:
    """(requests, mean prompt, mean output) read straight from the file."""
    path = SAMPLES / name
    if name.endswith(".jsonl"):
        recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        ins, outs = [r["input_length"] for r in recs], [r["output_length"] for r in recs]
    else:
        rows = list(csv.DictReader(path.read_text().splitlines()))
        i_key, o_key = (
            ("ContextTokens", "GeneratedTokens") if "ContextTokens" in rows[0] else
            ("Request tokens", "Response tokens")
        )  # fmt: skip
        ins, outs = [int(r[i_key]) for r in rows], [int(r[o_key]) for r in rows]
    return (
        len(ins),
        sum(max(x, 1) for x in ins) / len(ins),
        sum(max(x, 1) for x in outs) / len(outs),
    )


@pytest.mark.parametrize(
    ("name", "kind"),
    [("azure_sample.csv", "azure"), ("burstgpt_sample.csv", "burstgpt"),
     ("mooncake_sample.jsonl", "mooncake")],
)  # fmt: skip
def test_each_sample_replays_what_it_holds(run, name, kind):
    n, p_mean, o_mean = _held(name)
    w = read_arrivals(SAMPLES / name)
    assert w.n == n and w.arrival_s[0] == 0 and all(w.arrival_s[1:] >= w.arrival_s[:-1])
    assert w.prompts.mean() == pytest.approx(p_mean) and w.outputs.mean() == pytest.approx(o_mean)
    assert w.description["arrivals"].startswith(f"{kind} log")  # which columns were used
    doc = run("serve", "llama-3.1-8b", "h100", "--arrivals", str(SAMPLES / name), "-f", "json")
    assert doc.code == 0 and doc.json()["inputs"]["requests"] == n


def test_speedup_divides_the_times():
    w1 = read_arrivals(SAMPLES / "mooncake_sample.jsonl")
    w2 = read_arrivals(SAMPLES / "mooncake_sample.jsonl", speedup=2.0)
    assert w2.arrival_s == pytest.approx(w1.arrival_s / 2) and w2.rate == pytest.approx(2 * w1.rate)
    # Mooncake's timestamps are milliseconds: the span in seconds is a thousandth of theirs
    text = (SAMPLES / "mooncake_sample.jsonl").read_text()
    stamps = [json.loads(x)["timestamp"] for x in text.splitlines() if x.strip()]
    assert w1.arrival_s[-1] == pytest.approx((max(stamps) - min(stamps)) / 1e3)


def test_azure_timestamps_keep_their_seven_digits(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,100,10\n2023-11-16 18:15:47.0000001,200,20\n"
    )
    w = read_arrivals(f)
    assert w.arrival_s[1] == pytest.approx(0.3194101, abs=1e-7)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,12x,3\n",
         "line 2 column ContextTokens"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,12,3\n", "line 2 column TIMESTAMP"),
        ("Timestamp,Model,Request tokens,Response tokens\n1,m,5,-2\n",
         "line 2 column Response tokens"),
        ('{"timestamp": 1, "input_length": 5, "output_length": 2}\n{"timestamp": "x",'
         ' "input_length": 5, "output_length": 2}\n', "line 2 column timestamp"),
        ("a,b,c\n1,2,3\n", "needs the columns"),
        # at 1e30 s a float64 second is gone: two identical requests read as p50 != p99
        ('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 50}\n{"arrival_s": 1e30,'
         ' "input_tokens": 100, "output_tokens": 50}\n', "request 2 at 1e+30 s"),
    ],
)  # fmt: skip
def test_a_bad_row_names_file_line_and_column(run, tmp_path, text, says):
    f = tmp_path / ("log.jsonl" if text.startswith("{") else "log.csv")
    f.write_text(text)
    r = run("serve", "llama-3.1-8b", "h100", "--arrivals", str(f))
    assert r.code == 2 and says in r.stderr and str(f) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

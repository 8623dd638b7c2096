"""Issue 33 item 6: a legend under a table holds at most three lines at 80 columns (the rest under
-v), whatever the inputs' descriptions (an arrival log's path and columns included), and size's
band columns say one thing each (TTFT +% and TPOT +%, not "322/48")."""

from __future__ import annotations

import pytest

LOG = ("--arrivals", "examples/arrivals/azure_sample.csv", "--speedup", "40")
SLO = ("--slo-ttft", "1s", "--slo-tpot", "50ms")


def _legend(text: str) -> list[str]:
    """The paragraph ending in "-v: more": from the blank line before it."""
    import re

    lines = text.splitlines()
    mark = re.search(r"-v:\s+more", text)  # "-v:" may end one line and "more" begin the next
    assert mark, text
    end = text[: mark.end()].count("\n")
    start = max(i for i in range(end + 1) if not lines[i].strip()) + 1
    return lines[start : end + 1]


@pytest.mark.parametrize(
    "args",
    [
        (
            "serve",
            "llama-3.1-8b",
            "h100",
            "--rate",
            "5",
            "--requests",
            "100",
            "--no-saturation",
            *SLO,
        ),
        ("serve", "llama-3.1-8b", "h100", *LOG, "--dp", "7", "--no-saturation", *SLO),
        ("size", "llama-3.1-8b", "--hardware", "h100", *LOG, *SLO),
        (
            "serve",
            "llama-3.1-8b",
            "h100",
            "--rate",
            "2,4",
            "--requests",
            "100",
            "--no-saturation",
            *SLO,
        ),
    ],
    ids=["serve", "serve-log", "size-log", "serve-rates"],
)
def test_a_legend_is_at_most_three_lines(run, args):
    r = run(*args, env={"COLUMNS": "80"})
    assert r.code == 0, r.stderr
    legend = _legend(r.stdout)
    assert 1 <= len(legend) <= 3, "\n".join(legend)
    assert all(len(x.rstrip()) <= 80 for x in legend)
    assert "examples/arrivals/" not in "\n".join(legend)  # a file by its name, the path in -v
    if args[0] == "size":  # one column per band: the headers, and a cell per column
        header = next(i for i, x in enumerate(r.stdout.splitlines()) if "deployment" in x)
        above, head = r.stdout.splitlines()[header - 1 : header + 1]
        assert above.split()[-2:] == ["TTFT", "TPOT"] and head.split()[-2:] == ["+%", "+%"]
        assert "/" not in r.stdout.splitlines()[header + 2].split()[-1]


def test_the_rest_is_under_v(run, compute_once):
    quiet = run(
        "serve", "llama-3.1-8b", "h100", *LOG, "--no-saturation", env={"COLUMNS": "80"}
    ).stdout
    loud = run(
        "-v", "serve", "llama-3.1-8b", "h100", *LOG, "--no-saturation", env={"COLUMNS": "80"}
    ).stdout
    assert "examples/arrivals/azure_sample.csv" not in _legend(quiet)[0]
    assert "examples/arrivals/azure_sample.csv" in loud


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("azure log examples/arrivals/a.csv (TIMESTAMP, ContextTokens)", "azure log a.csv"),
        ("24 from examples/arrivals/a.csv (ContextTokens)", "24 from a.csv"),
        ("Poisson, 2 requests/s", "Poisson, 2 requests/s"),  # a unit is not a path
        ("16 users (closed loop)", "16 users (closed loop)"),  # nor a remark a file's columns
    ],
)
def test_a_legend_shortens_files_only(text, short):
    from roofline.render.traffic import brief

    assert brief(text) == short


def test_a_sweep_names_every_rate_it_ran(run):
    """serve --rate 2,4 ran two rates; its label named the first alone ("Poisson, 2
    requests/s"). Rates print at three significant figures: 2.5664 -> 2.57 (by hand)."""
    doc = run("serve", "llama-3.1-8b", "h100", "--rate", "2,4", "--requests", "50",
              "--no-saturation", "--burstiness", "0.25", "-f", "json").json()  # fmt: skip
    # gamma of shape 0.25: CV = 1/sqrt(0.25) = 2
    assert doc["inputs"]["arrivals"] == (
        "gamma, burstiness 0.25 (CV 2), at each of 2 rates, 2 to 4 requests/s"
    )
    one = run("serve", "llama-3.1-8b", "h100", "--rate", "2.5664", "--requests", "50",
              "--no-saturation", "-f", "json").json()  # fmt: skip
    assert one["inputs"]["arrivals"] == "Poisson, 2.57 requests/s"


def test_a_mark_stays_in_the_legend(run):
    """NOT STEADY (100 requests at 5 req/s span 20 s, under 5 mean E2Es of about 10 s at 1,000
    output tokens) stays in the legend when the load bands are named too (it was dropped)."""
    r = run("serve", "llama-3.1-8b", "h100", "--rate", "5", "--requests", "100", *SLO,
            env={"COLUMNS": "80"})  # fmt: skip
    legend = " ".join(_legend(r.stdout))
    assert "NOT STEADY" in legend and "bands through the queue" in legend, legend


def test_the_day_legend_is_at_most_three_lines(run):
    """The day table's autoscaling paragraph was six lines at 80 columns; now its last legend
    holds three at most, the whole rule under -v."""
    import re

    args = ("size", "llama-3.1-8b", "--hardware", "h100", "--traffic-curve",
            "examples/arrivals/mooncake_conversation_5min.jsonl", *SLO)  # fmt: skip
    loud = run("-v", *args, env={"COLUMNS": "80"}).stdout  # the legend, then the rule in full
    last = re.search(r"autoscaling reactive.*?-v:\s+more", loud, re.S)
    assert last and len(last.group(0).splitlines()) <= 3, loud
    assert "paid from the order" not in last.group(0) and "paid from the order" in loud


def test_analyze_legend_is_at_most_three_lines(run):
    """analyze's calibration and band notes were five lines at 80 columns; the bands' full
    provenance is under -v."""
    import re

    out = run("analyze", "llama-3.1-70b", "h100", "--tp", "4", env={"COLUMNS": "80"}).stdout
    last = re.search(r"expected: .*?-v:\s+more", out, re.S)
    assert last and len(last.group(0).splitlines()) <= 3, out
    loud = run("-v", "analyze", "llama-3.1-70b", "h100", "--tp", "4", env={"COLUMNS": "80"})
    assert "90th percentile of out-of-sample" in loud.stdout


def test_a_long_log_name_keeps_three_lines(run, tmp_path):
    """The full Azure code trace's file name, said three times (arrivals, prompts, outputs),
    made serve's legend four lines; the 24-row sample under that name (the 8,819 rows cost
    seconds): its lengths named once ("lengths from the log")."""
    import shutil

    log = tmp_path / "AzureLLMInferenceTrace_code.csv"
    shutil.copy("examples/arrivals/azure_sample.csv", log)
    r = run("serve", "llama-3.1-8b", "h100", "--arrivals", str(log), "--dp", "3",
            "--no-saturation", *SLO, env={"COLUMNS": "80"})  # fmt: skip
    legend = _legend(r.stdout)
    assert 1 <= len(legend) <= 3 and "lengths from the log" in " ".join(legend), legend


def test_verbose_is_read_after_the_command_too():
    """The legends say "-v: more" under the table a user just ran, so `roofline serve ... -v`
    works as `roofline -v serve ...` (the root's option), --catalog's value and what follows
    "--" left where they are."""
    from roofline.cli.startup import verbose_first

    assert verbose_first(["serve", "m", "h", "-v"]) == ["-v", "serve", "m", "h"]
    assert verbose_first(["--catalog", "d", "size", "--verbose", "m"]) == [
        "--verbose", "--catalog", "d", "size", "m",
    ]  # fmt: skip
    assert verbose_first(["-v", "serve", "m"]) == ["-v", "serve", "m"]  # already first
    assert verbose_first(["hardware", "list"]) == ["hardware", "list"]
    assert verbose_first(["x", "--", "-v"]) == ["x", "--", "-v"]  # after "--": an argument


def test_size_says_how_a_pooled_row_counts_its_gpus(run):
    """A P/D row's replicas are units of P prefill + D decode servers, so 'GPUs = replicas x TP
    x PP' did not hold for it (3P TP1 + 1D TP2: 5 GPUs a unit)."""
    args = ("size", "llama-3.1-8b", "--rate", "20", "--hardware", "h100", "--slo-ttft", "2s",
            "--slo-tpot", "50ms", "--disagg")  # fmt: skip
    out = " ".join(run("-v", *args, env={"COLUMNS": "80"}).stdout.split())
    assert "GPUs = replicas x TP x PP; a P/D row: units x its servers' GPUs" in out

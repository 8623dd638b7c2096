"""The HTML report (issue 27): the page carries the JSON's numbers, references nothing on the
network, escapes what it shows, and refuses a bad --out with one line and exit 2."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline.render.html import page
from roofline.render.html.parts import fmt
from tests.html_pages import COMMANDS, EXAMPLES, lookup, make


class _Collect(HTMLParser):
    """data-json/data-value pairs, the text of each, the embedded document and the tags."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[tuple[str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.embedded = ""
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "data-value" in a:
            self.figures.append((a["data-json"], a["data-value"]))
        self._in_json = tag == "script" and a.get("id") == "roofline-json"

    def handle_endtag(self, tag):
        self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.embedded += data


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    d = tmp_path_factory.mktemp("pages")
    return {name: make(name, d) for name in ("analyze", "serve", "size", "report")}


@pytest.mark.parametrize("name", ["analyze", "serve", "size", "report"])
def test_the_page_shows_the_json_numbers(pages, name):
    path, doc = pages[name]
    p = _Collect()
    p.feed(path.read_text())
    assert json.loads(p.embedded) == doc  # the page embeds the very document --format json prints
    assert len(p.figures) >= 5, name
    for where, raw in p.figures:
        assert json.loads(raw) == lookup(doc, where), where
    text = path.read_text()
    if name == "size":
        best = doc["best"]
        # the cheapest deployment that meets the SLOs is the answer, found here independently
        ok = [d for d in doc["deployments"] if d["meets_slo"] and d["gpus"]]
        cheapest = min(ok, key=lambda d: d["cost_per_million_output_tokens"])
        assert cheapest["cost_per_million_output_tokens"] == best["cost_per_million_output_tokens"]
        shown = f"${best['cost_per_million_output_tokens']:,.2f}"
        assert shown in text and str(best["gpus"]) in text
    if name == "report":
        cands = doc["candidates"]
        for c in cands:  # the served figures are the ones the checks judged
            judged = {x["name"]: x["value"] for x in c["checks"]}
            assert judged["max_ttft_p99"] == c["expected"]["ttft_s"]["p99"]
            assert judged["max_tpot_p99"] == c["expected"]["tpot_s"]["p99"]
        passing = [c for c in cands if c["ok"]]
        cheapest = min(passing, key=lambda c: c["cost_per_million_output_tokens"])
        assert doc["best"]["name"] == cheapest["name"]


def test_order_question_answer_why_inputs_provenance_versions(pages):
    text = pages["size"][0].read_text()
    marks = ['id="question"', 'id="answer"', 'id="why"', 'id="inputs"', 'id="provenance"']
    at = [text.index(m) for m in marks]
    assert at == sorted(at)
    assert 'id="tool-version"' in text and 'id="schema-version">1<' in text


def test_no_network_references(pages):
    """No script, stylesheet, image or font from anywhere: only the inline JSON block."""
    for path, _ in pages.values():
        text = path.read_text()
        p = _Collect()
        p.feed(text)
        for tag, a in p.tags:
            assert tag not in ("link", "img", "iframe", "object", "embed"), tag
            if tag == "script":
                assert a.get("type") == "application/json" and "src" not in a
            for attr in ("src", "href", "xlink:href"):
                assert attr not in a or not re.match(r"\s*(https?:)?//", a[attr] or ""), a
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
        assert "@import" not in text


def test_hostile_names_are_escaped():
    evil = "<script>alert(1)</script>\"&'"
    doc = {
        "schema_version": 1,
        "command": "size",
        "inputs": {"model": evil, "hardware": [evil], "rate": 1.0},
        "best": None,
        "deployments": [],
    }
    text = page(doc)
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # the embedded document cannot close its own script element early
    assert text.count("</script>") == 1
    p = _Collect()
    p.feed(text)
    assert json.loads(p.embedded)["inputs"]["model"] == evil


def test_units_as_people_read_them():
    assert fmt("ttft_s", 0.6786) == "679 ms"  # 0.6786 s = 678.6 ms, 3 significant figures
    assert fmt("expected.tpot_s.p99", 0.0373) == "37.3 ms"
    assert fmt("cost_per_million_output_tokens", 7.6556) == "$7.66"
    assert fmt("kv_occupancy", 0.0264) == "2.6%"
    assert fmt("output_tokens_per_s", 6000.0) == "6,000"  # a rate, not seconds
    assert fmt("weights_bytes", 18.2e9) == "18.2 GB"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["size", "llama-3.1-8b", "--rate", "5", "-o", "/nonexistent/p.html"], "does not exist"),
        (["analyze", "llama-3.1-8b", "h100", "-o", "/proc/p.html"], "cannot write"),
        (["plan", "llama-3.1-8b", "h100", "-o", "plan.txt"], "use a .html file name"),
        (["report", str(EXAMPLES / "deploy.yaml")], "candidates"),
    ],
)
def test_bad_out_is_one_line_and_exit_2(run, args, message):
    r = run(*args)
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


def test_format_html_on_stdout(run):
    r = run("edge", "llama-3.1-8b", "m3-ultra", "--weights", "q4_k_m", "--format", "html")
    assert r.code == 0 and r.stdout.startswith("<!DOCTYPE html>")
    assert r.stdout.rstrip().endswith("</html>")


def test_every_command_offers_the_report():
    import typer.main

    from roofline.cli.app import app as root

    group = typer.main.get_command(root)
    for name in COMMANDS:
        cmd = group.get_command(None, name)
        fmt_opt = next(p for p in cmd.params if "--format" in getattr(p, "opts", []))
        assert "html" in fmt_opt.type.choices, name
        assert any("--out" in getattr(p, "opts", []) for p in cmd.params), name


def test_bands_beside_their_values():
    """Both forms a document may carry: an interval beside the value (analyze's tpot_band_s)
    and a `bands` mapping above it whose applies_to names the value (serve and size)."""
    from roofline.render.html.parts import figure

    doc = {
        "expected": {"tpot_s": 0.0172, "tpot_band_s": [0.0154, 0.0190]},
        "best": {
            "expected": {"ttft_s": {"p99": 0.679}},
            "bands": {"ttft_p99": {"rel": 0.28, "applies_to": ["ttft_s.p99"]}},
        },
    }
    assert "(15.4 ms – 19 ms)" in figure(doc, "TPOT", "expected.tpot_s")
    shown = figure(doc, "p99 TTFT", "best.expected.ttft_s.p99")
    assert "(±28%)" in shown and 'data-json="best.bands.ttft_p99"' in shown


def test_the_roofline_roofs_are_the_chips(pages):
    """The roofs the page reads back from the ideal op times are the H100 SXM's datasheet
    figures: 3.35 TB/s of HBM3, 989 TFLOP/s dense bf16 (attention) and 1,979 fp8 (the GEMMs)."""
    from roofline.render.html.static import roofs

    bw, peaks = roofs(pages["analyze"][1])
    assert bw == pytest.approx(3.35e12, rel=1e-6)
    assert peaks == pytest.approx([989.5e12, 1979e12], rel=1e-3)


@pytest.mark.parametrize(
    ("candidates", "message"),
    [
        ("\n- {hardware: h100, tpp: 2}", "unknown key 'tpp' (did you mean 'tp'?)"),
        (" []", "candidates: the list is empty"),
        ("\n- {hardware: h100, checks: {fits: true}}", "checks are shared"),
    ],
)
def test_a_bad_report_spec_is_one_line(run, tmp_path, candidates, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"model: llama-3.1-8b\nchecks: {{fits: true}}\ncandidates:{candidates}\n")
    r = run("report", str(spec))
    assert r.code == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


def test_size_of_a_workload_file_has_a_page(run):
    """size --workload --format html had no page of its own: the size page read the keys of a
    size answer (meets_slo, best) that a workload's pool does not have, and exited 3. Its page
    names each class's p99 TTFT against its own SLO, as the JSON gives them. (The JSON through
    docgen.data: docs/COMMANDS.md reads the same line, and the session runs it once.)"""
    from docs.docgen import data

    args = ["size", "llama-3.1-8b", "--hardware", "h100"]
    args += ["--workload", "examples/workloads/chat-batch.yaml"]
    r = run(*args, "--format", "html")
    assert r.code == 0 and r.stderr == "", r.stderr
    d = data(" ".join(["roofline", *args]))["deployments"][0]
    for k in d["classes"]:  # chat (1 s SLO) and batch (60 s), the file's two classes
        ttft = fmt("x_s", k["ttft_s"]["p99"])
        assert f"{k['name']} p99 TTFT {ttft} against {fmt('x_s', k['slo']['ttft_s'])}" in r.stdout
    assert 'data-json="deployments.0.gpus"' in r.stdout  # the headline figures read the pool

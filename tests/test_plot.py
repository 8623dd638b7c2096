"""Issue #6: the roofline chart in the terminal (80 columns) and as files through matplotlib."""

import sys

import pytest


def test_terminal_roofline_fits_80_columns(run):
    r = run("plot", "llama-3.1-8b", "h100", "--batch", "8", "--prompt", "4k")
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    body = lines[1:-3]
    assert all(len(line) <= 80 for line in body)
    text = "\n".join(body)
    assert "P" in text and "D" in text and "|" in text and "/" in text
    assert "bf16 989.5 TFLOP/s" in r.stdout  # the compute roof of the workload's dtype


def test_plot_file_outputs(run, tmp_path):
    pytest.importorskip("matplotlib")
    svg = tmp_path / "roof.svg"
    r = run("plot", "deepseek-r1", "h200", "--tp", "8", "--weights", "fp8", "-o", str(svg))
    assert r.code == 0 and svg.read_text().lstrip().startswith("<?xml")
    png = tmp_path / "cliff.png"
    r = run(
        "cliff",
        "llama-3.1-8b",
        "h100",
        "--max-seqs",
        "1,16,64",
        "--requests",
        "32",
        "--output",
        "4k",
        "--out",
        str(png),
    )
    assert r.code == 0 and png.read_bytes()[:4] == b"\x89PNG"


def test_missing_matplotlib_is_one_clear_line(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    r = run("plot", "llama-3.1-8b", "h100", "-o", str(tmp_path / "x.png"))
    assert r.code == 2 and r.stdout == "" and "roofline[plot]" in r.stderr


def test_bad_chart_suffix(run, tmp_path):
    r = run("plot", "llama-3.1-8b", "h100", "-o", str(tmp_path / "x.gif"))
    assert r.code == 2 and ".svg" in r.stderr

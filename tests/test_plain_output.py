"""Plain output (issue 33 item 6): report names its winner first in the terminal; the day chart
draws each latency on its own axis."""

from __future__ import annotations

import importlib.util

import pytest

from roofline.cli.report import winner_line


def _doc(best):
    return {"inputs": {"rate": 4.0}, "candidates": [{}, {}, {}], "best": best}


def test_report_names_the_winner_or_none():
    best = {"name": "b200 TP2", "gpus": 2, "cost_per_million_output_tokens": 3.19,
            "expected": {"ttft_s": {"p99": 0.248}, "tpot_s": {"p99": 0.0242}}}  # fmt: skip
    line = winner_line(_doc(best))
    assert line.startswith("best: b200 TP2 at 4 req/s: 2 GPUs, $3.19/Mtok, p99 TTFT 248 ms")
    assert "p99 TPOT 24.2 ms" in line and "of 3 candidates" in line
    assert winner_line(_doc(None)) == "none of the 3 candidates passes every check"


@pytest.mark.skipif(not importlib.util.find_spec("matplotlib"), reason="the plot extra")
def test_day_chart_one_axis_per_metric(tmp_path, monkeypatch):
    from roofline.render import charts

    figs = []
    plt = charts._pyplot()
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    iv = {"start_s": 0, "duration_s": 3600, "rate": 10.0, "replicas": 3,
          "ttft_p99_s": 0.4, "tpot_p99_s": 0.03, "violated_s": 0}  # fmt: skip
    doc = {
        "inputs": {"model": "m", "slo_ttft_s": 2.0, "slo_tpot_s": 0.05},
        "day": {"intervals": [iv, {**iv, "start_s": 3600}], "capacity_per_replica": 4.0,
                "static_replicas": 3, "deployment": "d", "gpu_hours_per_day": 72.0,
                "static_gpu_hours_per_day": 72.0, "slo_attainment": 1.0},
    }  # fmt: skip
    charts.save_day(doc, tmp_path / "day.svg")
    (fig,) = figs
    labels = {ax.get_ylabel(): [ln.get_label() for ln in ax.get_lines()] for ax in fig.axes}
    assert labels["p99 TTFT, ms"] == ["p99 TTFT", "TTFT SLO"]
    assert labels["p99 TPOT, ms"] == ["p99 TPOT", "TPOT SLO"]
    # the TPOT line at 30 ms, its SLO at 50 ms: on its own axis, in ms
    tpot = next(ax for ax in fig.axes if ax.get_ylabel() == "p99 TPOT, ms")
    assert tpot.get_lines()[0].get_ydata()[0] == pytest.approx(30.0)

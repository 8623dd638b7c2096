"""The HTML page of `roofline fleet --days N`: the percentiles over days (peak GPUs, GPU-hours,
$/day, SLO attainment), each day's $/day against its rate multiplier, the days' table and the
assumptions they were drawn under."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from roofline.render.html.parts import Content, chart_block, rows_table
from roofline.render.html.svg import Axis, Series, line_chart


def fleet_days(doc: Mapping[str, Any]) -> Content:
    a, days = doc["answer"], doc["days"]
    c = Content()
    c.figures = [
        ("p50 peak GPUs", "answer.peak_gpus.p50"),
        ("p90 peak GPUs", "answer.peak_gpus.p90"),
        ("p50 $ per day", "answer.cost.p50"),
        ("p90 $ per day", "answer.cost.p90"),
        ("p50 GPU-hours per day", "answer.gpu_hours.p50"),
        ("p10 SLO attainment", "answer.slo_attainment.p10"),
    ]
    c.verdict = (
        f"Over {len(days)} drawn days the p50 day peaks at {a['peak_gpus']['p50']:,.0f} GPUs for"
        f" ${a['cost']['p50']:,.0f}; the p90 day needs {a['peak_gpus']['p90']:,.0f} GPUs and"
        f" ${a['cost']['p90']:,.0f}."
    )
    pts = [
        (d["rate_multiplier"], d["cost"], f"day {d['day']}: x{d['rate_multiplier']:.2f}")
        for d in days
    ]
    c.charts.append(
        chart_block(
            "$ per day against the day's rate multiplier",
            line_chart(
                "$ per day",
                Axis("rate multiplier"),
                Axis("$ per day"),
                [Series("days", pts, line=False)],
                y_zero=False,
            ),
            rows_table([{"figure": k, **v} for k, v in a.items()], caption="percentiles over days"),
        )
    )
    c.charts.append(f"<figure><figcaption>Each day</figcaption>{rows_table(days)}</figure>")
    items = "".join(
        f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in doc["assumptions"].items()
    )
    c.charts.append(f"<figure><figcaption>Assumptions</figcaption><ul>{items}</ul></figure>")
    return c


CONTENT = {"fleet-days": fleet_days}

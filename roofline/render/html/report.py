"""The HTML report's answer and charts for `roofline report`: a spec's candidates compared (the
cheapest that passes its checks is the answer; cost, p99 TTFT and TPOT per candidate against the
spec's limits; every check). Read from the command's JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline.render.html.parts import Content, chart_block, fmt, is_number, rows_table
from roofline.render.html.svg import Axis, Ref, bar_chart


def _sec(v: float) -> str:
    return fmt("x_s", v)


def _money(v: float) -> str:
    return fmt("cost_per", v)


def report(doc: Mapping[str, Any]) -> Content:
    inputs, cands = doc["inputs"], doc.get("candidates") or []
    best = doc.get("best")
    c = Content()
    if best is None:
        c.verdict = f"No candidate for {inputs.get('model')} passes every check."
    else:
        c.figures = [
            ("candidate", "best.name"),
            ("chip", "best.hardware"),
            ("tensor parallel", "best.tp"),
            ("GPUs", "best.gpus"),
            ("$ per million output tokens", "best.cost_per_million_output_tokens"),
            ("p99 TTFT", "best.expected.ttft_s.p99"),
            ("p99 TPOT", "best.expected.tpot_s.p99"),
            ("passes every check", "best.ok"),
        ]
        cost = best.get("cost_per_million_output_tokens")
        c.verdict = (
            f"{best['name']} passes every check"
            + (f" at {_money(cost)} per million output tokens" if is_number(cost) else "")
            + f" ({sum(1 for x in cands if x['ok'])} of {len(cands)} candidates pass)."
        )
    rows = []
    for x in cands:
        e = x.get("expected") or {}
        rows.append(
            {
                "candidate": x["name"],
                "passes": x["ok"],
                "gpus": x.get("gpus"),
                "cost_per_million_output_tokens": x.get("cost_per_million_output_tokens"),
                "ttft_p99_s": (e.get("ttft_s") or {}).get("p99"),
                "tpot_p99_s": (e.get("tpot_s") or {}).get("p99"),
                "kv_occupancy": e.get("kv_occupancy"),
            }
        )
    names = [r["candidate"] for r in rows]
    if any(is_number(r["cost_per_million_output_tokens"]) for r in rows):
        svg = bar_chart(
            "$ per million output tokens per candidate",
            names,
            [("$/Mtok", [r["cost_per_million_output_tokens"] for r in rows])],
            Axis("$ per million output tokens at the spec's rate", fmt=_money),
        )
        cols = ["candidate", "gpus", "cost_per_million_output_tokens", "passes"]
        c.charts.append(chart_block("Cost per candidate", svg, rows_table(rows, cols)))
        for key, title in (("ttft", "p99 time to first token"), ("tpot", "p99 time per token")):
            limit = inputs.get(f"max_{key}_p99_s")
            refs = [Ref(float(limit), f"limit {_sec(limit)}")] if is_number(limit) else []
            svg = bar_chart(
                f"{title} per candidate",
                names,
                [(f"p99 {key.upper()}", [r[f"{key}_p99_s"] for r in rows])],
                Axis(f"p99 {key.upper()} at the spec's rate (expected)", fmt=_sec),
                refs=refs,
            )
            cols = ["candidate", f"{key}_p99_s", "passes"]
            c.charts.append(chart_block(f"{title} per candidate", svg, rows_table(rows, cols)))
        svg = bar_chart(
            "KV-cache occupancy per candidate",
            names,
            [("KV occupancy", [r["kv_occupancy"] for r in rows])],
            Axis("mean share of the KV budget in use", fmt=lambda v: f"{v:.0%}"),
        )
        c.charts.append(
            chart_block("KV-cache occupancy", svg, rows_table(rows, ["candidate", "kv_occupancy"]))
        )
    checks = doc.get("checks") or []
    c.charts.append(
        rows_table(checks, ["deployment", "name", "ok", "detail"], caption="Every check")
    )
    return c


CONTENT = {"report": report}

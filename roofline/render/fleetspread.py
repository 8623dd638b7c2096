"""The table of `roofline fleet --days N`: percentiles over days of peak GPUs, GPU-hours, $/day
and SLO attainment, and the assumptions the days were drawn under."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.render.core import pct
from roofline.render.width import N, T, print_pairs, print_rows, say, table_output

LABELS = (
    ("peak_gpus", "peak GPUs", lambda x: f"{x:,.0f}"),
    ("gpu_hours", "GPU-hours/day", lambda x: f"{x:,.0f}"),
    ("cost", "$/day", lambda x: f"${x:,.0f}"),
    ("slo_attainment", "SLO attainment", lambda x: pct(x, 1)),
    ("slo_attainment_min", "worst model's", lambda x: pct(x, 1)),
)


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


@table_output
def spread_table(doc: Mapping[str, Any], con: Console) -> None:
    a, inp = doc["answer"], doc["inputs"]
    qs = [f"p{q}" for q in inp["percentiles"]]
    say(
        con,
        f"{_n(inp['days'], 'day')} of a fleet of {_n(len(inp['model'].split(', ')), 'model')}:"
        " p50"
        f" {a['peak_gpus']['p50']:,.0f} peak GPUs, ${a['cost']['p50']:,.0f}/day; the p90 day"
        f" needs {a['peak_gpus']['p90']:,.0f} GPUs and ${a['cost']['p90']:,.0f}",
        "bold",
    )
    con.print()
    cols = [T("over days"), *(N(q) for q in qs)]
    rows = [[label, *(f(a[key][q]) for q in qs)] for key, label, f in LABELS]
    print_rows(con, "Percentiles over days", cols, rows)
    con.print()
    print_pairs(con, "Assumptions", list(doc["assumptions"].items()))


def spread_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per day (CSV/JSONL)."""
    return [dict(d) for d in doc["days"]]

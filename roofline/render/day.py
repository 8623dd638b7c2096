"""The day of `size --traffic-curve`: the size table, then the best deployment's day (replicas,
GPU-hours and $ per day against static peak provisioning, SLO attainment, the scale-up delay)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.render.core import VERBOSE, pct
from roofline.render.sizing import size_table
from roofline.render.width import legend, print_pairs, say, table_output


def _usd(x: float | None) -> str:
    """Dollars as size prints them: 3 significant digits below $100, whole dollars above."""
    return "no price" if x is None else f"${x:.3g}" if x < 100 else f"${x:,.0f}"


def _hours(s: float) -> str:
    return f"{s / 3600:.3g} h" if s >= 3600 else f"{s / 60:.3g} min" if s >= 60 else f"{s:.3g} s"


@table_output
def size_day_table(doc: Mapping[str, Any], con: Console) -> None:
    size_table.__wrapped__(doc, con)  # type: ignore[attr-defined]
    i, day = doc["inputs"], doc.get("day") or {}
    con.print()
    if not day:
        say(con, "no deployment meets the SLOs: no day to plan")
        return
    worst = [iv for iv in day["intervals"] if iv["ttft_p99_s"] is not None]
    ttft = max((iv["ttft_p99_s"] for iv in worst), default=None)
    tpot = max((iv["tpot_p99_s"] for iv in worst), default=None)
    exp = day.get("expected")  # sized to a confidence: the expected figures' day beside it
    at = f" at {i.get('confidence')} (expected {exp['gpu_hours_per_day']:,.1f})" if exp else ""
    pairs = [
        ("curve", i["traffic_curve_read"]),
        (
            "rate",
            f"mean {i['traffic_curve_mean_rate']:.4g}, peak {i['traffic_curve_peak_rate']:.4g}"
            f" req/s over {_hours(i['traffic_curve_span_s'])}"
            f" ({i['traffic_curve_intervals']:,} intervals)",
        ),
        (
            "replicas",
            f"{day['min_replicas']:,} to {day['max_replicas']:,} (static peak: "
            f"{day['static_replicas']:,}), each {day['capacity_per_replica']:.4g} req/s"
            f" x (1 - headroom {i['headroom']:.0%})",
        ),
        (
            "scale-up delay",
            f"{day['scale_up_delay_s']:.4g} s ({day['scale_up_delay_from']})",
        ),
        (
            "GPU-hours/day",
            f"{day['gpu_hours_per_day']:,.1f}{at} vs static peak"
            f" {day['static_gpu_hours_per_day']:,.1f}"
            f" ({pct(day['share_of_static'], 1)}; before rounding, headroom and delay"
            f" {pct(day['unrounded_share_of_static'], 1)})",
        ),
        (
            "$/day",
            f"{_usd(day['cost_per_day'])} vs static {_usd(day['static_cost_per_day'])}",
        ),
        (
            "$/Mtok",
            f"{_usd(day['cost_per_million_output_tokens'])} vs static"
            f" {_usd(day['static_cost_per_million_output_tokens'])}",
        ),
        (
            "SLO attainment",
            f"{pct(day['slo_attainment'], 2)} of the day's requests ({day['violated_intervals']}"
            f" intervals short for {_hours(day['violated_s'])} in all, while new replicas start)",
        ),
    ]
    if ttft is not None and tpot is not None:  # both None or neither (the same intervals)
        pairs.append(
            (
                "worst p99",
                f"TTFT {ttft * 1e3:,.0f} ms, TPOT {tpot * 1e3:,.1f} ms within capacity"
                " (a table of serving runs at 10-100% of a replica's capacity)",
            )
        )
    print_pairs(con, f"A day of {day['deployment']}", pairs)
    # the legend: at most three lines (width.legend); the rule in full under -v and in JSON
    head, _ = legend(
        con,
        [
            "autoscaling reactive: ceil(rate / (capacity x (1 - headroom))) replicas an interval,"
            " serving after the scale-up delay",
            "SLO attainment = requests within the ready replicas' capacity",
            "static = the peak's replicas all day",
        ],
        1,
    )
    say(con, head)
    if VERBOSE["on"]:
        say(con, f"autoscaling: {i['autoscaling']}")

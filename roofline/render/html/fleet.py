"""The HTML page of `roofline fleet`: the answer ($/day, GPU-hours, the pooling gain, owned
utilisation), GPUs per hour per model against the owned GPUs, $/day per model in the fleet
against sized apart, the placement per hour, the sharing section (LoRA adapters, sleep/wake,
co-location), the definitions and each model's launch line."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from roofline.render.fleet import hour_cell, pool_letters
from roofline.render.html.launch import launch_html
from roofline.render.html.parts import Content, chart_block, fmt, rows_table
from roofline.render.html.svg import Axis, Ref, Series, bar_chart, line_chart


def fleet(doc: Mapping[str, Any]) -> Content:
    a, models, hours = doc["answer"], doc["models"], doc["hours"]
    c = Content()
    c.figures = [
        ("$ per day", "answer.cost_per_day"),
        ("GPU-hours per day", "answer.gpu_hours_per_day"),
        ("pooling gain $/day", "answer.pooling_gain_per_day"),
        ("pooling gain share", "answer.pooling_gain_share"),
        ("sized apart $/day", "answer.apart_cost_per_day"),
        ("static peaks $/day", "answer.static_cost_per_day"),
        ("owned utilisation", "answer.owned_utilisation"),
        ("lowest SLO attainment", "answer.slo_attainment_min"),
    ]
    c.verdict = (
        f"{a['models']} models for {fmt('cost_per', a['cost_per_day'])} a day"
        f" ({a['gpu_hours_per_day']:,.0f} GPU-hours): {fmt('cost_per', a['pooling_gain_per_day'])}"
        f" less than each model sized apart, {a['owned_gpus']} owned GPUs"
        f" {fmt('utilisation', a['owned_utilisation'])} used, owned first "
        + ("holds every hour." if a["owned_first"] else "broken (see the violations).")
    )
    series = []
    for m in models:
        pts = []
        for h in hours:
            g = sum(p["gpus"] for p in h["placements"] if p["model"] == m["name"])
            g += sum(  # a shared replica's GPUs: half to each of its models
                p["gpus"] / 2 for p in h["placements"] if m["name"] in p.get("shared", ())
            )
            pts.append((float(h["hour"]), float(g), f"{m['name']} hour {h['hour']}: {g} GPUs"))
        series.append(Series(m["name"], pts))
    owned = [Ref(float(a["owned_gpus"]), "owned GPUs")] if a["owned_gpus"] else []
    used = [
        {
            "hour": h["hour"],
            "owned_gpus_used": h["owned_gpus_used"],
            "rented_gpus": h["rented_gpus"],
        }
        for h in hours
    ]
    c.charts.append(
        chart_block(
            "GPUs per hour, per model",
            line_chart("GPUs per hour", Axis("hour"), Axis("GPUs"), series, hlines=owned),
            rows_table(used),
            "Each model's GPUs (all pools) per hour; the line marks the owned GPUs.",
        )
    )
    names = [m["name"] for m in models]
    bars = bar_chart(
        "$ per day",
        names,
        [
            ("fleet", [m["cost_per_day"] for m in models]),
            ("sized apart", [m["apart_cost_per_day"] for m in models]),
        ],
        Axis("$ per day"),
    )
    per = [
        {
            "model": m["name"],
            "hardware": (m["deployment"] or {}).get("hardware"),
            "layout": (m["deployment"] or {}).get("layout"),
            "gpu_hours_per_day": m["gpu_hours_per_day"],
            "cost_per_day": m["cost_per_day"],
            "apart_cost_per_day": m["apart_cost_per_day"],
            "slo_attainment": m["slo_attainment"],
            "ttft_p99_s": (m["deployment"] or {}).get("ttft_p99_s"),
            "tpot_p99_s": (m["deployment"] or {}).get("tpot_p99_s"),
        }
        for m in models
    ]
    c.charts.append(
        chart_block(
            "$ per day per model: in the fleet and sized apart",
            bars,
            rows_table(per),
            "A model's fleet $/day includes its owned GPU-hours at the owned cost.",
        )
    )
    letters = pool_letters(doc)
    legend = ", ".join(f"{v} = {k}" for k, v in letters.items())
    grid = [
        {
            "hour": h["hour"],
            **{n: hour_cell(doc, h, n) for n in names},
            "marginal_cost": h["marginal_cost"],
        }
        for h in hours
    ]
    c.charts.append(
        f'<figure><figcaption>Placement per hour</figcaption><p class="note">'
        f"{escape('replicas x pool: ' + legend + '; ! = short of the rate')}</p>"
        f"{rows_table(grid)}</figure>"
    )
    if doc.get("sharing"):
        c.charts.extend(sharing_figures(doc["sharing"]))
    defs = "".join(
        f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in doc["definitions"].items()
    )
    c.charts.append(f"<figure><figcaption>Definitions</figcaption><ul>{defs}</ul></figure>")
    for m in models:
        d = m["deployment"]
        if d and d.get("launch"):
            c.charts.append(
                f"<figure><figcaption>{escape(m['name'])}: launch</figcaption>"
                f"{launch_html(d['launch'])}</figure>"
            )
    left = "".join(f"<li>{escape(x)}</li>" for x in doc["not_modelled"])
    c.charts.append(f"<figure><figcaption>Not modelled yet</figcaption><ul>{left}</ul></figure>")
    return c


def sharing_figures(sh: Mapping[str, Any]) -> list[str]:
    """LoRA adapters, sleep/wake and co-location, each saying whether it is applied."""
    out = []
    note = sh["applied"]
    if sh["lora"]:
        rows = [{k: x[k] for k in ("name", "hardware", "adapters", "rank", "adapter_bytes",
                 "gpu_slots", "tp", "slots_bytes_per_gpu", "kv_budget_bytes",
                 "kv_budget_bytes_with_slots", "load_from_host_s", "slot_hit_share",
                 "miss_wait_mean_s", "tpot_mean_s",
                 "capacity_kept", "note")} for x in sh["lora"]]  # fmt: skip
        out.append(
            f'<figure><figcaption>LoRA adapters on one base</figcaption><p class="note">'
            f"{escape(note['lora'] + '; ' + sh['sources']['lora_throughput'])}</p>"
            f"{rows_table(rows)}</figure>"
        )
    if sh["sleep"]:
        out.append(
            f'<figure><figcaption>Sleep/wake against cold start</figcaption><p class="note">'
            f"{escape(note['sleep'] + '; ' + sh['sources']['wake'])}</p>"
            f"{rows_table(list(sh['sleep']))}</figure>"
        )
    pairs = [
        {"models": " + ".join(x["models"]), "hardware": ", ".join(x["hardware"]),
         "replica_hours": x["replica_hours"], "gpu_hours": x["gpu_hours"]}
        for x in sh["colocation"]
    ]  # fmt: skip
    body = rows_table(pairs) if pairs else "<p>none</p>"
    out.append(
        f"<figure><figcaption>Co-location: pairs that may share a GPU</figcaption>"
        f'<p class="note">{escape(note["colocation"] + "; " + sh["sources"]["colocation"])}</p>'
        f"{body}</figure>"
    )
    return out


CONTENT = {"fleet": fleet}

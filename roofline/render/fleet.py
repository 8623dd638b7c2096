"""The table of `roofline fleet`: the answer ($/day, GPU-hours, the pooling gain), one row per
model, the placement of every hour (replicas per model and pool, the pools lettered), the
definitions the figures follow, and each model's launch line."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.render.core import csec, pct
from roofline.render.launchlines import launch_block
from roofline.render.traffic import _short
from roofline.render.width import N, T, print_pairs, print_rows, say, table_output


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.0f}" if abs(x) >= 100 else f"${x:.3g}"


def pool_letters(doc: Mapping[str, Any]) -> dict[str, str]:
    """Pool label -> a letter (A, B, ...) in the order the pools are listed."""
    pools = doc["inputs"]["pools"]
    return {p["pool"]: string.ascii_uppercase[k % 26] for k, p in enumerate(pools)}


def hour_cell(doc: Mapping[str, Any], hour: Mapping[str, Any], model: str) -> str:
    """'3A+1C': replicas of `model` on each pool this hour ('1A~': a shared replica), '-' for
    none, 'z' asleep."""
    letters = pool_letters(doc)
    parts = [
        f"{p['replicas']}{letters[p['pool']]}" for p in hour["placements"] if p["model"] == model
    ]
    parts += [
        f"{p['replicas']}{letters[p['pool']]}~"
        for p in hour["placements"]
        if model in p.get("shared", ())
    ]
    short = any(x["model"] == model for x in hour["short"])
    asleep = model in hour.get("asleep", ())
    return ("+".join(parts) or ("z" if asleep else "-")) + ("!" if short else "")


@table_output
def fleet_table(doc: Mapping[str, Any], con: Console) -> None:
    a, models = doc["answer"], doc["models"]
    say(
        con,
        f"A fleet of {a['models']} model{'s' * (a['models'] != 1)}:"
        f" {_usd(a['cost_per_day'])}/day for"
        f" {a['gpu_hours_per_day']:,.0f} GPU-hours (rented {_usd(a['rented_cost_per_day'])},"
        f" autoscaling {_usd(a['autoscaling_cost_per_day'])}, owned"
        f" {_usd(a['owned_cost_per_day'])}); pooling gain {_usd(a['pooling_gain_per_day'])}/day"
        f" ({pct(a['pooling_gain_share'], 1)}) against each model sized apart"
        f" ({_usd(a['apart_cost_per_day'])}), {_usd(a['pooling_gain_vs_static_per_day'])}"
        f" against static peaks ({_usd(a['static_cost_per_day'])}); "
        + (
            f"{a['owned_gpus']} owned GPUs {pct(a['owned_utilisation'], 0)} used"
            if a["owned_gpus"]
            else "no owned GPUs"
        )
        + "; owned first "
        + ("holds every hour" if a["owned_first"] else "BROKEN (owned_first_violations)"),
        "bold",
    )
    con.print()
    cols = [T("model"), T("deployment"), N("GPU-h\n/day"), N("$/day"), N("SLO\nattain"),
            N("p99\nTTFT"), N("p99\nTPOT"), N("apart\n$/day")]  # fmt: skip
    body = []
    for k, m in enumerate(models, 1):
        d = m["deployment"] or {}
        dep = f"{_short(d['hardware'])} {d['layout']}" if d else "none meets the SLOs"
        body.append([
            f"{k} {m['name']}", dep, f"{m['gpu_hours_per_day']:,.0f}", _usd(m["cost_per_day"]),
            pct(m["slo_attainment"], 2), csec(d.get("ttft_p99_s")), csec(d.get("tpot_p99_s")),
            _usd(m["apart_cost_per_day"]),
        ])  # fmt: skip
    print_rows(con, "Per model (p99: `size`'s figure at the model's peak rate)", cols, body)
    con.print()
    letters = pool_letters(doc)
    names = [m["name"] for m in models]
    cols = [N("h"), N("owned\nused"), N("rent\nGPUs"), N("$/h")]
    cols += [T(str(k)) for k in range(1, len(names) + 1)]  # the models, numbered as above
    rows = [
        [
            str(h["hour"]),
            str(h["owned_gpus_used"]),
            str(h["rented_gpus"]),
            _usd(h["marginal_cost"]),
            *(hour_cell(doc, h, n) for n in names),
        ]
        for h in doc["hours"]
    ]
    print_rows(con, "Placement per hour: replicas x pool of each model (numbered as above; $/h:"
               " rented GPUs)", cols, rows)  # fmt: skip
    say(con, "pools: " + ", ".join(
        f"{v} = {_short(p['hardware'])} {p['kind']}"
        + (f" ${p['marginal_usd_per_gpu_hour']:.3g}" if p["kind"] != "owned" else "")
        + (f" (limit {p['limit_gpus']})" if p["kind"] != "owned" and p["limit_gpus"] else "")
        for p, v in zip(doc["inputs"]["pools"], letters.values(), strict=True)
    ) + "; ~ = shared with another model; z = asleep; ! = short of the rate")  # fmt: skip
    con.print()
    if doc.get("sharing"):
        sharing_table(doc["sharing"], con)
    print_pairs(con, "Definitions", list(doc["definitions"].items()))
    for m in models:
        d = m["deployment"]
        if d and d.get("launch"):
            say(con, f"{m['name']}: {d['gpus_per_replica']} x {_short(d['hardware'])} per replica")
            launch_block(con, d["launch"])
    con.print()
    say(con, "not modelled yet: " + "; ".join(doc["not_modelled"]))


def _gb(x: float | None) -> str:
    return "—" if x is None else f"{x / 1e9:.2f} GB" if x < 1e11 else f"{x / 1e9:.0f} GB"


def sharing_table(sh: Mapping[str, Any], con: Console) -> None:
    """LoRA adapters, sleep/wake against cold start, co-location candidates (fleet/sharing.py)."""
    if sh["lora"]:
        cols = [T("model"), N("adapters\nx rank"), N("adapter"), N("slots\n/GPU"),
                N("KV/GPU\nat TP"), N("load\nfrom host"), N("capacity\nkept")]  # fmt: skip
        body = [
            [x["name"], f"{x['adapters']} x r{x['rank']}", _gb(x["adapter_bytes"]),
             f"{x['gpu_slots']}: {_gb(x['slots_bytes_per_gpu'])}",
             f"{x['tp']}: {_gb(x['kv_budget_bytes'])}->{_gb(x['kv_budget_bytes_with_slots'])}",
             csec(x["load_from_host_s"]), pct(x["capacity_kept"], 1)]
            for x in sh["lora"]
        ]  # fmt: skip
        print_rows(con, "LoRA adapters on one base (" + sh["applied"]["lora"] + ")", cols, body)
        notes = [f"{x['name']}: {x['note']}" for x in sh["lora"] if x["note"]]
        notes += [
            f"{x['name']}: {x['gpu_slots']} GPU slots for {x['adapters']} adapters"
            f" ({x['popularity']} popularity): at most {pct(x['slot_hit_share'], 1)} of requests"
            f" find theirs loaded, the others wait {csec(x['load_from_host_s'])} for it (mean"
            f" {csec(x['miss_wait_mean_s'])} per request, not in the SLO count)"
            for x in sh["lora"]
            if x.get("slot_hit_share", 1.0) < 1.0
        ]
        say(con, "throughput: " + sh["sources"]["lora_throughput"] + "; ".join(["", *notes]))
        con.print()
    if sh["sleep"]:
        cols = [T("model"), T("chip"), N("hours\nasleep"), N("woken"), N("weights\n/GPU"),
                N("wake\nL1"), N("wake\nL2"), N("cold\nstart")]  # fmt: skip
        body = [
            [z["name"], _short(z["hardware"]), str(z["asleep_hours"]), str(z["woken_replicas"]),
             _gb(z["weight_bytes_per_gpu"]), csec(z["wake_s"]), csec(z["wake_level2_s"]),
             csec(z["cold_start_s"])]
            for z in sh["sleep"]
        ]  # fmt: skip
        print_rows(con, "Sleep/wake (" + sh["applied"]["sleep"] + ")", cols, body)
        notes = [f"{z['name']}: {z['note']}" for z in sh["sleep"] if z["note"]]
        say(con, "wake: " + sh["sources"]["wake"] + "; ".join(["", *notes]))
        con.print()
    cands = sh["colocation"]
    text = (
        "; ".join(
            f"{' + '.join(c['models'])} on {', '.join(_short(h) for h in c['hardware'])}"
            f" ({c['replica_hours']:,.0f} shared replica-hours)"
            for c in cands
        )
        or "none (no two models fit half of one GPU of the same chip)"
    )
    say(con, f"Co-location ({sh['applied']['colocation']}): {text}")
    say(con, "memory share: " + sh["sources"]["colocation"])
    con.print()


def fleet_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per model and hour (CSV/JSONL): the replicas per pool."""
    out = []
    for h in doc["hours"]:
        for p in h["placements"]:
            out.append({"hour": h["hour"], **{k: p[k] for k in ROW_KEYS}})
    return out


ROW_KEYS = ("model", "pool", "replicas", "gpus")

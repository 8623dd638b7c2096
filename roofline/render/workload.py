"""Tables of a workload file's runs (roofline.serving.mix): serve's figures for the pool, then
each class against its own SLOs; size's replicas for the classes together and apart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.render.core import csec, pct
from roofline.render.traffic import _lat, serve_table
from roofline.render.width import N, T, print_rows, say, table_output


def class_rows(classes: list[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (
            c["name"],
            str(c["priority"]),
            f"{c['arrivals_per_s']:.3g}",
            _lat(c["ttft_s"]["p99"]),
            csec(c["tpot_s"]["p99"]),
            _lat(c["e2e_s"]["p99"]),
            f"{c['output_tokens_per_s']:,.0f}",
            *_class_verdict(c),
        )
        for c in classes
    ]


def _class_verdict(c: Mapping[str, Any]) -> tuple[str, str]:
    """A class's "in SLO" and "SLO" cells: "-" for a class with no SLO, which misses only past
    saturation (its pool's queue unbounded), as render.core.slo_cells says it for the pool."""
    slo = c.get("slo") or {}
    if slo.get("ttft_s") is not None or slo.get("tpot_s") is not None:
        return pct(c["slo_attainment"]), "ok" if c["meets_slo"] else "MISS"
    return "-", "-" if c["meets_slo"] else "MISS"


CLASS_COLS = (
    T("class"), N("prio"), N("arr/s"), N("TTFT\np99"), N("TPOT\np99"), N("E2E\np99"),
    N("tok/s"), N("in SLO"), T("SLO"),
)  # fmt: skip


@table_output
def workload_serve_table(doc: Mapping[str, Any], con: Console) -> None:
    """serve's table, then each class at each rate (expected figures)."""
    serve_table.__wrapped__(doc, con)  # type: ignore[attr-defined]
    wl = (doc.get("inputs") or {}).get("workload") or {}
    arr, seq = wl.get("arrivals_per_s"), wl.get("sequences_per_s")
    if arr and seq and abs(seq / arr - 1) > 1e-9:  # samples, turns or sub-agents per arrival
        sat = (doc.get("saturation_rate") or {}).get("expected")
        at = f"; saturation {sat:.3g} sequences/s = {sat * arr / seq:.3g} arrivals/s" if sat else ""
        say(
            con,
            f"units: the rate counts arrivals ({arr:.3g} arrivals/s = {seq:.3g} sequences/s:"
            f" each sample, turn and sub-agent a sequence); requests/s, goodput and saturation"
            f" above count sequences{at}",
        )
    for p in doc["points"]:
        classes = p["expected"].get("classes") or []
        print_rows(
            con,
            f"per class at {p['rate']:.3g} arrivals/s (expected; lower priority value is served"
            " first)",
            CLASS_COLS,
            class_rows(classes),
        )
        for c in classes:
            kv = _sharing(doc, c["name"])
            if kv:
                say(con, kv)
            turns = c.get("ttft_p99_by_turn_s") or []
            if len(turns) > 1:
                say(con, f"{c['name']}: TTFT p99 by turn " + " ".join(_lat(x) for x in turns))


def _sharing(doc: Mapping[str, Any], name: str) -> str:
    """The KV one arrival of class `name` holds with its n samples sharing the prompt, if any."""
    wl = (doc.get("inputs") or {}).get("workload") or {}
    c = next((c for c in wl.get("classes", []) if c["name"] == name), None)
    s = c and c.get("kv_sharing")
    if not s:
        return ""
    return (
        f"{name}: {s['n']} samples hold {s['shared_tokens']:,} tokens of KV sharing the prompt,"
        f" {s['independent_tokens']:,} as independent requests ({pct(s['saved_share'])} saved);"
        f" the KV budget holds {s['cliff_batch_sequences']:,} sequences shared,"
        f" {s['cliff_batch_sequences_independent']:,} independent (the cliff batch)"
    )


@table_output
def workload_size_table(doc: Mapping[str, Any], con: Console) -> None:
    """size --workload: GPUs for the classes together and apart, per accelerator."""
    deps = doc["deployments"]
    level = doc["inputs"].get("confidence") or "expected"
    at = "expected" if level == "expected" else f"at {level}; expected GPUs in ()"
    print_rows(
        con,
        f"{doc['inputs']['model']}: the fewest replicas whose run meets every class's SLOs (no"
        f" headroom; size --rate leaves --headroom, 10% by default), the classes together in one"
        f" pool and each apart in its own ({at})",
        (T("deployment"), N("repl"), N("GPUs"), N("apart\nGPUs"), N("$/h"), N("$/Mtok")),
        [
            (
                f"{d['hardware']} TP{d['tp']}" + (f" EP{d['ep']}" if d["ep"] > 1 else ""),
                str(d["replicas"]),
                str(d["gpus"]) + ("" if d.get("gpus_expected", d["gpus"]) == d["gpus"] and
                                  level == "expected" else f" ({d['gpus_expected']})"),
                str(d["apart_gpus"]) + " (" + ", ".join(
                    f"{a['class']} {a['gpus']}" for a in d["apart"]) + ")",
                "-" if d["cost_per_hour"] is None else f"${d['cost_per_hour']:.1f}",
                "-" if d["cost_per_million_output_tokens"] is None
                else f"${d['cost_per_million_output_tokens']:.2f}",
            )
            for d in deps
        ],
    )  # fmt: skip
    best = deps[0]
    print_rows(con, f"per class, {best['hardware']} x {best['replicas']}", CLASS_COLS,
               class_rows(best["classes"]))  # fmt: skip
    for c in best["classes"]:
        turns = c.get("ttft_p99_by_turn_s") or []
        if len(turns) > 1:
            say(con, f"{c['name']}: TTFT p99 by turn " + " ".join(_lat(x) for x in turns))
    if "day" in best:  # --traffic-curve: each deployment's day, the classes at their shares
        _day_tables(doc, deps, con)


def _day_tables(doc: Mapping[str, Any], deps: list[Mapping[str, Any]], con: Console) -> None:
    """size --workload --traffic-curve: each deployment's day, then the best's classes."""
    i = doc["inputs"]
    print_rows(
        con,
        f"the day ({i['traffic_curve_read']}; mean {i['traffic_curve_mean_rate']:.4g}, peak"
        f" {i['traffic_curve_peak_rate']:.4g} arrivals/s over all classes), autoscaled x (1 -"
        f" headroom {i['headroom']:.0%})",
        (T("deployment"), N("arr/s\nper repl"), N("repl"), N("GPU-h\n/day"), N("static\nGPU-h"),
         N("$/day"), N("in SLO")),
        [
            (
                f"{d['hardware']} TP{d['tp']}",
                *(("none meets every class's SLOs", "", "", "", "", "") if not d["day"] else (
                    f"{d['day']['capacity_per_replica']:.3g}",
                    f"{d['day']['min_replicas']}-{d['day']['max_replicas']}",
                    f"{d['day']['gpu_hours_per_day']:,.0f}",
                    f"{d['day']['static_gpu_hours_per_day']:,.0f}",
                    "-" if d["day"]["cost_per_day"] is None
                    else f"${d['day']['cost_per_day']:,.0f}",
                    pct(d["day"]["slo_attainment"], 2),
                )),
            )
            for d in deps
        ],
    )  # fmt: skip
    day = deps[0]["day"]
    if not day:
        return
    print_rows(
        con,
        f"per class across the day, {deps[0]['hardware']} (capacity: the pool's arrivals/s per"
        " replica at which the class holds its SLOs; worst p99 of an interval within capacity)",
        (T("class"), N("share"), N("arr/s\nper repl"), N("requests\n/day"),
         N("Mtok\n/day"), N("in SLO"), N("worst\nTTFT"), N("worst\nTPOT")),
        [
            (
                c["name"], pct(c["share"], 0),
                f"{c['capacity_per_replica']:.3g}", f"{c['requests_per_day']:,.0f}",
                f"{c['output_tokens_per_day'] / 1e6:,.0f}", pct(c["slo_attainment"], 2),
                _worst(day, j, "ttft"), _worst(day, j, "tpot"),
            )
            for j, c in enumerate(day["classes"])
        ],
    )  # fmt: skip
    exp = day.get("expected")
    if exp:  # sized to a confidence: the expected figures' day beside it
        say(
            con,
            f"at {day['confidence']}: {day['capacity_per_replica']:.3g} arrivals/s per replica,"
            f" {day['gpu_hours_per_day']:,.0f} GPU-h/day; expected"
            f" {exp['capacity_per_replica']:.3g}, {exp['gpu_hours_per_day']:,.0f} GPU-h/day",
        )


def _worst(day: Mapping[str, Any], j: int, key: str) -> str:
    """Class j's worst p99 over the day's intervals ("-": none within capacity)."""
    v = [iv["classes"][j][f"{key}_p99_s"] for iv in day["intervals"] if "classes" in iv]
    v = [x for x in v if x is not None]
    return csec(max(v)) if v else "-"

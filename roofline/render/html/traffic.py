"""The HTML report's answer and charts for the commands about traffic: `serve` (latency against
rate, with the SLO lines and the saturation rate; KV occupancy), `size` (the cost frontier, one
series per chip; latency and capacity per deployment), `cliff` (throughput against max-seqs)
and `disagg`. Everything is read from the command's JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline.render.html.launch import launch_html
from roofline.render.html.parts import Content, chart_block, fmt, is_number, lookup, rows_table
from roofline.render.html.svg import Axis, Ref, Series, bar_chart, line_chart
from roofline.render.traffic import _pools


def sec_fmt(v: float | None) -> str:
    return fmt("x_s", v)


def pct_fmt(v: float) -> str:
    return f"{v:.0%}"


def money_fmt(v: float) -> str:
    return fmt("cost_per", v)


def _slo_refs(inputs: Mapping[str, Any], key: str) -> list[Ref]:
    v = inputs.get(f"slo_{key}_s")
    pct = inputs.get("slo_pct")
    label = f"SLO p{pct:g} {key.upper()} {sec_fmt(v)}" if is_number(pct) else f"SLO {sec_fmt(v)}"
    return [Ref(float(v), label)] if is_number(v) else []


def _unb(t: Any) -> str:
    """A serve latency: null only past saturation, where it has no steady state."""
    return "unbounded" if t is None else fmt("x_s", t)


def _n(v: Any) -> float | None:
    return float(v) if is_number(v) else None


# ---- serve ------------------------------------------------------------------------------------
def serve(doc: Mapping[str, Any]) -> Content:
    inputs, points = doc["inputs"], doc.get("points") or []
    sat = doc.get("saturation_rate") or {}
    meeting = [i for i, p in enumerate(points) if (p.get("expected") or {}).get("meets_slo")]
    i = meeting[-1] if meeting else 0
    base = "expected" if "expected" in doc else f"points.{i}.expected"
    rate_path = f"points.{i}.rate"
    c = Content(
        figures=[
            ("rate, requests/s", rate_path),
            ("GPUs", f"{base}.gpus"),
            ("$ per million output tokens", f"{base}.cost_per_million_output_tokens"),
            ("p99 TTFT", f"{base}.ttft_s.p99"),
            ("p99 TPOT", f"{base}.tpot_s.p99"),
            ("meets the SLOs", f"{base}.meets_slo"),
        ]
    )
    if sat:
        c.figures.append(("saturation rate, requests/s", "saturation_rate.expected"))
    rate = lookup(doc, rate_path)
    e = lookup(doc, base) or {}
    c.verdict = (
        f"{inputs.get('model')} on {inputs.get('gpus')} × {inputs.get('hardware')} at "
        f"{fmt('rate', rate)} requests/s: p99 TTFT {_unb(e['ttft_s']['p99'])}, p99 TPOT "
        f"{fmt('x_s', e['tpot_s']['p99'])}, "
        f"{fmt('cost_per', e.get('cost_per_million_output_tokens'))} per million output tokens"
        + (
            f"; it saturates at {fmt('rate', sat.get('expected'))} requests/s"
            f" ({sat.get('binding', {}).get('expected', '')})."
            if sat
            else "."
        )
    )
    if points and points[0].get("rate") is None:
        return c  # --concurrency: no rate axis
    vref = [Ref(float(sat["expected"]), f"saturation {sat['expected']:.3g}/s")] if sat else []
    rows = []
    for p in points:
        x = p["expected"]
        rows.append(
            {
                "rate": p["rate"],
                "ttft_p50_s": x["ttft_s"]["p50"],
                "ttft_p99_s": x["ttft_s"]["p99"],
                "tpot_p50_s": x["tpot_s"]["p50"],
                "tpot_p99_s": x["tpot_s"]["p99"],
                "kv_occupancy": x["kv_occupancy"],
                "utilisation": x["utilisation"],
                "meets_slo": x["meets_slo"],
            }
        )
    for key, title in (("ttft", "Time to first token"), ("tpot", "Time per output token")):
        series = [
            Series(
                f"{q} {key.upper()}",
                [
                    (r["rate"], r[f"{key}_{q}_s"], f"{r['rate']:g}/s: {sec_fmt(r[f'{key}_{q}_s'])}")
                    for r in rows
                    if r[f"{key}_{q}_s"] is not None  # unbounded past saturation: no point
                ],
            )
            for q in ("p50", "p99")
        ]
        ys = [r[f"{key}_{q}_s"] for r in rows for q in ("p50", "p99") if r[f"{key}_{q}_s"]]
        wide = bool(ys) and max(ys) > 100 * min(ys)  # a queue that grows: a log axis
        svg = line_chart(
            f"{title} against rate",
            Axis("rate, requests/s"),
            Axis(f"{key.upper()} (expected{', log' if wide else ''})", log=wide, fmt=sec_fmt),
            series,
            hlines=_slo_refs(inputs, key),
            vlines=vref,
            y_zero=not wide,
        )
        cols = ["rate", f"{key}_p50_s", f"{key}_p99_s", "meets_slo"]
        shown = [{k: "unbounded" if v is None and k.endswith("_s") else v for k, v in r.items()}
                 for r in rows]  # fmt: skip
        c.charts.append(chart_block(f"{title} against rate", svg, rows_table(shown, cols)))
    occ = [
        Series(
            name,
            [(r["rate"], r[k], f"{r['rate']:g}/s: {r[k]:.1%}") for r in rows],
        )
        for name, k in (("KV occupancy", "kv_occupancy"), ("utilisation", "utilisation"))
    ]
    svg = line_chart(
        "KV occupancy and utilisation against rate",
        Axis("rate, requests/s"),
        Axis("share", fmt=pct_fmt),
        occ,
        vlines=vref,
    )
    c.charts.append(
        chart_block(
            "KV-cache occupancy against rate",
            svg,
            rows_table(rows, ["rate", "kv_occupancy", "utilisation"]),
        )
    )
    return c


# ---- size -------------------------------------------------------------------------------------
def _label(d: Mapping[str, Any]) -> str:
    hw = str(d.get("hardware", "")).replace("nvidia-", "").replace("amd-", "")
    if d.get("prefill_replicas"):
        return f"{hw} TP{d['tp']} {d['prefill_replicas']}P+{d['decode_replicas']}D"
    return (
        f"{hw} TP{d['tp']}"
        + (f" PP{d['pp']}" if d.get("pp", 1) > 1 else "")
        + (f" ×{d['replicas']}")
    )


_FLEET_FIGURES = (
    ("chip", "hardware"),
    ("tensor parallel", "tp"),
    ("replicas", "replicas"),
    ("GPUs", "gpus"),
    ("$ per million output tokens", "cost_per_million_output_tokens"),
    ("$ per hour", "cost_per_hour"),
)


def _fleet_figures(at: str) -> list[tuple[str, str]]:
    """The headline figures of the deployment at JSON path `at`: its chip, TP, replicas, GPUs and
    costs."""
    return [(label, f"{at}.{key}") for label, key in _FLEET_FIGURES]


def size(doc: Mapping[str, Any]) -> Content:
    inputs, deps = doc["inputs"], doc.get("deployments") or []
    if deps and "classes" in deps[0]:
        return _workload_size(doc)
    best = doc.get("best")
    c = Content()
    if best is None:
        c.verdict = (
            f"No deployment of {inputs.get('model')} on {', '.join(inputs.get('hardware', []))} "
            f"meets the SLOs at {fmt('rate', inputs.get('rate'))} requests/s."
        )
    else:
        c.figures = [
            *_fleet_figures("best"),
            ("p99 TTFT", "best.expected.ttft_s.p99"),
            ("p99 TPOT", "best.expected.tpot_s.p99"),
            ("meets the SLOs", "best.meets_slo"),
        ]
        e = best.get("expected") or {}
        c.verdict = (
            f"Serve {inputs.get('model')} at {fmt('rate', inputs.get('rate'))} requests/s on "
            f"{best['gpus']} × {best['hardware']} (TP{best['tp']}, {best['replicas']} "
            f"replicas): {fmt('cost_per', best['cost_per_million_output_tokens'])} per million "
            f"output tokens, p99 TTFT {fmt('x_s', (e.get('ttft_s') or {}).get('p99'))} and "
            f"TPOT {fmt('x_s', (e.get('tpot_s') or {}).get('p99'))}."
        )
        if best.get("launch"):
            c.charts.append(launch_html(best["launch"]))
    rows = []
    for d in deps:
        if not d.get("gpus"):
            continue  # an older document's layout with no fleet: never a 0-GPU row
        rows.append(
            {
                "deployment": _label(d),
                "hardware": d["hardware"],
                "gpus": d["gpus"],
                "cost_per_million_output_tokens": d["cost_per_million_output_tokens"],
                "meets_slo": d["meets_slo"],
                "best": d["best"],
            }
        )
    chips = _chip_rows(doc)
    _chips_chart(c, chips, inputs)
    if rows:
        _frontier(c, rows, chips)
    return c


def _workload_size(doc: Mapping[str, Any]) -> Content:
    """size --workload: one pool for the file's classes (deployments[0]), each class's p99
    TTFT against its own SLO."""
    inputs, d = doc["inputs"], doc["deployments"][0]
    c = Content()
    c.figures = _fleet_figures("deployments.0")
    classes = "; ".join(
        f"{k['name']} p99 TTFT {fmt('x_s', (k.get('ttft_s') or {}).get('p99'))} against "
        f"{fmt('x_s', (k.get('slo') or {}).get('ttft_s'))}"
        f" ({'met' if k.get('meets_slo') else 'missed'})"
        for k in d["classes"]
    )
    wl = inputs.get("workload") or {}
    c.verdict = (
        f"Serve {inputs.get('model')} for the workload {wl.get('file')} "
        f"({fmt('rate', wl.get('arrivals_per_s'))} arrivals/s) on {d['gpus']} × {d['hardware']} "
        f"(TP{d['tp']}, {d['replicas']} replicas, its classes in one pool): {classes}."
    )
    return c


def _chip_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every chip asked for (per_hardware), with its answer's figures from its deployment row,
    or why it has none."""
    deps = doc.get("deployments") or []
    out = []
    for a in doc.get("per_hardware") or []:
        vendor, _, rest = str(a["hardware"]).partition("-")
        hw = rest if vendor in ("nvidia", "amd", "google", "intel", "apple") and rest else vendor
        row: dict[str, Any] = {"chip": hw, "answer": "none", "reason": a.get("reason")}
        if a.get("meets_slo"):
            d: Mapping[str, Any] = next(
                (
                    d
                    for d in deps
                    if d["hardware"] == a["hardware"]
                    and d["meets_slo"]
                    and d["gpus"] == a["gpus"]
                    and d["tp"] == a["tp"]
                ),
                {},
            )
            e = d.get("expected") or {}
            row.update(
                answer=f"{a['replicas']} × "
                + (_pools(d).replace("\n ", " ") if d else a["layout"]),  # as the terminal
                gpus=a["gpus"],
                cost_per_million_output_tokens=a["cost_per_million_output_tokens"],
                ttft_p99_s=a.get("ttft_p99_s"),
                tpot_p99_s=a.get("tpot_p99_s"),
                max_rate_per_replica=d.get("max_rate_per_replica"),
                saturation_rate_per_replica=d.get("saturation_rate_per_replica"),
                kv_occupancy_at_rate=e.get("kv_occupancy"),
                binding_at_saturation=d.get("binding"),
            )
        out.append(row)
    return out


def _chips_chart(c: Content, chips: list[dict[str, Any]], inputs: Mapping[str, Any]) -> None:
    """Each chip's answer: its cost, p99 TTFT and TPOT (one axis each) and its capacity per
    replica; a chip with none has no bar and its reason in the table."""
    if not chips:
        return
    cats = [r["chip"] for r in chips]
    svg = bar_chart(
        "Each chip's cheapest deployment: $ per million output tokens",
        cats,
        [("$/Mtok", [_n(r.get("cost_per_million_output_tokens")) for r in chips])],
        Axis("$ per million output tokens", fmt=money_fmt),
    )
    cols = ["chip", "answer", "gpus", "cost_per_million_output_tokens"]
    if any(r["reason"] for r in chips):
        cols.append("reason")
    c.charts.append(
        chart_block("Every chip asked for: its cheapest deployment", svg, rows_table(chips, cols))
    )
    for key, title in (("ttft", "Time to first token"), ("tpot", "Time per output token")):
        svg = bar_chart(
            f"p99 {key.upper()} of each chip's answer",
            cats,
            [(f"p99 {key.upper()}", [_n(r.get(f"{key}_p99_s")) for r in chips])],
            Axis(f"p99 {key.upper()} at the sized rate (expected)", fmt=sec_fmt),
            refs=_slo_refs(inputs, key),
        )
        cols = ["chip", "answer", f"{key}_p99_s"]
        c.charts.append(chart_block(f"{title}, each chip's answer", svg, rows_table(chips, cols)))
    svg = bar_chart(
        "Rate per replica: within the SLOs and at saturation",
        cats,
        [
            ("within SLOs", [_n(r.get("max_rate_per_replica")) for r in chips]),
            ("saturation", [_n(r.get("saturation_rate_per_replica")) for r in chips]),
        ],
        Axis("requests/s per replica"),
    )
    # the occupancy at the sized rate, the binding constraint at saturation: each says when
    # (issue 33 item 6: "bound by KV capacity" beside 16% occupancy read as a contradiction)
    cols = ["chip", "max_rate_per_replica", "saturation_rate_per_replica", "kv_occupancy_at_rate",
            "binding_at_saturation"]  # fmt: skip
    c.charts.append(
        chart_block(
            "Capacity, saturation and KV occupancy per replica", svg, rows_table(chips, cols)
        )
    )


def _frontier(c: Content, rows: list[dict[str, Any]], chips: list[dict[str, Any]]) -> None:
    """The cost frontier: every deployment, one series per chip; chips with none named."""
    series = []
    for chip in [*dict.fromkeys(r["hardware"] for r in rows), None]:  # None: those that miss
        pts = sorted(
            (r["gpus"], r["cost_per_million_output_tokens"], r["deployment"])
            for r in rows
            if (r["hardware"] == chip if chip else not r["meets_slo"])
            and (r["meets_slo"] or chip is None)
            and is_number(r["cost_per_million_output_tokens"])
        )
        tips = [(g, y, f"{lab}: {g} GPUs, {money_fmt(y)}/Mtok") for g, y, lab in pts]
        if tips:
            series.append(Series(chip or "misses the SLOs", tips, line=chip is not None))
    gpus = [r["gpus"] for r in rows]
    wide = max(gpus) > 8 * min(gpus)
    svg = line_chart(
        "Cost frontier: GPUs against $ per million output tokens",
        Axis("GPUs" + (" (log)" if wide else ""), log=wide),
        Axis("$ per million output tokens", fmt=money_fmt),
        series,
    )
    none = [r["chip"] for r in chips if r["answer"] == "none"]
    c.charts.append(
        chart_block(
            "Cost frontier: GPUs against $/Mtok, one series per chip",
            svg,
            rows_table(
                rows, ["deployment", "gpus", "cost_per_million_output_tokens", "meets_slo", "best"]
            ),
            note=f"no deployment meets the SLOs on {', '.join(none)}" if none else "",
        )
    )


# ---- cliff ------------------------------------------------------------------------------------
def cliff(doc: Mapping[str, Any]) -> Content:
    pts = doc.get("points") or []
    best = max(range(len(pts)), key=lambda i: pts[i]["output_tokens_per_s"]) if pts else 0
    c = Content(
        figures=[
            ("cliff at max-seqs", "cliff_batch"),
            ("best max-seqs", f"points.{best}.batch"),
            ("output tokens/s there", f"points.{best}.output_tokens_per_s"),
            ("p99 TPOT there", f"points.{best}.tpot_p99_s"),
        ]
    )
    cb = doc.get("cliff_batch")
    c.verdict = (
        f"Throughput peaks at max-seqs {pts[best]['batch']} "
        f"({num_fmt(pts[best]['output_tokens_per_s'])} output tokens/s)"
        + (f"; past {cb} the KV cache overflows and preemption sets in." if cb else ".")
        if pts
        else "No points."
    )
    refs = [Ref(float(cb), f"cliff {cb}")] if is_number(cb) else []

    def one(key: str, title: str, axis: Axis) -> str:
        tips = [(p["batch"], p[key], f"{p['batch']}: {axis.fmt(p[key])}") for p in pts]
        s = [Series(title, tips)]
        return line_chart(title, Axis("max-seqs"), axis, s, vlines=refs)

    for key, title, axis in (
        ("output_tokens_per_s", "Output tokens/s against max-seqs", Axis("tokens/s")),
        ("tpot_p99_s", "p99 TPOT against max-seqs", Axis("p99 TPOT", fmt=sec_fmt)),
        ("peak_kv_fraction", "Peak KV occupancy against max-seqs", Axis("share", fmt=pct_fmt)),
    ):
        cols = ["batch", key, "preemptions", "past_cliff"]
        table = rows_table(pts, cols, labels={"batch": "max-seqs", "past_cliff": "past the cliff"})
        c.charts.append(chart_block(title, one(key, title, axis), table))
    return c


def num_fmt(v: float) -> str:
    return fmt("n", v)


# ---- disagg -----------------------------------------------------------------------------------
def disagg(doc: Mapping[str, Any]) -> Content:
    if "colocated" not in doc or not isinstance(doc["colocated"], Mapping):
        return Content(verdict="Disaggregated and colocated serving under traffic.")
    co, di = doc["colocated"], doc["disaggregated"]
    c = Content(
        figures=[
            ("colocated TTFT", "colocated.ttft_s"),
            ("disaggregated TTFT", "disaggregated.ttft_s"),
            ("colocated TPOT", "colocated.tpot_s"),
            ("disaggregated TPOT", "disaggregated.tpot_s"),
            ("colocated tokens/s per GPU", "colocated.output_tokens_per_s_per_gpu"),
            ("disaggregated tokens/s per GPU", "disaggregated.output_tokens_per_s_per_gpu"),
        ]
    )
    c.verdict = (
        f"Disaggregated: TPOT {sec_fmt(di['tpot_s'])} against {sec_fmt(co['tpot_s'])} colocated, "
        f"{num_fmt(di['output_tokens_per_s_per_gpu'])} against "
        f"{num_fmt(co['output_tokens_per_s_per_gpu'])} output tokens/s per GPU."
    )
    rows = [{"serving": k, **doc[k]} for k in ("colocated", "disaggregated")]
    cats = ["TTFT", "TPOT"]
    svg = bar_chart(
        "Latency: colocated and disaggregated",
        cats,
        [(r["serving"], [r["ttft_s"], r["tpot_s"]]) for r in rows],
        Axis("seconds", fmt=sec_fmt),
    )
    c.charts.append(chart_block("Latency", svg, rows_table(rows, ["serving", "ttft_s", "tpot_s"])))
    key = "output_tokens_per_s_per_gpu"
    svg = bar_chart(
        "Output tokens/s per GPU",
        [r["serving"] for r in rows],
        [("tokens/s per GPU", [r[key] for r in rows])],
        Axis("tokens/s per GPU"),
    )
    c.charts.append(chart_block("Throughput per GPU", svg, rows_table(rows, ["serving", key])))
    if isinstance(doc.get("traffic"), Mapping):
        _disagg_traffic(doc, c)
    if doc.get("launch"):
        c.charts.append(launch_html(doc["launch"]))
    return c


def _disagg_traffic(doc: Mapping[str, Any], c: Content) -> None:
    """Under --rate: the GPUs each way needs and its capacity per GPU, in front of the rest."""
    t = doc["traffic"]
    c.figures[:0] = [
        (f"{k} GPUs at {fmt('rate', t.get('rate'))} req/s", f"traffic.{k}.gpus")
        for k in ("colocated", "disaggregated")
    ] + [
        (f"{k} capacity per GPU, req/s", f"traffic.{k}.capacity_per_gpu")
        for k in ("colocated", "disaggregated")
    ]
    co, di = t["colocated"], t["disaggregated"]
    c.verdict = (
        f"At {fmt('rate', t.get('rate'))} requests/s colocated serving needs {co.get('gpus')} "
        f"GPUs ({fmt('n', co.get('capacity_per_gpu'))} requests/s of capacity per GPU), "
        f"disaggregated {di.get('gpus')} ({fmt('n', di.get('capacity_per_gpu'))}). " + c.verdict
    )
    rows = []
    for k in ("colocated", "disaggregated"):
        m = t[k].get("metrics") or {}
        rows.append(
            {
                "serving": k,
                "gpus": t[k].get("gpus"),
                "capacity_per_gpu": t[k].get("capacity_per_gpu"),
                "ttft_p99_s": (m.get("ttft_s") or {}).get("p99"),
                "tpot_p99_s": (m.get("tpot_s") or {}).get("p99"),
            }
        )
    inputs = {"slo_ttft_s": t.get("slo_ttft_s"), "slo_tpot_s": t.get("slo_tpot_s")}
    for key in ("ttft", "tpot"):
        svg = bar_chart(
            f"p99 {key.upper()} at {fmt('rate', t.get('rate'))} requests/s",
            [r["serving"] for r in rows],
            [(f"p99 {key.upper()}", [_n(r[f"{key}_p99_s"]) for r in rows])],
            Axis(f"p99 {key.upper()} (expected)", fmt=sec_fmt),
            refs=_slo_refs({**inputs, "slo_pct": t.get("slo_pct")}, key),
        )
        cols = ["serving", "gpus", "capacity_per_gpu", f"{key}_p99_s"]
        c.charts.append(
            chart_block(f"p99 {key.upper()} under traffic", svg, rows_table(rows, cols))
        )


CONTENT = {"serve": serve, "size": size, "cliff": cliff, "disagg": disagg}

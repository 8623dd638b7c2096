"""Tables for `serve` and `size` (to move into the render package with the rest). Built from
the JSON document, so table and JSON never disagree; narrow enough that no cell is cut at 60
columns (titles wrap)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table

from roofline.render import _bar, _c, _kv_table, _rows_table, stdout_console
from roofline.units import fmt_bytes, fmt_seconds


def _tight(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    """A rows table with one space between columns (the box's divider, no padding): 60 columns
    hold eight numeric columns."""
    t = Table(box=box.SIMPLE_HEAVY, pad_edge=False, padding=(0, 0))
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def _t(x: float | None) -> str:
    return "-" if x is None else _c(fmt_seconds(x))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:.3g}" if x < 100 else f"${x:,.0f}"


def _short(hw: str) -> str:
    """nvidia-h100-sxm -> h100-sxm: the vendor is implied by the chip."""
    vendor, _, rest = hw.partition("-")
    return rest if vendor in ("nvidia", "amd", "google", "intel", "apple") and rest else hw


def _slo_text(i: Mapping[str, Any]) -> str:
    parts = []
    if i.get("slo_ttft_s") is not None:
        parts.append(f"TTFT <= {fmt_seconds(i['slo_ttft_s'])}")
    if i.get("slo_tpot_s") is not None:
        parts.append(f"TPOT <= {fmt_seconds(i['slo_tpot_s'])}")
    return f"SLO p{i['slo_pct']:g}: " + " and ".join(parts) if parts else "no SLO"


def serve_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    i, pts = doc["inputs"], doc["points"]
    load = f"{i['concurrency']} users (closed loop)" if i.get("concurrency") else "Poisson arrivals"
    head = (
        f"{i['model']} on {i['dp']} x {i['hardware']} TP{i['tp']} PP{i['pp']} "
        f"({i['gpus']} GPUs), {i['weights']} weights; {i['requests']:,} requests, {load}, "
        f"prompts {i['prompt_lengths']}, outputs {i['output_lengths']}; {_slo_text(i)}; "
        "expected step times (ideal in --format json). TTFT = queue + prefill."
    )
    if len(pts) == 1:
        e = pts[0]["expected"]
        rows = [
            ("rate", f"{pts[0]['rate']:.3g} req/s" if pts[0]["rate"] else "-"),
            ("TTFT p50 / p99", f"{_t(e['ttft_s']['p50'])} / {_t(e['ttft_s']['p99'])}"),
            ("TPOT p50 / p99", f"{_t(e['tpot_s']['p50'])} / {_t(e['tpot_s']['p99'])}"),
            ("ITL p50 / p99", f"{_t(e['itl_s']['p50'])} / {_t(e['itl_s']['p99'])}"),
            ("E2E p50 / p99", f"{_t(e['e2e_s']['p50'])} / {_t(e['e2e_s']['p99'])}"),
            ("queue mean", _t(e["queue_s"]["mean"])),
            ("requests/s", f"{e['throughput']['requests_per_s']:.3g}"),
            ("output tok/s", f"{e['throughput']['output_tokens_per_s']:,.0f}"),
            ("tok/s per GPU", f"{e['throughput']['output_tokens_per_s_per_gpu']:,.0f}"),
            ("tok/s per user", f"{e['throughput']['output_tokens_per_s_per_user']:,.1f}"),
            ("goodput", f"{e['goodput_requests_per_s']:.3g} req/s"),
            ("SLO attainment", _pct(e["slo_attainment"])),
            ("meets SLO", "yes" if e["meets_slo"] else "NO"),
            ("running batch", f"{e['mean_running_batch']:.1f}"),
            ("queue length", f"{e['mean_queue_length']:.1f}"),
            ("KV occupancy", _pct(e["kv_occupancy"])),
            ("utilisation", _pct(e["utilisation"])),
            ("$/M output tok", _usd(e["cost_per_million_output_tokens"])),
            (
                "J/output token",
                "-"
                if e["joules_per_output_token"] is None
                else f"{e['joules_per_output_token']:.3g}",
            ),
        ]
        sat = doc.get("saturation_rate")
        if sat:
            rows.append(("saturation", f"{sat['expected']:.3g} req/s"))
        con.print(head)
        con.print(_kv_table("", rows))
        return
    rows = [
        (
            f"{p['rate']:.3g}",
            _t(p["expected"]["ttft_s"]["p99"]),
            _t(p["expected"]["tpot_s"]["p99"]),
            f"{p['expected']['throughput']['output_tokens_per_s_per_gpu']:,.0f}",
            f"{p['expected']['goodput_requests_per_s']:.3g}",
            "ok" if p["expected"]["meets_slo"] else "MISS",
        )
        for p in pts
    ]
    con.print(head)
    con.print(_tight(("rate", "TTFT p99", "TPOT p99", "tok/s/GPU", "goodput", "SLO"), rows))
    top_ttft = max(p["expected"]["ttft_s"]["p99"] for p in pts)
    top_tpot = max(p["expected"]["tpot_s"]["p99"] for p in pts)
    chart = _rows_table(
        "p99 TTFT and TPOT against rate (bars scaled to the largest; MISS where the SLO breaks)",
        ("rate", "TTFT p99", "TPOT p99"),
        [
            (
                f"{p['rate']:.3g}" + ("" if p["expected"]["meets_slo"] else " MISS"),
                _bar(p["expected"]["ttft_s"]["p99"], top_ttft, 16),
                _bar(p["expected"]["tpot_s"]["p99"], top_tpot, 16),
            )
            for p in pts
        ],
    )
    con.print(chart)
    sat = doc.get("saturation_rate")
    if sat:
        con.print(f"saturation rate: {sat['expected']:.3g} req/s (ideal {sat['ideal']:.3g})")


def size_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    i, deps = doc["inputs"], doc["deployments"]
    head = (
        f"Deployments of {i['model']} ({i['weights']} weights) serving {i['rate']:g} req/s, "
        f"prompts {i['prompt_lengths']}, outputs {i['output_lengths']}; {_slo_text(i)}. "
        f"* = best ({i['minimize']}), f = on the frontier of tok/s per GPU vs tok/s per user; "
        "GPUs = replicas x TP x PP; replicas, latencies and more in --format json"
    )
    rows, misses = [], []
    for d in deps:
        mark = ("*" if d["best"] else "") + ("f" if d["frontier"] else "")
        layout = f"TP{d['tp']}" + (f"PP{d['pp']}" if d["pp"] > 1 else "")
        if d.get("prefill_replicas"):
            layout += f" {d['prefill_replicas']}P{d['decode_replicas']}D"
        name = f"{_short(d['hardware'])} {layout}"
        if not d["meets_slo"]:
            misses.append(f"{name}: {d['note'] or 'misses the SLOs'}")
            continue
        e = d["expected"]
        rows.append(
            (
                f"{name}{' ' + mark if mark else ''}",
                f"{d['gpus']:,}",
                _usd(d["cost_per_hour"]),
                _usd(d["cost_per_million_output_tokens"]),
                f"{e['throughput']['output_tokens_per_s_per_gpu']:,.0f}",
                f"{e['throughput']['output_tokens_per_s_per_user']:,.0f}",
            )
        )
    cols = ("deployment", "GPUs", "$/h", "$/Mtok", "tok/GPU", "tok/user")
    con.print(head + "; tok = output tokens/s")
    con.print(_tight(cols, rows) if rows else "no deployment meets the SLOs")
    for line in misses:
        con.print(line)
    con.print(f"energy: {i['energy_assumption']}")


def disagg_traffic_table(doc: Mapping[str, Any]) -> None:
    tr = doc["traffic"]
    rows = []
    for name in ("colocated", "disaggregated"):
        x = tr[name]
        e = x["metrics"] or {}
        shape = (
            "1" if name == "colocated" else (f"{x['prefill_replicas']}P+{x['decode_replicas']}D")
        )
        rows.append(
            (
                name,
                shape,
                f"{x['goodput_per_gpu']:.3g}",
                f"{x['gpus']:,}" if x["units"] else "-",
                _t((e.get("ttft_s") or {}).get("p99")),
                _t((e.get("tpot_s") or {}).get("p99")),
            )
        )
    slo = _slo_text(tr)
    con = stdout_console()
    con.print(
        f"Under {tr['rate']:g} req/s ({tr['requests']} requests per point), {slo}: goodput per "
        "GPU = the highest rate a unit (a replica, or P prefill + D decode replicas) serves "
        "within the SLOs / its GPUs, in req/s per GPU"
    )
    con.print(_tight(("serving", "unit", "req/s/GPU", "GPUs", "TTFT p99", "TPOT p99"), rows))
    if tr["better"]:
        con.print(f"better by goodput per GPU: {tr['better']}")


def cliff_table(doc: Mapping[str, Any]) -> None:
    """The cliff sweep (the serving scheduler with every request at t = 0), 60-column safe."""
    con = stdout_console()
    i, pts, cliff = doc["inputs"], doc["points"], doc["cliff_batch"]
    swap = i["preemption"] == "swap"
    rows = []
    for p in pts:
        row = [
            f"{p['batch']:,}" + (" ▲" if p["past_cliff"] else ""),
            f"{p['output_tokens_per_s']:,.0f}",
            _t(p["ttft_mean_s"]),
            _t(p["tpot_mean_s"]),
            _t(p["tpot_p99_s"]),
            f"{p['preemptions']:,}",
            f"{p['preemption_time_fraction']:.0%}",
        ]
        row.append(
            f"{p['throughput_vs_recompute']:.2f}x" if swap else f"{p['decode_time_fraction']:.1%}"
        )
        rows.append(tuple(row))
    con.print(
        f"Reasoning cliff: {i['model']} on {i['hardware']} TP{i['tp']}, {i['weights']} weights, "
        f"{i['kv_dtype']} KV, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out, "
        f"{i['requests']:,} requests all arriving at t = 0, {i['preemption']}; cliff at batch "
        f"{cliff:,} (▲ past it); lost = share of time recomputing or swapping"
        + ("; vs rec. = throughput against recompute" if swap else "")
    )
    cols = ("batch", "tok/s", "TTFT", "TPOT", "TPOT p99", "preempt", "lost")
    con.print(_tight((*cols, "vs rec." if swap else "decode"), rows))
    top_tps = max(p["output_tokens_per_s"] for p in pts)
    top_tpot = max(p["tpot_mean_s"] for p in pts)
    con.print("Throughput and TPOT against batch (bars scaled to the largest value)")
    con.print(
        _tight(
            ("batch", "output tokens/s", "TPOT"),
            [
                (
                    f"{p['batch']:,}" + (" ▲" if p["past_cliff"] else ""),
                    _bar(p["output_tokens_per_s"], top_tps),
                    _bar(p["tpot_mean_s"], top_tpot),
                )
                for p in pts
            ],
        )
    )


def disagg_table(doc: Mapping[str, Any]) -> None:
    """Closed-form colocated vs disaggregated serving, 60-column safe."""
    i = doc["inputs"]
    rows = [
        (
            name,
            _t(doc[name]["ttft_s"]),
            _t(doc[name]["tpot_s"]),
            f"{doc[name]['output_tokens_per_s_per_gpu']:,.0f}",
            f"{doc[name]['gpus_per_decode_replica']:.2f}",
        )
        for name in ("colocated", "disaggregated")
    ]
    con = stdout_console()
    con.print(
        f"{i['model']}: prefill on {i['prefill_hardware']} TP{i['prefill_tp']}, decode on "
        f"{i['decode_hardware']} TP{i['decode_tp']}, batch {i['batch']}, "
        f"{i['prompt_tokens']:,} in / {i['output_tokens']:,} out ({i['step_times']}); TTFT of "
        "one request on idle replicas; GPUs per unit = a decode replica and its prefill share"
    )
    con.print(_tight(("serving", "TTFT", "TPOT", "tok/s/GPU", "GPUs/unit"), rows))
    con.print(
        f"KV cache per request {fmt_bytes(doc['kv_bytes_per_request'])}, sent over {i['link']} in "
        f"{fmt_seconds(doc['kv_transfer_s'])}; {doc['prefill_replicas_per_decode_replica']:.2f} "
        "prefill replicas keep one decode replica busy"
    )

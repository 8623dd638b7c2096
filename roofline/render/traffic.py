"""Tables of serving under traffic: serve (latency percentiles, throughput, goodput against a
request rate, with a p99 chart) and disagg under a rate (colocated against disaggregated by
capacity per GPU); size's table is render.sizing, with the helpers here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_seconds
from roofline.render.core import (
    VERBOSE,
    bands_note,
    csec,
    load_band_text,
    pct,
    pm,
    slo_cells,
    stdout_console,
)
from roofline.render.launchlines import launch_block
from roofline.render.serving import _bar
from roofline.render.width import N, T, legend, print_pairs, print_rows, say, table_output


def _usd(x: float | None) -> str:
    if x is None:
        return "—"
    return f"${x:.3g}" if x < 100 else f"${x:,.0f}"


def _short(hw: str) -> str:
    """nvidia-h100-sxm -> h100-sxm: the vendor is implied by the chip."""
    vendor, _, rest = hw.partition("-")
    return rest if vendor in ("nvidia", "amd", "google", "intel", "apple") and rest else hw


def _lat(t: float | None) -> str:
    """A latency percentile of serve: null only when it has no steady state (past saturation)."""
    return "unbounded" if t is None else csec(t)


def _arrivals(i: Mapping[str, Any]) -> str:
    """The arrival process the run was given (a stationary process, or a replayed log)."""
    a = i.get("arrivals")
    return f"arrivals {a}" if a else "Poisson arrivals"


def brief(text: str) -> str:
    """A legend's short form of an input's description: files by their name alone, the
    parenthesised columns left to -v and JSON ("azure log AzureLLMInferenceTrace_code.csv")."""
    import re

    path = r"\S*/([\w.-]+\.\w+)"  # a file's path (a name with an extension: not requests/s)
    text = re.sub(path + r" \([^()]*\)", r"\1", text)  # its columns
    return re.sub(path, r"\1", text)


def _lengths(i: Mapping[str, Any], load: str) -> str:
    """The lengths in a legend: each source by its file's name, once ("lengths from the log"
    when the arrival log brings both)."""
    p, o = brief(i["prompt_lengths"]), brief(i["output_lengths"])
    src = p.partition(" from ")[2]
    if src and o.partition(" from ")[2] == src:
        return "lengths from the log" if src in brief(load) else f"lengths from {src}"
    return f"prompts {p}, outputs {o}"


def _has_slo(i: Mapping[str, Any]) -> bool:
    """Whether the run was judged against an SLO: the command's or a workload class's own."""
    more = (i.get("workload") or {}).get("classes") or []
    return any(
        d.get("slo_ttft_s") is not None or d.get("slo_tpot_s") is not None for d in [i, *more]
    )


def _slo_text(i: Mapping[str, Any]) -> str:
    parts = []
    if i.get("slo_ttft_s") is not None:
        parts.append(f"TTFT <= {fmt_seconds(i['slo_ttft_s'])}")
    if i.get("slo_tpot_s") is not None:
        parts.append(f"TPOT <= {fmt_seconds(i['slo_tpot_s'])}")
    if not parts:
        return "SLOs per class (below)" if _has_slo(i) else "no SLO"
    return f"SLO p{i['slo_pct']:g}: " + " and ".join(parts)


# ---- serve ----------------------------------------------------------------------------------
def _short_tail(i: Mapping[str, Any]) -> list[str]:
    """The legend's word when an SLO's percentile rests on fewer requests than `check` and
    `report` (and size's capacity search) judge it on (serving.slosearch.slo_requests: 50
    beyond it, 5,000 at p99): a short run's tail, often below the steady state's near capacity."""
    from roofline.serving.metrics import Slo
    from roofline.serving.slosearch import slo_requests

    pct, n = float(i.get("slo_pct") or 99.0), int(i.get("requests") or 0)
    slo = Slo(i.get("slo_ttft_s"), i.get("slo_tpot_s"), pct)
    if (slo.ttft_s is None and slo.tpot_s is None) or not i.get("rates") or not n:
        return []  # no SLO, a closed loop, or a log (its own requests)
    need = slo_requests(slo, n)
    return [f"SHORT: p{pct:g} of {n:,} requests (check: {need:,})"] if need > n else []


@table_output
def serve_table(doc: Mapping[str, Any], con: Console) -> None:
    i, pts = doc["inputs"], doc["points"]
    load = f"{i['concurrency']} users (closed loop)" if i.get("concurrency") else _arrivals(i)
    # the legend: at most three lines (width.legend); the rest under -v
    core = [f"{i['requests']:,} requests, {brief(load)}", _slo_text(i)]
    short = _short_tail(i)  # a mark too, unless UNBOUNDED or NOT STEADY says more
    lengths = _lengths(i, load)
    marks: list[str] = []  # UNBOUNDED or NOT STEADY: always in the legend
    queue_note = (
        "TTFT and TPOT bands: the throughput band through the queue (unbounded: past saturation"
        " at its low edge)."
    )
    closed_note = (
        "TTFT and TPOT bands: the throughput band as the closed loop's time scale x the"
        " light-load band, calibrated on closed-loop runs (validation/closedbands.py)."
    )
    more = (
        f"Arrivals: {load}; prompts {i['prompt_lengths']}; outputs {i['output_lengths']}. "
        f"{i['model']} on {i['dp']} x {i['hardware']} TP{i['tp']} PP{i['pp']} "
        f"({i['gpus']} GPUs), {i['weights']} weights; "
        + (
            f"dealt to the replicas {i['router']} ({i['router_model']}); "
            if i.get("router")
            else ""
        )
        + (f"{i['prefix_caching']} (prefix caching); " if i.get("prefix_caching") else "")
        + (_kv_text(i) if i.get("kv_retention") else "")
        + (_spec_text(i["speculation"]) if i.get("speculation") else "")
        + "ideal step times in --format json. TTFT = queue + prefill + API server; "
        "throughput, goodput and cost in steady state (the offered rate, or the saturation "
        "past it)."
    )
    sat = doc.get("saturation_rate")
    bands = doc.get("bands")

    def b(value: str, name: str) -> str:
        load = (pts[0].get("load_bands") or {}).get(name) if len(pts) == 1 else None
        band = load_band_text(load) if load else pm(bands, name)
        return f"{value} {band}" if band and value != "unbounded" else value

    if len(pts) == 1:
        e = pts[0]["expected"]
        j = e["joules_per_output_token"]
        ttft, tpot, e2e = e["ttft_s"], e["tpot_s"], e["e2e_s"]
        thr = e["throughput"]
        pairs = [
            ("rate", f"{pts[0]['rate']:.3g} req/s" if pts[0]["rate"] else "-"),
            (
                "TTFT p50 / p99",
                f"{b(_lat(ttft['p50']), 'ttft_p50')} / {b(_lat(ttft['p99']), 'ttft_p99')}",
            ),
            (
                "TPOT p50 / p99",
                f"{b(csec(tpot['p50']), 'tpot_p50')} / {b(csec(tpot['p99']), 'tpot_p99')}",
            ),
            ("ITL p50 / p99", f"{csec(e['itl_s']['p50'])} / {csec(e['itl_s']['p99'])}"),
            ("E2E p50 / p99", f"{b(_lat(e2e['p50']), 'e2e_p50')} / {_lat(e2e['p99'])}"),
            ("queue mean", _lat(e["queue_s"]["mean"])),
            ("requests/s", b(f"{thr['requests_per_s']:.3g}", "throughput")),
            ("output tok/s", b(f"{thr['output_tokens_per_s']:,.0f}", "throughput")),
            ("tok/s per GPU", b(f"{thr['output_tokens_per_s_per_gpu']:,.0f}", "throughput")),
            ("tok/s per user", f"{e['throughput']['output_tokens_per_s_per_user']:,.1f}"),
            ("goodput", f"{e['goodput_requests_per_s']:.3g} req/s"),
            *zip(("SLO attainment", "meets SLO"), slo_cells(e, _has_slo(i)), strict=True),
            ("running batch", f"{e['mean_running_batch']:.1f}"),
            ("queue length", _count(e["mean_queue_length"])),
            ("KV occupancy", pct(e["kv_occupancy"])),
            ("utilisation", pct(e["utilisation"])),
            (
                "$/M output tok",
                b(_usd(e["cost_per_million_output_tokens"]), "cost_per_million_output_tokens"),
            ),
            ("J/output token", "-" if j is None else b(f"{j:.3g}", "joules_per_output_token")),
        ]
        if sp := i.get("speculation"):  # the drafter's round, fixed at every batch
            tree = f", {sp['tree_tokens']} verified" if sp.get("tree_tokens") else ""
            pairs.append(
                (
                    "drafter",
                    f"{sp['drafter']}, γ {sp['gamma']}{tree} a round: chosen at batch 1 and run at"
                    " every batch (speculate: each batch's own)",
                )
            )
        per = e.get("per_replica")
        if per:  # stranding shows as one replica's tail or share apart from the rest
            p99 = [r["ttft_p99_s"] for r in per]
            n_req = [r["requests"] for r in per]
            pairs.append(
                (
                    "per replica",
                    (f"{i['router']}: " if i.get("router") else "")
                    + f"TTFT p99 {csec(min(p99))} to {csec(max(p99))}, {min(n_req):,} to"
                    f" {max(n_req):,} requests",
                )
            )
        pc = e.get("prefix_cache")
        if pc:
            pairs += [
                ("prefix hit rate", _hits(pc, i)),
                (
                    "prefill computed",
                    f"{pc['prefill_tokens_computed']:,} of {pc['prefill_tokens_received']:,} tok",
                ),
                ("cache KV", f"{pc['cache_kv_blocks']:,.0f} blocks of {pc['block_tokens']} tok"),
            ]
            if len(pc["cached_share_by_turn"]) > 1:
                shares = " ".join(f"{x:.3f}" for x in pc["cached_share_by_turn"])
                pairs.append(("cached by turn", shares))
        if sat:
            pairs.append(("saturation", b(f"{sat['expected']:.3g} req/s", "saturation")))
            pairs.append(("bound by", _binding(sat)))
        tr = e.get("transient")
        if tr:
            pairs.append(
                (
                    "transient",
                    f"TTFT p99 {csec(tr['ttft_s']['p99'])} over its {tr['requests']:,} requests"
                    " (grows with the run)",
                )
            )
            marks.append("UNBOUNDED: past saturation, no steady-state TTFT, queue or E2E")
            more += f" {e['unbounded']}; the transient is the simulated run's."
        elif not e.get("steady_state", True):
            marks.append("NOT STEADY: a short run's percentiles (raise --requests)")
            more += (
                " NOT STEADY: the run spans under 5 mean E2Es; throughput, goodput and cost are"
                " the steady state's, the percentiles this short run's."
            )
        rate = f"{pts[0]['rate']:.3g} req/s" if pts[0]["rate"] else "its users' pace"
        ttft_text = (
            f"TTFT unbounded (past saturation {sat['expected']:.3g} req/s)"
            if e.get("unbounded") and sat
            else f"TTFT p50/p99 {_lat(e['ttft_s']['p50'])}/{_lat(e['ttft_s']['p99'])}"
        )
        answer = (
            f"{i['model']} on {i['gpus']} x {_short(i['hardware'])} at {rate}: {ttft_text}, "
            f"TPOT p50/p99 {csec(e['tpot_s']['p50'])}/{csec(e['tpot_s']['p99'])} (expected)"
        )
        print_pairs(con, answer, pairs)
        extra = [lengths]
        if lbs := pts[0].get("load_bands"):  # the legend names them; how, under -v
            closed = any(b.get("rates") is None for b in lbs.values())
            extra.append(f"TTFT/TPOT bands through the {'loop' if closed else 'queue'}")
            more += " " + (closed_note if closed else queue_note)
        marks = marks or short
        head, _ = legend(con, [*core, *marks, *extra], len(core) + len(marks))
        say(con, head)
        if VERBOSE["on"]:
            say(con, more)
            say(con, bands_note(bands))
        return
    print_rows(
        con,
        f"{i['model']} on {i['gpus']} x {_short(i['hardware'])}: p99 TTFT and TPOT against rate"
        " (expected)",
        (N("rate"), N("TTFT\np99"), N("TPOT\np99"), N("tok/s\n/GPU"), N("good-\nput"), T("SLO")),
        [
            (
                f"{p['rate']:.3g}",
                _with_load(_lat(p["expected"]["ttft_s"]["p99"]), p, "ttft_p99"),
                _with_load(csec(p["expected"]["tpot_s"]["p99"]), p, "tpot_p99"),
                f"{p['expected']['throughput']['output_tokens_per_s_per_gpu']:,.0f}",
                f"{p['expected']['goodput_requests_per_s']:.3g}",
                "ok" if p["expected"]["meets_slo"] else "MISS",
            )
            for p in pts
        ],
    )
    loaded = any(p.get("load_bands") for p in pts)
    named = (  # the bands in the legend (at most three lines); where they come from, under -v
        "TTFT/TPOT bands through the queue"
        if loaded
        else f"bands TTFT p99 {pm(bands, 'ttft_p99') or 'none'}, TPOT p99"
        f" {pm(bands, 'tpot_p99') or 'none'}"
    )
    head, _ = legend(
        con,
        [*core, *short, lengths, f"{named}, tok/s {pm(bands, 'throughput') or 'none'}"],
        len(core) + len(short),
    )
    say(con, head)
    if VERBOSE["on"]:
        say(con, more + (" " + queue_note if loaded else ""))
        say(con, bands_note(bands))
    top_ttft = max(p["expected"]["ttft_s"]["p99"] or 0.0 for p in pts)
    top_tpot = max(p["expected"]["tpot_s"]["p99"] for p in pts)
    print_rows(
        con,
        "p99 TTFT and TPOT against rate (bars scaled to the largest; MISS where the SLO breaks)",
        (T("rate"), T("TTFT p99"), T("TPOT p99")),
        [
            (
                f"{p['rate']:.3g}" + ("" if p["expected"]["meets_slo"] else " MISS"),
                _bar(p["expected"]["ttft_s"]["p99"], top_ttft, 16)
                if p["expected"]["ttft_s"]["p99"] is not None
                else "unbounded",
                _bar(p["expected"]["tpot_s"]["p99"], top_tpot, 16),
            )
            for p in pts
        ],
    )
    if sat:
        say(
            con,
            f"saturation rate: {sat['expected']:.3g} req/s {pm(bands, 'saturation')} (ideal "
            f"{sat['ideal']:.3g}), bound by "
            f"{_binding(sat)}; compute bound {sat['compute_bound']:.3g}, bandwidth "
            f"bound {sat['bandwidth_bound']:.3g}",
        )


def _kv_text(i: Mapping[str, Any]) -> str:
    """'KV between turns: offload; tiers cpu 200 GB at 64 GB/s per GPU; '."""
    tiers = ", ".join(
        f"{t['label']} {t['capacity_bytes'] / 1e9:,.0f} GB at"
        f" {t['bandwidth_bytes_per_s_per_gpu'] / 1e9:,.1f} GB/s per GPU"
        for t in i.get("kv_tiers", [])
    )
    return f"KV between turns: {i['kv_retention']}" + (f"; tiers {tiers}" if tiers else "") + "; "


def _hits(pc: Mapping[str, Any], i: Mapping[str, Any]) -> str:
    """'97.0% of 97.0%', with the tiers' shares when KV lives below HBM: '(75.8% HBM + 21.2%
    cpu)'."""
    out = f"{pct(pc['hit_rate'])} of {pct(pc['possible_hit_rate'])}"
    rates = pc.get("tier_hit_rates") or []
    if rates:
        labels = [t["label"] for t in i.get("kv_tiers", [])]
        parts = [f"{pct(x)} {lab}" for x, lab in zip(rates, labels, strict=False)]
        out += f" ({pct(pc['hbm_hit_rate'])} HBM + {' + '.join(parts)})"
    return out


def _count(x: float | None) -> str:
    return "unbounded" if x is None else f"{x:.1f}"


def _binding(sat: Mapping[str, Any]) -> str:
    """What binds the saturation, with the KV occupancy and batch it was read at (the run's own
    occupancy, at the offered rate, is another figure)."""
    kv = (sat.get("kv_occupancy") or {}).get("expected")
    batch = sat["mean_running_batch"]["expected"]
    at = f" (at saturation: KV {kv:.0%}, batch {batch:.0f})" if kv is not None else ""
    return f"{sat['binding']['expected']}{at}"


def _layout(d: Mapping[str, Any]) -> str:
    """A deployment's replica layout, short: TP8, TP8 PP2, TP16 EP16 ADP16."""
    out = f"TP{d['tp']}" + (f" PP{d['pp']}" if d["pp"] > 1 else "")
    if d["ep"] > 1:
        out += f" EP{d['ep']}"
    if d.get("attention_dp", 1) > 1:
        out += f" ADP{d['attention_dp']}"
    return out


def _pools(d: Mapping[str, Any]) -> str:
    """A deployment's layout with its pool split: TP8, TP1 3P2D (both pools in one layout), or
    the prefill pool's and the decode pool's on two lines when they differ."""
    layout = _layout(d)
    if not d.get("prefill_replicas"):
        return layout
    pre = d.get("prefill_pool")
    if pre is None or _layout(pre) == layout:
        return f"{layout} {d['prefill_replicas']}P{d['decode_replicas']}D"
    return f"{d['prefill_replicas']}P {_layout(pre)}\n + {d['decode_replicas']}D {layout}"


# ---- disagg under a rate --------------------------------------------------------------------
def disagg_traffic_table(doc: Mapping[str, Any]) -> None:
    """Printed after `disagg_table` (which opens with the inputs header)."""
    con = stdout_console()
    tr = doc["traffic"]
    rows = []
    for name in ("colocated", "disaggregated"):
        x = tr[name]
        e = x["metrics"] or {}
        shape = "1" if name == "colocated" else f"{x['prefill_replicas']}P+{x['decode_replicas']}D"
        rows.append(
            (
                name,
                shape,
                f"{x['capacity_per_gpu']:.3g}",
                f"{x['gpus']:,}" if x["units"] else "-",
                csec((e.get("ttft_s") or {}).get("p99")),
                csec((e.get("tpot_s") or {}).get("p99")),
            )
        )
    print_rows(
        con,
        f"Under {tr['rate']:g} req/s ({tr['requests']} requests per point; prompts "
        f"{tr.get('prompt_lengths', '?')}, outputs {tr.get('output_lengths', '?')}), "
        f"{_slo_text(tr)}: "
        "capacity per GPU = the highest rate a unit (a replica, or P prefill + D decode replicas) "
        "serves within the SLOs / its GPUs, in req/s per GPU",
        (T("serving"), T("unit"), N("req/s\n/GPU"), N("GPUs"), N("TTFT\np99"), N("TPOT\np99")),
        rows,
    )
    if tr["better"]:
        say(con, f"better by capacity per GPU: {tr['better']}")
    launch_block(con, doc.get("launch"))


def _spec_text(sp: Mapping[str, Any]) -> str:
    verify = f"a tree of {sp['tree_tokens']}" if sp["tree_tokens"] else "a chain"
    return (
        f"{sp['drafter']} drafter, γ {sp['gamma']}, {verify} verified, "
        f"{sp['tokens_per_round']:.2f} tokens per round ({sp['batch1_speedup']:.2f}x at batch 1); "
    )


def _with_load(value: str, point: Mapping[str, Any], name: str) -> str:
    """A rate point's figure with its band under load (load_bands), when it has one."""
    b = (point.get("load_bands") or {}).get(name)
    return f"{value} {load_band_text(b)}" if b and value != "unbounded" else value

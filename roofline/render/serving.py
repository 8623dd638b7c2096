"""Tables of serving questions: cliff, disagg and plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_bytes, fmt_seconds
from roofline.render.core import cbytes, csec, num
from roofline.render.width import N, T, print_rows, say, table_output


# ---- cliff ----------------------------------------------------------------------------------
def _bar(value: float, top: float, width: int = 20) -> str:
    return "█" * max(1, round(width * value / top)) if top > 0 else ""


@table_output
def cliff_table(doc: Mapping[str, Any], con: Console) -> None:
    i, pts, cliff = doc["inputs"], doc["points"], doc["cliff_batch"]
    rows = [
        [
            f"{p['batch']:,}" + (" ▲" if p["past_cliff"] else ""),
            f"{p['output_tokens_per_s']:,.0f}",
            csec(p["ttft_mean_s"]),
            csec(p["tpot_mean_s"]),
            csec(p["tpot_p99_s"]),
            f"{p['preemptions']:,}",
            f"{p['preemption_time_fraction']:.0%}",
            f"{p['decode_time_fraction']:.1%}",
        ]
        for p in pts
    ]
    title = (
        f"Reasoning cliff: {i['model']} on {i['hardware']} TP{i['tp']}, {i['weights']} "
        f"weights, {i['kv_dtype']} KV, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out, "
        f"{i['requests']:,} requests all arriving at t = 0 at the engine (no API server: serve"
        f" --frontend none), {i['preemption']}; cliff at batch "
        f"{cliff:,} (▲ past it); "
        "lost = share of time recomputing or swapping"
    )
    cols = [
        N("batch"),
        N("tok/s"),
        N("TTFT\nmean"),
        N("TPOT\nmean"),
        N("TPOT\np99"),
        N("pre-\nempt"),
        N("lost"),
        N("decode"),
    ]
    if i["preemption"] == "swap":
        cols.append(N("vs re-\ncompute"))
        for r, p in zip(rows, pts, strict=True):
            r.append(f"{p['throughput_vs_recompute']:.2f}×")
    print_rows(con, title, cols, rows)
    top_tps = max(p["output_tokens_per_s"] for p in pts)
    top_tpot = max(p["tpot_mean_s"] for p in pts)
    print_rows(
        con,
        "Throughput and TPOT against batch (bars scaled to the largest value)",
        (N("batch"), T("output tokens/s"), T("TPOT")),
        [
            (
                f"{p['batch']:,}" + (" ▲" if p["past_cliff"] else ""),
                _bar(p["output_tokens_per_s"], top_tps),
                _bar(p["tpot_mean_s"], top_tpot),
            )
            for p in pts
        ],
    )


# ---- disagg ---------------------------------------------------------------------------------
@table_output
def disagg_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    rows = [
        (
            name,
            csec(doc[name]["ttft_s"]),
            csec(doc[name]["tpot_s"]),
            f"{doc[name]['output_tokens_per_s_per_gpu']:,.0f}",
            f"{doc[name]['gpus_per_decode_replica']:.2f}",
        )
        for name in ("colocated", "disaggregated")
    ]
    title = (
        f"{i['model']}: prefill on {i['prefill_hardware']} {_pool(i, 'prefill')}, decode on "
        f"{i['decode_hardware']} {_pool(i, 'decode')}, batch {i['batch']}, "
        f"{i['prompt_tokens']:,} in / {i['output_tokens']:,} out ({i['step_times']}); colocated:"
        f" both phases on the decode pool's {i['decode_hardware']} {_pool(i, 'decode')}"
    )
    cols = (T("serving"), N("TTFT"), N("TPOT"), N("tok/s\nper GPU"), N("GPUs\nper unit"))
    print_rows(con, title, cols, rows)
    split = ""
    if "kv_sending_gpus" in doc and doc["kv_sending_gpus"] != doc["kv_receiving_gpus"]:
        split = (
            f" ({fmt_bytes(doc['kv_bytes_per_sending_gpu'])} from each of "
            f"{doc['kv_sending_gpus']} prefill GPUs, {fmt_bytes(doc['kv_bytes_per_receiving_gpu'])}"
            + (
                f" to each of {doc['kv_receiving_gpus']} decode GPUs)"
                if doc["kv_receiving_gpus"] > 1
                else " to the one decode GPU)"
            )
        )
    say(
        con,
        f"KV cache per request {fmt_bytes(doc['kv_bytes_per_request'])}{split}, sent over "
        f"{i['link']} in {fmt_seconds(doc['kv_transfer_s'])}; "
        f"{doc['prefill_replicas_per_decode_replica']:.2f} prefill replicas keep one decode "
        "replica busy",
    )
    if "prefill_tokens_per_s_per_gpu" in doc:
        say(
            con,
            f"each pool alone: prefill {doc['prefill_tokens_per_s_per_gpu']:,.0f} input tok/s "
            f"per GPU ({i.get('prefill_batch', 1)} prompts a step), decode "
            f"{doc['decode_tokens_per_s_per_gpu']:,.0f} output tok/s per GPU",
        )


def _pool(i: Mapping[str, Any], pool: str) -> str:
    """A pool's layout: TP, and EP / attention-DP when set (TP8 EP8 ADP8)."""
    out = f"TP{i[pool + '_tp']}"
    if i.get(pool + "_ep", 1) > 1:
        out += f" EP{i[pool + '_ep']}"
    if i.get(pool + "_attention_dp", 1) > 1:
        out += f" ADP{i[pool + '_attention_dp']}"
    return out


# ---- plan -----------------------------------------------------------------------------------
@table_output
def plan_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    fit = [r for r in doc["plans"] if r["fits"]]
    slo = f" with TPOT ≤ {fmt_seconds(i['max_tpot_s'])}" if i.get("max_tpot_s") else ""

    def name(r: Mapping[str, Any]) -> str:
        mark = " ★" if r == doc["best"] else ""
        return f"{r['layout']}{mark}" + ("" if r["meets_slo"] else " (SLO ✗)")

    best = doc.get("best")
    if best:
        say(
            con,
            f"best: {best['layout']} for {i['model']} on {i['gpus']}× {i['hardware']}: "
            f"{num(best['output_tokens_per_s'])} output tok/s at batch "
            f"{best['batch_per_replica']:,} a replica, TPOT {fmt_seconds(best['tpot_s'])}"
            " (expected)",
            "bold",
        )

    print_rows(
        con,
        f"Layouts for {i['model']} on {i['gpus']}× {i['hardware']} ({i['weights']} weights, "
        f"{i['kv_dtype']} KV, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out), best "
        f"first (★): throughput at the largest batch per replica that fits{slo}",
        (T("layout"), N("batch"), N("TPOT"), N("tok/s"), N("ideal\ntok/s")),
        [
            (
                name(r),
                f"{r['batch_per_replica']:,}",
                csec(r["tpot_s"]),
                f"{r['output_tokens_per_s']:,.0f}",
                f"{r['output_tokens_per_s_ideal']:,.0f}",
            )
            for r in fit
        ],
    )
    print_rows(
        con,
        "One request alone (batch 1): TTFT and TPOT; what dominates the decode step at the batch "
        "above; weights per GPU",
        (T("layout"), N("TTFT"), N("TPOT"), T("decode"), N("weights\n/GPU")),
        [
            (
                r["layout"],
                csec(r["latency_ttft_s"]),
                csec(r["latency_tpot_s"]),
                r["dominant"],
                cbytes(r["weights_bytes_per_gpu"]),
            )
            for r in fit
        ],
    )
    refused = [r for r in doc["plans"] if not r["fits"]]
    if refused:
        say(
            con,
            "do not fit (weights + runtime exceed the engine's share of memory): "
            + ", ".join(
                f"{r['layout']} ({fmt_bytes(r['weights_bytes_per_gpu'])})" for r in refused
            ),
        )
    if doc.get("explanation"):
        say(con, doc["explanation"])
    if doc.get("lowest_latency"):
        f = doc["lowest_latency"]
        say(
            con,
            f"lowest latency: {f['layout']}, TPOT {fmt_seconds(f['latency_tpot_s'])} and TTFT "
            f"{fmt_seconds(f['latency_ttft_s'])} for one request",
        )

"""Tables of the lever commands: speculate (speed-up per γ and against batch), tiers (KV spilled
to a slower tier, a returning turn's prefix reload), offload (layers split between GPU and host)
and edge (devices side by side)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_bytes, fmt_seconds
from roofline.render.core import cbytes, csec
from roofline.render.width import N, T, print_rows, say, table_output


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


# ---- speculate ------------------------------------------------------------------------------
@table_output
def speculate_table(doc: Mapping[str, Any], con: Console) -> None:
    i, base = doc["inputs"], doc["baseline"]
    acc = i["acceptance"]
    acc_text = (
        ",".join(f"{a:.2g}" for a in acc) if isinstance(acc, list) else f"α = {acc:.3g}"
    ) + (f" (from τ = {i['tau']:g} at γ = {i['tau_gamma']})" if i["tau"] is not None else "")
    drafter = i["drafter"] + (f" {i['draft']}" if i["draft"] else "")
    print_rows(
        con,
        f"Speculative decoding: {i['model']} on {i['hardware']} TP{i['tp']}, drafter {drafter}, "
        f"{acc_text}, batch {i['batch']}, {i['context_tokens']:,} tokens; plain decode "
        f"{fmt_seconds(base['tpot_expected_s'])}/token (* best γ)",
        (
            T("γ"),
            N("verify\ntokens"),
            N("tok/\nround"),
            N("draft"),
            N("verify"),
            N("host"),
            N("TPOT"),
            N("speed-\nup"),
        ),
        [
            (
                str(r["gamma"]) + ("*" if r["gamma"] == doc["best_gamma"] else ""),
                f"{r['verify_tokens_per_sequence']:,}",
                f"{r['tokens_per_round']:.2f}",
                csec(r["draft_round_s"]),
                csec(r["verify_step_s"]),
                csec(r["host_round_s"]),
                csec(r["tpot_expected_s"]),
                _x(r["speedup_expected"]),
            )
            for r in doc["rows"]
        ],
    )
    print_rows(
        con,
        "Speed-up against batch (best γ and verify tokens per batch; γ + 1: a chain)",
        (
            N("batch"),
            N("best\nγ"),
            N("verify\ntokens"),
            N("plain\nTPOT"),
            N("spec\nTPOT"),
            N("tok/s"),
            N("speed-\nup"),
        ),
        [
            (
                f"{r['batch']:,}" + ("" if r.get("fits", True) else "!"),
                str(r["best_gamma"]),
                f"{r['tree_tokens']:,}",
                csec(r["tpot_baseline_s"]),
                csec(r["tpot_expected_s"]),
                f"{r['output_tokens_per_s']:,.0f}",
                _x(r["speedup_expected"]),
            )
            for r in doc["by_batch"]
        ],
    )
    if not all(r.get("fits", True) for r in doc["by_batch"]):
        say(
            con,
            f"! does not fit: the KV caches of more than {doc['memory']['max_batch']:,} "
            "sequences (with the drafter's weights) exceed the KV budget",
        )
    x = doc["crossover_batch"]
    say(
        con,
        "speculation pays over the whole sweep"
        if x is None
        else f"crossover: speculation stops paying from batch ≈ {x:,.0f}",
    )


# ---- offload --------------------------------------------------------------------------------
@table_output
def offload_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    print_rows(
        con,
        f"{i['model']} ({i['weights']}) on {i['hardware']} + {i['host']}: "
        f"{i['gpu_layers']}/{i['layers'] + 1} layers on the GPU (llama.cpp's count, the output"
        f" layer included), {i['mode']}, batch {i['batch']}",
        (T("tier"), N("layers"), N("weights"), T("on"), N("GB/s"), N("time")),
        [
            (
                r["tier"],
                f"{r['layers']:g}",
                cbytes(r["weights_bytes"]),
                r["runs_on"],
                f"{r['bandwidth_bytes_per_s'] / 1e9:,.4g}",
                csec(r["t_step_s"]),
            )
            for r in doc["tiers"]
        ],
    )
    r = doc["result"]
    say(
        con,
        f"TPOT {fmt_seconds(r['tpot_serial_s'])} serial (sum of tiers) – "
        f"{fmt_seconds(r['tpot_overlap_s'])} overlapped (slowest link per layer): "
        f"{r['decode_tokens_per_s_serial']:,.1f}–{r['decode_tokens_per_s_overlap']:,.1f} tok/s "
        f"at batch {i['batch']}; all on the GPU would need {fmt_bytes(doc['weights_bytes_total'])}",
    )
    if doc.get("sweep"):
        print_rows(
            con,
            "Sweep of --gpu-layers",
            (N("-ngl"), N("GPU\nweights"), T("fits"), N("tok/s\nserial"), N("tok/s\noverlap")),
            [
                (
                    f"{p['gpu_layers']}",
                    cbytes(p["gpu_weights_bytes"]),
                    "yes" if p["fits"] else "no",
                    f"{p['decode_tokens_per_s_serial']:,.1f}",
                    f"{p['decode_tokens_per_s_overlap']:,.1f}",
                )
                for p in doc["sweep"]
            ],
        )


# ---- edge -----------------------------------------------------------------------------------
@table_output
def edge_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    print_rows(
        con,
        f"{i['model']} in {i['weights']} ({fmt_bytes(doc['weights_bytes'])} of weights), "
        f"{i['context_tokens']:,} tokens of context, batch {i['batch']}; 'needs' and 'may use' "
        "count what sits on the GPU; decode tok/s = 1 / TPOT at that context (analyze's output"
        " tok/s also counts the prefill)",
        (T("device"), T("fits"), N("needs"), N("may use"), N("decode\ntok/s"), N("TTFT")),
        [
            (
                r["hardware"]
                + ("" if r["gpu_layers"] is None else f" + host, -ngl {r['gpu_layers']}")
                + ("" if not r.get("cpu_moe_layers") else f", -ncmoe {r['cpu_moe_layers']}"),
                r["fits"],
                cbytes(r["needed_bytes"]),
                cbytes(r["usable_bytes"]),
                "—" if r["decode_tokens_per_s"] is None else f"{r['decode_tokens_per_s']:,.1f}",
                "—" if r["ttft_s"] is None else csec(r["ttft_s"]),
            )
            for r in doc["rows"]
        ],
    )


# ---- tiers ----------------------------------------------------------------------------------
@table_output
def tiers_spill_table(doc: Mapping[str, Any], con: Console) -> None:
    """KV in HBM only against KV spilled to the tier, one column each."""
    i = doc["inputs"]
    hbm, tier = doc["rows"]

    def cells(label: str, f: Any) -> tuple[str, str, str]:
        return (label, f(hbm), f(tier))

    print_rows(
        con,
        f"{i['model']} on {i['hardware']} TP{i['tp']} at {i['context_tokens']:,} tokens: "
        f"{fmt_bytes(i['tier_capacity_bytes'])} of {i['tier']} per GPU, read at "
        f"{i['tier_bandwidth_bytes_per_s'] / 1e9:.4g} GB/s per GPU ({i['sharing']} sharing "
        f"{i['tier_nominal_bandwidth_bytes_per_s'] / 1e9:.4g} GB/s; HBM "
        f"{i['hbm_bandwidth_bytes_per_s'] / 1e12:.3g} TB/s)",
        (T(""), N("HBM only"), N("with the\ntier")),
        [
            cells("batch", lambda r: f"{r['batch']:,}"),
            cells("KV per GPU", lambda r: cbytes(r["kv_bytes_per_gpu"])),
            cells("in the tier", lambda r: cbytes(r["spilled_bytes_per_gpu"])),
            cells("TPOT overlapped", lambda r: csec(r["tpot_overlap_s"])),
            cells("TPOT serial", lambda r: csec(r["tpot_serial_s"])),
            cells("tok/s overlapped", lambda r: f"{r['output_tokens_per_s_overlap']:,.0f}"),
            cells("tok/s serial", lambda r: f"{r['output_tokens_per_s_serial']:,.0f}"),
        ],
    )
    say(
        con,
        f"max batch: {doc['max_batch_hbm']:,} in HBM alone, {doc['max_batch_with_tier']:,} "
        "with the tier. Spilled KV is read over the tier every decode step: a tier adds capacity "
        "for parked or preempted sequences (roofline cliff --preemption swap) far more than "
        "throughput for active ones.",
    )
    r = doc.get("reload")
    if r:
        say(
            con,
            f"Returning turn: {r['prefix_tokens']:,} cached tokens "
            f"({fmt_bytes(r['kv_bytes_per_gpu'])} of KV per GPU) reloaded at "
            f"{r['bandwidth_bytes_per_s'] / 1e9:,.4g} GB/s (copies of {r['dma_tokens']} tokens "
            f"per layer, link efficiency {r['link_efficiency']:.2f}) in "
            f"{fmt_seconds(r['t_reload_s'])}; prefill of {r['new_tokens']:,} new tokens "
            f"{fmt_seconds(r['t_prefill_new_s'])}. TTFT {fmt_seconds(r['ttft_overlap_s'])} "
            f"(overlapped) – {fmt_seconds(r['ttft_serial_s'])} (serial), against "
            f"{fmt_seconds(r['ttft_recompute_s'])} to recompute the whole prompt.",
        )

"""Tables of one deployment's step: analyze, kv (and --compare, --allocation), capacity, bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_bytes, fmt_count, fmt_seconds
from roofline.render.core import VERBOSE, bands_note, cbytes, csec, num, pct, pm
from roofline.render.width import SUB, N, T, legend, print_pairs, print_rows, say, table_output


# ---- kv -------------------------------------------------------------------------------------
@table_output
def kv_table(doc: Mapping[str, Any], con: Console) -> None:
    i, r = doc["inputs"], doc
    rows = [
        ("attention", r["attention"]),
        ("KV format", f"{i['kv_dtype']} ({i['kv_bits']:g} bits)"),
        ("bytes per token per layer", f"{r['kv_bytes_per_token_per_layer']:,.0f}"),
        ("bytes per token (all layers)", f"{r['kv_bytes_per_token']:,.0f}"),
        (f"per sequence at {i['context_tokens']:,} tokens", fmt_bytes(r["kv_bytes_per_sequence"])),
        (f"total for batch {i['batch']:,}", fmt_bytes(r["kv_bytes_total"])),
    ]
    ev = r.get("eviction")
    if ev:
        rows += [
            (
                f"eviction to {ev['kv_budget_tokens']:,} tokens saves",
                f"{fmt_bytes(ev['kv_bytes_saved_per_sequence'])} per sequence "
                f"({ev['saved_fraction']:.1%}); accuracy effects are not modelled",
            ),
            ("decode KV read saved per step", fmt_bytes(ev["decode_kv_read_saved_bytes_per_step"])),
        ]
        if ev["max_batch_with_eviction"] is not None:
            rows.append(
                (
                    f"max batch on {ev['hardware']}",
                    f"{ev['max_batch_without_eviction']:,} → "
                    f"{ev['max_batch_with_eviction']:,} sequences",
                )
            )
    print_pairs(con, f"KV cache of {i['model']}", rows)
    print_rows(
        con,
        "By layer group",
        (T("layers"), N("window"), N("tokens held"), N("bytes")),
        [
            (
                str(g["layers"]),
                num(g["window"]),
                f"{g['tokens_held']:,.0f}",
                fmt_bytes(g["kv_bytes_per_sequence"]),
            )
            for g in r["layer_groups"]
        ],
    )


@table_output
def kv_compare_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    has_base = i["baseline"] is not None
    cols = [T("variant"), SUB("KV heads×dim"), N("KV\nB/token"), N("÷ MHA"), N("saved")]
    if has_base:
        cols += [N("÷ base"), N("saved\nvs base")]
    rows = []
    for v in doc["variants"]:
        row = [
            v["variant"],
            v["description"],
            f"{v['kv_bytes_per_token']:,.0f}",
            f"{v['ratio_to_mha']:.3f}",
            f"{v['reduction_vs_mha']:.1%}",
        ]
        if has_base:
            row += [f"{v['ratio_to_baseline']:.3f}", f"{v['reduction_vs_baseline']:.1%}"]
        rows.append(row)
    title = f"KV bytes per token of {i['model']} and its attention variants ({i['kv_dtype']} KV)"
    if has_base:
        title += f"; baseline {i['baseline']} at bf16"
    print_rows(con, title, cols, rows)


@table_output
def kv_allocation_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    rows = [
        ("lengths", i["lengths"]),
        (
            "sequences / mean length",
            f"{doc['sequences']:,} / {doc['mean_length_tokens']:,.0f} tokens",
        ),
        ("used KV", fmt_bytes(doc["used_bytes"])),
        (f"allocated ({i['allocation']})", fmt_bytes(doc["allocated_bytes"])),
        ("waste", f"{doc['waste_fraction']:.1%}"),
    ]
    for name, r in doc["compare"].items():
        rows.append((f"  {name} would waste", f"{r['waste_fraction']:.1%}"))
    title = (
        f"KV allocation for {i['model']}: block {i['block_tokens']} tokens, contiguous "
        f"reserves {i['max_len_tokens']:,} per request"
    )
    print_pairs(con, title, rows)


# ---- capacity -------------------------------------------------------------------------------
@table_output
def capacity_table(doc: Mapping[str, Any], con: Console) -> None:
    i, mem = doc["inputs"], doc["memory"]
    rows = [
        (  # GiB beside it: --memory reads GB as GiB, memory as it is sold
            "usable memory per GPU",
            f"{fmt_bytes(mem['capacity_bytes'])} ({mem['capacity_bytes'] / 2**30:,.1f} GiB)",
        ),
        ("weights per GPU", fmt_bytes(mem["weights_bytes_per_gpu"])),
        ("activation peak", fmt_bytes(mem["activation_bytes"])),
        ("runtime overhead", fmt_bytes(mem["runtime_overhead_bytes"])),
        (f"KV budget ({i['engine']})", fmt_bytes(doc["kv_budget_bytes"])),
        ("KV bytes per token per GPU", f"{mem['kv_bytes_per_token_per_gpu']:,.0f}"),
        (f"max batch at {i['context_tokens']:,} tokens", f"{doc['max_batch']:,}"),
    ]
    if doc["reason"]:
        rows.append(("reason", doc["reason"]))
    print_pairs(con, f"{i['model']} on {i['gpus']}× {i['hardware']}", rows)
    print_rows(
        con,
        "Max batch by context",
        (N("context tokens"), N("max batch")),
        [(f"{p['context_tokens']:,}", f"{p['max_batch']:,}") for p in doc["max_batch_by_context"]],
    )


# ---- analyze --------------------------------------------------------------------------------
def _decode_at(i: Mapping[str, Any]) -> str:
    """', decoding at N tokens' when --context set the decode steps' context (TPOT and the
    throughput are read there, not over prompt + output)."""
    mean, usual = i.get("decode_context_tokens_mean"), i["prompt_tokens"] + i["output_tokens"] / 2
    return f", decoding at {mean:,.0f} tokens of context" if mean and mean != usual else ""


@table_output
def analyze_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    e = doc["expected"]
    say(
        con,
        f"{i['model']} on {i['hardware']}: TTFT {fmt_seconds(e['ttft_s'])} (one request at the"
        " engine), TPOT "
        f"{fmt_seconds(e['tpot_s'])}, {num(e['output_tokens_per_s'])} output tok/s at batch "
        f"{i['batch']}, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out{_decode_at(i)} "
        "(expected; ideal and per-op below)",
        "bold",
    )
    for phase in ("prefill", "decode"):
        p = doc[phase]
        title = (
            f"{phase.capitalize()}: {fmt_count(p['flops'])}FLOP, {fmt_bytes(p['bytes'])} moved, "
            f"intensity {num(p['arithmetic_intensity'])} FLOP/B vs ridge "
            f"{num(p['ridge_flops_per_byte'])} → {p['bound']}-bound (per GPU)"
        )
        rows = [
            (
                o["name"],
                str(o["layers"]),
                fmt_count(o["flops"]).replace(" ", ""),
                cbytes(o["bytes"]),
                num(o["arithmetic_intensity"]),
                o["bound"],
                csec(o["t_ideal_s"]),
                csec(o["t_expected_s"]),
            )
            for o in p["ops"]
        ]
        cols = (
            T("op"),
            N("L"),
            N("FLOP"),
            N("bytes"),
            N("FLOP/B"),
            T("bound"),
            N("ideal"),
            N("expect"),
        )
        print_rows(con, title, cols, rows)
    mem = doc["memory"]
    ideal, exp = doc["ideal"], doc["expected"]
    bands = exp.get("bands")
    print_rows(
        con,
        f"{i['model']} on {i['gpus']}× {i['hardware']} (TP{i['tp']} PP{i['pp']} EP{i['ep']}), "
        f"batch {i['batch']}, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out",
        (T("metric"), N("ideal"), N("expected"), N("±")),
        [
            (label, f(ideal[key]), f(exp[key]), pm(bands, band) if band else "")
            for label, key, f, band in (
                ("batch prefill", "batch_prefill_s", fmt_seconds, "ttft_p50"),
                ("TTFT, 1 request", "ttft_s", fmt_seconds, "ttft_p50"),
                ("TPOT", "tpot_s", fmt_seconds, "tpot_p50"),
                ("E2E, static batch", "e2e_s", fmt_seconds, "e2e_p50"),
                ("output tokens/s", "output_tokens_per_s", num, "throughput"),
                ("decode share of time", "decode_time_fraction", lambda v: pct(v, 1), None),
            )
        ],
    )
    say(
        con,
        f"weights {fmt_bytes(mem['weights_bytes_per_gpu'])}/GPU, KV at the end "
        f"{fmt_bytes(mem['kv_bytes_at_end'])}/GPU, budget {fmt_bytes(mem['kv_budget_bytes'])} "
        f"({i['engine']}): fits = {num(mem['fits'])}, max batch {mem['max_batch']:,}",
    )
    say(
        con,
        f"decode intensity is {doc['decode']['ridge_over_intensity']:,.0f}× below the ridge; "
        f"compute in {i['compute_dtype']}",
    )
    exp = doc["expected"]
    if "calibration" in exp:
        cal = exp["calibration"]
        curves = cal["kernel_curves"] or "scalar shares"
        # the legend: at most three lines (width.legend); where the bands come from, under -v
        head, _ = legend(
            con,
            [
                f"expected: {curves} kernel curves"
                + (" (borrowed)" if cal["kernel_curves_borrowed"] else "")
                + f", {cal['engine']} engine step costs {fmt_seconds(exp['step_overhead_s'])},"
                f" family {cal['family']} fitted on {cal['cases']} published cases"
                + (" — NOT calibrated on this family's own data" if cal["borrowed"] else ""),
                "± = the measured figure's 90% range (docs/ACCURACY.md)",
            ],
            1,
        )
        say(con, head)
        if VERBOSE["on"]:
            say(con, bands_note(bands))


# ---- bytes ----------------------------------------------------------------------------------
@table_output
def bytes_table(doc: Mapping[str, Any], con: Console) -> None:
    i = doc["inputs"]
    phases = [(name, doc[name]) for name in ("prefill", "decode")]
    print_rows(
        con,
        f"Where the bytes go: {i['model']} on {i['hardware']} (per GPU), batch {i['batch']}, "
        f"prompt {i['prompt_tokens']:,}, decode at {i['context_tokens']:,} tokens",
        (T("step"), N("weights"), N("%"), N("KV"), N("%"), N("activations"), N("%")),
        [
            (
                name,
                cbytes(p["weight_bytes"]),
                pct(p["weight_share"]),
                cbytes(p["kv_bytes"]),
                pct(p["kv_share"]),
                cbytes(p["activation_bytes"]),
                pct(p["activation_share"]),
            )
            for name, p in phases
        ],
    )
    print_rows(
        con,
        "Intensity and time per step",
        (T("step"), N("FLOP/B"), T("bound"), N("ideal"), N("expected")),
        [
            (
                name,
                num(p["arithmetic_intensity"]),
                p["bound"],
                csec(p["t_ideal_s"]),
                csec(p["t_expected_s"]),
            )
            for name, p in phases
        ],
    )
    act = doc["activation"]
    say(
        con,
        f"activation peak in prefill: {fmt_bytes(act['prefill_peak_bytes'])} (fused attention: "
        f"the S×S scores are never stored); decode activation traffic "
        f"{fmt_bytes(doc['decode']['activation_bytes'])} per step",
    )
    split = doc["split"]
    print_rows(
        con,
        "KV read per decode step ÷ weight read, by batch (rows) and context tokens (columns); "
        "above 1 the KV cache dominates",
        [N("batch"), *[N(f"{c:,}") for c in split["contexts"]]],
        [
            [f"{b:,}", *[f"{v:.2f}" for v in row]]
            for b, row in zip(split["batches"], split["kv_over_weight"], strict=True)
        ],
    )
    x = doc["crossover"]
    line = (
        f"KV read passes weight read at {x['context_at_batch']:,.0f} tokens of context for "
        f"batch {i['batch']}"
        if x["context_at_batch"] is not None
        else "the KV read never passes the weight read (windows cap it)"
    )
    if x["batch_at_context"] is not None:
        line += f", or at batch {x['batch_at_context']:,.0f} for {i['context_tokens']:,} tokens"
    say(con, line)
    if doc.get("levers"):
        lev = doc["levers"]
        rows = [
            (
                r["lever"],
                f"{r['bits_per_weight']:.3g}",
                cbytes(r["weight_bytes_per_gpu"]),
                f"{r['kv_bytes_per_token']:,.0f}",
                csec(r["t_step_ideal_s"]),
                f"{r['step_ratio']:.2f}",
                f"{r['max_batch']:,}",
            )
            for r in lev["rows"]
        ]
        cols = (
            T("lever"),
            N("bits/w"),
            N("weights\n/GPU"),
            N("KV\nB/tok"),
            N("step"),
            N("÷ base"),
            N("max\nbatch"),
        )
        print_rows(
            con,
            f"Levers at batch {i['batch']}, {i['context_tokens']:,} tokens, ideal step; "
            f"contiguous reserves {lev['max_len_tokens']:,} tokens (more in --format json)",
            cols,
            rows,
        )
        say(con, "KV eviction: accuracy effects are not modelled.")

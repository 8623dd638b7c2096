"""Presentation: JSON documents and Rich tables. The only module (with cli.py) that imports rich.

Every command builds one JSON-ready dict (keys carry units, numbers are finite, order is fixed);
`--format json` prints it, `--format table` draws tables from the same dict, so the two never
disagree.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from roofline.units import fmt_bytes, fmt_count, fmt_seconds

SCHEMA_VERSION = 1


def _width() -> int | None:
    cols = os.environ.get("COLUMNS")
    return int(cols) if cols and cols.isdigit() else None


def stdout_console() -> Console:
    return Console(file=sys.stdout, width=_width(), highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(file=sys.stderr, width=_width(), highlight=False, soft_wrap=True)


def to_jsonable(value: Any) -> Any:
    """numpy scalars/arrays → Python; NaN/inf → None (JSON has neither)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def emit_json(doc: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(to_jsonable(doc), indent=2, allow_nan=False) + "\n")


class RowFmt(str, Enum):
    """Output formats for commands whose results are rows."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"


def _cell(value: Any) -> Any:
    """A flat cell for CSV/Markdown: nested values become compact JSON."""
    value = to_jsonable(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else value


def emit(
    doc: Mapping[str, Any],
    fmt: RowFmt,
    rows: Sequence[Mapping[str, Any]],
    table: Callable[[Mapping[str, Any]], None],
) -> None:
    """Write a result: the whole document (json), one object per row (jsonl), a CSV with a
    header, a Markdown table for pull requests, or Rich tables."""
    out = sys.stdout
    if fmt is RowFmt.json:
        emit_json(doc)
    elif fmt is RowFmt.jsonl:
        for r in rows:
            try:  # fast path: rows of plain finite values
                line = json.dumps(r, allow_nan=False)
            except (TypeError, ValueError):
                line = json.dumps(to_jsonable(r), allow_nan=False)
            out.write(line + "\n")
    elif fmt in (RowFmt.csv, RowFmt.markdown):
        fields = list(dict.fromkeys(k for r in rows for k in r))
        if fmt is RowFmt.csv:
            w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: _cell(r.get(k)) for k in fields})
        else:
            out.write("| " + " | ".join(fields) + " |\n")
            out.write("|" + "|".join("---" for _ in fields) + "|\n")
            for r in rows:
                cells = (str(_cell(r.get(k))).replace("|", "\\|") for k in fields)
                out.write("| " + " | ".join(cells) + " |\n")
    else:
        table(doc)


def document(command: str, inputs: Mapping[str, Any], **results: Any) -> dict[str, Any]:
    """The JSON envelope: schema_version, command, inputs (every assumption), then results."""
    doc = {"schema_version": SCHEMA_VERSION, "command": command, "inputs": dict(inputs), **results}
    return to_jsonable(doc)


# ---- small formatting helpers ---------------------------------------------------------------
def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) >= 1e5 or abs(x) < 1e-2:
            return f"{x:.{digits}g}"
        return f"{x:,.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"
    return str(x)


def _c(text: str) -> str:
    """Compact a formatted quantity for narrow tables: '1.03 GB' -> '1.03GB'."""
    return text.replace(" ", "")


def _kv_table(title: str, rows: Iterable[tuple[str, str]]) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False, title_justify="left")
    t.add_column("key", style="bold", no_wrap=True)
    t.add_column("value")
    for k, v in rows:
        t.add_row(k, v)
    return t


def _rows_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], wrap_last: bool = False
) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", pad_edge=False)
    for i, c in enumerate(columns):
        last = i == len(columns) - 1
        t.add_column(
            c,
            justify="left" if i == 0 or (last and wrap_last) else "right",
            no_wrap=not (last and wrap_last),
        )
    for r in rows:
        t.add_row(*r)
    return t


# ---- hardware -------------------------------------------------------------------------------
def hardware_list_table(doc: Mapping[str, Any]) -> None:
    rows = [
        (
            h["id"],
            h["name"],
            fmt_bytes(h["memory_capacity_bytes"]),
            f"{h['memory_bandwidth_bytes_per_s'] / 1e12:.3g} TB/s",
            _peak_str(h["peak_flops_per_s"], "bf16", "fp16"),
            _peak_str(h["peak_flops_per_s"], "fp8"),
            _num(h["ridge_flops_per_byte"].get("bf16") or h["ridge_flops_per_byte"].get("fp16")),
        )
        for h in doc["hardware"]
    ]
    cols = ("id", "name", "memory", "bandwidth", "16-bit TFLOPS", "fp8 TFLOPS", "ridge (16-bit)")
    stdout_console().print(_rows_table("Accelerators (dense peaks)", cols, rows))


def _peak_str(peaks: Mapping[str, float], *keys: str) -> str:
    for k in keys:
        if k in peaks:
            return f"{peaks[k] / 1e12:,.4g}"
    return "—"


def hardware_show_table(doc: Mapping[str, Any]) -> None:
    h = doc["hardware"]
    rows = [
        ("name", h["name"]),
        ("vendor / family", f"{h['vendor']} / {h['family']}"),
        ("aliases", ", ".join(h["aliases"]) or "—"),
        (
            "memory",
            f"{fmt_bytes(h['memory_capacity_bytes'])} {h['memory_type']} (datasheet "
            f"{fmt_bytes(h['memory_nominal_bytes'])})",
        ),
        ("bandwidth", f"{h['memory_bandwidth_bytes_per_s'] / 1e12:.4g} TB/s"),
        ("2:4 sparsity doubles tensor peak", _num(h["sparsity_2_4"])),
    ]
    if h["gpu_memory_fraction"] < 1:
        rows.append(("GPU may wire", f"{h['gpu_memory_fraction']:.0%} of unified memory"))
    for label in ("scale_up", "host_link"):
        link = h[label]
        if link:
            lat = f", {link['latency_s'] * 1e6:.3g} µs" if link["latency_s"] is not None else ""
            rows.append(
                (
                    label.replace("_", "-"),
                    f"{link['name']}: {link['bandwidth_bytes_per_s'] / 1e9:.4g} GB/s "
                    f"per direction{lat}",
                )
            )
    eff = h["efficiency"]
    rows.append(
        (
            "efficiency",
            f"compute {eff['compute']:.2f}, memory {eff['memory']:.2f}, "
            f"overhead {fmt_seconds(eff['step_overhead_s'])} ({eff['source']})",
        )
    )
    rows.append(("source", h["source"]))
    if h["notes"]:
        rows.append(("notes", h["notes"]))
    con = stdout_console()
    con.print(_kv_table(h["id"], rows))
    peaks = _rows_table(
        "Dense peaks and ridge points",
        ("dtype", "TFLOPS", "ridge FLOP/B"),
        [
            (k, f"{v / 1e12:,.4g}", _num(h["ridge_flops_per_byte"][k]))
            for k, v in h["peak_flops_per_s"].items()
        ],
    )
    con.print(peaks)


def tiers_table(doc: Mapping[str, Any]) -> None:
    rows = [
        (
            t["id"],
            t["kind"],
            t["name"],
            f"{t['bandwidth_bytes_per_s'] / 1e9:.4g} GB/s",
            "—" if t["latency_s"] is None else fmt_seconds(t["latency_s"]),
            "—" if t["capacity_bytes"] is None else fmt_bytes(t["capacity_bytes"]),
        )
        for t in doc["tiers"]
    ]
    cols = ("id", "kind", "name", "bandwidth/dir", "latency", "capacity")
    stdout_console().print(_rows_table("Memory tiers and links", cols, rows))


def families_table(doc: Mapping[str, Any]) -> None:
    rows = [
        (
            f["id"],
            f"{f['efficiency']['compute']:.2f}",
            f"{f['efficiency']['memory']:.2f}",
            f"{f['efficiency']['memory_weight_only']:.2f}",
            fmt_seconds(f["efficiency"]["step_overhead_s"]),
            f["efficiency"]["source"],
        )
        for f in doc["families"]
    ]
    cols = ("family", "compute", "memory", "weight-only", "overhead/step", "provenance")
    stdout_console().print(
        _rows_table("Calibrated efficiencies by hardware family", cols, rows, wrap_last=True)
    )


# ---- models ---------------------------------------------------------------------------------
def models_list_table(doc: Mapping[str, Any]) -> None:
    rows = [
        (
            m["id"],
            m["attention"],
            "MoE" if m["moe"] else "dense",
            f"{m['params_total'] / 1e9:,.2f}B",
            f"{m['params_active'] / 1e9:,.2f}B",
            _num(m["kv_bytes_per_token_bf16"]),
        )
        for m in doc["models"]
    ]
    cols = ("id", "attention", "ffn", "params", "active", "KV B/token (bf16)")
    stdout_console().print(_rows_table("Models", cols, rows))


def models_show_table(doc: Mapping[str, Any]) -> None:
    m = doc["model"]
    shape = ", ".join(f"{k}={v}" for k, v in m["config"].items() if v is not None)
    rows = [
        ("name", m["name"]),
        ("attention", m["attention"]),
        ("config", shape),
        (
            "layer groups",
            "; ".join(
                f"{g['count']}× {'window ' + str(g['window']) if g['window'] else 'full'}"
                f"{' MoE' if g['moe'] else ''}"
                for g in m["layer_groups"]
            ),
        ),
        ("params total", f"{m['params_total']:,} ({m['params_total'] / 1e9:.2f}B)"),
        ("params active", f"{m['params_active']:,} ({m['params_active'] / 1e9:.2f}B)"),
        ("KV bytes/token (bf16)", f"{m['kv_bytes_per_token_bf16']:,}"),
        ("source", m["source"]),
    ]
    if m["params_mtp"]:
        rows.insert(6, ("MTP module (separate)", f"{m['params_mtp'] / 1e9:.2f}B"))
    if m["notes"]:
        rows.append(("notes", m["notes"]))
    con = stdout_console()
    con.print(_kv_table(m["id"], rows))
    con.print(
        _rows_table(
            "Parameters by component",
            ("component", "params", "share"),
            [
                (k, f"{v:,}", f"{v / m['params_total']:.1%}")
                for k, v in m["params_breakdown"].items()
            ],
        )
    )


# ---- kv -------------------------------------------------------------------------------------
def kv_table(doc: Mapping[str, Any]) -> None:
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
    con = stdout_console()
    con.print(_kv_table(f"KV cache of {i['model']}", rows))
    con.print(
        _rows_table(
            "By layer group",
            ("layers", "window", "tokens held", "bytes"),
            [
                (
                    str(g["layers"]),
                    _num(g["window"]),
                    f"{g['tokens_held']:,.0f}",
                    fmt_bytes(g["kv_bytes_per_sequence"]),
                )
                for g in r["layer_groups"]
            ],
        )
    )


# ---- capacity -------------------------------------------------------------------------------
def capacity_table(doc: Mapping[str, Any]) -> None:
    i, mem = doc["inputs"], doc["memory"]
    rows = [
        ("usable memory per GPU", fmt_bytes(mem["capacity_bytes"])),
        ("weights per GPU", fmt_bytes(mem["weights_bytes_per_gpu"])),
        ("activation peak", fmt_bytes(mem["activation_bytes"])),
        ("runtime overhead", fmt_bytes(mem["runtime_overhead_bytes"])),
        (f"KV budget ({i['engine']})", fmt_bytes(doc["kv_budget_bytes"])),
        ("KV bytes per token per GPU", f"{mem['kv_bytes_per_token_per_gpu']:,.0f}"),
        (f"max batch at {i['context_tokens']:,} tokens", f"{doc['max_batch']:,}"),
    ]
    if doc["reason"]:
        rows.append(("reason", doc["reason"]))
    con = stdout_console()
    con.print(_kv_table(f"{i['model']} on {i['gpus']}× {i['hardware']}", rows))
    con.print(
        _rows_table(
            "Max batch by context",
            ("context tokens", "max batch"),
            [
                (f"{p['context_tokens']:,}", f"{p['max_batch']:,}")
                for p in doc["max_batch_by_context"]
            ],
        )
    )


# ---- analyze --------------------------------------------------------------------------------
def analyze_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    i = doc["inputs"]
    for phase in ("prefill", "decode"):
        p = doc[phase]
        title = (
            f"{phase.capitalize()}: {fmt_count(p['flops'])}FLOP, {fmt_bytes(p['bytes'])} moved, "
            f"intensity {_num(p['arithmetic_intensity'])} FLOP/B vs ridge "
            f"{_num(p['ridge_flops_per_byte'])} → {p['bound']}-bound (per GPU)"
        )
        rows = [
            (
                o["name"],
                str(o["layers"]),
                _c(fmt_count(o["flops"])),
                _c(fmt_bytes(o["bytes"])),
                _num(o["arithmetic_intensity"]) if o["arithmetic_intensity"] is not None else "—",
                o["bound"],
                _c(fmt_seconds(o["t_ideal_s"])),
                _c(fmt_seconds(o["t_expected_s"])),
            )
            for o in p["ops"]
        ]
        cols = ("op", "L", "FLOP", "bytes", "FLOP/B", "bound", "ideal", "expect")
        con.print(_rows_table(title, cols, rows))
    mem = doc["memory"]
    summary = _rows_table(
        f"{i['model']} on {i['gpus']}× {i['hardware']} (TP{i['tp']} PP{i['pp']} EP{i['ep']}), "
        f"batch {i['batch']}, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out",
        ("metric", "ideal", "expected"),
        [
            ("TTFT", fmt_seconds(doc["ideal"]["ttft_s"]), fmt_seconds(doc["expected"]["ttft_s"])),
            ("TPOT", fmt_seconds(doc["ideal"]["tpot_s"]), fmt_seconds(doc["expected"]["tpot_s"])),
            ("E2E", fmt_seconds(doc["ideal"]["e2e_s"]), fmt_seconds(doc["expected"]["e2e_s"])),
            (
                "output tokens/s",
                _num(doc["ideal"]["output_tokens_per_s"]),
                _num(doc["expected"]["output_tokens_per_s"]),
            ),
            (
                "decode share of time",
                f"{doc['ideal']['decode_time_fraction']:.1%}",
                f"{doc['expected']['decode_time_fraction']:.1%}",
            ),
        ],
    )
    con.print(summary)
    eff = i["efficiency"]
    con.print(
        f"weights {fmt_bytes(mem['weights_bytes_per_gpu'])}/GPU, KV at the end "
        f"{fmt_bytes(mem['kv_bytes_at_end'])}/GPU, budget {fmt_bytes(mem['kv_budget_bytes'])} "
        f"({i['engine']}): fits = {_num(mem['fits'])}, max batch {mem['max_batch']:,}\n"
        f"decode intensity is {doc['decode']['ridge_over_intensity']:,.0f}× below the ridge; "
        f"compute in {i['compute_dtype']}; efficiency compute {eff['compute']:.2f}, memory "
        f"{eff['memory']:.2f}, overhead {fmt_seconds(eff['step_overhead_s'])} ({eff['source']})"
    )


# ---- validate -------------------------------------------------------------------------------
def validate_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    rows = [
        (
            c["id"],
            c["metric"],
            _num(c["ideal"]),
            _num(c["expected"]),
            _num(c["measured"]),
            f"{c['speed_ratio_ideal']:.2f}" + (" !" if c["bound_violation"] else ""),
            f"{c['error_expected']:+.0%}",
        )
        for c in doc["cases"]
    ]
    cols = ("case", "metric", "ideal", "expected", "measured", "meas/ideal", "error")
    con.print(_rows_table("Predictions against published measurements", cols, rows))
    s = doc["summary"]
    regimes = [("all", s), *s["regimes"].items()]
    con.print(
        _rows_table(
            "Summary (error of the expected prediction; meas/ideal = share of the speed of light)",
            (
                "regime",
                "cases",
                "bound violations",
                "median |error|",
                "max |error|",
                "median meas/ideal",
            ),
            [
                (
                    name,
                    str(r["cases"]),
                    str(r["bound_violations"]),
                    f"{r['median_abs_error']:.1%}",
                    f"{r['max_abs_error']:.1%}",
                    _num(r["median_speed_ratio_ideal"]),
                )
                for name, r in regimes
            ],
        )
    )


# ---- kv levers ------------------------------------------------------------------------------
def kv_compare_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    has_base = i["baseline"] is not None
    cols = ["variant", "KV heads×dim", "KV B/token", "÷ MHA", "saved"]
    if has_base:
        cols += ["÷ baseline", "saved"]
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
    stdout_console().print(_rows_table(title, cols, rows))


def kv_allocation_table(doc: Mapping[str, Any]) -> None:
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
    stdout_console().print(_kv_table(title, rows))


# ---- bytes ----------------------------------------------------------------------------------
def bytes_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    i = doc["inputs"]
    rows = []
    for phase in ("prefill", "decode"):
        p = doc[phase]
        rows.append(
            (
                phase,
                _c(fmt_bytes(p["weight_bytes"])),
                f"{p['weight_share']:.0%}",
                _c(fmt_bytes(p["kv_bytes"])),
                f"{p['kv_share']:.0%}",
                _c(fmt_bytes(p["activation_bytes"])),
                f"{p['activation_share']:.0%}",
                _num(p["arithmetic_intensity"]),
                p["bound"],
                _c(fmt_seconds(p["t_ideal_s"])),
                _c(fmt_seconds(p["t_expected_s"])),
            )
        )
    title = (
        f"Where the bytes go: {i['model']} on {i['hardware']} (per GPU), batch {i['batch']}, "
        f"prompt {i['prompt_tokens']:,}, decode at {i['context_tokens']:,} tokens"
    )
    cols = (
        "step",
        "weights",
        "%",
        "KV",
        "%",
        "activations",
        "%",
        "FLOP/B",
        "bound",
        "ideal",
        "expect",
    )
    con.print(_rows_table(title, cols, rows))
    act = doc["activation"]
    con.print(
        f"activation peak in prefill: {fmt_bytes(act['prefill_peak_bytes'])} (fused attention: the "
        f"S×S scores are never stored); decode activation traffic "
        f"{fmt_bytes(doc['decode']['activation_bytes'])} per step"
    )
    split = doc["split"]
    ctxs = split["contexts"]
    con.print(
        _rows_table(
            "KV read per decode step ÷ weight read (above 1: the KV cache dominates)",
            ["batch", *[f"{c:,}" for c in ctxs]],
            [
                [f"{b:,}", *[f"{v:.2f}" for v in row]]
                for b, row in zip(split["batches"], split["kv_over_weight"], strict=True)
            ],
        )
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
    con.print(line)
    if doc.get("levers"):
        lev = doc["levers"]
        rows = [
            (
                r["lever"],
                f"{r['bits_per_weight']:.3g}",
                _c(fmt_bytes(r["weight_bytes_per_gpu"])),
                f"{r['kv_bytes_per_token']:,.0f}",
                _c(fmt_seconds(r["t_step_ideal_s"])),
                f"{r['step_ratio']:.2f}",
                f"{r['max_batch']:,}",
            )
            for r in lev["rows"]
        ]
        cols = ("lever", "bits/w", "weights/GPU", "KV B/tok", "step", "÷ base", "max batch")
        con.print(
            _rows_table(
                f"Levers at batch {i['batch']}, {i['context_tokens']:,} tokens, ideal step; "
                f"contiguous reserves {lev['max_len_tokens']:,} tokens (more in --format json)",
                cols,
                rows,
            )
        )
        con.print("KV eviction: accuracy effects are not modelled.")


# ---- cliff ----------------------------------------------------------------------------------
def _bar(value: float, top: float, width: int = 20) -> str:
    return "█" * max(1, round(width * value / top)) if top > 0 else ""


def cliff_table(doc: Mapping[str, Any]) -> None:
    con = stdout_console()
    i, pts, cliff = doc["inputs"], doc["points"], doc["cliff_batch"]
    rows = [
        (
            f"{p['batch']:,}" + (" ▲" if p["past_cliff"] else ""),
            f"{p['output_tokens_per_s']:,.0f}",
            _c(fmt_seconds(p["ttft_mean_s"])),
            _c(fmt_seconds(p["tpot_mean_s"])),
            _c(fmt_seconds(p["tpot_p99_s"])),
            f"{p['preemptions']:,}",
            f"{p['preemption_time_fraction']:.0%}",
            f"{p['decode_time_fraction']:.1%}",
        )
        for p in pts
    ]
    title = (
        f"Reasoning cliff: {i['model']} on {i['hardware']} TP{i['tp']}, {i['weights']} "
        f"weights, {i['kv_dtype']} KV, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out, "
        f"{i['requests']:,} requests all arriving at t = 0, {i['preemption']}; "
        f"cliff at batch {cliff:,} (▲ past it); "
        "lost = share of time recomputing or swapping"
    )
    cols = ("batch", "tok/s", "TTFT", "TPOT", "TPOT p99", "preempt", "lost", "decode")
    if i["preemption"] == "swap":
        cols = (*cols, "vs recompute")
        rows = [
            (*r, f"{p['throughput_vs_recompute']:.2f}×") for r, p in zip(rows, pts, strict=True)
        ]
    con.print(_rows_table(title, cols, rows))
    top_tps = max(p["output_tokens_per_s"] for p in pts)
    top_tpot = max(p["tpot_mean_s"] for p in pts)
    chart = _rows_table(
        "Throughput and TPOT against batch (bars scaled to the largest value)",
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
    con.print(chart)


# ---- check ----------------------------------------------------------------------------------
def check_table(doc: Mapping[str, Any]) -> None:
    rows = [
        (r["deployment"], r["name"], "ok" if r["ok"] else "FAIL", r["detail"])
        for r in doc["checks"]
    ]
    verdict = "all assertions hold" if doc["ok"] else "some assertions FAIL"
    stdout_console().print(
        _rows_table(
            f"roofline check: {verdict}",
            ("deployment", "check", "result", "detail"),
            rows,
            wrap_last=True,
        )
    )


# ---- sweep ----------------------------------------------------------------------------------
def progress_bar(description: str, total: int):
    """A transient progress bar on stderr (never stdout) for long loops."""
    from rich.progress import track

    def wrap(items):
        return track(
            items, description=description, total=total, transient=True, console=stderr_console()
        )

    return wrap


def sweep_table(doc: Mapping[str, Any], limit: int = 60) -> None:
    pts = doc["points"]
    rows = [
        (
            p["model"],
            p["hardware"],
            str(p["tp"]),
            p["weights"],
            p["kv_dtype"],
            f"{p['batch']:,}",
            f"{p['prompt_tokens']:,}",
            f"{p['output_tokens']:,}",
            _c(fmt_seconds(p["batch_prefill_s"])),
            _c(fmt_seconds(p["tpot_s"])),
            f"{p['output_tokens_per_s']:,.0f}",
            _num(p["fits"]),
        )
        for p in pts[:limit]
    ]
    cols = (
        "model",
        "hardware",
        "TP",
        "weights",
        "KV",
        "batch",
        "prompt",
        "output",
        "TTFT",
        "TPOT",
        "tok/s",
        "fits",
    )
    more = (
        f" (first {limit} of {len(pts):,}; use --format jsonl or csv)" if len(pts) > limit else ""
    )
    stdout_console().print(_rows_table(f"Sweep, expected times{more}", cols, rows))


# ---- speculate ------------------------------------------------------------------------------
def speculate_table(doc: Mapping[str, Any]) -> None:
    i, base = doc["inputs"], doc["baseline"]
    rows = [
        (
            str(r["gamma"]) + (" ★" if r["gamma"] == doc["best_gamma"] else ""),
            f"{r['tokens_per_round']:.2f}",
            _num(r["verify_arithmetic_intensity"]),
            r["verify_bound"],
            _c(fmt_seconds(r["tpot_expected_s"])),
            f"{r['speedup_expected']:.2f}×",
            f"{r['speedup_ideal']:.2f}×",
        )
        for r in doc["rows"]
    ]
    title = (
        f"Speculative decoding: {i['model']} verified on {i['hardware']} TP{i['tp']}, "
        f"draft {i['draft']}, α = {i['acceptance']:g}, batch {i['batch']}, "
        f"{i['context_tokens']:,} tokens; plain decode {fmt_seconds(base['tpot_expected_s'])}"
        f"/token at {_num(base['arithmetic_intensity'])} FLOP/B (ridge "
        f"{_num(base['ridge_flops_per_byte'])})"
    )
    cols = (
        "γ",
        "tokens/round",
        "verify FLOP/B",
        "verify bound",
        "TPOT",
        "speed-up",
        "ideal speed-up",
    )
    stdout_console().print(_rows_table(title, cols, rows))


# ---- disagg ---------------------------------------------------------------------------------
def disagg_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    rows = [
        (
            name,
            _c(fmt_seconds(doc[name]["ttft_s"])),
            _c(fmt_seconds(doc[name]["tpot_s"])),
            f"{doc[name]['output_tokens_per_s_per_gpu']:,.0f}",
            f"{doc[name]['gpus_per_decode_replica']:.2f}",
        )
        for name in ("colocated", "disaggregated")
    ]
    title = (
        f"{i['model']}: prefill on {i['prefill_hardware']} TP{i['prefill_tp']}, decode on "
        f"{i['decode_hardware']} TP{i['decode_tp']}, batch {i['batch']}, "
        f"{i['prompt_tokens']:,} in / {i['output_tokens']:,} out ({i['step_times']})"
    )
    con = stdout_console()
    con.print(
        _rows_table(title, ("serving", "TTFT", "TPOT", "tok/s per GPU", "GPUs per unit"), rows)
    )
    con.print(
        f"KV cache per request {fmt_bytes(doc['kv_bytes_per_request'])}, sent over {i['link']} in "
        f"{fmt_seconds(doc['kv_transfer_s'])}; {doc['prefill_replicas_per_decode_replica']:.2f} "
        "prefill replicas keep one decode replica busy"
    )


# ---- tiers ----------------------------------------------------------------------------------
def tiers_spill_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    rows = [
        (
            r["placement"],
            f"{r['batch']:,}",
            _c(fmt_bytes(r["kv_bytes_per_gpu"])),
            _c(fmt_bytes(r["spilled_bytes_per_gpu"])),
            f"{_c(fmt_seconds(r['tpot_overlap_s']))}–{_c(fmt_seconds(r['tpot_serial_s']))}",
            f"{r['output_tokens_per_s_serial']:,.0f}–{r['output_tokens_per_s_overlap']:,.0f}",
        )
        for r in doc["rows"]
    ]
    title = (
        f"{i['model']} on {i['hardware']} TP{i['tp']} at {i['context_tokens']:,} tokens: "
        f"{fmt_bytes(i['tier_capacity_bytes'])} of {i['tier']} per GPU at "
        f"{i['tier_bandwidth_bytes_per_s'] / 1e9:.3g} GB/s (HBM "
        f"{i['hbm_bandwidth_bytes_per_s'] / 1e12:.3g} TB/s)"
    )
    cols = (
        "KV placement",
        "batch",
        "KV/GPU",
        "in tier",
        "TPOT (overlap–serial)",
        "tok/s (serial–overlap)",
    )
    con = stdout_console()
    con.print(_rows_table(title, cols, rows))
    con.print(
        f"max batch: {doc['max_batch_hbm']:,} in HBM alone, {doc['max_batch_with_tier']:,} "
        "with the tier. Spilled KV is read over the tier every decode step: a tier adds capacity "
        "for parked or preempted sequences (roofline cliff --preemption swap) far more than "
        "throughput for active ones."
    )


# ---- plan -----------------------------------------------------------------------------------
def plan_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    rows = []
    for r in doc["plans"]:
        mark = " ★" if r == doc["best"] else ""
        if not r["fits"]:
            rows.append(
                (
                    f"TP{r['tp']} PP{r['pp']} DP{r['dp']}",
                    "no",
                    "—",
                    "—",
                    "—",
                    "—",
                    "—",
                    _c(fmt_bytes(r["weights_bytes_per_gpu"])),
                )
            )
            continue
        rows.append(
            (
                f"TP{r['tp']} PP{r['pp']} DP{r['dp']}{mark}",
                "yes" if r["meets_slo"] else "SLO ✗",
                f"{r['batch_per_replica']:,}",
                f"{r['concurrency']:,}",
                _c(fmt_seconds(r["ttft_s"])),
                _c(fmt_seconds(r["tpot_s"])),
                f"{r['output_tokens_per_s']:,.0f}",
                _c(fmt_bytes(r["weights_bytes_per_gpu"])),
            )
        )
    title = (
        f"Plans for {i['model']} on {i['gpus']}× {i['hardware']} ({i['weights']} weights, "
        f"{i['kv_dtype']} KV, {i['prompt_tokens']:,} in / {i['output_tokens']:,} out), "
        "best first"
    )
    cols = ("plan", "ok", "batch/replica", "in flight", "TTFT", "TPOT", "tok/s", "weights/GPU")
    stdout_console().print(_rows_table(title, cols, rows))

"""Tables of the catalog: accelerators, memory tiers and links, hardware families, models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_seconds
from roofline.render.core import cbytes, num
from roofline.render.width import NOTE, SUB, N, T, print_pairs, print_rows, table_output


def _peak(peaks: Mapping[str, float], *keys: str) -> str:
    for k in keys:
        if k in peaks:
            return f"{peaks[k] / 1e12:,.4g}"
    return "—"


@table_output
def hardware_list_table(doc: Mapping[str, Any], con: Console) -> None:
    rows = [
        (
            h["id"],
            h["name"],
            f"{h['memory_capacity_gib']:,.4g}",
            f"{h['usable_memory_bytes'] / 2**30:,.1f} {h['memory_basis'][0]}",
            f"{h['memory_bandwidth_bytes_per_s'] / 1e12:.3g}",
            _peak(h["peak_flops_per_s"], "bf16", "fp16"),
            _peak(h["peak_flops_per_s"], "fp8"),
            num(h["ridge_flops_per_byte"].get("bf16") or h["ridge_flops_per_byte"].get("fp16")),
        )
        for h in doc["hardware"]
    ]
    cols = (
        T("id"),
        SUB("name"),
        N("GiB"),
        N("usable\nGiB"),
        N("BW\nTB/s"),
        N("16-bit\nTFLOPS"),
        N("fp8\nTFLOPS"),
        N("ridge\n16-bit"),
    )
    print_rows(
        con,
        "Accelerators (dense peaks; GiB = the datasheet's memory, binary as sold; usable = what"
        " the engine budgets from: d the driver's total, r the capacity less a 0.5% reserve, w"
        " Metal's wired limit (2/3 up to 36 GiB, 3/4 above), s the catalog's share of unified RAM;"
        " BW = memory bandwidth; ridge in FLOP/byte)",
        cols,
        rows,
    )


@table_output
def hardware_show_table(doc: Mapping[str, Any], con: Console) -> None:
    h = doc["hardware"]
    rows = [
        ("name", h["name"]),
        ("vendor / family", f"{h['vendor']} / {h['family']}"),
        ("aliases", ", ".join(h["aliases"]) or "—"),
        ("memory", f"{h['memory_capacity_gib']:,.4g} GiB {h['memory_type']} (datasheet)"),
        (
            "usable",
            f"{h['usable_memory_bytes'] / 2**30:,.2f} GiB = {h['usable_memory_bytes'] / 2**20:,.0f}"
            f" MiB: {h['memory_basis_text']}",
        ),
        ("bandwidth", f"{h['memory_bandwidth_bytes_per_s'] / 1e12:.4g} TB/s"),
        ("compute formats", ", ".join(h["peak_flops_per_s"])),
        ("2:4 sparsity doubles tensor peak", num(h["sparsity_2_4"])),
    ]
    if h["gpu_memory_fraction"] < 1:
        rows.append(("GPU may use", f"{h['gpu_memory_fraction']:.0%} of unified memory"))
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
    print_pairs(con, h["id"], rows)
    print_rows(
        con,
        "Dense peaks and ridge points",
        (T("dtype"), N("TFLOPS"), N("ridge\nFLOP/B")),
        [
            (k, f"{v / 1e12:,.4g}", num(h["ridge_flops_per_byte"][k]))
            for k, v in h["peak_flops_per_s"].items()
        ],
    )


@table_output
def tiers_table(doc: Mapping[str, Any], con: Console) -> None:
    rows = [
        (
            t["id"],
            t["kind"],
            t["name"],
            f"{t['bandwidth_bytes_per_s'] / 1e9:.4g}",
            "—" if t["latency_s"] is None else fmt_seconds(t["latency_s"]).replace(" ", ""),
            cbytes(t["capacity_bytes"]),
        )
        for t in doc["tiers"]
    ]
    cols = (T("id"), T("kind"), SUB("name"), N("GB/s\nper dir"), N("latency"), N("capacity"))
    print_rows(con, "Memory tiers and links", cols, rows)


@table_output
def families_table(doc: Mapping[str, Any], con: Console) -> None:
    rows = [
        (
            f["id"],
            f"{f['efficiency']['compute']:.2f}",
            f"{f['efficiency']['memory']:.2f}",
            f"{f['efficiency']['memory_weight_only']:.2f}",
            fmt_seconds(f["efficiency"]["step_overhead_s"]).replace(" ", ""),
            f["efficiency"]["source"],
        )
        for f in doc["families"]
    ]
    cols = (
        T("family"),
        N("compute"),
        N("memory"),
        N("weight-\nonly"),
        N("overhead\n/step"),
        NOTE("provenance"),
    )
    print_rows(con, "Calibrated efficiencies by hardware family", cols, rows)


@table_output
def models_list_table(doc: Mapping[str, Any], con: Console) -> None:
    rows = [
        (
            m["id"],
            m["attention"],
            "MoE" if m["moe"] else "dense",
            f"{m['params_total'] / 1e9:,.2f}B",
            f"{m['params_active'] / 1e9:,.2f}B",
            num(m["kv_bytes_per_token_bf16"]),
        )
        for m in doc["models"]
    ]
    cols = (T("id"), T("attention"), T("ffn"), N("params"), N("active"), N("KV B/token\nbf16"))
    print_rows(con, "Models", cols, rows)


@table_output
def models_show_table(doc: Mapping[str, Any], con: Console) -> None:
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
        ("KV bytes/token (bf16)", num(m["kv_bytes_per_token_bf16"])),
        ("source", m["source"]),
    ]
    if m["params_mtp"]:
        rows.insert(6, ("MTP module (separate)", f"{m['params_mtp'] / 1e9:.2f}B"))
    if m.get("checkpoint_weights"):
        dense = m.get("checkpoint_dense_weights")
        ships = m["checkpoint_weights"] + (f" experts, {dense} elsewhere" if dense else "")
        rows.insert(2, ("checkpoint ships", f"{ships} (--weights auto)"))
    if m["notes"]:
        rows.append(("notes", m["notes"]))
    print_pairs(con, m["id"], rows)
    print_rows(
        con,
        "Parameters by component",
        (T("component"), N("params"), N("share")),
        [(k, f"{v:,}", f"{v / m['params_total']:.1%}") for k, v in m["params_breakdown"].items()],
    )

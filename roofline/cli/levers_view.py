"""Tables and charts of the lever commands (speculate, tiers, offload, edge): Rich tables through
the render helpers, charts through matplotlib (the optional plot extra)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from roofline import render
from roofline.plot import _pyplot, check_output
from roofline.units import fmt_bytes, fmt_seconds

_c, _num = render._c, render._num


def _rows_table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    """render's row table, except that the first (label) column folds onto more lines when the
    terminal is narrow, so that no number is ever elided."""
    t = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", pad_edge=False)
    for i, c in enumerate(columns):
        if i == 0:
            t.add_column(c, justify="left", overflow="fold")
        else:
            t.add_column(c, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


# ---- speculate ------------------------------------------------------------------------------
def speculate_table(doc: Mapping[str, Any]) -> None:
    i, base = doc["inputs"], doc["baseline"]
    acc = i["acceptance"]
    acc_text = (
        ",".join(f"{a:.2g}" for a in acc) if isinstance(acc, list) else f"α = {acc:.3g}"
    ) + (f" (from τ = {i['tau']:g} at γ = {i['tau_gamma']})" if i["tau"] is not None else "")
    drafter = i["drafter"] + (f" {i['draft']}" if i["draft"] else "")
    rows = [
        (
            str(r["gamma"]) + ("*" if r["gamma"] == doc["best_gamma"] else ""),
            f"{r['tokens_per_round']:.2f}",
            _c(fmt_seconds(r["draft_round_s"])),
            _c(fmt_seconds(r["verify_step_s"])),
            _c(fmt_seconds(r["tpot_expected_s"])),
            _x(r["speedup_expected"]),
        )
        for r in doc["rows"]
    ]
    title = (
        f"Speculative decoding: {i['model']} on {i['hardware']} TP{i['tp']}, drafter {drafter}, "
        f"{acc_text}, batch {i['batch']}, {i['context_tokens']:,} tokens; plain decode "
        f"{fmt_seconds(base['tpot_expected_s'])}/token (* best γ)"
    )
    cols = ("γ", "tok/round", "draft", "verify", "TPOT", "speed-up")
    con = render.stdout_console()
    con.print(_rows_table(title, cols, rows))
    rows_b = [
        (
            f"{r['batch']:,}",
            str(r["best_gamma"]),
            _c(fmt_seconds(r["tpot_baseline_s"])),
            _c(fmt_seconds(r["tpot_expected_s"])),
            f"{r['output_tokens_per_s']:,.0f}",
            _x(r["speedup_expected"]),
        )
        for r in doc["by_batch"]
    ]
    cols_b = ("batch", "best γ", "plain TPOT", "spec TPOT", "tok/s", "speed-up")
    con.print(_rows_table("Speed-up against batch (best γ per batch)", cols_b, rows_b))
    x = doc["crossover_batch"]
    con.print(
        "speculation pays over the whole sweep"
        if x is None
        else f"crossover: speculation stops paying from batch ≈ {x:,.0f}"
    )


def save_speedup(doc: Mapping[str, Any], path: Path) -> None:
    """Speed-up (best γ) against batch, log x, with 1× and the crossover marked."""
    check_output(path)
    plt = _pyplot()
    rows = doc["by_batch"]
    fig, ax = plt.subplots(figsize=(8, 5))
    b = [r["batch"] for r in rows]
    ax.plot(b, [r["speedup_expected"] for r in rows], "o-", label="expected (best γ)")
    ax.plot(b, [r["speedup_ideal"] for r in rows], "s--", label="ideal (η = 1)")
    ax.axhline(1.0, color="grey", linestyle=":")
    if doc["crossover_batch"] is not None:
        ax.axvline(doc["crossover_batch"], color="tab:red", linestyle=":", label="crossover")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("speed-up over plain decode")
    i = doc["inputs"]
    ax.set_title(f"Speculative decoding ({i['drafter']}): {i['model']} on {i['hardware']}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---- offload --------------------------------------------------------------------------------
def offload_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    rows = [
        (
            r["tier"],
            f"{r['layers']:g}",
            _c(fmt_bytes(r["weights_bytes"])),
            r["runs_on"],
            f"{r['bandwidth_bytes_per_s'] / 1e9:,.4g}",
            _c(fmt_seconds(r["t_step_s"])),
        )
        for r in doc["tiers"]
    ]
    title = (
        f"{i['model']} ({i['weights']}) on {i['hardware']} + {i['host']}: "
        f"{i['gpu_layers']}/{i['layers']} layers on the GPU, {i['mode']}, batch {i['batch']}"
    )
    con = render.stdout_console()
    con.print(_rows_table(title, ("tier", "layers", "weights", "on", "GB/s", "time"), rows))
    r = doc["result"]
    con.print(
        f"TPOT {fmt_seconds(r['tpot_serial_s'])} serial (sum of tiers) – "
        f"{fmt_seconds(r['tpot_overlap_s'])} overlapped (slowest link per layer): "
        f"{r['decode_tokens_per_s_serial']:,.1f}–{r['decode_tokens_per_s_overlap']:,.1f} tok/s "
        f"at batch {i['batch']}; all on the GPU would need {fmt_bytes(doc['weights_bytes_total'])}"
    )
    if doc.get("sweep"):
        rows_s = [
            (
                f"{p['gpu_layers']}",
                _c(fmt_bytes(p["gpu_weights_bytes"])),
                "yes" if p["fits"] else "no",
                f"{p['decode_tokens_per_s_serial']:,.1f}",
                f"{p['decode_tokens_per_s_overlap']:,.1f}",
            )
            for p in doc["sweep"]
        ]
        cols = ("-ngl", "GPU weights", "fits", "tok/s serial", "tok/s overlap")
        con.print(_rows_table("Sweep of --gpu-layers", cols, rows_s))


# ---- edge -----------------------------------------------------------------------------------
def edge_table(doc: Mapping[str, Any]) -> None:
    i = doc["inputs"]
    rows = [
        (
            r["hardware"] + ("" if r["gpu_layers"] is None else f" + host, -ngl {r['gpu_layers']}"),
            r["fits"],
            _c(fmt_bytes(r["needed_bytes"])),
            _c(fmt_bytes(r["usable_bytes"])),
            "—" if r["decode_tokens_per_s"] is None else f"{r['decode_tokens_per_s']:,.1f}",
            "—" if r["ttft_s"] is None else _c(fmt_seconds(r["ttft_s"])),
        )
        for r in doc["rows"]
    ]
    title = (
        f"{i['model']} in {i['weights']} ({fmt_bytes(doc['weights_bytes'])} of weights), "
        f"{i['context_tokens']:,} tokens of context, batch {i['batch']}; 'needs' and 'GPU may "
        "use' count what sits on the GPU"
    )
    cols = ("device", "fits", "needs", "may use", "tok/s", "TTFT")
    render.stdout_console().print(_rows_table(title, cols, rows))


# ---- tiers: reload of a cached prefix -------------------------------------------------------
def reload_lines(doc: Mapping[str, Any]) -> None:
    r = doc["reload"]
    render.stdout_console().print(
        f"Returning turn: {r['prefix_tokens']:,} cached tokens ({fmt_bytes(r['kv_bytes_per_gpu'])}"
        f" of KV per GPU) reloaded at {r['bandwidth_bytes_per_s'] / 1e9:,.4g} GB/s (copies of "
        f"{r['dma_tokens']} tokens per layer, link efficiency {r['link_efficiency']:.2f}) in "
        f"{fmt_seconds(r['t_reload_s'])}; prefill of {r['new_tokens']:,} new tokens "
        f"{fmt_seconds(r['t_prefill_new_s'])}. TTFT {fmt_seconds(r['ttft_overlap_s'])} (overlapped)"
        f" – {fmt_seconds(r['ttft_serial_s'])} (serial), against "
        f"{fmt_seconds(r['ttft_recompute_s'])} to recompute the whole prompt."
    )


def tiers_table(doc: Mapping[str, Any]) -> None:
    """KV in HBM only against KV spilled to the tier, one column each (fits 60 columns)."""
    i = doc["inputs"]
    hbm, tier = doc["rows"]

    def cells(label: str, f) -> tuple[str, str, str]:
        return (label, f(hbm), f(tier))

    rows = [
        cells("batch", lambda r: f"{r['batch']:,}"),
        cells("KV per GPU", lambda r: _c(fmt_bytes(r["kv_bytes_per_gpu"]))),
        cells("in the tier", lambda r: _c(fmt_bytes(r["spilled_bytes_per_gpu"]))),
        cells("TPOT overlapped", lambda r: _c(fmt_seconds(r["tpot_overlap_s"]))),
        cells("TPOT serial", lambda r: _c(fmt_seconds(r["tpot_serial_s"]))),
        cells("tok/s overlapped", lambda r: f"{r['output_tokens_per_s_overlap']:,.0f}"),
        cells("tok/s serial", lambda r: f"{r['output_tokens_per_s_serial']:,.0f}"),
    ]
    title = (
        f"{i['model']} on {i['hardware']} TP{i['tp']} at {i['context_tokens']:,} tokens: "
        f"{fmt_bytes(i['tier_capacity_bytes'])} of {i['tier']} per GPU, read at "
        f"{i['tier_bandwidth_bytes_per_s'] / 1e9:.4g} GB/s per GPU ({i['sharing']} sharing "
        f"{i['tier_nominal_bandwidth_bytes_per_s'] / 1e9:.4g} GB/s; HBM "
        f"{i['hbm_bandwidth_bytes_per_s'] / 1e12:.3g} TB/s)"
    )
    cols = ("", "HBM only", "with the tier")
    con = render.stdout_console()
    con.print(_rows_table(title, cols, rows))
    con.print(
        f"max batch: {doc['max_batch_hbm']:,} in HBM alone, {doc['max_batch_with_tier']:,} "
        "with the tier. Spilled KV is read over the "
        "tier every decode step: a tier adds capacity for parked or preempted sequences "
        "(roofline cliff --preemption swap) far more than throughput for active ones."
    )

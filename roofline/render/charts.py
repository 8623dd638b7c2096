"""Charts: the roofline (log-log attainable FLOP/s against intensity) with a workload's ops on it,
the cliff sweep, the serve chart (p99 TTFT and TPOT against request rate, SLOs marked) and the day
chart of `size --traffic-curve -o` (rate against the ready replicas' capacity, replicas ordered, p99
TTFT and TPOT per interval, each class's for a workload file; time short of capacity shaded red).
Drawn as text for the terminal, or through matplotlib (the optional `plot` extra) into SVG/PNG
files. Inputs are the JSON documents the commands build."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from roofline.domain.errors import InputError

MARKS = {"prefill": "P", "decode": "D"}


def roofline_series(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Roofs, ridges and op points (intensity, expected FLOP/s) from a `plot` document."""
    hw = doc["hardware"]
    w = hw["memory_bandwidth_bytes_per_s"]
    points = []
    for phase in ("prefill", "decode"):
        p = doc[phase]
        for op in p["ops"]:
            i, t = op["arithmetic_intensity"], op["t_expected_s"]
            if i and t and op["flops"] > 0 and math.isfinite(i):
                points.append(
                    {
                        "phase": phase,
                        "name": op["name"],
                        "intensity": i,
                        "flops_per_s": op["flops"] / t,
                    }
                )
        if p["t_expected_s"]:
            points.append(
                {
                    "phase": phase,
                    "name": f"{phase} (whole step)",
                    "intensity": p["arithmetic_intensity"],
                    "flops_per_s": p["flops"] / p["t_expected_s"],
                    "whole": True,
                }
            )
    return {"bandwidth": w, "peaks": hw["peak_flops_per_s"], "points": points}


def text_roofline(doc: Mapping[str, Any], width: int = 72, height: int = 18, cols: int = 80) -> str:
    """The roofline as characters: '/' the bandwidth slope, '‾' compute roofs (one per dtype,
    labelled at the right), '|' the ridge of the workload's dtype, P/D the whole prefill and
    decode steps, p/d their ops (at expected throughput)."""
    s = roofline_series(doc)
    w, peaks, pts = s["bandwidth"], s["peaks"], s["points"]
    top = max(peaks.values())
    xs = [p["intensity"] for p in pts] + [top / w]
    x_lo = 10 ** math.floor(math.log10(max(min(xs), 1e-3)) - 0.5)
    x_hi = 10 ** math.ceil(math.log10(max(xs)) + 0.5)
    y_hi = top * 2
    y_lo = min([p["flops_per_s"] for p in pts] + [x_lo * w]) / 1.5
    grid = [[" "] * width for _ in range(height)]

    def col(x: float) -> int:
        return round((math.log10(x) - math.log10(x_lo)) / math.log10(x_hi / x_lo) * (width - 1))

    def row(y: float) -> int:
        f = (math.log10(y) - math.log10(y_lo)) / math.log10(y_hi / y_lo)
        return height - 1 - round(f * (height - 1))

    for c in range(width):  # bandwidth slope up to the highest roof
        x = 10 ** (math.log10(x_lo) + c / (width - 1) * math.log10(x_hi / x_lo))
        r = row(min(x * w, top))
        if 0 <= r < height and x * w < top:
            grid[r][c] = "/"
    labels = []
    for dtype, peak in sorted(peaks.items(), key=lambda kv: kv[1]):
        r = row(peak)
        if not 0 <= r < height:
            continue
        for c in range(max(col(peak / w), 0), width):
            grid[r][c] = "‾" if grid[r][c] == " " else grid[r][c]
        labels.append((r, f"{dtype} {peak / 1e12:,.4g} TFLOP/s"))
    ridge = doc["inputs"]["ridge_flops_per_byte"]
    for r in range(row(top), height):
        c = col(ridge)
        if 0 <= c < width and grid[r][c] == " ":
            grid[r][c] = "|"
    for p in pts:
        c, r = col(p["intensity"]), row(p["flops_per_s"])
        if 0 <= c < width and 0 <= r < height:
            mark = MARKS[p["phase"]]
            grid[r][c] = mark if p.get("whole") else mark.lower()
    lines = ["".join(line).rstrip() for line in grid]
    for r, text in labels:
        lines[r] = lines[r] + "  " + text if len(lines[r]) + 2 + len(text) <= cols else lines[r]
    axis = f"{x_lo:g} FLOP/B".ljust(width // 2) + f"{x_hi:g} FLOP/B".rjust(width - width // 2)
    header = (
        "attainable FLOP/s (log) vs arithmetic intensity (log); ridge | at "
        f"{ridge:,.0f} FLOP/B; top {y_hi / 1e12:,.4g} TFLOP/s, bottom "
        f"{y_lo / 1e12:.3g} TFLOP/s"
    )
    legend = "P/D: whole prefill/decode step, p/d: their ops, at expected throughput"
    wrap = textwrap.wrap  # the prose at the terminal's width, as every table's
    return "\n".join([*wrap(header, cols), *lines, "-" * width, axis, *wrap(legend, cols)])


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            "writing a chart file needs matplotlib", hint="pip install 'roofline[plot]'"
        ) from None
    return plt


def _finish(plt: Any, fig: Any, path: Path) -> None:
    """Lay the figure out, write it to `path` and free it."""
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _finish_axes(
    plt: Any, fig: Any, ax: Any, path: Path, xlabel: str, ylabel: str, title: str
) -> None:
    """A one-axes chart labelled, titled and its legend drawn, then saved (_finish)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    _finish(plt, fig, path)


def check_output(path: Path) -> Any:
    """Fail early (before any work or output) on a bad chart path or a missing matplotlib; else
    pyplot, to draw with."""
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise InputError(f"--out {path}: use a .svg, .png or .pdf file name")
    if not path.parent.is_dir():
        raise InputError(f"--out {path}: the directory {path.parent} does not exist")
    return _pyplot()


def save_roofline(doc: Mapping[str, Any], path: Path) -> None:
    """The roofline chart through matplotlib."""
    plt = check_output(path)
    s = roofline_series(doc)
    w, peaks, pts = s["bandwidth"], s["peaks"], s["points"]
    top = max(peaks.values())
    xs = [p["intensity"] for p in pts] + [top / w]
    x = [
        10 ** (k / 20)
        for k in range(
            round(20 * math.log10(min(xs) / 10)), round(20 * math.log10(max(xs) * 10)) + 1
        )
    ]
    fig, ax = plt.subplots(figsize=(8, 5))
    for dtype, peak in sorted(peaks.items(), key=lambda kv: -kv[1]):
        ax.plot(x, [min(peak, i * w) for i in x], label=f"{dtype} roof ({peak / 1e12:,.4g} TF)")
    for phase, marker in (("prefill", "s"), ("decode", "o")):
        ph = [p for p in pts if p["phase"] == phase]
        ax.scatter(
            [p["intensity"] for p in ph],
            [p["flops_per_s"] for p in ph],
            marker=marker,
            label=f"{phase} ops (expected)",
            zorder=3,
        )
        for p in ph:
            if p.get("whole"):
                ax.annotate(
                    phase,
                    (p["intensity"], p["flops_per_s"]),
                    textcoords="offset points",
                    xytext=(5, -12),
                )
    ax.axvline(doc["inputs"]["ridge_flops_per_byte"], linestyle=":", color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    i = doc["inputs"]
    title = f"{i['model']} on {i['hardware']}: batch {i['batch']}, {i['prompt_tokens']} in"
    _finish_axes(plt, fig, ax, path, "arithmetic intensity (FLOP/byte)", "attainable FLOP/s", title)


def save_cliff(doc: Mapping[str, Any], path: Path) -> None:
    """Throughput and TPOT against batch with the cliff marked, through matplotlib."""
    plt = check_output(path)
    pts: Sequence[Mapping[str, Any]] = doc["points"]
    b = [p["batch"] for p in pts]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(b, [p["output_tokens_per_s"] for p in pts], "o-", label="output tokens/s")
    ax.set_xlabel("max concurrent sequences")
    ax.set_ylabel("output tokens/s")
    ax2 = ax.twinx()
    ax2.plot(b, [p["tpot_mean_s"] * 1e3 for p in pts], "s--", color="tab:red", label="TPOT")
    ax2.set_ylabel("mean TPOT (ms)")
    ax.axvline(doc["cliff_batch"], linestyle=":", color="grey")
    ax.annotate(
        "cliff",
        xy=(doc["cliff_batch"], 0.02),
        xycoords=("data", "axes fraction"),
        textcoords="offset points",
        xytext=(4, 0),
    )
    i = doc["inputs"]
    ax.set_title(f"Reasoning cliff: {i['model']} on {i['hardware']} TP{i['tp']}")
    fig.legend(loc="upper left", fontsize="small")
    _finish(plt, fig, path)


def save_speedup(doc: Mapping[str, Any], path: Path) -> None:
    """Speculative decoding: speed-up (best γ) against batch, log x, with 1× and the crossover
    marked."""
    plt = check_output(path)
    rows = doc["by_batch"]
    fig, ax = plt.subplots(figsize=(8, 5))
    b = [r["batch"] for r in rows]
    ax.plot(b, [r["speedup_expected"] for r in rows], "o-", label="expected (best γ)")
    ax.plot(b, [r["speedup_ideal"] for r in rows], "s--", label="ideal (η = 1)")
    ax.axhline(1.0, color="grey", linestyle=":")
    if doc["crossover_batch"] is not None:
        ax.axvline(doc["crossover_batch"], color="tab:red", linestyle=":", label="crossover")
    ax.set_xscale("log", base=2)
    i = doc["inputs"]
    title = f"Speculative decoding ({i['drafter']}): {i['model']} on {i['hardware']}"
    _finish_axes(plt, fig, ax, path, "batch (sequences)", "speed-up over plain decode", title)


def save_serve(doc: Mapping[str, Any], path: Path) -> None:
    plt = check_output(path)
    pts = doc["points"]
    x = [p["rate"] for p in pts]
    i = doc["inputs"]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for ax, key, slo, label in (
        (a1, "ttft_s", i.get("slo_ttft_s"), "p99 TTFT (s)"),
        (a2, "tpot_s", i.get("slo_tpot_s"), "p99 TPOT (ms)"),
    ):
        scale = 1e3 if key == "tpot_s" else 1.0
        for kind, style in (("expected", "o-"), ("ideal", "s--")):
            ys = [p[kind][key]["p99"] for p in pts]  # null past saturation: no point
            ax.plot(x, [y * scale if y is not None else math.nan for y in ys], style, label=kind)
        if slo is not None:
            ax.axhline(slo * scale, linestyle=":", color="grey", label="SLO")
        ax.set_ylabel(label)
        ax.legend(fontsize="small")
    sat = doc.get("saturation_rate")
    if sat:
        for ax in (a1, a2):
            ax.axvline(sat["expected"], linestyle="--", color="tab:red", alpha=0.5)
    a2.set_xlabel("request rate (requests/s)")
    a1.set_title(f"{i['model']} on {i['dp']} x {i['hardware']} TP{i['tp']}")
    _finish(plt, fig, path)


def save_day(doc: Mapping[str, Any], path: Path) -> None:
    plt = check_output(path)
    day, i = doc["day"], doc["inputs"]
    ivs = day["intervals"]
    hours = [iv["start_s"] / 3600 for iv in ivs]
    hours.append((ivs[-1]["start_s"] + ivs[-1]["duration_s"]) / 3600)

    def steps(key: str, scale: float = 1.0) -> list[float]:
        v = [(iv[key] * scale if iv[key] is not None else float("nan")) for iv in ivs]
        return [*v, v[-1]]

    cap = day["capacity_per_replica"]
    unit = "arrivals/s" if day.get("classes") else "requests/s"
    # one axis per metric: TTFT and TPOT differ by orders of magnitude, each beside its SLO
    fig, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    a1, a2, a3, a4 = axes
    a1.step(hours, steps("rate"), where="post", label="rate")
    a1.step(hours, steps("replicas", cap), where="post", label="capacity of the replicas ordered")
    a1.set_ylabel(f"{unit} (red: short)")
    a2.step(hours, steps("replicas"), where="post", label="ordered (paid)")
    a2.axhline(day["static_replicas"], linestyle=":", color="grey", label="static peak")
    a2.set_ylabel("replicas")
    for ax, key, name in ((a3, "ttft", "TTFT"), (a4, "tpot", "TPOT")):
        if day.get("classes"):  # a workload file's classes: each its own p99 beside its SLO
            for j, k in enumerate(day["classes"]):
                v = [iv["classes"][j][f"{key}_p99_s"] for iv in ivs]
                ms = [x * 1e3 if x is not None else float("nan") for x in v]
                line = ax.step(hours, [*ms, ms[-1]], where="post", label=f"{k['name']} p99")
                if k.get(f"slo_{key}_s"):
                    ax.axhline(k[f"slo_{key}_s"] * 1e3, linestyle=":",
                               color=line[0].get_color(), label=f"{k['name']} SLO")  # fmt: skip
            slos = [k[f"slo_{key}_s"] for k in day["classes"] if k.get(f"slo_{key}_s")]
            if slos and max(slos) > 10 * min(slos):  # SLOs orders of magnitude apart
                ax.set_yscale("log")
        else:
            ax.step(hours, steps(f"{key}_p99_s", 1e3), where="post", label=f"p99 {name}")
            if i.get(f"slo_{key}_s"):
                ax.axhline(i[f"slo_{key}_s"] * 1e3, linestyle=":", color="grey",
                           label=f"{name} SLO")  # fmt: skip
        ax.set_ylabel(f"p99 {name}, ms")
    a4.set_xlabel("hours from the curve's start")
    for iv in ivs:
        if iv["violated_s"] > 0:
            t0 = iv["start_s"] / 3600
            for ax in axes:
                ax.axvspan(t0, t0 + iv["violated_s"] / 3600, color="tab:red", alpha=0.3, lw=0)
    for ax in axes:
        ax.legend(fontsize="small")
    a1.set_title(
        f"{i['model']} on {day['deployment']}: {day['gpu_hours_per_day']:,.0f} GPU-h/day vs"
        f" {day['static_gpu_hours_per_day']:,.0f} static; SLO attainment"
        f" {day['slo_attainment']:.2%}"
    )
    _finish(plt, fig, path)

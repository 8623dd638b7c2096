"""The serve chart (p99 TTFT and TPOT against request rate, SLOs marked) through matplotlib
(the plot extra)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline.plot import _pyplot, check_output

__all__ = ["check_output", "save_serve"]


def save_serve(doc: Mapping[str, Any], path: Path) -> None:
    check_output(path)
    plt = _pyplot()
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
            ax.plot(x, [p[kind][key]["p99"] * scale for p in pts], style, label=kind)
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

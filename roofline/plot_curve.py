"""The day chart of `size --traffic-curve -o`: rate against the ready replicas' capacity,
replicas ordered, and p99 TTFT and TPOT per interval, through matplotlib (the plot extra); the
time the rate exceeds the ready replicas' capacity (new replicas still starting) shaded red."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline.plot import _pyplot, check_output

__all__ = ["check_output", "save_day"]


def save_day(doc: Mapping[str, Any], path: Path) -> None:
    check_output(path)
    plt = _pyplot()
    day, i = doc["day"], doc["inputs"]
    ivs = day["intervals"]
    hours = [iv["start_s"] / 3600 for iv in ivs]
    hours.append((ivs[-1]["start_s"] + ivs[-1]["duration_s"]) / 3600)

    def steps(key: str, scale: float = 1.0) -> list[float]:
        v = [(iv[key] * scale if iv[key] is not None else float("nan")) for iv in ivs]
        return [*v, v[-1]]

    cap = day["capacity_per_replica"]
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    a1.step(hours, steps("rate"), where="post", label="rate")
    a1.step(hours, steps("replicas", cap), where="post", label="capacity of the replicas ordered")
    a1.set_ylabel("requests/s (red: short)")
    a2.step(hours, steps("replicas"), where="post", label="ordered (paid)")
    a2.axhline(day["static_replicas"], linestyle=":", color="grey", label="static peak")
    a2.set_ylabel("replicas")
    a3.step(hours, steps("ttft_p99_s", 1e3), where="post", label="p99 TTFT (ms)")
    a3.step(hours, steps("tpot_p99_s", 1e3), where="post", label="p99 TPOT (ms)")
    for key, name in (("slo_ttft_s", "TTFT SLO"), ("slo_tpot_s", "TPOT SLO")):
        if i.get(key):
            a3.axhline(i[key] * 1e3, linestyle=":", color="grey", label=name)
    a3.set_ylabel("ms")
    a3.set_xlabel("hours from the curve's start")
    for iv in ivs:
        if iv["violated_s"] > 0:
            t0 = iv["start_s"] / 3600
            for ax in (a1, a2, a3):
                ax.axvspan(t0, t0 + iv["violated_s"] / 3600, color="tab:red", alpha=0.3, lw=0)
    for ax in (a1, a2, a3):
        ax.legend(fontsize="small")
    a1.set_title(
        f"{i['model']} on {day['deployment']}: {day['gpu_hours_per_day']:,.0f} GPU-h/day vs"
        f" {day['static_gpu_hours_per_day']:,.0f} static; SLO attainment"
        f" {day['slo_attainment']:.2%}"
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

"""Does sizing at p90 hold? The band edges size --confidence p90 sizes to, against the high-load
runs it never saw (issue 35; validation/highload_cases.yaml, their out-of-sample expected
figures in validation/serving_errors.csv).

The p90 edged prediction (roofline/serving/confidence.py) of a run:
- a rate (requests/s, output tokens/s): the out-of-sample expected figure × the throughput
  band's low edge, the band fitted without the run's source and widened by the shipped margin
  (validation/bands.py loso, margins); held when the measured rate is at least that;
- a latency (TTFT, TPOT, ITL, E2E): the expected figure of the queue at the rate ÷ that low edge
  (the case re-run at rate ÷ low under the shipped catalog, × its out-of-sample / in-sample
  figure at the rate: the refit without its source kept) × the light-load band's high edge
  (ttft_light for TTFT and E2E, tpot_light for TPOT and ITL: no high-load run is among their
  points); held when the measured latency is at most that. A burst or a closed loop has no rate
  to scale: the sizing's rule leaves its queue as it is, so two readings are printed, the rule
  as written (× the light edge only) and the slower replica's own time scale (÷ low as well).
The old rule (before this round) is printed beside it for the Poisson runs: the worse of the
queue at rate ÷ low and the expected figure at the rate × the p99 band's high edge (a p50
figure under a p99 SLO: the edge size applied).

`python validation/edge_coverage.py` prints the table (about a minute: the Poisson runs re-run).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RATES = ("requests_per_s", "output_tokens_per_s")
LIGHT_OF = {"ttft": "ttft_light", "e2e": "ttft_light", "tpot": "tpot_light", "itl": "tpot_light"}
P99_OF = {"ttft": "ttft_p99", "e2e": "ttft_p99", "tpot": "tpot_p99", "itl": "tpot_p99"}
FILE = "validation/highload_cases.yaml"


def rows() -> list[dict]:
    """One row per high-load run: its metric, arrivals, measured and edged figures."""
    from roofline.cases.casefiles import load_serving_cases
    from roofline.cases.serving import run_serving_case
    from roofline.catalog.bands import band
    from roofline.catalog.load import load_catalog
    from validation.bands import (
        _source,
        cell_of,
        loso,
        margins,
        points,
        profile_of,
        widened,
        with_siblings,
    )
    from validation.serving_crossval import load

    cat = load_catalog()
    joined = with_siblings(points())
    fits = loso(joined)
    m = margins(joined, fits)["throughput"]
    cases = {c["id"]: c for c in load_serving_cases(ROOT / FILE)}
    out = []
    for s in load()[0]:
        if s.file != FILE or s.id not in cases:
            continue
        hw = cat.accelerator(s.hardware)
        eng = profile_of(s.engine, s.engine_version, hw)
        cell = cell_of(fits.get(_source(s.group), {}), "throughput", s.family, eng)
        if cell is None:
            continue
        low = min(1.0, widened(cell, m)["low"])
        c = cases[s.id]
        row = {"id": s.id, "metric": s.metric, "arrivals": c["arrivals"], "low": low}
        if s.metric in RATES:
            row["held"] = s.measured >= s.out_of_sample * low * (1 - 1e-9)
            out.append(row)
            continue
        kind = s.metric.split("_")[0]
        if kind not in LIGHT_OF:
            continue
        light = band(LIGHT_OF[kind], s.family, eng)
        p99 = band(P99_OF[kind], s.family, eng)
        if light is None or p99 is None:
            continue
        if c["arrivals"] == "poisson":
            slower = {**c, "rate": float(c["rate"]) / low}
            slowed = run_serving_case(slower, cat, expected_only=True).expected
            queue = s.out_of_sample * slowed / max(s.in_sample, 1e-30)  # its refit kept
            row["held"] = s.measured <= queue * light.high
            row["held_old"] = s.measured <= max(queue, s.out_of_sample * p99.high)
        else:
            row["held"] = s.measured <= s.out_of_sample * light.high
            row["held_scaled"] = s.measured <= s.out_of_sample * light.high / low
        out.append(row)
    return out


def table(rs: list[dict]) -> str:
    """Held shares by metric kind and arrivals."""
    lines = [
        "| points | arrivals | n | held at p90 | held, ÷ low too | held, old rule |",
        "|---|---|---:|---:|---:|---:|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rs:
        what = "rates" if r["metric"] in RATES else "latencies"
        groups.setdefault((what, r["arrivals"]), []).append(r)
    for (what, arr), g in sorted(groups.items()):

        def share(key: str, g: list[dict] = g) -> str:
            have = [r[key] for r in g if key in r]
            return f"{sum(have)}/{len(have)} ({sum(have) / len(have):.0%})" if have else "-"

        lines.append(
            f"| {what} | {arr} | {len(g)} | {share('held')} | {share('held_scaled')} | "
            f"{share('held_old')} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows()))

"""Issue 40's speed rows (`make bench`): the 20-model fleet sized cold (benchmarks/fleet-20.yaml,
120 model x chip pairs at most, each against a stated budget), and the 100-day Monte-Carlo of
examples/fleet.yaml on 2 workers against 1 (target >= 1.7x). Each row states the machine's load
(os.getloadavg: the 1-minute load average before and after) since the figures mean little on a
busy machine: the targets are for an idle 2-core one."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIR_BUDGET_S = 5.0  # CPU seconds per (model, chip) sizing, cold (the size target / 2)
SPEEDUP_TARGET = 1.7


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one CLI run (children's rusage), and its JSON. A run that exits
    with an error, or with 0 and no JSON on stdout, is raised with its exit code and the end of
    its stderr (a row is never measured on a run that did not answer)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "roofline", *args, "--format", "json"]
    r = subprocess.run(
        cmd, check=False, capture_output=True, text=True, env={**os.environ, **env}, cwd=ROOT
    )
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        doc = None
    if r.returncode != 0 or not isinstance(doc, dict):
        raise RuntimeError(
            f"{' '.join(cmd[2:])} ({env}): exit {r.returncode} after {wall:.1f} s,"
            f" {len(r.stdout)} bytes on stdout that are not a JSON document;"
            f" stderr: {r.stderr[-800:].strip() or '(empty)'}"
        )
    return wall, cpu, doc


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def fleet_20() -> dict:
    """The 20-model fleet, cold (ROOFLINE_NO_CACHE=1): every pair sized, then 24 hours placed
    (sizing once per pair, reused by every hour: not 24 searches)."""
    before = load()
    wall, cpu, doc = _run(["fleet", "benchmarks/fleet-20.yaml"], {"ROOFLINE_NO_CACHE": "1"})
    pairs = sum(len(m["options"]) for m in doc["models"])
    return {
        "pairs": pairs, "wall_s": wall, "cpu_s": cpu, "cpu_s_per_pair": cpu / max(pairs, 1),
        "budget_cpu_s_per_pair": PAIR_BUDGET_S, "met": cpu / max(pairs, 1) <= PAIR_BUDGET_S,
        "load_before": before, "load_after": load(),
    }  # fmt: skip


def monte_carlo_100() -> dict:
    """examples/fleet.yaml --days 100 on 1 and on 2 workers (its sizing cached by a first run),
    the same JSON both ways."""
    args = ["fleet", "examples/fleet.yaml", "--days", "100"]
    _run(["fleet", "examples/fleet.yaml", "--days", "1"], {})  # sizing into the cache
    before = load()
    one, _, doc1 = _run(args, {"ROOFLINE_JOBS": "1"})
    two, _, doc2 = _run(args, {"ROOFLINE_JOBS": "2"})
    return {
        "one_worker_s": one, "two_workers_s": two, "speedup": one / two,
        "target": SPEEDUP_TARGET, "met": one / two >= SPEEDUP_TARGET, "same_json": doc1 == doc2,
        "p50_peak_gpus": doc1["answer"]["peak_gpus"]["p50"],
        "load_before": before, "load_after": load(),
    }  # fmt: skip


def main() -> dict:
    out = {"monte_carlo_100": monte_carlo_100()}
    mc = out["monte_carlo_100"]
    print(
        f"fleet --days 100 (examples/fleet.yaml): 1 worker {mc['one_worker_s']:.1f} s, 2 workers"
        f" {mc['two_workers_s']:.1f} s = {mc['speedup']:.2f}x (target >= {SPEEDUP_TARGET}x:"
        f" {'met' if mc['met'] else 'NOT met'}); same JSON: {mc['same_json']};"
        f" {mc['load_before']} -> {mc['load_after']}"
    )
    if os.environ.get("BENCH_QUICK"):
        return out
    f = out["fleet_20"] = fleet_20()
    print(
        f"fleet benchmarks/fleet-20.yaml cold: {f['pairs']} model x chip pairs in {f['wall_s']:.0f}"
        f" s ({f['cpu_s']:.0f} s of CPU, {f['cpu_s_per_pair']:.1f} s per pair; budget"
        f" {PAIR_BUDGET_S:g} s: {'met' if f['met'] else 'NOT met'}); {f['load_before']} ->"
        f" {f['load_after']}"
    )
    return out


if __name__ == "__main__":
    main()

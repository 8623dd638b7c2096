"""Benchmarks (`make bench`): the speed figures of benchmarks/speed.py, each as a ratio against its
floor and written to the untracked benchmarks/results.local.json (RECORD=1: to the committed
snapshot benchmarks/results.json, whose table `make docs` then rewrites), then the command
timings (plan, cold query, sweeps, cliff, levers, serve, size). benchmarks/README.md explains
each figure."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from roofline import Deployment, load_catalog
from roofline.domain.layout import Layout
from roofline.step.phases import decode


def cold_query(runs: int = 5) -> float:
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "analyze",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--weights",
        "fp8",
        "--batch",
        "32",
        "--format",
        "json",
    ]
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def sweep(points: int = 10_000) -> float:
    cat = load_catalog()
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    batch = np.repeat(np.arange(1, 101), points // 100)
    context = np.tile(np.linspace(1024, 131072, points // 100), 100)
    t0 = time.perf_counter()
    decode(m, hw, Deployment(layout=Layout(tp=8)), batch, context)
    return time.perf_counter() - t0


def grid_sweep() -> tuple[int, float, float]:
    """A 102,400-point sweep: the core alone, and the CLI end to end writing JSONL."""
    from roofline.step.sweep import Grid, run_sweep

    cat = load_catalog()
    grid = Grid(
        [cat.model("llama-3.1-8b")],
        [cat.accelerator("h100")],
        ["bf16"],
        ["bf16"],
        [1],
        list(range(1, 1025)),
        list(range(1000, 100_001, 1000)),
        [1000],
    )
    t0 = time.perf_counter()
    run_sweep(grid, "vllm")
    core = time.perf_counter() - t0
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "sweep",
        "--batch",
        "1..1024:1",
        "--prompt",
        "1k..100k:1k",
        "--output",
        "1k",
        "--format",
        "jsonl",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return grid.points, core, time.perf_counter() - t0


def cliff_sweep() -> float:
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "cliff",
        "llama-3.1-405b",
        "h100",
        "--tp",
        "8",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--prompt",
        "1k",
        "--output",
        "16k",
        "--max-seqs",
        "4..128:4",
        "--format",
        "json",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def plan_search(model: str, hardware: str, gpus: int) -> tuple[int, float, float]:
    """`plan` for a model on N GPUs: the layout search in-process (best of 3), and the CLI end to
    end (interpreter start included, best of 3)."""
    from roofline.domain.precision import WEIGHT_FORMATS
    from roofline.engines.engine import ENGINES
    from roofline.step.ops import Deployment
    from roofline.step.planner import plans

    cat = load_catalog()
    m, hw, net = cat.model(model), cat.accelerator(hardware), cat.tier("infiniband-ndr")
    base = Deployment(weights=WEIGHT_FORMATS["fp8"])
    core = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        found = plans(m, hw, base, ENGINES["vllm"], gpus, 1000, 1000, scale_out=net)
        core = min(core, time.perf_counter() - t0)
    cmd = [sys.executable, "-m", "roofline", "plan", model, hardware, "--gpus", str(gpus)]
    cli = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([*cmd, "--weights", "fp8"], check=True, capture_output=True)
        cli = min(cli, time.perf_counter() - t0)
    return len(found), core, cli


def lever_queries() -> dict[str, float]:
    """Cold CLI queries of the lever commands: a speculation sweep (8 gammas x 9 batches), an
    offload placement search with its -ngl sweep, and a side-by-side edge comparison."""
    commands = {
        "speculate (8 gammas x 9 batches)": ["speculate", "llama-3.1-70b", "h100", "--tp", "4"],
        "offload --sweep": [
            "offload",
            "llama-3.1-70b",
            "rtx-4090",
            "--weights",
            "q4_k_m",
            "--sweep",
        ],
        "edge (4 devices)": [
            "edge",
            "llama-3.1-70b",
            "m4-max",
            "--weights",
            "q4_k_m",
            "--devices",
            "dgx-spark,rtx-5090,rtx-4090",
        ],
    }
    out = {}
    for name, args in commands.items():
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "roofline", *args, "--format", "json"],
            check=True,
            capture_output=True,
        )
        out[name] = time.perf_counter() - t0
    return out


def serve_10k() -> float:
    """roofline.serving: 10,000 Poisson requests through the scheduler, ideal and expected, with
    the replica's saturation probes the steady-state figures need."""
    from roofline.engines.engine import engine
    from roofline.serving.metrics import Slo
    from roofline.serving.search import replica_capacity
    from roofline.serving.serve import make_replica, serve
    from roofline.serving.workload import make_workload

    cat = load_catalog()
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    t0 = time.perf_counter()
    rep = make_replica(m, hw, Deployment(), engine("vllm"), 2200)
    w = make_workload("sharegpt", "sharegpt", rate=10.0, requests=10_000, seed=0)
    serve(rep, w, Slo(2.0, 0.05), capacity=replica_capacity(rep, w))
    return time.perf_counter() - t0


def size_4() -> float:
    """roofline.serving.size over h100, h200, b200, mi300x for Llama-3.1-70B at 10 req/s, p99 SLOs
    (runs of 5,000 requests settle each layout's capacity; layouts over the cores)."""
    from roofline.catalog.load import load_prices
    from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
    from roofline.engines.engine import engine
    from roofline.serving.metrics import Slo
    from roofline.serving.size import size
    from roofline.serving.workload import make_workload

    cat = load_catalog()
    hws = [cat.accelerator(h) for h in ("h100", "h200", "b200", "mi300x")]
    base = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["fp8"])
    w = make_workload(2000, 300, rate=10.0, requests=1000, seed=0)
    t0 = time.perf_counter()
    size(cat.model("llama-3.1-70b"), hws, base, engine("vllm"), w, Slo(2.0, 0.05), load_prices())
    return time.perf_counter() - t0


def serve_cli(requests: int = 10_000) -> float:
    """`roofline serve` end to end (interpreter start included), without the saturation search."""
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "serve",
        "llama-3.1-8b",
        "h100",
        "--rate",
        "10",
        "--prompt-dist",
        "sharegpt",
        "--output-dist",
        "sharegpt",
        "--requests",
        str(requests),
        "--no-saturation",
        "--format",
        "json",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def size_cli() -> float:
    """`roofline size` over h100, h200, b200, mi300x end to end."""
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "size",
        "llama-3.1-70b",
        "--rate",
        "10",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--prompt",
        "2k",
        "--output",
        "300",
        "--slo-ttft",
        "2s",
        "--slo-tpot",
        "50ms",
        "--format",
        "json",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def size_day_cli() -> tuple[float, float]:
    """`roofline size --traffic-curve` end to end: 24 hours of 1,440 minute rates, mean 20 req/s
    (a sinusoid from 8 to 32, written to a scratch file), Llama-3.1-8B over H100 layouts with
    p99 SLOs (target < 10 s: the day's 1.7 million requests are not simulated, its transitions
    are). (wall s, CPU s of the process: on a loaded machine the wall time is mostly waiting)"""
    import resource
    import tempfile

    minutes = np.arange(1440)
    rate = 20 * (1 - 0.6 * np.cos(2 * np.pi * minutes / 1440))
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(
            "minute,rate\n" + "".join(f"{m},{r:.4f}\n" for m, r in zip(minutes, rate, strict=True))
        )
    cmd = [
        sys.executable,
        "-m",
        "roofline",
        "size",
        "llama-3.1-8b",
        "--hardware",
        "h100",
        "--traffic-curve",
        f.name,
        "--slo-ttft",
        "1s",
        "--slo-tpot",
        "50ms",
        "--format",
        "json",
    ]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        subprocess.run(cmd, check=True, capture_output=True)
    finally:
        os.unlink(f.name)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)


def main() -> None:
    import datetime
    import json
    import platform

    import speed

    results: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
    }
    speed.prepare()
    st = results["startup"] = speed.startup()
    peer = st["peer_single_query_s"]
    print(
        f"single query `roofline analyze llama-3.1-8b h100 -f json`: {st['analyze_s'] * 1e3:.0f} ms"
        f" = {st['analyze_over_floor']:.2f}x the bare-import floor ({st['floor_s'] * 1e3:.0f} ms)"
        + (f", {st['analyze_over_peer']:.2f}x llm-analysis ({peer * 1e3:.0f} ms)" if peer else "")
    )
    print(
        f"`roofline --help`: {st['help_s'] * 1e3:.0f} ms = {st['help_over_floor']:.2f}x the floor"
    )
    so = results["sweep_output"] = speed.sweep_output()
    print(
        f"sweep of {so['points']:,} points to CSV end to end: "
        f"{so['csv_points_per_s']:,.0f} points/s"
        f" ({so['csv_over_numpy_write']:.2f}x numpy's own savetxt, "
        f"{so['numpy_savetxt_points_per_s']:,.0f} points/s); JSONL {so['jsonl_points_per_s']:,.0f};"
        f" {so['csv_over_startup_floor']:.2f}x the bare-import time "
        f"({so['startup_floor_s'] * 1e3:.0f} ms)"
    )
    sc = results["sweep_core"] = speed.sweep_core()
    print(
        f"core sweep of {sc['points']:,} points in process: {sc['core_points_per_s']:,.0f} points/s"
    )
    if os.environ.get("BENCH_QUICK"):
        results["sweep_big"] = None
    else:
        sb = results["sweep_big"] = speed.sweep_big()
        print(
            f"sweep of {sb['points']:,} points streamed to CSV: {sb['csv_s']:.0f} s, peak RSS "
            f"{sb['peak_rss_mb']:.0f} MB (the bare imports: {sb['floor_rss_mb']:.0f} MB)"
        )
    import fleet_bench

    results["fleet"] = fleet_bench.main()  # issue 40: the fleet rows, with the machine's load
    import size_bench

    results["size"] = size_bench.main()  # issues 33, 35, 40: the size rows, with the load
    pp = results["per_point"] = speed.per_point()
    print(
        f"per-point API (`request` on scalars): {pp['request_s_per_point'] * 1e6:.0f} us"
        + (
            f"; llm-analysis {pp['peer_s_per_point'] * 1e6:.0f} us "
            f"({pp['peer_over_ours']:.2f}x ours)"
            if pp["peer_s_per_point"]
            else ""
        )
    )
    # the recorded snapshot the README quotes changes only when asked (make bench RECORD=1)
    record = os.environ.get("RECORD", "") not in ("", "0")
    out = Path(__file__).with_name("results.json" if record else "results.local.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")

    for model, hardware in (("deepseek-r1", "h200"), ("llama-3.1-405b", "h100")):
        n_layouts, core, cli = plan_search(model, hardware, 16)
        print(
            f"plan {model} {hardware} --gpus 16: {n_layouts} layouts searched in "
            f"{core * 1e3:.0f} ms (CLI end to end {cli * 1e3:.0f} ms)"
        )
    q = cold_query()
    print(f"cold `roofline analyze` (best of 5, interpreter start included): {q * 1e3:.0f} ms")
    n = 10_000
    s = sweep(n)
    print(f"vectorized decode sweep: {n:,} points in {s * 1e3:.1f} ms ({n / s:,.0f} points/s)")
    points, core, cli = grid_sweep()
    print(
        f"sweep of {points:,} points: core {core:.2f} s ({points / core:,.0f} points/s), "
        f"CLI to JSONL {cli:.2f} s ({points / cli:,.0f} points/s)"
    )
    c = cliff_sweep()
    print(f"cliff sweep, 32 batch settings x 512 requests of 16k output tokens: {c:.2f} s")
    for name, t in lever_queries().items():
        print(f"cold `roofline {name}`: {t * 1e3:.0f} ms")

    sv = serve_10k()
    print(f"serve: 10,000 Poisson requests, ideal + expected: {sv:.2f} s (target < 1 s)")
    sz = size_4()
    print(
        f"size: Llama-3.1-70B over 4 accelerators x layouts x replicas: {sz:.2f} s (target < 5 s)"
    )
    print(f"`roofline serve` of 10,000 requests, CLI end to end: {serve_cli():.2f} s")
    print(f"`roofline size` over 4 accelerators, CLI end to end: {size_cli():.2f} s")
    wall, cpu = size_day_cli()
    print(
        "`roofline size --traffic-curve`, 24 h of minute rates at 20 req/s mean, CLI end to end:"
        f" {wall:.2f} s ({cpu:.2f} s of CPU; target < 10 s)"
    )


if __name__ == "__main__":
    main()

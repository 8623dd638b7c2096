"""The speed figures of issue 15, each against its floor (see benchmarks/README.md).

Whole-process times are medians of interleaved runs (floor, ours, peer, floor, ours, peer, ...), so
a busy machine slows all of them alike. The peer is llm-analysis 0.2.2 in a scratch venv outside
the project (never a dependency): ROOFLINE_PEER_PYTHON (default /tmp/peers/bin/python); without it
the peer figures are null.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PEER = os.environ.get("ROOFLINE_PEER_PYTHON", "/tmp/peers/bin/python")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}

FLOOR_CMD = [PY, "-c", "import typer, rich, numpy, yaml"]
ANALYZE_CMD = [PY, "-m", "roofline", "analyze", "llama-3.1-8b", "h100", "-f", "json"]
HELP_CMD = [PY, "-m", "roofline", "--help"]
# llm-analysis's single query: its fire CLI over `infer`, a Llama-2-7B (the nearest model it ships)
# on an H100 SXM, prompt 1000 and 1000 output tokens, as `roofline analyze` defaults to
PEER_CMD = [
    PEER,
    "-m",
    "llm_analysis.analysis",
    "infer",
    "--model_name",
    "NousResearch_Llama-2-7b-hf",
    "--gpu_name",
    "h100-sxm-80gb",
    "--seq_len",
    "1000",
    "--num_tokens_to_generate",
    "1000",
    "--log_level",
    "ERROR",
]
PEER_POINT = """
import logging, time
from llm_analysis.analysis import (LLMAnalysis, ParallelismConfig, get_dtype_config_by_name,
    get_gpu_config_by_name, get_model_config_by_name, logger)
logger.setLevel(logging.ERROR)
a = LLMAnalysis(get_model_config_by_name("NousResearch_Llama-2-7b-hf"),
    get_gpu_config_by_name("h100-sxm-80gb"), get_dtype_config_by_name("w16a16e16"),
    ParallelismConfig())
n = 2000
t = time.perf_counter()
for i in range(n):
    a.inference(batch_size_per_gpu=1 + i % 32, seq_len=1000 + i % 1000, num_tokens_to_generate=1000)
print((time.perf_counter() - t) / n)
"""


def peer_ok() -> bool:
    if not Path(PEER).exists():
        return False
    probe = subprocess.run([PEER, "-c", "import llm_analysis"], capture_output=True, env=ENV)
    return probe.returncode == 0


def prepare() -> None:
    """Byte-compile the package (an installed wheel has its .pyc files; PYTHONDONTWRITEBYTECODE
    would otherwise make every run compile from source) and warm the catalog cache once."""
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "roofline")], check=True, env=ENV)
    subprocess.run(ANALYZE_CMD, check=True, capture_output=True, env=ENV)


def interleaved(commands: dict[str, list[str]], runs: int = 15) -> dict[str, float]:
    """Median wall time of each command, runs interleaved."""
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=ENV)
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def startup(runs: int = 15) -> dict:
    cmds = {"floor": FLOOR_CMD, "analyze": ANALYZE_CMD, "help": HELP_CMD}
    peer = peer_ok()
    if peer:
        cmds["peer"] = PEER_CMD
    t = interleaved(cmds, runs)
    return {
        "floor_s": t["floor"],
        "analyze_s": t["analyze"],
        "help_s": t["help"],
        "analyze_over_floor": t["analyze"] / t["floor"],
        "help_over_floor": t["help"] / t["floor"],
        "peer_single_query_s": t.get("peer"),
        "analyze_over_peer": t["analyze"] / t["peer"] if peer else None,
        "target": "analyze_over_floor <= 1.3 and analyze_over_peer < 1",
    }


def _run(cmd: list[str]) -> tuple[float, float]:
    """Wall time and peak RSS (MB) of one child process (os.wait4 gives that child's own)."""
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV) as p:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise RuntimeError(f"{cmd}: exit {p.returncode}: {p.stderr.read().decode()[-300:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024.0


def _sweep_cli(args: list[str], out: str) -> tuple[float, float]:
    """Wall time and peak RSS (MB) of one `roofline sweep`."""
    return _run([PY, "-m", "roofline", "sweep", *args, "-o", out])


def numpy_write_floor(points: int, columns: int = 23) -> float:
    """Points/s at which numpy itself writes a points x 23 float64 table as CSV (np.savetxt with
    '%.7g', the precision of our CSV's per-point floats): the floor for a CSV writer in Python."""
    rng = np.random.default_rng(0)
    table = rng.lognormal(0.0, 4.0, (points, columns))
    buf = io.StringIO()
    t0 = time.perf_counter()
    np.savetxt(buf, table, delimiter=",", fmt="%.7g")
    return points / (time.perf_counter() - t0)


def sweep_output() -> dict:
    """100,000 points to CSV end to end (interpreter start included), against numpy's write, and
    as a multiple of the bare-import floor timed between the runs (steadier under load)."""
    grid = ["--batch", "1..1000:1", "--prompt", "1k..100k:1k", "--output", "1k"]
    points = 100_000
    runs, floors = [], []
    for _ in range(5):
        floors.append(_run(FLOOR_CMD)[0])
        runs.append(_sweep_cli([*grid, "-f", "csv"], os.devnull)[0])
    wall, floor_s = statistics.median(runs), statistics.median(floors)
    floor = numpy_write_floor(points)
    jsonl = _sweep_cli([*grid, "-f", "jsonl"], os.devnull)[0]
    return {
        "points": points,
        "csv_end_to_end_s": wall,
        "csv_points_per_s": points / wall,
        "jsonl_points_per_s": points / jsonl,
        "numpy_savetxt_points_per_s": floor,
        "csv_over_numpy_write": (points / wall) / floor,
        "startup_floor_s": floor_s,
        "csv_over_startup_floor": wall / floor_s,
        "target": "csv_points_per_s >= 150,000",
    }


def sweep_core(points: int = 1_000_000) -> dict:
    """The vectorized core over a 10^6-point grid in process (chunks consumed, nothing written)."""
    from roofline import load_catalog
    from roofline.step.sweep import Grid, sweep_chunks

    cat = load_catalog()
    grid = Grid(
        [cat.model("llama-3.1-8b")],
        [cat.accelerator("h100")],
        ["bf16"],
        ["bf16"],
        [1],
        list(range(1, 1001)),
        list(range(1000, 100_001, 1000)),
        [250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 100_000],
    )
    assert grid.points == points
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        n = sum(c["batch"].size for c in sweep_chunks(grid, "vllm"))
        best = min(best, time.perf_counter() - t0)
    assert n == points
    return {
        "points": points,
        "core_s": best,
        "core_points_per_s": points / best,
        "target": "core_points_per_s >= 1,000,000",
    }


def sweep_big(points: int = 10_000_000) -> dict:
    """10^7 points streamed to CSV (to /dev/null): peak RSS of the process against the floor's."""
    floor_mb = _run(FLOOR_CMD)[1]
    outputs = ",".join(str(x) for x in range(100, 100 * (points // 100_000) + 1, 100))
    args = ["--batch", "1..1000:1", "--prompt", "1k..100k:1k", "--output", outputs, "-f", "csv"]
    wall, rss_mb = _sweep_cli(args, os.devnull)
    return {
        "points": points,
        "csv_s": wall,
        "csv_points_per_s": points / wall,
        "peak_rss_mb": rss_mb,
        "floor_rss_mb": floor_mb,
        "target": "peak_rss_mb < 500",
    }


def _ours_per_point(n: int = 2000) -> float:
    from roofline import Deployment, load_catalog
    from roofline.step.phases import request

    cat = load_catalog()
    m, hw, dep = cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment()
    t0 = time.perf_counter()
    for i in range(n):
        request(m, hw, dep, 1 + i % 32, 1000 + i % 1000, 1000)
    return (time.perf_counter() - t0) / n


def per_point(rounds: int = 5) -> dict:
    """One distinct point per call through the Python API (`request` with Python scalars: the
    scalar fast path), against llm-analysis's per-point `LLMAnalysis.inference`; interleaved
    rounds, medians."""
    peer = peer_ok()
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_ours_per_point())
        if peer:
            run = subprocess.run([PEER, "-c", PEER_POINT], capture_output=True, text=True, env=ENV)
            if run.returncode == 0:
                theirs.append(float(run.stdout.strip().splitlines()[-1]))
    o = statistics.median(ours)
    p = statistics.median(theirs) if theirs else None
    return {
        "request_s_per_point": o,
        "peer_s_per_point": p,
        "peer_over_ours": p / o if p else None,
        "target": "peer_over_ours >= 1",
    }

"""A fleet model's traffic from a file: a workload file (roofline.serving.workloadfile) or an
arrival log (roofline.serving.arrivals: Azure, BurstGPT CSV, Mooncake JSONL).

- workload file: the file's rate (arrivals/s over its classes) all day, x `scale`; prompt and
  output tokens = the classes' rate-weighted means where the model's entry gives none (a class
  whose lengths are a distribution counts the mean of 10,000 draws, as `size` reads it); the
  SLOs = the tightest class's where the entry gives none. Sequences per arrival (n samples,
  agent turns) multiply the rate, so a replica is sized for the requests it serves.
- arrival log: times from the first request / `speedup`, laid from midnight; hour h's rate = the
  gaps between arrivals ending in it / the seconds of it the log covers (the rate while the log
  runs: a log inside one hour gives (n - 1) / its span), 0 in hours it does not reach;
  prompt and output = the log's mean tokens, rounded, where the entry gives none."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.domain.errors import InputError

HOURS = 24


@dataclass(frozen=True)
class FileTraffic:
    hourly: tuple[float, ...]  # requests/s, 24 values
    how: str
    prompt: int | None
    output: int | None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None


def log_hourly(t_s: np.ndarray) -> tuple[float, ...]:
    """Each hour's arrival rate from arrival times (s from the first request, laid from
    midnight): the gaps ending in the hour / the seconds of the hour the log covers (the first
    request opens the clock, so a log inside one hour gives (n - 1) / its span, as `size
    --arrivals` reads it); 0 in hours the log does not reach."""
    t = np.sort(np.asarray(t_s, dtype=float))
    if t.size < 2:
        return (0.0,) * HOURS
    start, end = float(t[0]), float(t[-1])
    ends = t[1:]  # each gap ends at an arrival
    out = []
    for h in range(HOURS):
        a, b = h * 3600.0, (h + 1) * 3600.0
        covered = min(b, end) - max(a, start)
        n = int(((ends > a) & (ends <= b)).sum()) if h else int((ends <= b).sum())
        out.append(n / covered if covered > 0 else 0.0)
    return tuple(out)


def from_log(path: Path, speedup: float, scale: float, where: str) -> FileTraffic:
    from roofline.serving.arrivals import read_arrivals

    w = read_arrivals(path, speedup)
    t = np.asarray(w.arrival_s, dtype=float)
    if t.size == 0:
        raise InputError(f"{where}.arrivals: {path}: no requests")
    t = t - t.min()
    if float(t.max()) >= HOURS * 3600.0:
        raise InputError(f"{where}.arrivals: the log spans more than a day at x{speedup:g}")
    hourly = tuple(r * scale for r in log_hourly(t))
    sped = "" if speedup == 1 else f" x{speedup:g}"
    how = f"arrival log {path.name}{sped}: {t.size} requests; hourly arrival rates" + (
        "" if scale == 1 else f" x {scale:g}"
    )
    return FileTraffic(
        hourly,
        how,
        round(float(np.mean(w.prompts))),
        round(float(np.mean(w.outputs))),
    )


def _tokens(v: str | int) -> float:
    if isinstance(v, int):
        return float(v)
    from roofline.levers.kvcache import parse_lengths

    values, _ = parse_lengths(str(v), 2_000_000)
    return float(np.mean(values))


def from_workload(path: Path, scale: float, where: str) -> FileTraffic:
    from roofline.serving.workloadfile import read_workload

    mix = read_workload(path)
    rates = mix.class_rates()
    total = sum(rates)
    if not total > 0:
        raise InputError(f"{where}.workload: {path}: the classes' rate is 0")
    seq = mix.sequences_per_s()
    weights = [r / total for r in rates]
    try:
        prompt = sum(w * _tokens(c.prompt) for w, c in zip(weights, mix.classes, strict=True))
        output = sum(w * _tokens(c.output) for w, c in zip(weights, mix.classes, strict=True))
    except (TypeError, ValueError, AttributeError):
        raise InputError(f"{where}.workload: give prompt and output (lengths not read)") from None
    ttfts = [c.slo_ttft_s for c in mix.classes if c.slo_ttft_s is not None]
    tpots = [c.slo_tpot_s for c in mix.classes if c.slo_tpot_s is not None]
    r = seq * scale
    how = (
        f"workload {path}: {len(mix.classes)} classes, {mix.rate:g} arrivals/s"
        f" ({seq:g} requests/s) all day" + ("" if scale == 1 else f" x {scale:g}")
    )
    return FileTraffic(
        (r,) * HOURS,
        how,
        max(1, round(prompt)),
        max(1, round(output)),
        min(ttfts) if ttfts else None,
        min(tpots) if tpots else None,
    )


def file_traffic(kind: str, value: str, base: Path, speedup: float, scale: float, where: str):
    """The traffic of `arrivals:` or `workload:` (a path relative to the fleet file)."""
    p = Path(value)
    path = p if p.is_absolute() else base / p
    if not (math.isfinite(speedup) and speedup > 0):
        raise InputError(f"{where}.speedup: must be a positive factor, got {speedup}")
    if kind == "arrivals":
        return from_log(path, speedup, scale, where)
    return from_workload(path, scale, where)

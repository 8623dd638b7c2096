"""Arrival logs replayed as a workload, detected by content:

- Azure LLM inference traces (Azure/AzurePublicDataset, AzureLLMInferenceTrace_*.csv): columns
  TIMESTAMP (a date and time with 7 fractional digits), ContextTokens, GeneratedTokens.
- BurstGPT (HPMLL/BurstGPT, BurstGPT_*.csv): Timestamp (seconds from the log's start), Model,
  Request tokens, Response tokens, Total tokens, Log Type.
- Mooncake (kvcache-ai/Mooncake, traces/*.jsonl): one object a line, timestamp (milliseconds),
  input_length, output_length, hash_ids (ids of the prompt's 512-token blocks: block-level
  prefix hits within a replica, roofline.serving.sim.blockcache).
- roofline's own JSONL: input_tokens, output_tokens and arrival_s (seconds), as --prompt-dist
  takes it (serving.workload.workload_from_trace).

Times start at the first request; `speedup` divides them (2: twice the rate). Each bad row is one
error naming the file, line and column.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from roofline.catalog.files import read_text
from roofline.domain.errors import InputError
from roofline.serving.workload import MAX_REQUESTS, MAX_TOKENS, Workload, replayed

# The longest log replayed: beyond it a float64 second loses the simulator's step resolution
# (at 1e30 s two requests a second apart are the same time)
MAX_SPAN_S = 1e9

FORMATS = {
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
    "mooncake": ("timestamp", "input_length", "output_length"),
    "roofline": ("arrival_s", "input_tokens", "output_tokens"),
}


def _azure_time(text: str, where: str) -> float:
    """'2023-11-16 18:15:46.6805900' -> seconds since the epoch (any number of fractional digits:
    datetime takes 6)."""
    whole, _, frac = text.strip().partition(".")
    try:
        t = datetime.fromisoformat(whole).timestamp()
    except ValueError:
        raise InputError(f"{where}: TIMESTAMP '{text}' is not a date and time") from None
    if frac and not frac.isdigit():
        raise InputError(f"{where}: TIMESTAMP '{text}' is not a date and time")
    return t + (float(f"0.{frac}") if frac else 0.0)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool):  # JSON true would read as 1 token
        raise InputError(f"{where}: '{value}' is not a whole number of tokens")
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: '{value}' is not a whole number of tokens") from None
    if not (math.isfinite(n) and n == int(n) and 0 <= n <= MAX_TOKENS):
        raise InputError(f"{where}: '{value}' is not a whole number of tokens up to {MAX_TOKENS:,}")
    return int(n)


def _seconds(value: Any, where: str, scale: float) -> float:
    try:
        t = float(value) * scale
    except (TypeError, ValueError):
        raise InputError(f"{where}: '{value}' is not a time") from None
    if not (math.isfinite(t) and t >= 0):
        raise InputError(f"{where}: '{value}' is not a time at or after 0")
    return t


def _rows(path: str, text: str) -> tuple[str, list[tuple[float, int, int]]]:
    """(format, [(time s, input tokens, output tokens)]) of a log."""
    first = text.lstrip()[:1]
    rows: list[tuple[float, int, int]] = []
    if first == "{":  # JSONL: Mooncake or roofline's own
        kind = None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {n}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(f"{path} line {n}: expected an object")
            kind = kind or next((k for k in ("mooncake", "roofline") if FORMATS[k][0] in rec), None)
            if kind is None:
                raise InputError(
                    f"{path} line {n}: neither Mooncake (timestamp, input_length, output_length) "
                    "nor roofline's JSONL (arrival_s, input_tokens, output_tokens)"
                )
            t_key, i_key, o_key = FORMATS[kind]
            for key in (t_key, i_key, o_key):
                if key not in rec:
                    raise InputError(f"{path} line {n}: no '{key}'")
            scale = 1e-3 if kind == "mooncake" else 1.0
            rows.append(
                (
                    _seconds(rec[t_key], f"{path} line {n} column {t_key}", scale),
                    _count(rec[i_key], f"{path} line {n} column {i_key}"),
                    _count(rec[o_key], f"{path} line {n} column {o_key}"),
                )
            )
        return kind or "roofline", rows
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    kind = next((k for k in ("azure", "burstgpt") if set(FORMATS[k]) <= set(header)), None)
    if kind is None:
        raise InputError(
            f"{path}: a CSV log needs the columns of Azure's traces (TIMESTAMP, ContextTokens, "
            "GeneratedTokens) or BurstGPT's (Timestamp, Request tokens, Response tokens)"
        )
    t_key, i_key, o_key = FORMATS[kind]
    for n, rec in enumerate(reader, 2):
        rec = {k.strip(): v for k, v in rec.items() if k is not None}
        at = f"{path} line {n} column {t_key}"
        t = _azure_time(rec[t_key] or "", at) if kind == "azure" else _seconds(rec[t_key], at, 1.0)
        rows.append(
            (
                t,
                _count(rec[i_key], f"{path} line {n} column {i_key}"),
                _count(rec[o_key], f"{path} line {n} column {o_key}"),
            )
        )
    return kind, rows


def read_arrivals(path: str | Path, speedup: float = 1.0) -> Workload:
    """The requests of an arrival log (module docstring), in arrival order, times from the
    first request divided by `speedup`. A request of no tokens in or out counts one (a
    prompt is at least one token, and every request answers with at least one)."""
    if not (math.isfinite(speedup) and 0 < speedup <= 1e6):
        raise InputError(f"--speedup must be a positive factor, got {speedup}")
    name = str(path)
    text = read_text(path)
    kind, rows = _rows(name, text)
    if not rows:
        raise InputError(f"{name}: no requests")
    if len(rows) > MAX_REQUESTS:
        raise InputError(f"{name}: at most {MAX_REQUESTS:,} requests, got {len(rows):,}")
    t = np.array([r[0] for r in rows])
    if float(t.max() - t.min()) > MAX_SPAN_S:
        late = int(np.argmax(t))
        raise InputError(
            f"{name}: the requests span {float(t.max() - t.min()):.3g} s (request {late + 1} "
            f"at {float(t[late]):.3g} s); a log of at most {MAX_SPAN_S:.0e} s (about 30 years) "
            "is replayed"
        )
    prompts = np.maximum(np.array([r[1] for r in rows], dtype=np.int64), 1)
    outputs = np.maximum(np.array([r[2] for r in rows], dtype=np.int64), 1)
    t_key, i_key, o_key = FORMATS[kind]
    sped = f", x{speedup:g}" if speedup != 1.0 else ""
    arrivals = f"{kind} log {name} ({t_key}, {i_key}, {o_key}{sped})"
    n = len(rows)
    span = float(t.max() - t.min()) / speedup
    prompt_lengths, output_lengths = f"{n} from {name} ({i_key})", f"{n} from {name} ({o_key})"
    w = replayed(t, prompts, outputs, arrivals, prompt_lengths, output_lengths, speedup, span)
    if kind == "mooncake":  # its hash_ids: block-level prefix hits
        from dataclasses import replace

        from roofline.serving.sim.blockcache import mooncake_prefix

        info = mooncake_prefix(text, t, name)
        w = w if info is None else replace(w, prefix=info)
    return w

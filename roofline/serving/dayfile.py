"""Reading a day's traffic (`size --traffic-curve FILE`, check's `traffic_curve:`), detected by
content and said in the curve's description:

- a rate per hour, minute or second: CSV with a header `hour,rate`, `minute,rate` or
  `time_s,rate` (rate in requests/s), or a YAML/JSON list of mappings with the same keys
  ({hour: 0, rate: 50}, ...). Each row's rate holds until the next row's time; the last row
  holds for one unit (an hour, a minute) or, for `time_s`, as long as the row before it.
- an arrival log (roofline.serving.arrivals: Azure, BurstGPT, Mooncake, roofline JSONL): the
  arrivals counted in windows of the narrowest width of WINDOWS_S (1 s to 1 h) at which every
  window holds at least MIN_PER_WINDOW (100) requests and there are at least MIN_WINDOWS (2)
  of them (the remainder past the last whole window joins it), each window's rate = its count
  / its length; a log with no such width is refused with the reason. 100 requests keep a
  window's rate within about ±10% of the process's (a Poisson count of n has a standard error
  of sqrt(n), Cox & Lewis, "The Statistical Analysis of Series of Events", 1966, ch. 2): per
  second, an 8-minute log gave SLO attainment from noise (issue 33).

A bad row is one error naming the file, line and column (or key); a negative rate is refused.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from roofline.catalog.files import read_text, yaml
from roofline.domain.errors import CatalogError, InputError
from roofline.serving.arrivals import read_arrivals
from roofline.serving.day import DayRates
from roofline.serving.workload import MAX_RATE

UNITS = {"hour": 3600.0, "minute": 60.0, "time_s": 1.0}
WINDOWS_S = (
    1.0,
    10.0,
    60.0,
    300.0,
    900.0,
    3600.0,
)  # an arrival log's window widths, narrowest first
MIN_PER_WINDOW = 100  # requests every window of a log's curve holds (module docstring)
MIN_WINDOWS = 2  # a curve of one window is a rate, not a day
MAX_INTERVALS = 100_000  # a day of seconds fits


def _number(value: Any, where: str, what: str) -> float:
    if isinstance(value, bool):
        raise InputError(f"{where}: '{value}' is not a number")
    try:
        x = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: '{value}' is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{where}: '{value}' is not a finite number")
    if x < 0:
        raise InputError(f"{where}: {what} must not be negative, got {value}")
    if what == "a rate" and x > MAX_RATE:
        raise InputError(f"{where}: a rate above {MAX_RATE:g} requests/s, got {value}")
    return x


def _from_rows(name: str, unit: str, rows: list[tuple[float, float, str]], how: str) -> DayRates:
    """rows: (time in `unit`, rate, where the time was read)."""
    if not rows:
        raise InputError(f"{name}: no rows")
    if len(rows) > MAX_INTERVALS:
        raise InputError(f"{name}: at most {MAX_INTERVALS:,} rows, got {len(rows):,}")
    scale = UNITS[unit]
    t = np.array([r[0] for r in rows]) * scale
    for k in range(1, len(rows)):
        if t[k] <= t[k - 1]:
            raise InputError(
                f"{rows[k][2]}: times must increase, {rows[k][0]:g} after {rows[k - 1][0]:g}"
            )
    if unit == "time_s" and len(rows) < 2:
        raise InputError(
            f"{name}: a time_s curve needs two rows or more (the last lasts as the one before)"
        )
    last = scale if unit != "time_s" else float(t[-1] - t[-2])
    dur = np.append(np.diff(t), last)
    rate = np.array([r[1] for r in rows])
    if not (rate > 0).any():
        raise InputError(f"{name}: every rate is 0")
    desc = f"{how} {name}: {len(rows):,} rows, {unit} and rate (requests/s)"
    return DayRates(t - t[0], dur, rate, desc)


def _csv(name: str, text: str) -> DayRates:
    reader = csv.reader(io.StringIO(text))
    header = [h.strip().lower() for h in next(reader, [])]
    unit = next((u for u in UNITS if u in header), None)
    if unit is None or "rate" not in header:
        raise InputError(
            f"{name} line 1: a curve needs the columns hour,rate or minute,rate or time_s,rate"
            " (or an arrival log's)"
        )
    ti, ri = header.index(unit), header.index("rate")
    rows = []
    for n, rec in enumerate(reader, 2):
        if not rec or all(not x.strip() for x in rec):
            continue
        if len(rec) <= max(ti, ri):
            raise InputError(f"{name} line {n}: {len(rec)} columns, the header has {len(header)}")
        t = _number(rec[ti], f"{name} line {n} column {unit}", "a time")
        r = _number(rec[ri], f"{name} line {n} column rate", "a rate")
        rows.append((t, r, f"{name} line {n} column {unit}"))
    return _from_rows(name, unit, rows, "CSV")


def _structured(name: str, text: str) -> DayRates:
    """A YAML or JSON list of {hour|minute|time_s, rate} (or a mapping with a 'curve' list);
    errors name the line and key from the YAML nodes' marks."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise CatalogError(
            f"{name}{at}: not YAML or JSON ({getattr(exc, 'problem', exc)})"
        ) from None
    if isinstance(root, yaml.MappingNode):
        items = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
        if "curve" not in items:
            raise InputError(
                f"{name} line {root.start_mark.line + 1}: expected a list of rows,"
                " or 'curve:' with one"
            )
        root = items["curve"]
    if not isinstance(root, yaml.SequenceNode):
        line = root.start_mark.line + 1 if root is not None else 1
        raise InputError(f"{name} line {line}: expected a list of {{hour|minute|time_s, rate}}")
    rows, unit, kind = [], None, "JSON" if text.lstrip()[:1] in "[{" else "YAML"
    for item in root.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            raise InputError(f"{name} line {line}: expected a mapping like {{hour: 0, rate: 5}}")
        keys = {}
        for k, v in item.value:
            if not isinstance(v, yaml.ScalarNode):
                raise InputError(
                    f"{name} line {v.start_mark.line + 1} key {k.value}: expected a number"
                )
            keys[k.value] = v
        here = next((u for u in UNITS if u in keys), None)
        extra = set(keys) - {*UNITS, "rate"}
        if extra:
            raise InputError(
                f"{name} line {line}: unknown key '{sorted(extra)[0]}'"
                " (hour, minute or time_s, and rate)"
            )
        if here is None or "rate" not in keys:
            raise InputError(f"{name} line {line}: a row needs hour, minute or time_s, and rate")
        if unit is not None and here != unit:
            raise InputError(f"{name} line {line}: key {here}, the rows before give {unit}")
        unit = here
        tv, rv = keys[here], keys["rate"]
        at = f"{name} line {tv.start_mark.line + 1} column {tv.start_mark.column + 1} key {here}"
        t = _number(tv.value, at, "a time")
        r = _number(
            rv.value,
            f"{name} line {rv.start_mark.line + 1} column {rv.start_mark.column + 1} key rate",
            "a rate",
        )
        rows.append((t, r, at))
    if unit is None:
        raise InputError(f"{name}: no rows")
    return _from_rows(name, unit, rows, kind)


def _windows(t: np.ndarray, width: float) -> np.ndarray:
    """Arrivals per whole window of `width` from the first arrival; the remainder past the last
    whole window counted in it."""
    n = max(int((t.max() - t.min()) // width), 1)
    return np.bincount(np.minimum((t - t.min()) // width, n - 1).astype(np.int64), minlength=n)


def _log(path: str | Path) -> DayRates:
    w = read_arrivals(path)
    t = np.asarray(w.arrival_s, dtype=float)
    span = float(t.max() - t.min()) if t.size else 0.0
    for width in WINDOWS_S:
        counts = _windows(t, width) if t.size else np.zeros(0, dtype=np.int64)
        if counts.size >= MIN_WINDOWS and counts.min() >= MIN_PER_WINDOW:
            break
    else:
        raise InputError(
            f"{path}: {t.size:,} arrivals over {span:,.0f} s: too few for a day's curve; no window"
            f" from 1 s to 1 h holds {MIN_PER_WINDOW} requests in each of {MIN_WINDOWS} or more"
            " windows (fewer make the rate noise): give a longer or busier log, or a rate curve"
            " (hour,rate)"
        )
    n = counts.size
    dur = np.full(n, width)
    dur[-1] = span - width * (n - 1)  # the last window runs to the last arrival
    word = {1.0: "second", 60.0: "minute", 3600.0: "hour"}.get(width, f"{width:g} s")
    desc = (
        f"{w.description['arrivals']}: {t.size:,} arrivals counted per {word} ({n:,} windows,"
        f" the narrowest of 1 s to 1 h with at least {MIN_PER_WINDOW} requests in each; the"
        " times only, lengths from --prompt/--output)"
    )
    return DayRates(np.arange(n) * width, dur, counts / dur, desc)


def read_day(path: str | Path) -> DayRates:
    """The curve of a file (module docstring)."""
    name = str(path)
    text = read_text(path)
    stripped = text.lstrip()
    first, head = stripped[:1], stripped.split("\n", 1)[0]
    if first == "{" and any(k in head for k in ('"arrival_s"', '"timestamp"')):
        return _log(path)  # a JSONL arrival log (Mooncake, roofline's)
    if first in ("[", "{", "-"):
        return _structured(name, text)
    cols = {c.strip().lower() for c in head.split(",")}
    if "timestamp" in cols:
        return _log(path)  # an Azure or BurstGPT CSV
    if not cols & set(UNITS) and ":" in head:
        return _structured(name, text)
    return _csv(name, text)

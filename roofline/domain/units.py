"""SI constants, parsing of human sizes ("32k", "80GB", "3.35TB/s", "50ms") and formatting.

Everything inside the core is SI: bytes, seconds, FLOP, FLOP/s, bytes/s. Conversions happen
only here, at the edges (catalog loading, command-line parsing, rendering).
"""

from __future__ import annotations

import math
import re

from roofline.domain.errors import InputError

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
TFLOPS = 1e12
US, MS = 1e-6, 1e-3

_COUNT_SUFFIX = {
    "": 1.0,
    "k": 1e3,
    "m": 1e6,
    "g": 1e9,
    "b": 1e9,
    "t": 1e12,
    "ki": 2.0**10,
    "mi": 2.0**20,
    "gi": 2.0**30,
}
_BYTE_SUFFIX = {
    "b": 1.0,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
}
_TIME_SUFFIX = {"s": 1.0, "ms": MS, "us": US, "µs": US, "ns": 1e-9, "min": 60.0}
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"


def parse_count(text: str | int | float, what: str = "value") -> float:
    """Parse a token or item count: 4096, "32k" (32,000), "128K", "32Ki" (32,768), "1.5M".

    Decimal suffixes are SI (k = 1000); binary ones carry an i (Ki = 1024).
    """
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in _COUNT_SUFFIX:
        raise InputError(f"cannot read {what} {text!r}: use a number such as 4096, 32k or 32Ki")
    return float(m.group(1)) * _COUNT_SUFFIX[m.group(2).lower()]


def parse_bytes(text: str | int | float, what: str = "size") -> float:
    """Parse a byte size written with its unit: "80GB" (80e9), "80GiB" (80·2^30), "512MB", "4096B".
    Text needs a unit (a bare "80" is more likely 80 GB than 80 bytes, so it is refused); a
    Python number is bytes."""
    return _with_unit(text, what, _BYTE_SUFFIX, "a size such as 80GB, 24GiB or 512MB")


def parse_memory_bytes(text: str | int | float, what: str = "memory") -> float:
    """A memory size as memory is sold: binary, so "16GB" of RAM or a "24GB" card is 16 or 24 GiB
    (GB, MB, TB read as GiB, MiB, TiB; GiB and the rest as written); a Python number is bytes."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]*)", text.strip())
    suffix = m.group(2).lower() if m else ""
    binary = {"kb": "kib", "mb": "mib", "gb": "gib", "tb": "tib"}.get(suffix)
    return parse_bytes(f"{m.group(1)}{binary}" if m and binary else text, what)


def parse_seconds(text: str | int | float, what: str = "time") -> float:
    """Parse a duration written with its unit: "50ms", "2s", "300us". Text needs a unit (a bare
    "50" would be 50 seconds where 50 ms was meant); a Python number is seconds."""
    return _with_unit(text, what, _TIME_SUFFIX, "a time such as 50ms, 2s or 300us")


# A latency limit (an SLO, a check's max TTFT or TPOT): above a microsecond, no step is
# shorter; at most an hour, past any request a serving SLO bounds.
LIMIT_MIN_S, LIMIT_MAX_S = 1e-6, 3600.0


def latency_limit(t: float, what: str) -> float:
    """`t` (seconds) as a latency limit named `what`: refused unless 1 µs <= t <= 1 hour."""
    if not (math.isfinite(t) and LIMIT_MIN_S <= t <= LIMIT_MAX_S):
        shown = fmt_seconds(t) if math.isfinite(t) and 1e-9 <= abs(t) <= 1e6 else f"{t:g} s"
        raise InputError(f"{what} must be from 1 µs to 1 hour, got {shown}")
    return t


def limit_seconds(text: str | int | float, what: str) -> float:
    """parse_seconds, then latency_limit: a latency limit written with its unit."""
    return latency_limit(parse_seconds(text, what), what)


def _with_unit(text: str | int | float, what: str, suffixes: dict[str, float], eg: str) -> float:
    """A number followed by one of `suffixes` (case-insensitive) times the suffix's scale; text
    without a unit is refused (parse_bytes, parse_seconds); a Python number is taken as is."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(_NUMBER + r"\s*([a-zA-Zµ]*)", text.strip())
    suffix = m.group(2).lower() if m else None
    if not m or suffix not in suffixes:
        hint = " (a unit is required)" if m and not suffix else ""
        raise InputError(f"cannot read {what} {text!r}{hint}: use {eg}")
    return float(m.group(1)) * suffixes[suffix]


def fmt_bytes(n: float) -> str:
    """Human bytes, decimal units (GB = 1e9), as vendors and the catalogs use."""
    for unit, scale in (("TB", TB), ("GB", GB), ("MB", MB), ("kB", KB)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_seconds(t: float) -> str:
    """Human duration: s, ms or µs with three significant figures (rounded first, so 0.9998 s
    is 1 s, not 1e+03 ms)."""
    t = float(f"{t:.3g}") if math.isfinite(t) and abs(t) < 1000 else t
    if abs(t) >= 1000:
        return f"{t:,.0f} s"
    if abs(t) >= 1:
        return f"{t:.3g} s"
    if abs(t) >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    if abs(t) >= 1e-6 or t == 0:
        return f"{t * 1e6:.3g} µs"
    return f"{t * 1e9:.3g} ns"


def fmt_rate(rate: float) -> str:
    """A rate (requests/s) as the tables print it: three significant figures (2.5664 -> 2.57),
    whole thousands with separators (12,500)."""
    return f"{rate:,.0f}" if rate >= 1000 else f"{rate:.3g}"


def fmt_count(n: float) -> str:
    """Human count with SI suffix: 8.03e9 -> '8.03 G'."""
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g}"

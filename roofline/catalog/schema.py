"""Key tables for catalog entries: one checker for every loader (catalog_entries, catalog_kernels).
A mapping is checked against {key: (accepted types, required)}: unknown keys (with a "did you
mean"), missing keys, wrong types (bool is not a number) and negative numbers fail with a
CatalogError naming the place `where` and the key. Every number is finite and at most NUM_MAX in
size (the files hold human-scale units, so no figure comes near it): arithmetic on them stays
finite. every_problem lists all the problems of one entry for `catalog validate`. Loaders of
user files (userfiles.py) use the same checker."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from roofline.domain.errors import CatalogError

NUM = (int, float)
# An entry's provenance, the same keys in every table that has them: its source (required: every
# figure in the catalog names one), notes, and (SOURCED_UNCERTAIN) the figures it marks uncertain
SOURCED: dict[str, tuple[Any, bool]] = {"source": (str, True), "notes": (str, False)}
SOURCED_UNCERTAIN: dict[str, tuple[Any, bool]] = {**SOURCED, "uncertain": (list, False)}
# no number in a file of human-scale units comes near this (a chip's 1e4 TFLOPS, a model's 1e7
# positions); above it a product of a few such figures could overflow a float
NUM_MAX = 1e12


# Sane ranges of the physical figures (human-scale units), from a microcontroller to far beyond
# any chip: a peak or a bandwidth is divided by, so a tiny one would give infinite times, and a
# huge one multiplied into an overflow. The shipped catalog spans 0.6-13,500 TFLOPS,
# 0.04-8 TB/s, 12-768 GiB and links of 7-1,414 GB/s.
SPANS: dict[str, tuple[float, float]] = {
    "dense_tflops": (1e-3, 1e6),  # 1 GFLOP/s to 1 EFLOP/s per chip
    "bandwidth_tb_s": (1e-3, 1e3),  # 1 GB/s to 1 PB/s
    "capacity_gib": (1e-3, 1e6),  # 1 MiB to 1 PiB
    "capacity_gb": (1e-3, 1e9),  # a tier may be storage
    "usable_mib": (1.0, 1e9),
    "bandwidth_gb_s": (1e-3, 1e6),  # links and tiers: 1 MB/s to 1 PB/s
    "latency_us": (0.0, 1e7),  # up to 10 s
    "step_overhead_us": (0.0, 1e7),
}


# text that is a number, with an exponent or a unit after it: "1e12", "80 GB", "3.35TB/s"
_NUMBER_TEXT = re.compile(r"[+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?\s*[a-zA-Z/µ]*")


def within(where: str, key: str, value: float) -> float:
    """`value` unless it lies outside SPANS[key] (the last part of a dotted key)."""
    lo, hi = SPANS[key.rsplit(".", 1)[-1]]
    if not lo <= value <= hi:
        raise CatalogError(f"{where}: key '{key}' must be from {lo:g} to {hi:g}, got {value:g}")
    return value


def _type_name(t: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    names.update({list: "a list", dict: "a mapping", type(None): "null"})
    if isinstance(t, tuple):
        if int in t and float in t:
            t = tuple(x for x in t if x is not int)  # "a number" covers both
        return " or ".join(dict.fromkeys(names.get(x, x.__name__) for x in t))
    return names.get(t, t.__name__)


def positive(where: str, key: str, value: float, span: tuple[float, float] | None = None) -> float:
    """`value` as a float, or a CatalogError naming `where` and `key` unless it is a finite
    number above zero (and within `span`, the key's sane range, where given)."""
    if not (value > 0 and math.isfinite(value)):
        raise CatalogError(f"{where}: key '{key}' must be a positive finite number, got {value}")
    if span is not None and not span[0] <= value <= span[1]:
        raise CatalogError(
            f"{where}: key '{key}' must be from {span[0]:g} to {span[1]:g}, got {value:g}"
        )
    return float(value)


def check(where: str, data: Any, keys: Mapping[str, tuple[Any, bool]]) -> dict[str, Any]:
    """Validate one mapping against its key table; return it unchanged."""
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: expected a mapping, got {type(data).__name__}")
    for key in data:
        if key not in keys:
            from difflib import get_close_matches  # only on an error

            close = get_close_matches(str(key), keys, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CatalogError(f"{where}: unknown key '{key}'{hint}")
    for key, (types, required) in keys.items():
        if key not in data:
            if required:
                raise CatalogError(f"{where}: missing required key '{key}'")
            continue
        value = data[key]
        is_bool = isinstance(value, bool)
        bool_ok = types is bool or (isinstance(types, tuple) and bool in types)
        if not isinstance(value, types) or (is_bool and not bool_ok):
            got = repr(value) if isinstance(value, str) else type(value).__name__
            # a number YAML read as text (1e12, or one with a unit): how to write it
            numeric = isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()) is not None
            wants_number = types in (int, float, NUM)
            hint = (
                " (write 1.0e+12 or use the human-scale unit key)"
                if numeric and wants_number
                else ""
            )
            raise CatalogError(f"{where}: key '{key}' must be {_type_name(types)}, got {got}{hint}")
        if key == "id" and not value.strip():
            raise CatalogError(f"{where}: key 'id' must not be empty")
        if isinstance(value, NUM) and not is_bool:
            if abs(value) > NUM_MAX or not math.isfinite(value):  # ints of any size compare
                got = f"{value:g}" if isinstance(value, float) else f"{len(str(value))} digits"
                raise CatalogError(
                    f"{where}: key '{key}' must be a finite number of at most {NUM_MAX:g}, "
                    f"got {got}"
                )
            if value < 0:
                raise CatalogError(f"{where}: key '{key}' must not be negative, got {value}")
    return data


_KEYED = re.compile(r"^(?P<where>.*?): (?P<unknown>unknown )?key '(?P<key>[^']+)'")


def every_problem(
    build: Callable[[str, Any], Any], where: str, entry: Any, first: str, most: int = 20
) -> list[str]:
    """Every problem of one entry (`build` raised `first`), for `catalog validate`: a problem
    with a key stops the builder, so the entry is checked again without the key (an unknown one
    as the key it was likely meant to be) until it builds or stops on a problem that names no
    key. A key found missing only because it was taken out gets a neutral stand-in (1, '?'), not
    a problem."""
    found, trial, message = [first], copy.deepcopy(entry), first
    out: list[tuple[dict, str, Any]] = []  # (mapping, key, value) taken out
    for _ in range(3 * most):
        m = _KEYED.match(message)
        if m is None or not isinstance(trial, dict) or len(found) >= most:
            break
        inner = str(m.group("where"))[len(where) :].lstrip(": ").split(": ")
        parts: list[str] = [p for p in inner if p] + str(m.group("key")).split(".")
        path, key = parts[:-1], parts[-1]
        holder: Any = trial
        for part in path:  # a nested mapping ('memory', 'efficiency', ...)
            holder = holder.get(part) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or key not in holder:
            break
        value = holder.pop(key)
        meant = re.search(r"did you mean '([^']+)'", message) if m.group("unknown") else None
        if meant and meant.group(1) not in holder:  # a typo: go on as the key it was meant to be
            holder[meant.group(1)] = value
        if not m.group("unknown"):
            out.append((holder, key, value))
        while True:
            try:
                build(where, trial)
                return found
            except CatalogError as exc:
                message = str(exc)
            # a stand-in of the wrong type (text for a number): the other stand-in, once
            wrong = [(h, k) for h, k, _ in out if h.get(k) == "?" and f"key '{k}'" in message]
            if wrong:
                h, k = wrong[0]
                h[k] = 1
                continue
            gone = [(h, k, v) for h, k, v in out if k not in h and _taken(message, k, h)]
            if not gone or isinstance(gone[0][2], (bool, dict, list)):
                break
            h, k, v = gone[0]
            h[k] = 1 if isinstance(v, NUM) else "?"  # a neutral stand-in
        if any(_taken(message, k, h) for h, k, _ in out):
            break  # only because a key was taken out
        found.append(message)
    return found


def _taken(message: str, key: str, holder: dict) -> bool:
    """A problem only because `key` was taken out of `holder` (a required key, or one of a
    required set)."""
    return f"missing required key '{key}'" in message or (
        "needs" in message and (f"'{key}'" in message or ("at least one" in message and not holder))
    )

"""Independent pieces of work over the machine's cores: the layouts of a `size` search each run
their own simulations, so they go to forked worker processes (the parent's loaded catalog and
arrays are shared copy-on-write; nothing is re-imported). One core, one item, a platform without
fork, a worker's own map, or ROOFLINE_JOBS=1: in this process, in order. Results come back in the
items' order."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_WORK: list[Any] = []  # (fn, items) of the map in flight, inherited by the forked workers


def jobs() -> int:
    """Worker processes to use: ROOFLINE_JOBS when set, else the cores this process may run on."""
    raw = os.environ.get("ROOFLINE_JOBS", "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run(i: int) -> tuple[bool, Any]:
    fn, items = _WORK[-1]
    try:
        return True, fn(items[i])
    except Exception as exc:  # handed back to the parent, which raises it
        return False, exc


def parallel_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[fn(x) for x in items], over forked workers when that can help."""
    n = min(jobs(), len(items))
    nested = multiprocessing.current_process().daemon  # a worker already: it may not fork
    if n <= 1 or nested or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items]
    _WORK.append((fn, items))
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            done = pool.map(_run, range(len(items)), chunksize=1)
    finally:
        _WORK.pop()
    out = []
    for ok, value in done:
        if not ok:
            raise value
        out.append(value)
    return out

"""Independent pieces of work over the machine's cores: the layouts of a `size` search each run
their own simulations, so they go to forked worker processes (the parent's loaded catalog and
arrays are shared copy-on-write; nothing is re-imported). One core, one item, a platform without
fork, a worker's own map, or ROOFLINE_JOBS=1: in this process, in order. Results come back in the
items' order (`parallel_map`), or as each finishes (`Workers`: items handed out one at a time,
so a caller that decides what to run next from what has finished keeps every core busy), or
later (`Background`: started now, collected in the items' order while this process does other
work, such as a `Workers` search of its own)."""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

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


def _width(items: Sequence[Any], most: int | None = None) -> int:
    """Forked workers for `items`: up to `most` (default jobs()), one per item; 1 (this process)
    on one core, for one item, inside a worker (a daemon may not fork) or on a platform without
    fork."""
    n = min(jobs() if most is None else most, len(items))
    nested = multiprocessing.current_process().daemon
    return n if n > 1 and not nested and "fork" in multiprocessing.get_all_start_methods() else 1


def _run(i: int, args: tuple = ()) -> tuple[bool, Any]:
    fn, items = _WORK[-1]
    try:
        return True, fn(items[i], *args)
    except Exception as exc:  # handed back to the parent, which raises it
        return False, exc


def parallel_map(fn: Callable[[T], R], items: Sequence[T], most: int | None = None) -> list[R]:
    """[fn(x) for x in items], over forked workers (at most `most`, default jobs()) when that
    can help."""
    n = _width(items, most)
    if n == 1:
        return [fn(x) for x in items]
    _WORK.append((fn, items))
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            done = pool.map(_run, range(len(items)), chunksize=1)
    finally:
        _WORK.pop()
    return _values(done)


def _values(done: list[tuple[bool, Any]]) -> list[Any]:
    """The workers' results in order; the first that raised is raised here."""
    out = []
    for ok, value in done:
        if not ok:
            raise value
        out.append(value)
    return out


class Workers(Generic[T, R]):
    """fn over items handed out one at a time (`submit(i, *args)`: fn(items[i], *args), the args
    sent to the worker), each result taken as it finishes (`done()`). Forked workers (`size` of
    them) where `parallel_map` would fork; otherwise (`size` 1) each submitted item runs at
    once, in this process. A context manager: the pool ends with it, work still running is
    dropped."""

    def __init__(self, fn: Callable[..., R], items: Sequence[T]) -> None:
        self.size = _width(items)
        self._fn, self._items = fn, items
        self._pool: Any = None
        self._done: queue.Queue[tuple[int, bool, Any]] = queue.Queue()
        self.running = 0  # submitted, not yet taken by done()

    def __enter__(self) -> Workers[T, R]:
        if self.size > 1:
            _WORK.append((self._fn, self._items))
            self._pool = multiprocessing.get_context("fork").Pool(self.size)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            _WORK.pop()

    def submit(self, i: int, *args: Any) -> None:
        self.running += 1
        if self._pool is None:
            try:
                self._done.put((i, True, self._fn(self._items[i], *args)))
            except Exception as exc:  # raised by done(), as a worker's is
                self._done.put((i, False, exc))
            return
        self._pool.apply_async(
            _run, (i, args), callback=lambda r: self._done.put((i, *r)),
            error_callback=lambda e: self._done.put((i, False, e)),
        )  # fmt: skip

    def done(self) -> tuple[int, bool, Any]:
        """The next finished item: (i, True, its result), or (i, False, what its run raised),
        for the caller to raise if it needs that item."""
        got = self._done.get()
        self.running -= 1
        return got


class Background(Generic[T, R]):
    """fn over items in forked workers (min(jobs(), items) of them, one item too) started now,
    while this process goes on; `result()` waits for [fn(x) for x in items]. Where
    `parallel_map` would run in this process (ROOFLINE_JOBS=1, no fork, inside a worker), the
    items run at `result()`, in order: the same results, later. A context manager: workers
    still running at its end (this process raised) are stopped."""

    def __init__(self, fn: Callable[[T], R], items: Sequence[T]) -> None:
        self._fn, self._items = fn, items
        self._pool: Any = None
        self._async: Any = None
        if items and _width([None, None]) > 1:  # where parallel_map would fork for two
            _WORK.append((fn, items))
            try:  # the workers are forked here, each holding (fn, items)
                self._pool = multiprocessing.get_context("fork").Pool(min(jobs(), len(items)))
            finally:
                _WORK.pop()
            self._async = self._pool.map_async(_run, range(len(items)), chunksize=1)

    def __enter__(self) -> Background[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def result(self) -> list[R]:
        if self._pool is None:
            return [self._fn(x) for x in self._items]
        done = self._async.get()
        self.__exit__()
        return _values(done)

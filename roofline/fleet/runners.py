"""Where a fleet's independent work items run (issue 40 item 2): on the project's one process
pool (the default: roofline.serving.workers.parallel_map, forked workers) or on Ray. A work item
is a value (an id, a number); the state every item shares is built by `prepare` from one
picklable value, once per process (on the pool, once in this process before the fork: the
workers inherit it copy-on-write, so the catalog is loaded once); each item carries its own seed
(its result is the same wherever it runs); and BLAS threads are capped at one (threadpoolctl,
set before the fork and inherited by the workers) so that N workers use N cores.

Ray (an optional extra: pip install 'roofline[ray]') runs the items on a pool of actors, each
holding its prepared state, through ray.util.ActorPool (Ray's own scheduling: nothing here
decides which node runs what). `address` is the cluster's (the CLI reads RAY_ADDRESS; None
starts a local instance of `workers` CPUs, its session files in a temporary directory, and
stops it and removes them after)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from roofline.domain.errors import InputError
from roofline.serving.workers import parallel_map

BACKENDS = ("pool", "ray")


def _cap_threads() -> Any:
    """BLAS and OpenMP pools limited to one thread in this process (kept alive by the caller)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _pool(prepare, fn, shared, items: Sequence[Any], workers: int) -> list[Any]:
    """The items over serving.workers.parallel_map (at most `workers` forked workers, or in
    this process where it would not fork), the state prepared once here (module docstring)."""
    limiter = _cap_threads()
    try:
        return parallel_map(partial(fn, prepare(shared)), list(items), max(1, workers))
    finally:
        limiter.restore_original_limits()


def _ray(prepare, fn, shared, items: Sequence[Any], workers: int, address: str | None) -> list:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        raise InputError("--backend ray needs Ray: pip install 'roofline[ray]'") from None

    class Worker:
        def __init__(self, prepare, shared):
            self.limiter = _cap_threads()
            self.state = prepare(shared)

        def run(self, fn, item):
            return fn(self.state, item)

    started = not ray.is_initialized()
    scratch: str | None = None
    if started:
        quiet: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "ERROR",
        }
        if address is None:  # its session files in a directory of its own, removed after
            scratch = tempfile.mkdtemp(prefix="rlray")  # short: socket paths < 108 characters
            ray.init(num_cpus=workers, _temp_dir=scratch, **quiet)
        else:
            ray.init(address=address, **quiet)
    try:
        remote = ray.remote(num_cpus=1)(Worker)
        ref = ray.put(shared)
        actors = [remote.remote(prepare, ref) for _ in range(max(1, min(workers, len(items))))]
        return list(ActorPool(actors).map(lambda a, x: a.run.remote(fn, x), list(items)))
    finally:
        if started:
            ray.shutdown()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def run(
    prepare: Callable[[Any], Any],
    fn: Callable[[Any, Any], Any],
    shared: Any,
    items: Sequence[Any],
    backend: str = "pool",
    workers: int = 1,
    address: str | None = None,
) -> list[Any]:
    """[fn(prepare(shared), x) for x in items], in the items' order, on `backend` with
    `workers` workers (module docstring)."""
    if backend not in BACKENDS:
        raise InputError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "ray":
        return _ray(prepare, fn, shared, items, workers, address)
    return _pool(prepare, fn, shared, items, workers)

"""Where a fleet's independent work items run (issue 40 item 2): in this process, on a process
pool (the default) or on Ray. A work item is a value (an id, a number), the state every item
shares is built once per worker by `prepare` from one picklable value (a worker loads the
catalog once), each item carries its own seed (its result is the same wherever it runs), and
each worker caps its BLAS threads at one (threadpoolctl) so that N workers use N cores.

Ray (an optional extra: pip install 'roofline[ray]') runs the items on a pool of actors, each
holding its prepared state, through ray.util.ActorPool (Ray's own scheduling: nothing here
decides which node runs what). `address` is the cluster's (the CLI reads RAY_ADDRESS; None
starts a local instance of `workers` CPUs and stops it after)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

from roofline.domain.errors import InputError

BACKENDS = ("pool", "ray")
_STATE: list[Any] = []  # a pool worker's prepared state, and its thread limiter


def _cap_threads() -> Any:
    """BLAS and OpenMP pools limited to one thread in this process (kept alive by the caller)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _init(prepare: Callable[[Any], Any], shared: Any) -> None:
    _STATE[:] = [prepare(shared), _cap_threads()]


def _call(job: tuple[Callable[[Any, Any], Any], Any]) -> Any:
    fn, item = job
    return fn(_STATE[0], item)


def _pool(prepare, fn, shared, items: Sequence[Any], workers: int) -> list[Any]:
    nested = multiprocessing.current_process().daemon  # a pool's worker may not fork its own
    if workers <= 1 or len(items) <= 1 or nested:
        limiter = _cap_threads()
        try:
            state = prepare(shared)
            return [fn(state, x) for x in items]
        finally:
            limiter.restore_original_limits()
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ctx.Pool(min(workers, len(items)), _init, (prepare, shared)) as pool:
        return pool.map(_call, [(fn, x) for x in items], chunksize=1)


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
    if started:
        quiet: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "ERROR",
        }
        if address is None:
            ray.init(num_cpus=workers, **quiet)
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


__all__ = ["BACKENDS", "run"]

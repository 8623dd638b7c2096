"""Work the simulator keeps for the same inputs: a run again inside `shared_runs`, step tables.

Every command runs in one block (cli.startup.guarded), and a block opened inside another shares
the outer one's runs: a document generator that runs every command of the documents in one
process opens one around them all. Inside one command a repeated simulation is rare (about 1%
of the simulated time of the project's 181-line md5 check; a workload file of one class sized
together and apart, size --workload, repeats every run); across the commands of README.md and
docs/*.md, 332 of 2,876 simulations repeat one before them (5.6 of 33 CPU-s, in one process).

The key is the inputs exactly: the step model's tables by identity (StepModel keeps the tables of
a configuration it built and a model built again shares them; the kept objects are held beside
the record, so their ids cannot be reused while it is kept) and its scalars by value, and every
other input pickled (request arrays' bytes, the engine's rules, the front end, prefixes, tiers,
the SLO stop). Nothing writes into a record after its run, so callers share it. The store is the
caller's, emptied oldest first past `limit_bytes` of arrays and keys.

A step model's tables (StepModel: the roofline core evaluated on its grids) are kept for the
last TABLES_KEPT configurations, by the identity of the model, accelerator and efficiencies
(held beside them) and the values of the rest: a replica built again (the ideal and expected
runs of a benchmark point each build theirs, a validation's cases share a layout) copies them.
Nothing writes into a table after it is built (speculative_steps rebinds its own copies)."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from roofline.serving.sim.slostop import SloMissed

if TYPE_CHECKING:
    from roofline.serving.sim.record import RunRecord


class _Block:
    """An open block's store (key -> (kept objects, record, bytes)), its limit and the bytes
    the store holds, counted once when the block opens and kept as runs come and go."""

    def __init__(self, store: dict[tuple, tuple[Any, Any, int]], limit_bytes: int) -> None:
        self.store, self.limit_bytes = store, limit_bytes
        self.total_bytes = sum(v[2] for v in store.values())


_OPEN: list[_Block] = []


@contextlib.contextmanager
def shared_runs(store: dict | None = None, limit_bytes: int = 64 << 20) -> Iterator[dict]:
    """Within the block, simulations with the same inputs run once (module docstring); `store`:
    the runs kept (None: the enclosing block's, with its limit, or a new one)."""
    if store is None and _OPEN:
        block = _OPEN[-1]
    else:
        block = _Block({} if store is None else store, limit_bytes)
    _OPEN.append(block)
    try:
        yield block.store
    finally:
        _OPEN.pop()


def _steps_key(steps: Any, keep: list[Any]) -> tuple:
    """The step model by its class, its scalars and the identity of its tables (held in `keep`);
    its own derived lookups (names starting with _) are left out."""
    parts: list[Any] = [type(steps)]
    for name, value in sorted(vars(steps).items()):
        if name.startswith("_"):
            continue
        try:
            hash(value)
            parts.append((name, value))
        except TypeError:  # an array, a list: by identity, kept alive beside the record
            keep.append(value)
            parts.append((name, id(value)))
    return tuple(parts)


def remembered(steps: Any, inputs: tuple, simulate: Callable[[], RunRecord]) -> RunRecord:
    """simulate(), or inside `shared_runs` the record of a run with the same `steps` and
    `inputs` (the rest of simulate_requests's arguments) kept before."""
    if not _OPEN:
        return simulate()
    block = _OPEN[-1]
    store = block.store
    keep: list[Any] = []
    try:
        key = (_steps_key(steps, keep), pickle.dumps(inputs, protocol=5))
        hit = store.get(key)
    except (TypeError, pickle.PicklingError, AttributeError):  # an input that cannot be keyed
        return simulate()
    if hit is None:
        try:
            out: RunRecord | str = simulate()
        except SloMissed as miss:
            out = miss.metric
        size = len(key[1]) + (0 if isinstance(out, str) else _nbytes(out))
        hit = store[key] = (keep, out, size)
        block.total_bytes += size
        while block.total_bytes > block.limit_bytes and len(store) > 1:  # oldest first
            block.total_bytes -= store.pop(next(iter(store)))[2]
    if isinstance(hit[1], str):
        raise SloMissed(hit[1])
    return hit[1]


def _nbytes(rec: RunRecord) -> int:
    """The bytes of the record's arrays."""
    return sum(getattr(v, "nbytes", 0) for v in vars(rec).values())


_TABLES: dict[tuple, tuple[tuple, dict[str, Any]]] = {}
TABLES_KEPT = 16


def kept_tables(cls: Any, args: tuple) -> dict[str, Any]:
    """The attributes a StepModel (`cls`) builds from `args` (model, hw, dep, max_batch, max_len,
    ideal, eff, max_tokens, engine: cls._build), or those kept for the same (module docstring)."""

    def build() -> dict[str, Any]:
        fresh = cls.__new__(cls)
        fresh._build(*args)
        return dict(fresh.__dict__)

    model, hw, dep, batch, length, ideal, eff, tokens, engine = args
    key = (id(model), id(hw), id(eff), dep, batch, length, ideal, tokens, engine)
    try:
        hit = _TABLES.get(key)
    except TypeError:  # a deployment that does not hash: built, not kept
        return build()
    if hit is None:
        if len(_TABLES) >= TABLES_KEPT:
            _TABLES.clear()
        hit = _TABLES[key] = ((model, hw, eff), build())
    return hit[1]

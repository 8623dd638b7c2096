"""An identity-keyed memo for values derived from catalog objects (frozen dataclasses that are
costly to hash or compare): the kernel view, the op plan, the calibration, a builder's layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def cached_by_identity(
    store: dict[tuple, tuple[tuple, Any]], objs: tuple, extra: tuple, build: Callable[[], Any]
) -> Any:
    """build(), memoised on the identity of `objs` and the hashable `extra`: the objects are kept
    beside the value, so their ids cannot be reused by others while cached; the store is emptied
    past 256 entries."""
    key = (*map(id, objs), *extra)
    hit = store.get(key)
    if hit is not None:  # the same objects: theirs are kept alive in the store, so ids are theirs
        return hit[1]
    value = build()
    if len(store) > 256:
        store.clear()
    store[key] = (objs, value)
    return value

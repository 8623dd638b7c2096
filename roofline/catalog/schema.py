"""Key tables for catalog entries: one checker for every loader (catalog_entries, catalog_kernels).
A mapping is checked against {key: (accepted types, required)}: unknown keys (with a "did you
mean"), missing keys, wrong types (bool is not a number) and negative numbers fail with a
CatalogError naming the place `where` and the key. Loaders of user files (userfiles.py) use
the same checker."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from roofline.domain.errors import CatalogError

NUM = (int, float)


def _type_name(t: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    names.update({list: "a list", dict: "a mapping", type(None): "null"})
    if isinstance(t, tuple):
        if int in t and float in t:
            t = tuple(x for x in t if x is not int)  # "a number" covers both
        return " or ".join(dict.fromkeys(names.get(x, x.__name__) for x in t))
    return names.get(t, t.__name__)


def positive(where: str, key: str, value: float) -> float:
    """`value` as a float, or a CatalogError naming `where` and `key` unless it is a finite
    number above zero."""
    if not (value > 0 and math.isfinite(value)):
        raise CatalogError(f"{where}: key '{key}' must be a positive finite number, got {value}")
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
            hint = (
                " (write 1.0e+12 or use the human-scale unit key)" if isinstance(value, str) else ""
            )
            raise CatalogError(f"{where}: key '{key}' must be {_type_name(types)}, got {got}{hint}")
        if isinstance(value, NUM) and not is_bool and value < 0:
            raise CatalogError(f"{where}: key '{key}' must not be negative, got {value}")
    return data

"""Compiled dataclass methods, kept between runs as Python keeps a module's bytecode.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__` (and, frozen,
`__setattr__`, `__delattr__`) as source text and compiles it every time the class is defined:
one `roofline analyze` defines some 35 classes and compiles about 200 such functions, about a
fifth of its time beyond the bare imports. A compiled function depends only on its text and the
interpreter, so while a command runs, `dataclasses` compiles through `cached_exec`: the code
objects are kept (marshal, the format of a .pyc) in the user cache directory keyed by their
text, and a later run only executes them. The classes come out identical; a missing, broken or
unwritable cache only costs the compiles. Each command has its own file (`scope`), so a query
reads only the code of the classes its own modules define.

Only the `dataclasses` module's own name `exec` is shadowed, and only inside
`cached_dataclass_code()` (the CLI's main): importing roofline as a library changes nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

from roofline.catalog.cache import cache_dir

MAX_ENTRIES = 4096  # beyond this, a save keeps only the texts this run used


def cache_path(scope: str = "all") -> Path | None:
    """`<cache dir>/dataclass-code-<interpreter tag>-<scope>.marshal`: marshal's format and the
    bytecode are the interpreter's own, so each version (and optimisation level) has its files;
    `scope` (a command's name) keeps one command's classes apart from the others'."""
    root = cache_dir()
    if root is None:
        return None
    build = f"{sys.version}|{sys.flags.optimize}|{dataclasses.__file__}"
    tag = f"{sys.implementation.cache_tag}-{zlib.crc32(build.encode()):08x}"
    return root / f"dataclass-code-{tag}-{scope}.marshal"


def _read(where: Path) -> dict[str, CodeType]:
    try:
        loaded = marshal.loads(where.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _write(where: Path, codes: dict[str, CodeType]) -> None:
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(codes))
        tmp.replace(where)
    except (OSError, ValueError):
        pass  # a read-only cache directory only costs speed


class CodeCache:
    """Code objects by source text; `exec` stands in for the builtin where dataclasses calls it."""

    def __init__(self, known: dict[str, CodeType]) -> None:
        self.known = known
        self.used: dict[str, CodeType] = {}
        self.compiled = 0

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)
            return
        code = self.known.get(source)
        if code is None:
            # what exec(source) compiles: dataclasses has no __future__ imports to inherit
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.known[source] = code
            self.compiled += 1
        self.used[source] = code
        builtins.exec(code, globals, locals)

    def to_save(self) -> dict[str, CodeType]:
        return self.known if len(self.known) <= MAX_ENTRIES else self.used


@contextlib.contextmanager
def cached_dataclass_code(scope: str = "all") -> Iterator[CodeCache | None]:
    """Within the block, dataclasses compile their methods through the cache of `scope` (None:
    caching is off, ROOFLINE_NO_CACHE)."""
    where = cache_path(scope)
    if where is None or "exec" in vars(dataclasses):
        yield None
        return
    cache = CodeCache(_read(where))
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        yield cache
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
        if cache.compiled:
            _write(where, cache.to_save())

"""The user cache directory: parsed catalog files and the resolved shipped catalog, so a query
reads one pickle instead of parsing every YAML file (roofline.catalog.load uses both).

Where: ROOFLINE_CACHE_DIR, else XDG_CACHE_HOME/roofline, else ~/.cache/roofline;
ROOFLINE_NO_CACHE=1 turns caching off. A cache is only ever an optimisation: a missing, stale,
broken or unwritable one is rebuilt or skipped silently, never an error.

Every file name carries two tags: the install (the directory the package runs from, so two
installs or checkouts side by side keep their own caches instead of evicting each other's) and
the code (modification times of the modules whose classes the pickles hold, so a code change
never unpickles objects of an older layout). Writing a cache deletes the same install's caches of
older code.
"""

from __future__ import annotations

import os
import pickle
import zlib
from functools import cache
from pathlib import Path
from typing import Any

CODE = Path(__file__).resolve().parents[1]  # roofline/
# the modules that define (or build) the objects the pickles hold
PICKLED_MODULES = (
    "catalog/cache.py",
    "catalog/load.py",
    "catalog/entries.py",
    "catalog/kernels.py",
    "domain/hardware.py",
    "domain/model.py",
    "domain/precision.py",
    "domain/units.py",
    "timing/attention.py",
    "timing/collectives.py",
    "timing/gemm.py",
    "timing/host.py",
    "serving/cost.py",  # the prices snapshot's Price
)


def cache_dir() -> Path | None:
    """The cache directory (not created here), or None when caching is off."""
    if os.environ.get("ROOFLINE_NO_CACHE"):
        return None
    own = os.environ.get("ROOFLINE_CACHE_DIR")
    if own:
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "roofline"


def _crc(text: str) -> str:
    return f"{zlib.crc32(text.encode()):08x}"


@cache
def _code_tag() -> str | None:
    """`<install>-<code>` (see the module docstring); None when the code's files cannot be read
    (a zipped install). Once per process: the code does not change under a running program."""
    try:
        stamp = "-".join(str((CODE / f).stat().st_mtime_ns) for f in PICKLED_MODULES)
    except OSError:
        return None
    return f"{_crc(str(CODE))}-{_crc(stamp)}"


def cache_file(kind: str) -> Path | None:
    """`<dir>/<kind>-<install>-<code>.pickle`, or None when caching is off or the code's files
    cannot be read (a zipped install)."""
    root = cache_dir()
    tag = _code_tag() if root is not None else None
    if root is None or tag is None:
        return None
    return root / f"{kind}-{tag}.pickle"


def read_pickle(where: Path | None) -> Any:
    """The object pickled at `where`, or None (no file, a broken file or one of older code)."""
    if where is None or not where.is_file():
        return None
    try:
        with where.open("rb") as f:
            return pickle.load(f)
    except Exception:  # a stale or broken cache is rebuilt, never an error
        return None


def write_pickle(where: Path | None, value: Any) -> None:
    """Pickle `value` to `where` atomically (a temporary file renamed over it), then delete this
    install's files of the same kind written by older code (and the untagged files of earlier
    versions). A read-only or unusable directory only costs speed."""
    if where is None:
        return
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(where)
        kind, install, _ = where.stem.split("-")
        for old in [
            *where.parent.glob(f"{kind}-{install}-*.pickle"),
            *where.parent.glob(f"{kind}-????????.pickle"),  # untagged: earlier versions
        ]:
            if old != where:
                old.unlink(missing_ok=True)
    except OSError:
        pass


class ParseCache:
    """Parsed catalog files keyed by each file's path, modification time and size, so a query
    parses only the files that changed since the last one (a cold start parses them all). Only
    files without problems are put here, so errors are always reported."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[tuple[int, int], Any]] | None = None
        self.dirty = False

    @staticmethod
    def path() -> Path | None:
        return cache_file("catalog")

    def _load(self) -> dict[str, tuple[tuple[int, int], Any]]:
        if self.entries is None:
            loaded = read_pickle(self.path())
            self.entries = loaded if isinstance(loaded, dict) else {}
        return self.entries

    def get(self, path: Path) -> Any:
        st = path.stat()
        hit = self._load().get(str(path))
        return hit[1] if hit and hit[0] == (st.st_mtime_ns, st.st_size) else None

    def put(self, path: Path, sections: Any) -> None:
        st = path.stat()
        self._load()[str(path)] = ((st.st_mtime_ns, st.st_size), sections)
        self.dirty = True

    def save(self) -> None:
        if self.dirty:
            write_pickle(self.path(), self.entries)
            self.dirty = False


def files_key(files: list[Path]) -> tuple[tuple[str, int, int], ...] | None:
    """(path, modification time, size) of each file: what a snapshot of them is valid for."""
    try:
        return tuple((str(p), (st := p.stat()).st_mtime_ns, st.st_size) for p in files)
    except OSError:
        return None


def tree_key(
    dirs: list[Path], suffixes: tuple[str, ...]
) -> tuple[tuple[str, int, int], ...] | None:
    """files_key of every file ending in one of `suffixes` below `dirs` (a missing directory
    holds none; symlinked directories are not entered, as pathlib's rglob does not), listed with
    os.scandir: what a snapshot of a directory tree is valid for, found for less than rglob
    costs."""
    found: list[tuple[str, int, int]] = []
    stack = [str(d) for d in dirs if os.path.isdir(d)]
    try:
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir() and not entry.is_symlink():
                        stack.append(entry.path)
                    elif entry.name.endswith(suffixes):
                        st = entry.stat()
                        found.append((entry.path, st.st_mtime_ns, st.st_size))
    except OSError:
        return None
    return tuple(sorted(found))


def load_snapshot(kind: str, key: Any) -> Any:
    """The object saved by save_snapshot(kind, key, ...) for an equal key, else None."""
    if key is None:
        return None
    hit = read_pickle(cache_file(kind))
    if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == key:
        return hit[1]
    return None


def save_snapshot(kind: str, key: Any, value: Any) -> None:
    if key is not None:
        write_pickle(cache_file(kind), (key, value))

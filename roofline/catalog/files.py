"""Reading the files a user names (catalogs, config.json, check specs, cases, length lists):
every I/O or decoding problem becomes one CatalogError line naming the file, so no command ends
in a traceback because a path is wrong, a directory, unreadable or not UTF-8 text."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from roofline.domain.errors import CatalogError, InputError


def read_text(path: str | Path, stdin_dash: bool = False) -> str:
    """The UTF-8 text of a file ('-' is standard input where `stdin_dash`)."""
    if stdin_dash and str(path) == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError:
            raise CatalogError("<stdin>: is not UTF-8 text") from None
    p = Path(path)
    if p.exists() and not p.is_dir() and not p.is_file():  # a FIFO or a device would block
        raise CatalogError(f"{p}: is not a regular file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CatalogError(f"{p}: is not UTF-8 text") from None
    except IsADirectoryError:
        raise CatalogError(f"{p}: is a directory, not a file") from None
    except FileNotFoundError:
        raise CatalogError(f"{p}: no such file") from None
    except OSError as exc:
        raise CatalogError(f"{p}: cannot read ({exc.strerror or exc})") from None


class _LazyYaml:
    """PyYAML, imported on first use: a catalog served from the parse cache never needs it."""

    def __getattr__(self, name: str) -> Any:
        import yaml

        return getattr(yaml, name)


yaml = _LazyYaml()


def safe_load_yaml(text: str) -> Any:
    """yaml.safe_load, through libyaml's SafeLoader when it is available (ten times faster; the
    same safe subset)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_jsonl(path: str | Path) -> list[Any]:
    """One JSON value per non-empty line (a request trace); errors name the line."""
    path = Path(path)
    lines = read_text(path).splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {i + 1}: not JSON ({exc.msg})") from None
    return out

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
    """The UTF-8 text of a file ('-' is standard input where `stdin_dash`). Bytes are decoded
    strictly and text holding NUL bytes is refused as binary, so a wrong file is one line
    naming it, never a traceback or a parse error deep inside."""
    if stdin_dash and str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)  # bytes: the stream's own errors= is moot
        try:
            raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
        except UnicodeError:
            raise CatalogError("<stdin>: is not UTF-8 text") from None
        except OSError as exc:
            raise CatalogError(f"<stdin>: cannot read ({exc.strerror or exc})") from None
        return _decoded(raw, "<stdin>")
    p = Path(path)
    try:
        if p.exists() and not p.is_dir() and not p.is_file():  # a FIFO or a device would block
            raise CatalogError(f"{p}: is not a regular file")
        raw = p.read_bytes()
    except IsADirectoryError:
        raise CatalogError(f"{p}: is a directory, not a file") from None
    except FileNotFoundError:
        raise CatalogError(f"{p}: no such file") from None
    except OSError as exc:
        raise CatalogError(f"{p}: cannot read ({exc.strerror or exc})") from None
    return _decoded(raw, str(p))


def _decoded(raw: bytes, name: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(f"{name}: is not UTF-8 text") from None
    if "\x00" in text:
        raise CatalogError(f"{name}: is binary, not text (it holds NUL bytes)")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as open()


class _LazyYaml:
    """PyYAML, imported on first use: a catalog served from the parse cache never needs it."""

    def __getattr__(self, name: str) -> Any:
        import yaml

        return getattr(yaml, name)


yaml = _LazyYaml()


def safe_load_yaml(text: str) -> Any:
    """yaml.safe_load, through libyaml's SafeLoader when it is available (ten times faster; the
    same safe subset). A scalar the constructor cannot build (an integer of 5,000 digits, the
    date 2024-13-45) is a YAMLError too, so every caller refuses it as it refuses bad syntax."""
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except ValueError as exc:
        raise yaml.YAMLError(_first(exc)) from None


def _first(exc: Exception) -> str:
    """An exception's message up to its advice (int()'s "; use sys.set_int_max_str_digits()")."""
    return str(exc).split(";")[0].splitlines()[0] if str(exc) else type(exc).__name__


def parse_yaml(text: str, where: str, kind: str = "YAML", at_line: bool = False) -> Any:
    """safe_load_yaml(text); a syntax error is one CatalogError "`where`: is not valid `kind`
    (the parser's problem)", naming the line after `where` when `at_line`."""
    try:
        return safe_load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) if at_line else None
        line = f" line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", exc)
        raise CatalogError(f"{where}:{line} is not valid {kind} ({problem})") from None


def read_yaml(path: str | Path) -> Any:
    """A user's YAML (or JSON) file parsed; a syntax error is one InputError line naming the file
    (the reading errors are read_text's)."""
    text = read_text(path)
    try:
        return safe_load_yaml(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None


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
            except ValueError as exc:  # an integer too long for int()
                raise InputError(f"{path} line {i + 1}: not JSON ({_first(exc)})") from None
    return out

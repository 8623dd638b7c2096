"""Presentation core: the JSON envelope, row formats, consoles and number formatting.

Every command builds one JSON-ready dict (keys carry units, numbers are finite, order is fixed);
`--format json` prints it, `--format table` draws tables from the same dict (see layout.py), so
the two never disagree.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rich.console import Console

from roofline.domain.units import fmt_bytes, fmt_seconds

SCHEMA_VERSION = 1
MIN_WIDTH = 60  # narrowest layout we promise; narrower or nonsense COLUMNS clamps or falls back
FALLBACK_WIDTH = 80  # what Rich uses for pipes, files and CI logs


def console_width() -> int:
    """The width to lay out for: COLUMNS when it is a number ≥ 60 (1-59 clamp to 60), else the
    terminal's width, else 80. COLUMNS=0, negative or garbage never yields a zero-width console."""
    raw = os.environ.get("COLUMNS", "").strip()
    try:
        cols = int(raw)
    except ValueError:
        cols = 0
    if cols > 0:
        return max(cols, MIN_WIDTH)
    try:
        if sys.stdout.isatty():
            return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH)
    except (OSError, ValueError, AttributeError):
        pass
    return FALLBACK_WIDTH


def stdout_console() -> Console:
    from rich.console import Console  # rich only when something is drawn

    return Console(file=sys.stdout, width=console_width(), highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, width=console_width(), highlight=False, soft_wrap=True)


def to_jsonable(value: Any, nonfinite: list[str] | None = None, path: str = "") -> Any:
    """numpy scalars/arrays → Python; NaN/inf → None (JSON has neither), their keys collected in
    `nonfinite` so the caller can say why a number is null. One pass without paths first (a
    sweep's document holds millions of values); the paths are traced only when one is null."""
    bad: list[int] = []
    out = _plain(value, bad)
    if bad and nonfinite is not None:
        _traced(value, nonfinite, path)
    return out


_PLAIN = frozenset((str, int, bool, type(None)))


def _plain(value: Any, bad: list[int]) -> Any:
    """to_jsonable without the paths: `bad` grows by one per non-finite number."""
    t = type(value)
    if t is float:
        if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            return value
        bad.append(1)
        return None
    if t in _PLAIN:
        return value
    if t is list or t is tuple:
        return [
            x if type(x) in _PLAIN or (type(x) is float and x - x == 0.0) else _plain(x, bad)
            for x in value
        ]
    if t is dict or isinstance(value, Mapping):
        return {
            str(k): x
            if type(x) in _PLAIN or (type(x) is float and x - x == 0.0)
            else _plain(x, bad)
            for k, x in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_plain(x, bad) for x in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist(), bad)
    if isinstance(value, np.generic):
        return _plain(value.item(), bad)
    if isinstance(value, float) and not math.isfinite(value):
        bad.append(1)
        return None
    return value


def _traced(value: Any, nonfinite: list[str], path: str = "") -> None:
    """Append the path of each non-finite number in `value` to `nonfinite` (to_jsonable's paths,
    read only when _plain met one)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _traced(v, nonfinite, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _traced(v, nonfinite, f"{path}[{i}]")
    elif isinstance(value, np.ndarray):
        _traced(value.tolist(), nonfinite, path)
    elif isinstance(value, np.generic):
        _traced(value.item(), nonfinite, path)
    elif isinstance(value, float) and not math.isfinite(value):
        nonfinite.append(path)


def emit_json(doc: Mapping[str, Any]) -> None:
    _warn_nonfinite()
    sys.stdout.write(json_text(doc) + "\n")


ROWS_AT_ONCE = 256  # a top-level list of at least this many flat rows is written by columns


def json_text(doc: Mapping[str, Any]) -> str:
    """json.dumps(to_jsonable(doc), indent=2), byte for byte, in a fraction of the time for a
    document holding long lists of flat rows (a sweep's points): json's indented encoder is pure
    Python, so such a list is written column by column here (rows_text, which takes plain finite
    values as they are) and the rest by json."""
    rows = {
        k: v
        for k, v in doc.items()
        if isinstance(k, str) and type(v) is list and len(v) >= ROWS_AT_ONCE
    }
    marks = {k: f"\x00rows {i}\x00" for i, k in enumerate(rows)}
    rest = to_jsonable({k: marks.get(k, v) for k, v in doc.items()})
    text = json.dumps(rest, indent=2, allow_nan=False)
    for k, mark in marks.items():
        text = text.replace(json.dumps(mark), rows_text(rows[k], 1), 1)
    return text


_ENCODE: dict[type, Callable[[Any], str]] = {
    float: float.__repr__,  # json's own forms of a finite float, an int, a string
    int: int.__repr__,
    str: json.encoder.encode_basestring_ascii,  # type: ignore[attr-defined]
    bool: lambda x: "true" if x else "false",
    type(None): lambda x: "null",
}


def rows_text(rows: list[Any], level: int) -> str:
    """A list as json.dumps(indent=2) writes it `level` levels deep; rows that are flat mappings
    with one key order are encoded column by column, anything else by json itself."""
    keys = tuple(rows[0]) if type(rows[0]) is dict else None
    if (
        not keys
        or any(type(k) is not str for k in keys)
        or any(type(r) is not dict or tuple(r) != keys for r in rows)
    ):
        return _nested(json.dumps(to_jsonable(rows), indent=2, allow_nan=False), level)
    cols = []
    for k in keys:
        col = [r[k] for r in rows]
        kinds = set(map(type, col))
        if not kinds <= _ENCODE.keys() or (float in kinds and not _finite(col)):
            return _nested(json.dumps(to_jsonable(rows), indent=2, allow_nan=False), level)
        if len(kinds) == 1:
            cols.append(list(map(_ENCODE[kinds.pop()], col)))
        else:
            cols.append([_ENCODE[type(x)](x) for x in col])
    pad = "  " * (level + 1)
    fields = ",\n".join(
        f"{pad}  {_braced(json.encoder.encode_basestring_ascii(k))}: {{}}"  # type: ignore[attr-defined]
        for k in keys
    )
    row = f"{pad}{{{{\n{fields}\n{pad}}}}}"
    return (
        "[\n" + ",\n".join(row.format(*v) for v in zip(*cols, strict=True)) + f"\n{'  ' * level}]"
    )


def _braced(text: str) -> str:
    """`text` as a literal inside a str.format template."""
    return text.replace("{", "{{").replace("}", "}}")


def _finite(values: Iterable[Any]) -> bool:
    """Every float among `values` is finite (inf - inf and nan - nan are nan)."""
    return all(x - x == 0.0 for x in values if type(x) is float)


def _nested(text: str, level: int) -> str:
    """json's indented text of a value, moved `level` levels deeper (its first line in place)."""
    return text.replace("\n", "\n" + "  " * level)


class RowFmt(str, Enum):
    """Output formats for commands whose results are rows."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"


def _cell(value: Any) -> Any:
    """A flat cell for CSV/Markdown: nested values become compact JSON."""
    value = to_jsonable(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else value


VERBOSE = {"on": False}  # -v: every input and its provenance under a table (set per command)


def set_verbose(on: bool) -> None:
    VERBOSE["on"] = on


def _md_cell(value: Any) -> str:
    """A Markdown cell for people reading a pull request: yes/no, numbers to 4 significant
    digits (CSV and JSON keep every digit)."""
    v = _cell(value)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e15 else f"{v:.4g}"
    return str(v).replace("|", "\\|")


def emit(
    doc: Mapping[str, Any],
    fmt: RowFmt,
    rows: Sequence[Mapping[str, Any]],
    table: Callable[[Mapping[str, Any]], None],
) -> None:
    """Write a result: the whole document (json), one object per row (jsonl), a CSV with a
    header, a Markdown table for pull requests, or Rich tables."""
    out = sys.stdout
    if fmt is RowFmt.json:
        emit_json(doc)
    elif fmt is RowFmt.jsonl:
        _warn_nonfinite()
        for r in rows:
            try:  # fast path: rows of plain finite values
                line = json.dumps(r, allow_nan=False)
            except (TypeError, ValueError):
                line = json.dumps(to_jsonable(r), allow_nan=False)
            out.write(line + "\n")
    elif fmt in (RowFmt.csv, RowFmt.markdown):
        _warn_nonfinite()
        fields = list(dict.fromkeys(k for r in rows for k in r))
        if fmt is RowFmt.csv:
            import csv  # only for --format csv

            w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: _cell(r.get(k)) for k in fields})
        else:
            out.write("| " + " | ".join(fields) + " |\n")
            out.write("|" + "|".join("---" for _ in fields) + "|\n")
            for r in rows:
                cells = (_md_cell(r.get(k)) for k in fields)
                out.write("| " + " | ".join(cells) + " |\n")
    else:
        _NONFINITE.clear()
        table(doc)


# the user calibrations (a --catalog directory's `calibrations:`, or a spec's `catalog:`) the
# command's catalog applies: {file, sha256, figures} per file, set by the CLI when it loads one
USER_CALIBRATIONS: list[dict[str, Any]] = []


def set_user_calibrations(items: Sequence[Mapping[str, Any]], add: bool = False) -> None:
    """The command's user calibrations (`add`: beside those already set, e.g. a spec's)."""
    keep = USER_CALIBRATIONS if add else []
    USER_CALIBRATIONS[:] = keep + [dict(i) for i in items if i not in keep]


def user_calibration(inputs: Mapping[str, Any]) -> dict[str, Any] | list[dict[str, Any]] | None:
    """The user calibration a document was computed with: the files whose figures name one of
    its accelerators (any, when the inputs name none), as {file, sha256, figures}; a list when
    figures come from more than one file; None without one."""
    hw = inputs.get("hardware")
    chips = {hw} if isinstance(hw, str) else set(hw or [])
    used = [
        u
        for u in USER_CALIBRATIONS
        if not chips or any(f["hardware"] in chips for f in u["figures"])
    ]
    return (used[0] if len(used) == 1 else used) or None


def calibration_line(cal: dict[str, Any] | list[dict[str, Any]]) -> str:
    """The footer that names a user calibration: its file, hash and figures."""
    out = []
    for u in cal if isinstance(cal, list) else [cal]:
        figs = "; ".join(
            f"{f['engine']} on {f['hardware']}: "
            + ", ".join(f"{k} {v:g}" for k, v in f.items() if isinstance(v, (int, float)))
            for f in u["figures"]
        )
        out.append(f"{u['file']} (sha256 {u['sha256'][:12]}): {figs}")
    return "computed with your calibration " + "; ".join(out)


def document(command: str, inputs: Mapping[str, Any], **results: Any) -> dict[str, Any]:
    """The JSON envelope: schema_version, command, inputs (every assumption), the user
    calibration the results were computed with (when there is one), then results."""
    doc = {"schema_version": SCHEMA_VERSION, "command": command, "inputs": dict(inputs)}
    cal = user_calibration(inputs)
    if cal is not None:
        doc["user_calibration"] = cal
    doc.update(results)
    nonfinite: list[str] = []
    out = to_jsonable(doc, nonfinite)
    _NONFINITE[:] = nonfinite  # said when a format writes them as null (emit, emit_json)
    return out


_NONFINITE: list[str] = []  # the fields of the last document that were not finite


def _warn_nonfinite() -> None:
    """A null must never pass silently for a number: name the fields written as null (tables
    show such values as '-' or 'inf' themselves, so they need no warning)."""
    if _NONFINITE:
        n = len(_NONFINITE)
        more = f" and {n - 5} more" if n > 5 else ""
        sys.stderr.write(
            f"warning: {n} value(s) not finite (infinite or undefined for these "
            f"inputs), written as null: {', '.join(_NONFINITE[:5])}{more}\n"
        )
        _NONFINITE.clear()


def progress_bar(description: str, total: int):
    """A transient progress bar on stderr (never stdout) for long loops."""
    from rich.progress import track

    def wrap(items):
        return track(
            items, description=description, total=total, transient=True, console=stderr_console()
        )

    return wrap


# ---- number formatting ----------------------------------------------------------------------
def num(x: Any, digits: int = 3) -> str:
    """A number as short text: ints with thousands separators, floats to `digits` significant
    figures (whole from 1,000 to 10 million), None as an em dash, booleans as yes/no."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) >= 1e7 or abs(x) < 1e-2:
            return f"{x:.{digits}g}"
        return f"{x:,.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"
    return str(x)


def compact(text: str) -> str:
    """Compact a formatted quantity for narrow tables: '1.03 GB' -> '1.03GB'."""
    return text.replace(" ", "")


def cbytes(n: float | None) -> str:
    return "—" if n is None else compact(fmt_bytes(n))


def csec(t: float | None) -> str:
    return "—" if t is None else compact(fmt_seconds(t))


def pct(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:.{digits}%}"


def slo_cells(e: Mapping[str, Any], has_slo: bool) -> tuple[str, str]:
    """The (SLO attainment, meets SLO) cells of an expected point `e`: with no SLO there is
    nothing to attain, and the verdict says why it is NO past saturation (the queue grows
    without bound: JSON's meets_slo false) or that there was no SLO to meet."""
    if has_slo:
        return pct(e["slo_attainment"]), "yes" if e["meets_slo"] else "NO"
    return "- (no SLO)", "NO (queue unbounded)" if e.get("unbounded") else "- (no SLO)"


# an interval whose two sides differ by at most this much (relative) prints as ±rel
SYMMETRIC = 0.05


def band_text(b: Mapping[str, Any]) -> str:
    """A band (roofline/catalog/bands.py) as text: "±35%" when the measured figure's 90%
    interval is symmetric within SYMMETRIC (its wider side, so the ± holds the interval), else
    that interval relative to the expected figure, "-45%/+20%" (low − 1, high − 1); a band
    without low/high is ±rel."""
    low, high = b.get("low"), b.get("high")
    if low is None or high is None:
        return f"±{b['rel']:.0%}"
    if abs((high - 1.0) - (1.0 - low)) <= SYMMETRIC:
        return f"±{max(1.0 - low, high - 1.0):.0%}"
    return f"{low - 1.0:+.0%}/{high - 1.0:+.0%}"


def load_band_text(b: Mapping[str, Any]) -> str:
    """A band under load (roofline/serving/metrics.py load_bands) as "-76%/+120%", or
    "-76%/unbounded" when its low-capacity edge is past saturation (high null)."""
    high = b.get("high")
    return f"{b['low'] - 1.0:+.0%}/" + ("unbounded" if high is None else f"{high - 1.0:+.0%}")


def pm(bands: Mapping[str, Any] | None, name: str) -> str:
    """A figure's error band as "±35%" or "-45%/+20%" (band_text), or "" when it has none."""
    b = (bands or {}).get(name)
    return "" if b is None else band_text(b)


def _metric_name(band: str) -> str:
    """ttft_p99 -> TTFT p99."""
    head, _, tail = band.partition("_")
    return f"{head.upper() if head in ('ttft', 'tpot', 'e2e') else head} {tail}".strip()


def bands_note(bands: Mapping[str, Any] | None) -> str:
    """One line on where the ± figures come from: the family's own points or the pooled ones."""
    if not bands:
        return "no error bands (no published measurement behind these figures)"
    own = sorted({b["family"] for b in bands.values() if b["family"]})
    engines = sorted({b["engine"] for b in bands.values() if b.get("engine")})
    inherited = ("saturation", "cost_per_million_output_tokens", "joules_per_output_token", "gpus")
    pooled = [k for k, b in bands.items() if b["family"] is None and k not in inherited]
    text = (
        "± = 90th percentile of out-of-sample |error|, -x%/+y% = the measured figure's 90% "
        "range (docs/ACCURACY.md)"
    )
    text += f", family {', '.join(own)}" if own else ""
    text += f", engine {', '.join(engines)} where it has 5 points" if engines else ""
    if pooled:
        text += "; all families pooled (under 5 points of the family) for " + ", ".join(
            _metric_name(p) for p in pooled
        )
    thin = [k for k, b in bands.items() if b.get("fit", {}).get("thin") and k not in inherited]
    if thin:
        text += "; thin fit (under 5 points or one source) for " + ", ".join(
            _metric_name(k) for k in thin
        )
    return text + "; saturation takes the throughput band, $/Mtok and J/token it inverted"

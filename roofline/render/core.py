"""Presentation core: consoles, the JSON envelope, row formats and a width-safe table layout.

Every command builds one JSON-ready dict (keys carry units, numbers are finite, order is fixed);
`--format json` prints it, `--format table` draws tables from the same dict, so the two never
disagree. Tables never hide a number: at any width of 60 columns or more, numeric cells keep
their full text (they never wrap and are never elided), text cells fold, long text moves under
the table as numbered notes, and a table too wide for the console is printed stacked, one
key/value block per row.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from roofline.units import fmt_bytes, fmt_seconds

SCHEMA_VERSION = 1
MIN_WIDTH = 60  # narrowest layout we promise; narrower or nonsense COLUMNS clamps or falls back
FALLBACK_WIDTH = 80  # what Rich uses for pipes, files and CI logs
NOTE_AFTER = 28  # note cells stay inline only in a column this wide; longer inputs go to notes
TEXT_MIN = 10  # a text column is never squeezed narrower than this (or its longest cell)
ELLIPSIS = "…"


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
    return Console(file=sys.stdout, width=console_width(), highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(file=sys.stderr, width=console_width(), highlight=False, soft_wrap=True)


def to_jsonable(value: Any) -> Any:
    """numpy scalars/arrays → Python; NaN/inf → None (JSON has neither)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def emit_json(doc: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(to_jsonable(doc), indent=2, allow_nan=False) + "\n")


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
        for r in rows:
            try:  # fast path: rows of plain finite values
                line = json.dumps(r, allow_nan=False)
            except (TypeError, ValueError):
                line = json.dumps(to_jsonable(r), allow_nan=False)
            out.write(line + "\n")
    elif fmt in (RowFmt.csv, RowFmt.markdown):
        fields = list(dict.fromkeys(k for r in rows for k in r))
        if fmt is RowFmt.csv:
            w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({k: _cell(r.get(k)) for k in fields})
        else:
            out.write("| " + " | ".join(fields) + " |\n")
            out.write("|" + "|".join("---" for _ in fields) + "|\n")
            for r in rows:
                cells = (str(_cell(r.get(k))).replace("|", "\\|") for k in fields)
                out.write("| " + " | ".join(cells) + " |\n")
    else:
        table(doc)


def document(command: str, inputs: Mapping[str, Any], **results: Any) -> dict[str, Any]:
    """The JSON envelope: schema_version, command, inputs (every assumption), then results."""
    doc = {"schema_version": SCHEMA_VERSION, "command": command, "inputs": dict(inputs), **results}
    return to_jsonable(doc)


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


# ---- width-safe layout ----------------------------------------------------------------------
@dataclass(frozen=True)
class Col:
    """A table column. `header` may hold newlines to keep a numeric column narrow; `text`
    columns fold, numeric ones never wrap; `note` columns move long cells under the table;
    `under` columns (a name beside an id) join the first column when the table is short of
    room, rather than being folded into a narrow strip."""

    header: str
    text: bool = False
    note: bool = False
    under: bool = False  # short of room, the cell goes under the row's first cell

    @property
    def label(self) -> str:
        """The header on one line: 'weights\n/GPU' -> 'weights/GPU', 'pre-\nempt' -> 'pre-empt'."""
        out = ""
        for part in self.header.split("\n"):
            glue = "" if not out or out.endswith("-") or part.startswith("/") else " "
            out += glue + part
        return out


# Short constructors, so that a column list reads like the header it draws.
def N(header: str) -> Col:
    return Col(header)


def T(header: str) -> Col:
    return Col(header, text=True)


def NOTE(header: str) -> Col:
    return Col(header, text=True, note=True)


def SUB(header: str) -> Col:
    return Col(header, text=True, under=True)


def _len(cell: str) -> int:
    return max(len(line) for line in cell.split("\n"))


def _cells_to_notes(
    cols: Sequence[Col], rows: list[list[str]], notes: list[str]
) -> list[list[str]]:
    """Replace the cells of note columns with [n] markers; the text joins `notes`."""
    for j, c in enumerate(cols):
        if not c.note:
            continue
        for r in rows:
            if not r[j] or r[j] == "—":
                continue
            if r[j] not in notes:
                notes.append(r[j])
            r[j] = f"[{notes.index(r[j]) + 1}]"
    return rows


def _text_min(c: Col, cells: Sequence[str]) -> int:
    head = max((len(w) for w in c.header.split()), default=1)
    return max(min(max((_len(x) for x in cells), default=0), TEXT_MIN), head)


def _widths(cols: Sequence[Col], rows: list[list[str]], width: int, whole_key: bool):
    """Content widths per column that fit `width`, or None. Numeric columns (and the first
    column when `whole_key`) get their longest cell; text columns share what is left, each at
    least TEXT_MIN (or its longest cell or header word), in proportion to what they lack."""
    n = len(cols)
    avail = width - (3 * n - 1)  # SIMPLE_HEAVY: edges, dividers, inner padding (pad_edge off)
    full, lo = [], []
    for j, c in enumerate(cols):
        cells = [r[j] for r in rows]
        head = max(len(line) for line in c.header.split("\n"))
        natural = (
            max([head, *(_len(x) for x in cells)])
            if not c.text
            else max([_text_min(c, cells), *(_len(x) for x in cells)])
        )
        full.append(natural)
        whole = not c.text or (j == 0 and whole_key)
        lo.append(natural if whole else _text_min(c, cells))
    if sum(lo) > avail:
        return None
    spare = avail - sum(lo)
    need = [f - m for f, m in zip(full, lo, strict=True)]
    if spare >= sum(need):
        return full
    out = list(lo)
    if cols[0].text:  # the row key (an id) first, so that it stays whole when it can
        out[0] += min(need[0], spare)
        spare -= out[0] - lo[0]
        need[0] = 0
    for j in range(n):
        if need[j] and sum(need):
            out[j] += need[j] * spare // sum(need)
    return out


def _build(cols: Sequence[Col], rows: list[list[str]], widths: Sequence[int]) -> Table:
    t = Table(box=box.SIMPLE_HEAVY, pad_edge=False, show_header=True)
    for j, (c, w) in enumerate(zip(cols, widths, strict=True)):
        t.add_column(
            c.header,
            justify="left" if c.text or j == 0 else "right",
            no_wrap=not c.text,
            overflow="fold" if c.text else "ellipsis",
            width=w,
        )
    for r in rows:
        t.add_row(
            *(Text(_wrap(x, w) if c.text else x) for c, w, x in zip(cols, widths, r, strict=True))
        )
    return t


def _wrap(cell: str, width: int) -> str:
    """Pre-wrap a text cell at spaces and after hyphens (ids like 'gptfast-a100-llama2-7b'
    break between their parts), so that Rich never has to cut a word mid-way."""
    return "\n".join(
        "\n".join(textwrap.wrap(line, width, break_on_hyphens=True) or [""])
        for line in cell.split("\n")
    )


def _fits(table: Table, width: int) -> bool:
    probe = Console(file=io.StringIO(), width=width, highlight=False, color_system=None)
    probe.print(table)
    return ELLIPSIS not in probe.file.getvalue()


def wrap_items(con: Console, items: Sequence[str], indent: str = "", sep: str = "  ") -> None:
    """Print short items packed into lines of the console's width; an item is never split
    unless it alone is wider than a line (then it folds)."""
    width = con.width
    line = indent
    for item in items:
        piece = item if line == indent else sep + item
        if line != indent and len(line) + len(piece) > width:
            con.print(Text(line), overflow="fold")
            line = indent + item
        else:
            line += piece
    if line.strip():
        con.print(Text(line), overflow="fold")


def say(con: Console, text: str, style: str | None = None) -> None:
    """A paragraph, wrapped at spaces (words longer than the line fold), never elided."""
    con.print(Text(text, style=style or ""), overflow="fold")


def print_notes(con: Console, notes: Sequence[str]) -> None:
    for k, n in enumerate(notes, 1):
        say(con, f"[{k}] {n}")


def _layouts(cols: Sequence[Col], body: list[list[str]]):
    """Candidate layouts, best first: (columns, rows, keep the first column whole, nothing
    may fold). With `under` columns: all columns side by side only if nothing folds, then
    the `under` cells moved into the first column."""
    if not any(c.under for c in cols):
        yield cols, body, True, False
        yield cols, body, False, False
        return
    yield cols, body, True, True
    subs = [j for j, c in enumerate(cols) if c.under]
    keep = [j for j, c in enumerate(cols) if j and not c.under]
    head = Col(" / ".join([cols[0].label, *(cols[j].label for j in subs)]), text=True)
    merged = [
        ["\n".join([r[0], *(r[j] for j in subs if r[j])]), *(r[j] for j in keep)] for r in body
    ]
    mcols = [head, *(cols[j] for j in keep)]
    yield mcols, merged, True, False
    yield mcols, merged, False, False


def _draw(con: Console, cols: Sequence[Col], body: list[list[str]]) -> bool:
    """Print `body` as a table if it fits the console without eliding a cell."""
    for lcols, lbody, whole_key, strict in _layouts(cols, body):
        widths = _widths(lcols, lbody, con.width, whole_key)
        if widths is None:
            continue
        if strict and widths != _widths(lcols, lbody, 10**6, whole_key):
            continue
        table = _build(lcols, lbody, widths)
        if _fits(table, con.width):
            con.print(table)
            return True
    return False


def _notes_fit_inline(cols: Sequence[Col], body: list[list[str]], width: int) -> bool:
    widths = _widths(cols, body, width, True)
    if widths is None:
        return False
    for j, c in enumerate(cols):
        longest = max((_len(r[j]) for r in body), default=0)
        # inline when each cell takes at most two lines of a column at least NOTE_AFTER wide
        if c.note and not (widths[j] >= min(NOTE_AFTER, longest) and 2 * widths[j] >= longest):
            return False
    return True


def print_rows(
    con: Console, title: str, cols: Sequence[Col], rows: Iterable[Sequence[str]]
) -> None:
    """A titled table that never hides a number: drawn as columns when it fits the console,
    else stacked (the first cell as a heading, then `header: value` pairs packed per line).
    Cells of note columns too long to sit whole in the table are printed under it as
    numbered notes."""
    body = [[str(x) for x in r] for r in rows]
    notes: list[str] = []
    if any(c.note for c in cols) and not _notes_fit_inline(cols, body, con.width):
        body = _cells_to_notes(cols, body, notes)
    if title:
        say(con, title, "bold")
    if not _draw(con, cols, body):
        for r in body:
            say(con, f"{cols[0].label} {r[0]}" if not cols[0].text else r[0], "bold")
            wrap_items(con, [f"{c.label}: {v}" for c, v in zip(cols[1:], r[1:], strict=True)], "  ")
        con.print()
    print_notes(con, notes)


def split_constant(
    cols: Sequence[Col], rows: Sequence[Sequence[str]]
) -> tuple[list[str], list[Col], list[list[str]]]:
    """Columns whose value is the same in every row (of two or more), as `label=value` items
    to print once, and the table without them (the first column always stays)."""
    if len(rows) < 2:
        return [], list(cols), [list(r) for r in rows]
    same = [j for j in range(1, len(cols)) if len({r[j] for r in rows}) == 1]
    items = [f"{cols[j].label}={rows[0][j]}" for j in same]
    keep = [j for j in range(len(cols)) if j not in same]
    return items, [cols[j] for j in keep], [[r[j] for j in keep] for r in rows]


def print_pairs(con: Console, title: str, pairs: Iterable[tuple[str, str]]) -> None:
    """A key/value block: `key  value` per line, values wrapped under themselves."""
    pairs = list(pairs)
    if title:
        say(con, title, "bold")
    keyw = min(max((len(k) for k, _ in pairs), default=0), con.width // 2 - 2)
    t = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 1))
    t.add_column("key", style="bold", overflow="fold", min_width=min(keyw, 12))
    t.add_column("value", overflow="fold")
    for k, v in pairs:
        t.add_row(Text(k), Text(v))
    con.print(t)
    con.print()


# ---- the inputs header ----------------------------------------------------------------------
def _fmt_input(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if key.endswith("_bytes_per_s"):
            return compact(fmt_bytes(value)) + "/s"
        if key.endswith("_bytes"):
            return compact(fmt_bytes(value))
        if key.endswith("_s"):
            return compact(fmt_seconds(value))
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return num(value)
    return str(value)


def inputs_items(inputs: Mapping[str, Any], notes: list[str]) -> list[str]:
    """`key=value` items for every set input (None is left out); long text goes to notes."""
    items = []
    for k, v in inputs.items():
        if v is None or v == "":
            continue
        if isinstance(v, Mapping):
            inner = [
                f"{kk} {_fmt_input(kk, vv)}"
                for kk, vv in v.items()
                if vv is not None and not (isinstance(vv, str) and len(vv) > NOTE_AFTER)
            ]
            longs = [vv for vv in v.values() if isinstance(vv, str) and len(vv) > NOTE_AFTER]
            for text in longs:
                if text not in notes:
                    notes.append(text)
            marks = "".join(f" [i{notes.index(t) + 1}]" for t in longs)
            items.append(f"{k}=" + ", ".join(inner) + marks)
        elif isinstance(v, (list, tuple)):
            items.append(f"{k}=" + ",".join(_fmt_input(k, x) for x in v))
        elif isinstance(v, str) and len(v) > 2 * NOTE_AFTER:
            if v not in notes:
                notes.append(v)
            items.append(f"{k}=[i{notes.index(v) + 1}]")
        else:
            items.append(f"{k}={_fmt_input(k, v)}")
    return items


def inputs_header(con: Console, inputs: Mapping[str, Any], label: str = "inputs") -> list[str]:
    """Echo the inputs and defaults that produced the output, as wrapped key=value text, so a
    reader knows which workload every figure below refers to. Returns the long texts (marked
    [i1], [i2], ...) for the caller to print as notes at the end."""
    notes: list[str] = []
    items = inputs_items(inputs, notes)
    if items:
        wrap_items(con, [f"{label}:", *items], sep=" ")
        con.print()
    return notes


def table_output(draw: Callable[..., None]) -> Callable[..., None]:
    """Wrap `draw(doc, con, ...)` into the public `table(doc, ...)`: a stdout console, the
    inputs header first, the inputs' long notes last."""

    @functools.wraps(draw)
    def table(doc: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        con = stdout_console()
        notes = inputs_header(con, doc.get("inputs") or {})
        draw(doc, con, *args, **kwargs)
        for k, n in enumerate(notes, 1):
            say(con, f"[i{k}] {n}")

    return table

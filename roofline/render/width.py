"""Width-safe tables: output that never hides a number.

At any width of 60 columns or more, and on a non-terminal (80 columns), numeric cells keep their
full text (they never wrap and are never elided), text cells wrap at spaces and hyphens, a name
beside an id moves under it when room is short, long text moves under the table as numbered
notes, and a table that still cannot fit is printed stacked, one key/value block per row.
Every table output opens with the inputs that produced it (`table_output`).
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from roofline.domain.units import fmt_bytes, fmt_seconds
from roofline.render.core import VERBOSE, calibration_line, compact, num, stdout_console

ELLIPSIS = "…"
TEXT_MIN = 10  # a text column is never squeezed narrower than this (or its longest cell)
NOTE_AFTER = 28  # note cells stay inline only in a column this wide; longer inputs go to notes


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


def _word(cell: str) -> int:
    """The longest piece of a cell no line may break: words, split after hyphens as _wrap does."""
    return max((len(w) for w in re.split(r"\s+|(?<=-)", cell)), default=0)


def _text_min(c: Col, cells: Sequence[str]) -> int:
    """A text column's narrowest: TEXT_MIN (or its longest cell), never below its longest word
    or header word, so that no word or number is broken across lines."""
    head = max((len(w) for w in c.header.split()), default=1)
    words = max((_word(x) for x in cells), default=0)
    return max(min(max((_len(x) for x in cells), default=0), TEXT_MIN), head, words)


def _spans(
    cols: Sequence[Col], rows: list[list[str]], whole_key: bool
) -> tuple[list[int], list[int]]:
    """Per column, the natural content width and the narrowest it may take. A numeric column
    (and the first column when `whole_key`) keeps its natural width: its longest cell or header
    line; a text column's natural width is its longest cell, at least `_text_min`, and it may
    shrink to `_text_min`."""
    full, lo = [], []
    for j, c in enumerate(cols):
        cells = [r[j] for r in rows]
        longest = max((_len(x) for x in cells), default=0)
        if not c.text:
            full.append(max(longest, *(len(line) for line in c.header.split("\n"))))
            lo.append(full[-1])
            continue
        least = _text_min(c, cells)
        full.append(max(least, longest))
        lo.append(full[-1] if j == 0 and whole_key else least)
    return full, lo


def _widths(cols: Sequence[Col], rows: list[list[str]], width: int, whole_key: bool):
    """Content widths per column that fit `width`, or None. Numeric columns (and the first
    column when `whole_key`) get their longest cell; text columns share what is left, each at
    least TEXT_MIN (or its longest cell or header word), in proportion to what they lack."""
    return _share(cols, *_spans(cols, rows, whole_key), width)


def _share(cols: Sequence[Col], full: list[int], lo: list[int], width: int) -> list[int] | None:
    """`_widths` from the columns' spans: `full` itself when everything fits whole."""
    n = len(cols)
    avail = width - (3 * n - 1)  # SIMPLE_HEAVY: edges, dividers, inner padding (pad_edge off)
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


def _render(con: Console, table: Table) -> list[Segment] | None:
    """The table's segments exactly as `con.print(table)` renders them (the options `print`
    derives, colour and encoding of `con` included), or None when a cell is elided (`…`) at
    the console's width. Rendered once: the caller prints these same segments."""
    soft = con.soft_wrap  # Console.print: soft wrap means no wrap, overflow ignore, no crop
    options = con.options.update(
        justify=None,
        overflow="ignore" if soft else None,
        height=None,
        no_wrap=True if soft else None,
        markup=None,
        highlight=None,
    )
    segments = list(con.render(table, options))
    if ELLIPSIS not in "".join(s.text for s in segments):
        return segments
    # the ellipsis might sit past the width on an over-long line, which print crops away
    lines = Segment.split_and_crop_lines(segments, con.width, pad=False)
    return None if any(ELLIPSIS in s.text for line in lines for s in line) else segments


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


def legend(
    con: Console, clauses: Sequence[str], keep: int, lines: int = 3
) -> tuple[str, list[str]]:
    """A legend under a table in at most `lines` lines at the console's width (issue 33 item
    6): the first `keep` clauses always, each further one, in order, while the whole still
    fits, then "-v: more."; returns the text and the clauses left out (for -v)."""
    tail = "-v: more."
    chosen, left = list(clauses[:keep]), []
    for c in clauses[keep:]:
        if len(Text("; ".join([*chosen, c, tail])).wrap(con, con.width)) <= lines:
            chosen.append(c)
        else:
            left.append(c)
    return "; ".join([*chosen, tail]), left


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
    """Print `body` as a table if it fits the console without eliding a cell. Each table is
    rendered once, and a layout that repeats one tried already (same columns, rows and widths,
    as when the first column is numeric and `whole_key` changes nothing) is not tried again."""
    tried: list[tuple[Sequence[Col], list[list[str]], list[int]]] = []
    for lcols, lbody, whole_key, strict in _layouts(cols, body):
        full, lo = _spans(lcols, lbody, whole_key)
        widths = _share(lcols, full, lo, con.width)
        if widths is None or (strict and widths != full):  # strict: every column whole
            continue
        if any(c is lcols and b is lbody and w == widths for c, b, w in tried):
            continue
        tried.append((lcols, lbody, widths))
        segments = _render(con, _build(lcols, lbody, widths))
        if segments is not None:
            con.print(Segments(segments))
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
    if isinstance(value, Mapping):  # a nested block: its items, each formatted by its own key
        unit = key if key.endswith("_s") else ""
        items = (f"{k} {_fmt_input(unit or str(k), v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return str(value)


def inputs_items(inputs: Mapping[str, Any], notes: list[str]) -> list[str]:
    """`key=value` items for every set input (None is left out); long text goes to notes."""
    items = []
    for k, v in inputs.items():
        if v is None or v == "" or (isinstance(v, (list, tuple)) and not v):  # nothing given
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


def compact_inputs(con: Console, inputs: Mapping[str, Any]) -> None:
    """One line of the first inputs, cut at the console's width: the rest under -v and in
    --format json."""
    notes: list[str] = []
    items = inputs_items(inputs, notes)
    tail = " (-v: all)"
    line = "inputs:"
    for item in items:
        if "[i" in item or len(line) + 1 + len(item) + len(tail) > con.width:
            line += tail
            break
        line += " " + item
    say(con, line)


def table_output(draw: Callable[..., None]) -> Callable[..., None]:
    """Wrap `draw(doc, con, ...)` into the public `table(doc, ...)`: a stdout console, the
    answer first, then the inputs that produced it: one compact line, or with -v every input
    and its long notes."""

    @functools.wraps(draw)
    def table(doc: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        con = stdout_console()
        draw(doc, con, *args, **kwargs)
        if doc.get("user_calibration"):  # every output computed with one names it
            say(con, calibration_line(doc["user_calibration"]), "bold")
        inputs = doc.get("inputs") or {}
        if not VERBOSE["on"]:  # render.core: -v asks for every input
            if inputs:
                compact_inputs(con, inputs)
            return
        notes = inputs_header(con, inputs)
        for k, n in enumerate(notes, 1):
            say(con, f"[i{k}] {n}")

    return table

"""A table is rendered once: `print_rows` checks the rendered segments for an elided cell and
prints those same segments, so its bytes are what Rich's own `Console.print` writes for the
table, on every kind of console (colour terminal, NO_COLOR, a pipe, soft wrap, a non-UTF-8
file that makes Rich draw ASCII boxes), and a table Rich would elide falls back to stacked."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from roofline.render import width as W
from roofline.render.width import N, T, print_rows

COLS = [T("model"), N("TPOT ms")]
ROWS = [["llama-3.1-8b", "6.9"], ["llama-3.1-70b", "21.4"]]


class _Latin1(io.StringIO):
    """A file whose encoding is not UTF-8: Rich then substitutes ASCII box characters."""

    @property
    def encoding(self) -> str:
        return "latin-1"


CONSOLES: dict[str, dict[str, Any]] = {
    "pipe": {"color_system": None},
    "truecolor tty": {"force_terminal": True, "color_system": "truecolor"},
    "no_color tty": {"force_terminal": True, "color_system": "256", "no_color": True},
    "soft wrap": {"soft_wrap": True, "force_terminal": True},
    "legacy box": {"color_system": None, "file": _Latin1},
}


def _console(kind: str, width: int) -> Console:
    kw = dict(CONSOLES[kind])
    file = kw.pop("file", io.StringIO)()
    return Console(file=file, width=width, highlight=False, **kw)


def test_a_fitting_table_by_hand():
    """SIMPLE_HEAVY, pad_edge off: edge 1 + 13 ('llama-3.1-70b') + pad 1 + divider 1 + pad 1 +
    7 ('TPOT ms', right-justified) + edge 1 = 25 columns; a blank top and bottom edge line and
    a heavy rule under the header (1 + 23 '━' + 1)."""
    con = _console("pipe", 60)
    print_rows(con, "", COLS, ROWS)
    assert con.file.getvalue() == (
        " " * 25 + "\n"
        " model           TPOT ms \n"
        " " + "━" * 23 + " \n"
        " llama-3.1-8b        6.9 \n"
        " llama-3.1-70b      21.4 \n" + " " * 25 + "\n"
    )  # fmt: skip


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize("kind", sorted(CONSOLES))
def test_a_fitting_table_prints_once_as_rich_prints_it(monkeypatch, kind, width):
    built: list[Table] = []
    rendered: list[Table] = []
    build, render = W._build, W._render
    monkeypatch.setattr(W, "_build", lambda *a: built.append(build(*a)) or built[-1])
    monkeypatch.setattr(W, "_render", lambda con, t: rendered.append(t) or render(con, t))
    con = _console(kind, width)
    print_rows(con, "", COLS, ROWS)
    assert len(built) == 1 and rendered == built  # built once, rendered once
    ref = _console(kind, width)
    ref.print(built[0])  # Rich's own print of the same table, on a console of the same kind
    out = con.file.getvalue()
    assert out == ref.file.getvalue()
    assert out.count("model") == 1 and "…" not in out
    if kind == "truecolor tty":
        assert "\x1b[1m" in out  # the bold header survives: segments keep their styles
    if kind == "legacy box":
        assert "━" not in out and "-" in out  # Rich's ASCII substitute for the heavy rule


def test_a_cell_rich_would_elide_falls_back_to_stacked_after_one_render(monkeypatch):
    """Full-width digits take two cells each: '１２３４５' is 5 characters but 10 cells, so
    the 5-wide column the layout reserves makes Rich elide it; the table is then stacked.
    The first column is numeric, so keeping it whole or not gives the same widths: the
    second candidate layout repeats the first and is not rendered again."""
    calls: list[Table] = []
    render = W._render
    monkeypatch.setattr(W, "_render", lambda con, t: calls.append(t) or render(con, t))
    con = _console("pipe", 60)
    print_rows(con, "", [N("n"), N("m")], [["１２３４５", "7"]])
    assert con.file.getvalue() == "n １２３４５\n  m: 7\n\n"
    assert len(calls) == 1

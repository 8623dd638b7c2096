"""The HTML report's options and writer, shared by the commands that offer it (analyze, serve,
size, plan, cliff, disagg, speculate, edge, report): `--format html` prints the page on stdout;
`--out FILE.html` writes it (the extension decides: .svg, .png and .pdf stay matplotlib charts
where a command draws one). The page is rendered from the command's JSON document
(roofline.render.html), so its numbers are the JSON's."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from roofline import render
from roofline.cli.app import note
from roofline.domain.errors import InputError

HTML_SUFFIXES = (".html", ".htm")


class Fmt(str, Enum):
    """table, json or an HTML report (commands with one result document)."""

    table = "table"
    json = "json"
    html = "html"


class RowFmt(str, Enum):
    """The row formats (render.RowFmt) and an HTML report."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"
    html = "html"


FormatOpt = Annotated[
    Fmt, typer.Option("--format", "-f", help="table for people, json for pipes, html a report")
]
RowFormat = Annotated[
    RowFmt, typer.Option("--format", "-f", help="table, json, jsonl, csv, markdown or html")
]
HtmlOut = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="also write a self-contained HTML report to FILE.html"),
]
ChartOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="also write the chart to FILE.svg|png|pdf (plot extra), or a report to FILE.html",
    ),
]


def is_html(path: Path | None) -> bool:
    return path is not None and path.suffix.lower() in HTML_SUFFIXES


def check_out(path: Path | None, charts: bool = False) -> None:
    """Fail early (before any work) on a report path whose directory is missing or not a directory;
    a chart path (.svg/.png/.pdf, where `charts`) goes to roofline.render.charts's check."""
    if path is None:
        return
    if is_html(path):
        if not path.parent.is_dir():
            raise InputError(f"--out {path}: the directory {path.parent} does not exist")
        if path.is_dir():
            raise InputError(f"--out {path}: is a directory")
        return
    if charts:
        from roofline.render.charts import check_output

        check_output(path)
        return
    raise InputError(f"--out {path}: use a .html file name")


def command_line() -> list[str] | None:
    """The command line that made the page, when roofline runs as a program."""
    name = Path(sys.argv[0]).name if sys.argv else ""
    return ["roofline", *sys.argv[1:]] if name in ("roofline", "__main__.py") else None


def html_page(doc: Mapping[str, Any]) -> str:
    from roofline.render.html import page

    return page(doc, command_line())


def write_html(doc: Mapping[str, Any], path: Path) -> None:
    """The page to `path`; a failed write is one line (InputError, exit 2)."""
    text = html_page(doc)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write ({exc.strerror or exc})") from None
    note(f"wrote {path} ({len(text.encode('utf-8')) / 1e3:,.0f} kB)")


def publish(
    doc: Mapping[str, Any],
    fmt: Fmt | RowFmt,
    rows: Sequence[Mapping[str, Any]],
    table: Callable[[Mapping[str, Any]], None],
    out: Path | None = None,
) -> None:
    """The result on stdout in `fmt` (render.emit, or the HTML page), and the HTML page in
    `out` when it names a .html file (charts are the caller's)."""
    if fmt.value == "html":
        sys.stdout.write(html_page(doc))
    else:
        render.emit(doc, render.RowFmt(fmt.value), rows, table)
    if is_html(out):
        write_html(doc, out)  # type: ignore[arg-type]

"""The pages the HTML tests open: each command run once in-process with `--format json` and
`--out PAGE.html` (one run: the page and the JSON come from the same document)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from roofline.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# small but complete: every command that offers the report, with charts to draw
COMMANDS: dict[str, list[str]] = {
    "analyze": ["analyze", "llama-3.1-70b", "h100", "--tp", "4", "--weights", "fp8"],
    "plan": ["plan", "llama-3.1-8b", "h100", "--gpus", "4", "--max-tpot", "50ms"],
    "cliff": ["cliff", "llama-3.1-8b", "h100", "--output", "2k", "--max-seqs", "8,32,128"],
    "disagg": ["disagg", "llama-3.1-70b", "--prefill", "h100", "--decode", "h200", "--prefill-tp",
               "4", "--decode-tp", "4", "--batch", "64"],
    "speculate": ["speculate", "llama-3.1-8b", "h100", "--drafter", "eagle", "--tau", "3.2"],
    "edge": ["edge", "llama-3.1-8b", "m3-ultra", "--weights", "q4_k_m", "--devices", "rtx-5090"],
    "serve": ["serve", "llama-3.1-8b", "h100", "--rate", "2,6,10", "--requests", "200",
              "--output", "300", "--slo-ttft", "1s", "--slo-tpot", "50ms"],
    "size": ["size", "llama-3.1-8b", "--rate", "5", "--hardware", "h100,l40s", "--output", "300"],
    "report": ["report", str(EXAMPLES / "report.yaml")],
    "fleet": ["fleet", str(EXAMPLES / "fleet-one.yaml")],
}  # fmt: skip


_MADE: dict[str, tuple[bytes, str]] = {}  # name -> (the page, the JSON text): once a worker


def make(name: str, directory: Path) -> tuple[Path, dict[str, Any]]:
    """(the page, the JSON document) of one command. The command runs once per worker: the
    pages test_html.py reads are among those test_html_browser.py opens, and the two modules
    travel together to one worker (TRAVELS_WITH, tests/conftest.py); each caller gets the page
    written into its own directory and a document of its own."""
    page = directory / f"{name}.html"
    if name not in _MADE:
        env = {"COLUMNS": "200", "ROOFLINE_CATALOG": None}
        args = [*COMMANDS[name], "--format", "json", "--out", str(page)]
        r = CliRunner().invoke(app, args, env=env)
        assert r.exit_code == 0, (name, r.stderr)
        _MADE[name] = (page.read_bytes(), r.stdout)
    html, text = _MADE[name]
    page.write_bytes(html)
    return page, json.loads(text)


def lookup(doc: Any, path: str) -> Any:
    """The value at a dotted path, read independently of roofline.render.html.parts."""
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc

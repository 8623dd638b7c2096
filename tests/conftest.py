"""Shared fixtures: the shipped catalog and a CLI runner that keeps stdout and stderr apart."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from roofline.catalog.load import Catalog, load_catalog
from roofline.cli import app


@pytest.fixture(scope="session", autouse=True)
def _own_parse_cache(tmp_path_factory: pytest.TempPathFactory):
    """The tests' catalog parse cache lives in a temporary directory, not the user's; searches
    run in the test's own process."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("roofline-cache")))
    # pytest-xdist already runs one worker per core: a sizing search in a test runs its layouts in
    # its own process (roofline.serving.workers) rather than forking a pool per search
    mp.setenv("ROOFLINE_JOBS", "1")
    # the documents' commands (tests/test_docs.py) run once per session, not once per worker: a
    # directory all pytest-xdist workers share (each worker's basetemp is in the session's)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    mp.setenv("DOCGEN_SHARED_CACHE", str(shared / "docgen-shared"))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def cat() -> Catalog:
    return load_catalog()


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):
    """Invoke the CLI in-process: run('analyze', 'llama-3.1-8b', 'h100', '--format', 'json')."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("ROOFLINE_CATALOG", raising=False)
    runner = CliRunner()

    def _run(*args: str, env: dict[str, str] | None = None) -> Result:
        r = runner.invoke(app, list(args), env=env)
        if r.exception and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    return _run


@pytest.fixture
def run_main(monkeypatch: pytest.MonkeyPatch):
    """Invoke the real entry point, roofline.cli.main (which turns the parser's usage errors into
    one line), with argv and stdout/stderr captured: what a shell sees."""
    import contextlib
    import io
    import sys

    from roofline.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("ROOFLINE_CATALOG", raising=False)

    def _run(*args: str) -> Result:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "argv", ["roofline", *args])
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        return Result(code, out.getvalue(), err.getvalue())

    return _run

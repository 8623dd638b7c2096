"""Shared fixtures: the shipped catalog and a CLI runner that keeps stdout and stderr apart."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

if TYPE_CHECKING:
    from roofline.catalog.load import Catalog

# Python keeps the package's compiled modules and pytest its rewritten test modules (in
# __pycache__/, git-ignored) even where the environment turns bytecode off
# (PYTHONDONTWRITEBYTECODE): else every worker compiles the package and rewrites all 130 test
# files' asserts on each run (about 4 of its 6 CPU-s of collection), and each CLI subprocess
# compiles what it imports. Set before the package is first imported (the fixtures below import
# it when they run), and for the subprocesses the tests start.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Hypothesis loads every installed package's plugin when it is first imported: the one installed
# is Trio's (a dependency of selenium, for tests/test_html_browser.py), which imports Trio (about
# 0.13 CPU-s in each worker) to make Trio's scheduling reproducible; no test runs Trio
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")


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
    # an in-process invocation (typer.testing.CliRunner: the `run` fixture, docgen, a few tests;
    # the real entry point through Typer.__call__: run_main) resolves its command in one root
    # group built once per worker: typer builds a fresh group for each invocation, and once the
    # tests have imported every command module that is every command's parameters from its
    # signature again (about 20 ms a run; 714 runs in the tests under 0.25 s alone); the root
    # (roofline.cli.app.LazyGroup) builds a command on first use and keeps it, as one process of
    # the shell's `roofline` does
    import typer.main
    import typer.testing

    from roofline.cli import app

    build = typer.testing._get_command
    root: list[Any] = []

    def _built_once(a: Any) -> Any:
        if a is not app:
            return build(a)
        if not root:
            root.append(build(app))
        return root[0]

    mp.setattr(typer.testing, "_get_command", _built_once)
    mp.setattr(typer.main, "get_command", _built_once)
    yield
    mp.undo()


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist the workers share rewriting the test files' asserts, before they
    collect: from a fresh clone each worker otherwise rewrites every file itself, all of them
    at the same moment (about 3.8 CPU-s of a worker's 5.8 CPU-s collection; 2 workers pay it
    twice). Worker k of n starts at the k-th n-th of the files and goes round, skipping a file
    whose rewritten code another has already written (pytest's __pycache__/*-pytest-*.pyc,
    keyed by the source's hash, written whole or not at all), so each rewrites about 1/n of
    them; collection then loads the rewritten code as on any later run. Only what pytest itself
    rewrites (conftest.py and the files python_files matches, of the paths asked for), with
    pytest's own functions; a pytest without them skips this, and the workers rewrite as
    before. A file that does not parse, or a cache that cannot be written, is left to
    collection, which reports it as on any run."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return
    try:
        from _pytest.assertion import rewrite
        from _pytest.pathlib import fnmatch_ex

        state = config.stash[rewrite.assertstate_key]
        patterns = config.getini("python_files")
        here = Path(__file__).parent
        files = [p for p in sorted(here.glob("*.py")) if any(fnmatch_ex(x, p) for x in patterns)]
        files.append(here / "conftest.py")  # (imported before it turns bytecode on, above)
        asked = [Path(str(a).split("::")[0]).resolve() for a in config.args] or [here]
        files = [p for p in files if any(p == a or a in p.parents for a in asked)]
        start = int(worker[2:]) * len(files) // count
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        return
    for fn in files[start:] + files[:start]:
        try:
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None and rewrite.try_makedirs(pyc.parent):
                source_hash, co = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, co, source_hash, pyc)
        except (SyntaxError, OSError, AttributeError, TypeError, ValueError):
            continue


DURATIONS = Path(__file__).with_name("durations.json")  # CPU-s per slow test (RECORD_DURATIONS=1)


def deal(units: list[list[str]], seconds: dict[str, float], workers: int) -> list[list[str]]:
    """Test ids in units (a unit's tests stay together) dealt into `workers` shares, the heavy
    units longest first to the share with the fewest seconds, the rest (0 s) to the share with
    the fewest tests; each share in that order. The shares take the sizes of the slices
    pytest-xdist's worksteal first hands out (worker j the j-th contiguous slice of the order,
    len // workers tests, the remainder to the later ones: xdist/scheduler/worksteal.py
    check_schedule), a 0 s unit that fits no share's room split across them: else a share of
    more tests than its slice starts the next worker's slice, and the next share's head of slow
    tests lands at the tail of this slice, where the worker reaches it last and an idle one
    can only steal what is queued behind it (one worker ran Ray's 5 s test alone at the end)."""

    def weight(unit: list[str]) -> float:
        return sum(seconds.get(t, 0.0) for t in unit)

    shares: list[list[str]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    light = []
    for unit in sorted(units, key=weight, reverse=True):  # stable: collection order for ties
        w = weight(unit)
        if not w:
            light.append(unit)
            continue
        k = min(range(workers), key=lambda j: (load[j], j))
        shares[k] += unit
        load[k] += w
    sizes, left = [], sum(len(u) for u in units)
    for j in range(workers):
        sizes.append(left // (workers - j))
        left -= sizes[-1]
    for unit in light:
        fits = [j for j in range(workers) if sizes[j] - len(shares[j]) >= len(unit)]
        if fits:
            shares[min(fits, key=lambda j: (len(shares[j]), j))] += unit
            continue
        for t in unit:  # no room for it whole: its tests fill the shares with room in turn
            room = [j for j in range(workers) if len(shares[j]) < sizes[j]]
            shares[room[0] if room else min(range(workers), key=lambda j: len(shares[j]))].append(t)
    return shares


def units_of(items: list[Any]) -> list[list[str]]:
    """The test ids in units that travel together, in collection order: a module's tests that
    share a module-, class- or package-scoped fixture (with the modules naming it in
    TRAVELS_WITH); every other test alone."""
    units: dict[str, list[str]] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else []
        shared = any(d[-1].scope in ("module", "class", "package") for d in defs if d)
        module = item.nodeid.split("::")[0]
        module = getattr(getattr(item, "module", None), "TRAVELS_WITH", module)
        units.setdefault(module if shared else item.nodeid, []).append(item.nodeid)
    return list(units.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first, dealt across the pytest-xdist workers (`--dist worksteal` hands
    worker k the k-th equal slice of this order, then moves tests from the end of a busy
    worker's queue to an idle one): the slow ones start at once, on each worker in turn, and the
    short ones fill the end, so no worker starts a 10 s test when the others are done. Seconds
    from tests/durations.json (`make durations` rewrites it); a test not in it counts 0. The
    tests of a module that share a module- or class-scoped fixture travel together (one setup).
    A module naming another in TRAVELS_WITH travels with it (test_html_browser.py opens the
    pages test_html.py made: tests/html_pages.py makes each once per worker).
    Every worker computes the same order (xdist checks that they collected the same list)."""
    seconds: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    by_id = {item.nodeid: item for item in items}
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    shares = deal(units_of(items), seconds, workers)
    items[:] = [by_id[t] for share in shares for t in share]


_CPU_AT_START: dict[str, float] = {}
_SECONDS: dict[str, float] = {}


def _cpu_s() -> float:
    import resource

    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime  # (Ray, Chromium)


def pytest_runtest_logstart(nodeid: str) -> None:
    if os.environ.get("RECORD_DURATIONS"):
        _CPU_AT_START[nodeid] = _cpu_s()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Under RECORD_DURATIONS=1 the teardown report carries the CPU seconds the test's process
    spent on it, setup to teardown (what a worker gives it, whatever the machine's load)."""
    outcome = yield
    if os.environ.get("RECORD_DURATIONS") and call.when == "teardown":
        spent = _cpu_s() - _CPU_AT_START.pop(item.nodeid, _cpu_s())
        outcome.get_result().user_properties.append(("cpu_s", spent))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's CPU seconds, in the pytest-xdist controller too (the reports reach it)."""
    for key, value in report.user_properties:
        if key == "cpu_s":
            _SECONDS[report.nodeid] = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    """RECORD_DURATIONS=1 writes tests/durations.json: the tests that took 0.5 CPU-s or more."""
    if os.environ.get("RECORD_DURATIONS") and not os.environ.get("PYTEST_XDIST_WORKER"):
        slow = {k: round(v, 1) for k, v in sorted(_SECONDS.items()) if v >= 0.5}
        DURATIONS.write_text(json.dumps(slow, indent=1) + "\n")


# the smallest engine entry hardware/engines.yaml accepts (roofline/catalog/kernels.py's
# required keys), for tests of one more key's validation
MIN_ENGINE: dict[str, Any] = {
    "id": "x",
    "name": "x",
    "cpu_step_us": 0,
    "launch_us": 1,
    "gap_us": 0,
    "kernels_per_layer": 1,
    "cuda_graphs_decode": True,
    "cuda_graphs_prefill": False,
    "allreduce_kernel": "nccl",
    "source": "test",
}

# a small agent workload file (8B on H100): sessions of 4 turns on a 2k system prompt, 2/s
AGENT = """rate: 2
classes:
  - name: agent
    system_prompt: 2000
    prompt: 300
    output: 100
    turns: 4
    tool_wait: 2s
    slo_ttft: 1s
"""


@pytest.fixture(scope="session")
def engine_sweeps() -> list[dict[str, Any]]:
    """validation/engine_sweeps.yaml's cases as the file holds them (830 kB of YAML, 0.1 CPU-s
    to parse): parsed once per worker for the tests that read it (read only)."""
    from validation.engine_sweeps_report import load

    return load()


@pytest.fixture(scope="session")
def cat() -> Catalog:
    from roofline.catalog.load import load_catalog

    return load_catalog()


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def refused(r: Any, *needles: str) -> None:
    """Bad input's contract: exit 2, nothing on stdout, one line on stderr holding every needle
    (the test_bad_input* files)."""
    assert r.code == 2, r.stdout + r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):
    """Invoke the CLI in-process: run('analyze', 'llama-3.1-8b', 'h100', '--format', 'json')."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("ROOFLINE_CATALOG", raising=False)
    from roofline.cli import app

    runner = CliRunner()

    def _run(*args: str, env: dict[str, str] | None = None) -> Result:
        r = runner.invoke(app, list(args), env=env)
        if r.exception and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    return _run


_COMPUTED: dict[bytes, bytes] = {}  # compute_once's results, one store per worker


@pytest.fixture(scope="module")
def _computed() -> dict[bytes, bytes]:
    """compute_once's results: one store per worker (the same inputs computed in two modules
    on one worker run once); the fixture is module-scoped so that a module's tests using it
    travel together to one worker (pytest_collection_modifyitems), where the store holds what
    they share. (A computation no later test repeats only pays the copy: about 10 ms for a
    serve of 100 requests, so only a module that repeats one uses it.)"""
    return _COMPUTED


@pytest.fixture
def compute_once(_computed: dict[bytes, bytes]):
    """On one worker (the store is _computed's), a serving command's computation
    (docs.docgen.PURE: size's search, serve's simulations, cliff's sweep, disagg's traffic run,
    plan's layouts, fleet's placement, speculate's rounds) runs once for the same inputs; a later
    test takes a copy of its result and renders it through the CLI as the command does.
    For tests that print one computation at several widths or formats: never for a test that
    runs a command twice to compare the runs, nor beside a monkeypatched computation."""
    from docs.docgen import computed_once

    with computed_once(_computed):
        yield


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

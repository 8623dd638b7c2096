"""What the cog blocks of README.md and docs/*.md call: every figure a document quotes comes out
of the command that prints it (`make docs` writes them; tests/test_docs.py fails on a stale line).

A cog block sits in an HTML comment, so it does not show on GitHub; its output follows it, up to
the end marker (cog, https://nedbatchelder.com/code/cog/, as sqlite-utils uses it):

    <!-- [[[cog
    n = len(data("roofline hardware list")["hardware"])
    assert n > 40                      # a comparison the prose makes is asserted, not only printed
    print(f"The catalog holds {n} accelerators.")
    ]]] -->
    The catalog holds 59 accelerators.
    <!-- [[[end]]] -->

- `block(*lines)` prints a ```sh block of commands, each run in-process (CliRunner, cached for the
  session, in a scratch directory that holds the checkout's examples/, validation/ and tests/, so
  paths are as typed and outputs show them so) and each checked for its exit code; a line is a
  command, or (command, comment) where the comment carries figures, or (command, comment,
  exit_code). A `python SCRIPT ...` line runs the checkout's script there (in-process, runpy).
- `data(command)` is the command's `--format json` document (run once, shared with `block`).
- `output(command)` is a ```text block of what the command prints at 80 columns.
- `catalog()` is the catalog, for a quoted input (an engine's fitted host cost);
- `num`, `pct`, `ms`, `times`, `gb` format a figure; a sentence that compares or ranks asserts the
  relation (`assert a < b`) so a change that reverses it stops `make docs` and the test.
- `image(command, "docs/x.png")` runs a chart command; under `make docs` (DOCGEN_IMAGES=1) it
  copies the chart into place. Images are regenerated, never compared: their data is.
- `stale(path)` lists the lines of a document that generation would change (file:line, expected,
  found): tests/test_docs.py.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import io
import itertools
import json
import os
import runpy
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROLOGUE = "from docs.docgen import *"
READ_DIRS = ("examples", "validation", "tests")
DOCS = ("README.md", "docs/COMMANDS.md", "docs/API.md", "docs/METRICS.md", "benchmarks/README.md")


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


_CACHE: dict[tuple[str, ...], Result] = {}
_WORKDIR: list[Path] = []


def workdir() -> Path:
    """One scratch directory for a session's commands, run in document order: a file one writes
    (a catalog entry from `models import -o`) is there for the next, as in a user's shell. The
    checkout's examples/, validation/ and tests/ are in it (symlinks): a path is read as typed
    and printed as typed, never as this machine's absolute path."""
    if not _WORKDIR:
        scratch = Path(tempfile.mkdtemp(prefix="roofline-docs-"))
        checkout = Path(__file__).resolve().parent.parent  # (not ROOT, which a test may move)
        for name in READ_DIRS:
            (scratch / name).symlink_to(checkout / name, target_is_directory=True)
        _WORKDIR.append(scratch)
    return _WORKDIR[0]


def clear_cache() -> None:
    _CACHE.clear()
    _SEARCHES.clear()
    _RUNS.clear()


_SEARCHES: dict[bytes, bytes] = {}  # pure computations' results by their pickled inputs
_RUNS: dict = {}  # simulations shared across the documents' commands (roofline.serving.sim.runmemo)
PURE = (  # what a serving command computes, pure functions of their inputs and the catalog
    ("roofline.cli.traffic", "size_search"),  # size (roofline.serving.sizepools)
    ("roofline.cli.traffic", "serve_rates"),  # serve's simulations (roofline.serving.rates)
    ("roofline.cli.serving", "cliff_sweep"),  # cliff (roofline.serving.cliff)
    ("roofline.cli.serving", "compare_at_rate"),  # disagg --rate (roofline.serving.disagg)
    # a document prints these commands as text beside their JSON twin (the same computation):
    ("roofline.cli.fleet", "spread_doc"),  # fleet --days (roofline.fleet.spread)
    ("roofline.cli.fleet", "plan"),  # fleet's hourly placement (roofline.fleet.day, HiGHS)
    ("roofline.cli.fleet", "apart"),  # fleet's models placed apart (roofline.fleet.day)
    ("roofline.cli.plan", "plans"),  # plan's layouts (roofline.step.planner)
    ("roofline.cli.levers", "speculate_sweep"),  # speculate's rounds (roofline.levers)
)


@contextlib.contextmanager
def computed_once(store: dict[bytes, bytes], pure: tuple[tuple[str, str], ...] = PURE) -> Any:
    """Each computation of `pure` (module, function name; PURE unless told) runs once for the
    same inputs (pickled, with ROOFLINE_CATALOG and --catalog's directories): a later call takes
    a copy of the first call's result (unpickled), which the command then renders as it does its
    own; `store` keeps the results. A document shows a `size` or `serve` line as text and reads
    it as JSON; a test renders one command at several widths."""
    import importlib
    import pickle

    saved = []
    for module_name, name in pure:
        module = importlib.import_module(module_name)
        saved.append((module, name, getattr(module, name)))

    def once(name: str, compute: Callable[..., Any]) -> Callable[..., Any]:
        def run_once(*args: Any, **kwargs: Any) -> Any:
            from roofline.cli.app import catalog_dirs  # --catalog DIR, as ROOFLINE_CATALOG

            where = (os.environ.get("ROOFLINE_CATALOG", ""), catalog_dirs())
            try:
                key = pickle.dumps((name, args, kwargs, where))
            except Exception:  # an input that does not pickle: no sharing
                return compute(*args, **kwargs)
            if key not in store:
                result = compute(*args, **kwargs)
                try:
                    store[key] = pickle.dumps(result)
                except Exception:  # a result that does not pickle: not kept
                    return result
            return pickle.loads(store[key])

        return run_once

    for module, name, compute in saved:
        setattr(module, name, once(name, compute))
    try:
        yield
    finally:
        for module, name, compute in saved:
            setattr(module, name, compute)


def _parse(command: str) -> tuple[list[str], str | None, dict[str, str]]:
    """argv after `roofline`, stdin text (`cat FILE | roofline ...`) and env (`NO_COLOR=1`): the
    roofline part of a shell line; a pipe's or a redirect's far side is the reader's."""
    words = shlex.split(command, comments=True)
    stdin, env = None, {}
    if words[:1] == ["cat"]:
        stdin = (ROOT / words[1]).read_text()
        words = words[3:]
    while words and "=" in words[0] and not words[0].startswith("-"):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    assert words[:1] == ["roofline"], command
    args = []
    for w in words[1:]:
        if w in ("|", ">"):
            break
        args.append(w)
    return args, stdin, env


def run(command: str, code: int = 0, columns: int = 80) -> Result:
    """Run one shell line's `roofline` command in-process; fail unless it exits `code`."""
    from typer.testing import CliRunner

    from roofline.cli import app
    from roofline.serving.sim.runmemo import shared_runs

    key = (command, str(columns), os.environ.get("ROOFLINE_CATALOG", ""))
    if key not in _CACHE:

        def invoke() -> Result:
            args, stdin, env = _parse(command)
            env = {"COLUMNS": str(columns), "NO_COLOR": "1", **env}
            here = Path.cwd()
            os.chdir(workdir())
            try:
                with computed_once(_SEARCHES), shared_runs(_RUNS):
                    r = CliRunner().invoke(app, args, input=stdin, env=env)
            finally:
                os.chdir(here)
            if r.exception and not isinstance(r.exception, SystemExit):
                raise r.exception
            return Result(r.exit_code, r.stdout, r.stderr)

        _CACHE[key] = _shared(key, invoke)
    result = _CACHE[key]
    if result.code != code:
        raise AssertionError(
            f"`{command}` exited {result.code}, the document says {code}: {result.stderr.strip()}"
        )
    return result


def _files(top: Path) -> dict[str, float]:
    """The scratch directory's own files (not the checkout's, which are symlinks): path -> mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        for f in filenames:
            path = Path(dirpath) / f
            if not path.is_symlink():
                out[str(path.relative_to(top))] = path.stat().st_mtime_ns
    return out


def _shared(key: tuple[str, ...], invoke: Callable[[], Result]) -> Result:
    """invoke(), or its result from another process of the same test session: with
    DOCGEN_SHARED_CACHE set (tests/conftest.py: one directory for all pytest-xdist workers), a
    command two documents run (README's and COMMANDS.md's `size`) runs once per session, not once
    per worker. The files it wrote in the scratch directory are stored with it and copied into
    this process's scratch directory, so a later command reads them as if it had run here. A
    lock per command: a second process waits for the first rather than running it too."""
    shared = os.environ.get("DOCGEN_SHARED_CACHE")
    if not shared:
        return invoke()
    import fcntl
    import hashlib

    entry = Path(shared) / hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]
    entry.mkdir(parents=True, exist_ok=True)
    with open(entry / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = entry / "result.json"
        if done.exists():
            stored = json.loads(done.read_text())
            for name in stored["files"]:
                target = workdir() / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry / "files" / name, target)
            return Result(*stored["result"])
        before = _files(workdir())
        result = invoke()
        wrote = [n for n, t in _files(workdir()).items() if before.get(n) != t]
        for name in wrote:
            (entry / "files" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(workdir() / name, entry / "files" / name)
        part = entry / "result.part"
        part.write_text(json.dumps({"result": list(astuple(result)), "files": wrote}))
        part.replace(done)
        return result


def script(command: str, code: int = 0) -> Result:
    """Run a `python SCRIPT ARGS` line of a document in the scratch directory, in-process (runpy, as
    `python SCRIPT` runs it, the checkout importable); fail unless it exits `code`."""
    key = (command, "script", "")
    if key not in _CACHE:
        words = shlex.split(command, comments=True)
        assert words[:1] == ["python"], command
        out, err = io.StringIO(), io.StringIO()
        argv, here, status = sys.argv, Path.cwd(), 0
        sys.argv = words[1:]
        os.chdir(workdir())
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                runpy.run_path(str(workdir() / words[1]), run_name="__main__")
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        finally:
            sys.argv = argv
            os.chdir(here)
        _CACHE[key] = Result(status, out.getvalue(), err.getvalue())
    result = _CACHE[key]
    if result.code != code:
        raise AssertionError(f"`{command}` exited {result.code}: {result.stderr.strip()[-500:]}")
    return result


def catalog() -> Any:
    """The catalog the commands read (shipped + ROOFLINE_CATALOG), for figures that are inputs
    (an engine's fitted host costs, a chip's datasheet figure) rather than a command's output."""
    from roofline import load_catalog

    return load_catalog()


def _json_command(command: str) -> str:
    head = command.split("|")[0].split("#")[0].strip()
    words = shlex.split(head)
    if "--format" in words or "-f" in words:
        return head
    return head + " --format json"


def data(command: str, code: int = 0) -> Any:
    """The command's `--format json` document (`| jq ...` is left to the reader)."""
    return run(_json_command(command), code).json()


def _ran_as_json(command: str) -> bool:
    key = (_json_command(command), "80", os.environ.get("ROOFLINE_CATALOG", ""))
    return key in _CACHE


def block(*lines: str | tuple[Any, ...]) -> None:
    """A ```sh block; each command runs (or its JSON twin already did: the same computation)."""
    rows: list[tuple[str, str]] = []
    for line in lines:
        cmd, comment, code = (line, "", 0) if isinstance(line, str) else (*line, 0)[:3]
        if cmd.startswith("python "):
            script(cmd, code)
        elif "--install-completion" not in cmd and (not _ran_as_json(cmd) or code):
            run(cmd, code)  # (installing completion would edit the reader's shell rc file)
        rows.append((cmd, comment))
    width = max((len(c) for c, note in rows if note and len(c) <= 64), default=0)
    print("```sh")
    for cmd, note in rows:
        print(f"{cmd:<{width}}   # {note}" if note else cmd)
    print("```")


def output(command: str, code: int = 0, lines: slice | None = None) -> None:
    """A ```text block of what the command prints (80 columns, trailing blanks dropped)."""
    text = [line.rstrip() for line in run(command, code).stdout.splitlines()]
    print("```text")
    print("\n".join(text[lines] if lines else text).strip("\n"))
    print("```")


def image(command: str, dest: str) -> None:
    """Run a chart command (`-o FILE`); under `make docs` copy the chart to `dest`."""
    if not _ran_as_json(command):  # the JSON run wrote the chart too
        run(command)
    if os.environ.get("DOCGEN_IMAGES"):
        args = _parse(command)[0]
        made = args[args.index("--out" if "--out" in args else "-o") + 1]
        shutil.copyfile(workdir() / made, ROOT / dest)


def num(x: float, nd: int = 0) -> str:
    """1234.5 -> '1,234' (nd decimals, thousands separated)."""
    return f"{x:,.{nd}f}"


def sig(x: float, n: int = 3) -> str:
    """n significant digits, thousands separated: 27.14 -> '27.1', 1463.9 -> '1,464'."""
    if x == 0:
        return "0"
    digits = max(n - len(str(int(abs(x)))) if abs(x) >= 1 else n, 0)
    return num(x, digits)


def pct(share: float, nd: int = 1) -> str:
    return f"{100 * share:.{nd}f}%"


def ms(seconds: float, nd: int = 0) -> str:
    return f"{seconds * 1e3:,.{nd}f} ms"


def times(ratio: float, nd: int = 2) -> str:
    return f"{ratio:.{nd}f}×"


def gb(n_bytes: float, nd: int = 1) -> str:
    return f"{n_bytes / 1e9:,.{nd}f} GB"


def module_map() -> None:
    """Every room of roofline/ in its import order (roofline.ROOMS, lowest first) with its
    one-line docstring, then each module with its docstring's first sentence."""
    from roofline import ROOMS

    def first(p: Path) -> str:
        doc = ast.get_docstring(ast.parse(p.read_text())) or ""
        return " ".join(doc.split("\n\n")[0].split()).split(". ")[0].rstrip(".")

    base = ROOT / "roofline"
    for floor in ROOMS:
        for room in floor:
            if not (base / room).is_dir():
                continue
            for directory in sorted({p.parent for p in (base / room).rglob("*.py")}):
                rel = directory.relative_to(ROOT).as_posix()
                print(f"- `{rel}/`: {first(directory / '__init__.py')}")
                for p in sorted(directory.glob("*.py")):
                    if p.name != "__init__.py":
                        print(f"  - `{p.stem}`: {first(p)}")


def generate(path: str | Path) -> str:
    """The document's text with every cog block's output regenerated, in-process."""
    path = Path(path)
    return _cog().process_string(path.read_text(), fname=str(path))


def _cog() -> Any:
    """Cog as `make docs` runs it: print() writes the output, this module's names in scope."""
    from cogapp import Cog

    cog = Cog()
    cog.options.print_output = True
    cog.options.prologue = PROLOGUE
    return cog


def stale(path: str | Path, text: str | None = None) -> list[str]:
    """Each line generation would change: 'FILE:LINE: expected ... found ...' (empty: current)."""
    path = Path(path)
    found = (path.read_text() if text is None else text).splitlines()
    if text is not None:
        made = _cog().process_string(text, fname=str(path)).splitlines()
    else:
        made = generate(path).splitlines()
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems: list[str] = []
    # the lines both share at the start and the end are left out of the diff: a section's text
    # is mostly blanked lines, on which difflib (no autojunk) takes about a second a section
    head = 0
    while head < min(len(found), len(made)) and found[head] == made[head]:
        head += 1
    tail = 0
    while tail < min(len(found), len(made)) - head and found[-1 - tail] == made[-1 - tail]:
        tail += 1
    found, made = found[head : len(found) - tail], made[head : len(made) - tail]
    matcher = difflib.SequenceMatcher(a=found, b=made, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            old = found[i1 + k] if i1 + k < i2 else "(nothing)"
            new = made[j1 + k] if j1 + k < j2 else "(nothing)"
            problems.append(f"{name}:{head + i1 + k + 1}: expected {new!r}, found {old!r}")
    return problems


def sections(path: str | Path) -> list[tuple[int, int, str]]:
    """The document's `## ` sections that hold a cog block: (first line, end line, title), 0-based
    and half-open; the lines before the first section belong to it. Each section's blocks run
    on their own (no block reads a name or a file an earlier section made), so a test may check
    them apart, in parallel."""
    lines = Path(path).read_text().splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith("## ")]
    bounds = [0, *starts[1:], len(lines)] if starts else [0, len(lines)]
    out = []
    for a, b in itertools.pairwise(bounds):
        if any(x.startswith("<!-- [[[cog") for x in lines[a:b]):
            title = next((x[3:] for x in lines[a:b] if x.startswith("## ")), lines[a])
            out.append((a, b, title))
    return out


def _names(code: str) -> tuple[set[str], set[str]]:
    """The names a cog block's code assigns and the names it reads without assigning them."""
    tree = ast.parse(code)
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    stored = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    stored |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)} | {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    return stored, {n.id for n in names if isinstance(n.ctx, ast.Load)} - stored


def parts(path: str | Path) -> list[tuple[int, int, str]]:
    """Each section (sections()) cut between its cog blocks where no later block reads a name an
    earlier one assigned (cog runs a document's blocks in one namespace): (first line, end line,
    title), 0-based, half-open, covering the section. The first part starts at the section's
    start, each other at its first block's line. A test checks each part apart, so a section's
    slow blocks run on several workers."""
    lines = Path(path).read_text().splitlines()
    out = []
    for a, b, title in sections(path):
        blocks = []  # (first line, names assigned, names read)
        i = a
        while i < b:
            if lines[i].startswith("<!-- [[[cog"):
                j = next(k for k in range(i, b) if lines[k].startswith("]]] -->"))
                blocks.append((i, *_names("\n".join(lines[i + 1 : j]))))
                i = j
            i += 1
        starts = [a]
        for k in range(1, len(blocks)):
            reads = [j for j in range(k) if blocks[k][2] & blocks[j][1]]
            if reads:  # one part from the first block it reads through this one
                starts = [s for s in starts if s <= blocks[reads[0]][0]]
            else:
                starts.append(blocks[k][0])
        ends = [*starts[1:], b]
        out += [(s, e, title) for s, e in zip(starts, ends, strict=True)]
    return out


def section_text(path: str | Path, start: int, end: int) -> str:
    """The document with every line outside [start, end) blanked: line numbers kept."""
    lines = Path(path).read_text().splitlines()
    return "\n".join(x if start <= i < end else "" for i, x in enumerate(lines)) + "\n"

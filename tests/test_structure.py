"""The package's shape (DESIGN.md section 2): every module in a room; rooms import downward in
the declared order (roofline.ROOMS; every import counts, at module level, inside a function or
under TYPE_CHECKING); shipped data read only in catalog/; each room's docstring in the README's
module map; no import cycles; the core never imports the CLI, the renderers, rich, typer or yaml;
no module past 500 lines. Each rule is also shown failing on a planted violation."""

import ast
import functools
import re
from pathlib import Path

from roofline import ROOMS

ROOT = Path(__file__).resolve().parent.parent / "roofline"
# cycles left to break; this list may only shrink
KNOWN_CYCLES: list[set[str]] = []
PRESENTATION = ("roofline.cli", "roofline.render", "roofline.render.charts", "roofline.__main__")
IO_MODULES = {"roofline.catalog.files"}  # the YAML reader itself
TIMING = "roofline.timing"  # how long one kernel takes: the ground floor, below hardware and ops


def _modules() -> dict[str, Path]:
    out = {}
    for f in ROOT.rglob("*.py"):
        name = ".".join(f.relative_to(ROOT.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@functools.cache
def _imports_of_every_module() -> dict[str, set[str]]:
    """Each module's _imports, parsed once per process (three rules read them; about 0.6 CPU-s a
    walk of the package)."""
    mods = _modules()
    return {m: _imports(p, mods) for m, p in mods.items()}


def _graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (itself left out)."""
    mods = _modules()
    return {
        m: {i for i in deps if i in mods and i != m}
        for m, deps in _imports_of_every_module().items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_but_the_known_ones():
    cycles = _cycles(_graph())
    assert all(c in KNOWN_CYCLES for c in cycles), cycles
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]  # the finder finds


def test_the_core_never_imports_presentation_or_yaml():
    breaches = []
    for m, deps in _imports_of_every_module().items():
        if m.startswith(PRESENTATION) or m in IO_MODULES:
            continue
        for i in deps:
            if i.startswith((*PRESENTATION, "rich", "typer", "yaml")):
                breaches.append((m, i))
    assert breaches == []


def test_the_timing_wing_imports_nothing_above_it():
    above = [
        (m, i)
        for m, deps in _imports_of_every_module().items()
        if m.startswith(TIMING)
        for i in deps
        if i.startswith("roofline") and not i.startswith(TIMING)
    ]
    assert above == []


# modules mypy skips (pyproject.toml [[tool.mypy.overrides]] ignore_errors): none; keep it so
MYPY_IGNORED_AT_MOST = 0


def test_the_mypy_ignore_list_only_shrinks():
    import tomllib

    pyproject = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())
    ignored = [
        m
        for o in pyproject["tool"]["mypy"]["overrides"]
        if o.get("ignore_errors")
        for m in o["module"]
    ]
    known = _modules()
    assert all(m in known for m in ignored), [m for m in ignored if m not in known]
    assert len(ignored) <= MYPY_IGNORED_AT_MOST, (
        f"{len(ignored)} modules skip mypy, at most {MYPY_IGNORED_AT_MOST}: fix one, don't add one"
    )


# commands whose bodies still compute, to shrink below COMMAND_BODY_LINES (issue 23 item 5): none
LONG_COMMANDS: set[str] = set()
COMMAND_BODY_LINES = 60


def _command_bodies() -> dict[str, int]:
    """Each CLI command (a function under an `@….command` decorator) and the lines of its body
    from the first statement after the docstring to its end (signature and options excluded)."""
    out = {}
    for f in sorted((ROOT / "cli").glob("*.py")):
        for node in ast.parse(f.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            if not any(".command(" in d for d in decorators):
                continue
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            end = node.end_lineno or body[-1].lineno
            out[node.name.rstrip("_")] = end - body[0].lineno + 1
    return out


def test_command_bodies_parse_call_and_render_in_few_lines():
    bodies = _command_bodies()
    # the finder finds: these commands exist and are measured
    assert {
        "analyze",
        "kv",
        "speculate",
        "check",
        "bytes",
        "sweep",
        "serve",
        "size",
        "disagg",
    } <= set(bodies)
    long = {name: n for name, n in bodies.items() if n > COMMAND_BODY_LINES}
    assert set(long) <= LONG_COMMANDS, long


TOP = {"__init__.py", "__main__.py"}  # the only modules at the package's top
MAX_MODULE_LINES = 500  # DESIGN.md: no module past about 500 lines


def _loose(files: list[str]) -> list[str]:
    """Modules of the package's top directory that are not __init__ or __main__."""
    return [f for f in files if "/" not in f and f.endswith(".py") and f not in TOP]


def test_every_module_is_in_a_room():
    files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")]
    assert _loose(files) == []
    assert _loose(["__init__.py", "ops.py", "step/ops.py"]) == ["ops.py"]  # a planted one
    rooms = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    declared = {room for floor in ROOMS for room in floor}
    assert rooms <= declared, rooms - declared  # every room has its place in the order


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] != "__main__") else None


FLOOR = {room: i for i, floor in enumerate(ROOMS) for room in floor}


def _upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a room to one on its own floor or above it (a room may import itself)."""
    out = []
    for m, deps in graph.items():
        a = _room(m)
        for d in deps:
            b = _room(d)
            if a and b and a != b and FLOOR[b] >= FLOOR[a]:
                out.append((m, d))
    return sorted(out)


def test_rooms_import_downward_in_the_declared_order():
    assert _upward(_graph()) == []
    planted = {
        "roofline.step.ops": {"roofline.serving.serve"},  # up a floor
        "roofline.checks.spec": {"roofline.cases.case"},  # across one floor
        "roofline.serving.serve": {"roofline.step.ops", "roofline.serving.arrivals"},  # fine
    }
    assert _upward(planted) == [
        ("roofline.checks.spec", "roofline.cases.case"),
        ("roofline.step.ops", "roofline.serving.serve"),
    ]


def _reads_shipped_data(source: str) -> bool:
    """Code that finds the package's own files: `__file__`, importlib.resources or the shipped
    catalog directories (roofline.catalog.load.shipped_dirs)."""
    return bool(
        re.search(r"(?<![\w.])__file__|importlib\.resources|shipped_dirs\(|\"_catalog\"", source)
    )


def test_shipped_data_is_read_only_in_the_catalog_room():
    readers = [
        m
        for m, p in _modules().items()
        if _room(m) != "catalog" and _reads_shipped_data(p.read_text())
    ]
    assert readers == []
    assert _reads_shipped_data("root = Path(__file__).parent / 'hardware'")  # a planted one


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.split("\n\n")[0]


def test_each_room_has_a_one_line_docstring_in_the_module_map():
    readme = (ROOT.parent / "README.md").read_text()
    for init in sorted(ROOT.glob("**/__init__.py")):
        if init.parent == ROOT:
            continue
        line = _summary(init)
        assert line and "\n" not in line and line.endswith("."), (init, line)
        rel = init.parent.relative_to(ROOT.parent).as_posix()
        assert f"- `{rel}/`: {line.rstrip('.')}" in readme, rel
    assert "\n" in _summary_of("Two\nlines.")  # a planted one: a summary over two lines


def _summary_of(doc: str) -> str:
    return doc.split("\n\n")[0]


def test_no_module_past_the_line_limit():
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}

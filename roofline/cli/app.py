"""The Typer application, the catalog the commands read, and the mapping of errors to exit codes.

Exit codes: 0 done; 1 a check failed (`check`); 2 bad input (unknown id, malformed catalog,
out-of-range value, a model that does not fit); 3 an internal error (a bug: one line asking for a
report; the traceback only with ROOFLINE_DEBUG=1); 130 interrupted. stdout carries only results.
"""

import errno
import functools
import gc
import importlib
import io
import os
import sys
import traceback
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.main
from typer.core import TyperGroup

from roofline import __version__
from roofline.errors import RooflineError

if TYPE_CHECKING:
    from roofline.catalog import Catalog

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
REPORT_URL = "the roofline issue tracker"

# Every command: the module (in roofline/cli/) that registers it and its one-line help, in the
# order `--help` lists them. The root group imports a command's module only when that command runs
# (or its own help is shown), so `roofline analyze` imports no plotting, serving or catalog code.
# tests/test_speed_cli.py checks this table against the commands' own docstrings.
COMMANDS: dict[str, tuple[str, str]] = {
    "kv": ("memory", "KV-cache bytes per token, sequence and batch."),
    "analyze": ("analyze", "Prefill and decode on the roofline, op by op."),
    "capacity": ("memory", "Memory per GPU and the largest batch that fits."),
    "bytes": ("memory", "Where the bytes go: weight, KV and activation I/O."),
    "offload": ("edge", "Weights split between the GPU and host RAM."),
    "edge": ("edge", "What a Mac, a Spark or a desktop GPU can run: fit and speed."),
    "speculate": ("levers", "Speculative decoding: speed-up against batch, per drafter."),
    "tiers": ("levers", "KV spilled from HBM to a slower tier (CXL, DDR5)."),
    "plan": ("plan", "Parallel layouts for N GPUs, searched and best first."),
    "cliff": ("serving", "The reasoning cliff: throughput against max-seqs."),
    "disagg": ("serving", "Prefill/decode disaggregation vs colocated serving."),
    "check": ("check", "Capacity and SLO assertions for CI, with exit codes."),
    "report": ("report", "A plan's candidates compared, as one HTML page."),
    "sweep": ("tools", "A grid of analyze summaries, one row per point."),
    "plot": ("tools", "The roofline chart with the workload's ops on it."),
    "validate": ("tools", "Predictions against published measurements."),
    "serve": ("traffic", "A deployment under a request rate: latency and goodput."),
    "size": ("traffic", "Deployments that meet the SLOs at a rate, with cost."),
    "hardware": ("catalog_cmds", "Accelerators, links and memory tiers in the catalog."),
    "models": ("catalog_cmds", "Model architectures in the catalog."),
    "catalog": ("catalog_cmds", "Check catalog files."),
}


class LazyGroup(TyperGroup):
    """The root command. `--help` lists COMMANDS from the table; a command is imported and built
    (typer inspects its signature) only when it is resolved. Reading `.commands` (tools that walk
    the whole app: tests, docs) imports every module and builds everything."""

    def __init__(self, **kwargs: Any) -> None:
        self._built: set[str] = set()
        super().__init__(**kwargs)

    @property
    def commands(self) -> MutableMapping[str, Any]:  # type: ignore[override]
        for name in COMMANDS:
            self._build(name)
        return self._commands

    @commands.setter
    def commands(self, value: MutableMapping[str, Any]) -> None:
        self._commands = dict(value)

    def _build(self, name: str) -> None:
        if name in self._built or name not in COMMANDS:
            return
        importlib.import_module(f"roofline.cli.{COMMANDS[name][0]}")
        kw = {"pretty_exceptions_short": app.pretty_exceptions_short}
        for info in app.registered_commands:
            if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
                cmd = typer.main.get_command_from_info(
                    info, rich_markup_mode=app.rich_markup_mode, **kw
                )
                self._commands[name] = cmd
        for group in app.registered_groups:
            if group.name == name:
                self._commands[name] = typer.main.get_group_from_info(
                    group,
                    rich_markup_mode=app.rich_markup_mode,
                    suggest_commands=app.suggest_commands,
                    **kw,
                )
        self._built.add(name)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self._build(cmd_name)
        return self._commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in self._commands if n not in COMMANDS)]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list from the table, without importing any command."""
        from typer._click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                rows.append((name, make_default_short_help(COMMANDS[name][1], limit)))
            else:
                rows.append((name, self._commands[name].get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    cls=LazyGroup,
    help="Analytical roofline calculator for LLM inference: how fast and how big, from first "
    "principles.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
hardware_app = typer.Typer(
    help="Accelerators, links and memory tiers in the catalog.", no_args_is_help=True
)
models_app = typer.Typer(help="Model architectures in the catalog.", no_args_is_help=True)
catalog_app = typer.Typer(help="Check catalog files.", no_args_is_help=True)
app.add_typer(hardware_app, name="hardware")
app.add_typer(models_app, name="models")
app.add_typer(catalog_app, name="catalog")

_state: dict[str, list[str]] = {"catalog_dirs": []}
# start-up (imports, the parser, the command's build) runs with the cycle collector paused: it
# allocates long-lived objects only, and each collection would walk all of them again
_gc = {"paused": False, "frozen": False}
F = TypeVar("F", bound=Callable[..., Any])


def _one_line(text: str) -> str:
    """Messages are one line even when the input that caused them held a newline."""
    return " ".join(str(text).split())


def fail(exc: RooflineError) -> None:
    """One line on stderr, exit code 2."""
    hint = f" ({exc.hint})" if exc.hint else ""
    print(_one_line(f"error: {exc}{hint}"), file=sys.stderr)
    raise typer.Exit(EXIT_BAD_INPUT)


class _Held(io.StringIO):
    """stdout held until the command ends, still answering as the real stream (a terminal's
    width and colours)."""

    def __init__(self, real: Any) -> None:
        super().__init__()
        self.real = real

    def isatty(self) -> bool:
        return bool(getattr(self.real, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self.real.fileno())


_WRITE_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EFBIG)


def _write_failed(exc: OSError) -> None:
    """Results that could not be written: a reader that left (`| head`) ends the process
    quietly, as Unix tools do; a full disk or a failing device is one line, exit 2."""
    if isinstance(exc, BrokenPipeError):
        try:
            sys.stderr.close()
        finally:
            os._exit(EXIT_OK)
    print(_one_line(f"error: cannot write the results: {exc.strerror or exc}"), file=sys.stderr)
    raise typer.Exit(EXIT_BAD_INPUT) from None


def guarded(fn: F) -> F:
    """Turn RooflineError into one stderr line and exit 2. What the command prints is held and
    written only when it completes: an error never leaves half a result on stdout."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        resume_gc()
        real = sys.stdout
        held = sys.stdout = _Held(real)
        complete = False  # a result, even one with its own exit code (check: 1 on a failure)
        try:
            out = fn(*args, **kwargs)
            complete = True
            return out
        except typer.Exit:
            complete = True
            raise
        except RooflineError as exc:
            fail(exc)
        finally:
            sys.stdout = real
            if complete:
                try:
                    real.write(held.getvalue())
                    real.flush()
                except OSError as exc:
                    _write_failed(exc)

    return wrapper  # type: ignore[return-value]


def guarded_stream(fn: F) -> F:
    """guarded for a command that streams its results as it goes (sweep): nothing held."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        resume_gc()
        try:
            out = fn(*args, **kwargs)
            sys.stdout.flush()
            return out
        except RooflineError as exc:
            fail(exc)
        except OSError as exc:  # writing the stream; any other OSError is not ours to name
            if not isinstance(exc, BrokenPipeError) and exc.errno not in _WRITE_ERRNOS:
                raise
            _write_failed(exc)

    return wrapper  # type: ignore[return-value]


def resume_gc() -> None:
    """The command's own work starts: what start-up built is frozen (later collections skip it)
    and the cycle collector runs again, so a long sweep's memory stays flat."""
    if _gc["paused"]:
        _gc["paused"] = False
        gc.freeze()
        _gc["frozen"] = True
        gc.enable()


def warn(message: str) -> None:
    print(_one_line(f"warning: {message}"), file=sys.stderr)


def note(message: str) -> None:
    """A message for people (e.g. 'wrote chart.svg') on stderr, never on stdout."""
    print(_one_line(message), file=sys.stderr)


def catalog() -> "Catalog":
    """The shipped catalog plus --catalog directories and ROOFLINE_CATALOG."""
    from roofline.catalog import load_catalog  # the core loads with the first command that runs

    return load_catalog(_state["catalog_dirs"])


def catalog_dirs() -> list[str]:
    return list(_state["catalog_dirs"])


def _version(value: bool) -> None:
    if value:
        print(f"roofline {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    catalog: Annotated[
        list[Path] | None,
        typer.Option(
            "--catalog",
            help="Extra catalog directory (repeatable); adds to or overrides entries. "
            "ROOFLINE_CATALOG holds more, separated by ':'.",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Under a table, every input and its provenance (JSON has all)."
        ),
    ] = False,
) -> None:
    """Analytical roofline calculator for LLM inference."""
    _state["catalog_dirs"] = [str(p) for p in catalog or []]
    from roofline.render.core import set_verbose  # no rich: JSON commands load it too

    set_verbose(verbose)


def main(gc_paused: bool = False) -> None:
    """Console entry point. Every bad input (our checks, or the parser's: a missing argument, an
    unknown option, a value of the wrong type) is one line on stderr and exit 2; a bug is one line
    and exit 3 (with the traceback under ROOFLINE_DEBUG=1). The cycle collector is paused until
    the command starts (resume_gc; gc_paused: the caller paused it earlier, as `python -m
    roofline` does before importing the app) and restored on the way out."""
    _gc["paused"] = gc_paused or gc.isenabled()
    gc.disable()
    _plain_streams()
    try:
        _main()
    finally:
        if _gc["frozen"]:  # in process (tests), the next run's garbage is collectable again
            _gc["frozen"] = False
            gc.unfreeze()
        if _gc["paused"]:
            _gc["paused"] = False
            gc.enable()


# what a stream that cannot carry them (PYTHONIOENCODING=ascii, a C locale) prints instead
_ASCII = {
    "µ": "u", "×": "x", "≤": "<=", "≥": ">=", "−": "-", "…": "...", "→": "->", "·": "*",
    "±": "+/-", "—": "-", "–": "-", "≈": "~", "█": "#", "━": "-", "η": "eta", "σ": "sigma",
    "²": "^2", "³": "^3", "√": "sqrt", "∑": "sum", "≠": "!=", "°": "deg",
}  # fmt: skip


def _ascii_fallback(err: UnicodeError) -> tuple[str, int]:
    bad = err.object[err.start : err.end]  # type: ignore[attr-defined]
    return "".join(_ASCII.get(c, "?") for c in bad), err.end  # type: ignore[attr-defined]


def _plain_streams() -> None:
    """stdout and stderr that cannot encode the tool's symbols fall back to ASCII spellings
    instead of failing (PYTHONIOENCODING=ascii, LANG=C)."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        try:
            "µ×≤━".encode(getattr(stream, "encoding", None) or "ascii")
        except (UnicodeEncodeError, LookupError):
            codecs.register_error("roofline-ascii", _ascii_fallback)
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="roofline-ascii")


def _main() -> None:
    from roofline.cli.classcode import cached_dataclass_code

    try:
        scope = _command_name(sys.argv[1:])
        if scope in COMMANDS:
            # every command's core imports numpy; imported here, at the bottom of the call stack,
            # its typing modules do not push frames across the interpreter's 16 KiB stack-chunk
            # boundary (each crossing maps and unmaps a chunk: hundreds of system calls)
            import numpy  # noqa: F401
        # the command's dataclasses: compiled once, then cached (a file per command)
        with cached_dataclass_code(scope or "other"):
            rv = app(standalone_mode=False, prog_name="roofline")
    except RooflineError as exc:  # raised outside a guarded command (e.g. a callback)
        hint = f" ({exc.hint})" if exc.hint else ""
        print(_one_line(f"error: {exc}{hint}"), file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # `roofline ... | head`: the reader left; not an error of ours
        sys.stderr.close()
        os._exit(EXIT_OK)
    except Exception as exc:
        # the parser's usage errors carry an exit code and a message (Click's UsageError)
        code, message = getattr(exc, "exit_code", None), getattr(exc, "format_message", None)
        if type(exc).__name__ == "Abort":
            print("error: interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
        if code is None or message is None:
            _internal_error(exc)
        ctx = getattr(exc, "ctx", None)
        text = message()
        if not text and ctx is not None:  # no arguments at all: show the help
            print(ctx.get_help())
            sys.exit(EXIT_OK)
        where = ctx.command_path if ctx is not None else "roofline"
        print(_one_line(f"error: {text} (see {where} -h)"), file=sys.stderr)
        sys.exit(code)
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


def _command_name(args: list[str]) -> str | None:
    """The command named on the command line (the first argument that is neither a root option
    nor --catalog's value), or None: only start-up work follows from it, never the parse."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--catalog":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _internal_error(exc: BaseException) -> None:
    """A bug, not a user mistake: one line, exit 3; the traceback with ROOFLINE_DEBUG=1."""
    if os.environ.get("ROOFLINE_DEBUG"):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    where = f"{type(exc).__name__}: {exc}"
    print(
        _one_line(
            f"internal error: {where} (a bug in roofline; please report it to {REPORT_URL} "
            "with the command line; ROOFLINE_DEBUG=1 shows the traceback)"
        ),
        file=sys.stderr,
    )
    sys.exit(EXIT_INTERNAL)

"""Start-up machinery of the `roofline` process, apart from the commands: the cycle collector
paused while start-up builds long-lived objects, streams that fall back to ASCII spellings, the
mapping of errors to exit codes (parser, input, bug, interrupt, a reader that left), and the
guard that holds a command's stdout until it completes.

Exit codes: 0 done; 1 a check failed (`check`); 2 bad input (unknown id, malformed catalog,
out-of-range value, a model that does not fit); 3 an internal error (a bug: one line asking for a
report; the traceback only with ROOFLINE_DEBUG=1); 130 interrupted. stdout carries only results.
"""

import errno
import functools
import gc
import io
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import typer

from roofline.domain.errors import RooflineError
from roofline.serving.sim.runmemo import shared_runs

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
REPORT_URL = "the roofline issue tracker"
# start-up (imports, the parser, the command's build) runs with the cycle collector paused: it
# allocates long-lived objects only, and each collection would walk all of them again
_gc = {"paused": False, "frozen": False}
F = TypeVar("F", bound=Callable[..., Any])


def one_line(text: str) -> str:
    """Messages are one line even when the input that caused them held a newline."""
    return " ".join(str(text).split())


def fail(exc: RooflineError) -> None:
    """One line on stderr, exit code 2."""
    hint = f" ({exc.hint})" if exc.hint else ""
    print(one_line(f"error: {exc}{hint}"), file=sys.stderr)
    raise typer.Exit(EXIT_BAD_INPUT)


_later: list[str] = []  # warnings printed only if the command completes (warn_later)


def warn_later(message: str) -> None:
    """A warning said once the command has its result: a command that then fails on bad input
    prints its one error line alone."""
    if message not in _later:
        _later.append(message)


def _say_later(complete: bool) -> None:
    lines, _later[:] = list(_later), []
    if complete:
        for line in lines:
            print(one_line(f"warning: {line}"), file=sys.stderr)


def file_error(exc: OSError) -> RooflineError | None:
    """An OSError that names a file (a path probed or opened: permissions, a directory in the
    way, a full disk under -o) as the one line of a bad input; None for any other OSError."""
    if exc.filename is None:
        return None
    return RooflineError(f"{exc.filename}: {exc.strerror or exc}")


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
    print(one_line(f"error: cannot write the results: {exc.strerror or exc}"), file=sys.stderr)
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
            with shared_runs():  # a simulation repeated with the same inputs runs once
                out = fn(*args, **kwargs)
            complete = True
            return out
        except typer.Exit:
            complete = True
            raise
        except RooflineError as exc:
            fail(exc)
        except OSError as exc:
            fail(file_error(exc) or _not_the_reader(exc))
        finally:
            sys.stdout = real
            _say_later(complete)
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
        complete = False
        try:
            out = fn(*args, **kwargs)
            sys.stdout.flush()
            complete = True
            return out
        except RooflineError as exc:
            fail(exc)
        except OSError as exc:  # a file named, or writing the stream; any other is not ours
            named = file_error(exc)
            if named is not None:
                fail(named)
            if not isinstance(exc, BrokenPipeError) and exc.errno not in _WRITE_ERRNOS:
                raise
            _write_failed(exc)
        finally:
            _say_later(complete)

    return wrapper  # type: ignore[return-value]


def _not_the_reader(exc: OSError) -> NoReturn:
    """An OSError of a guarded command's own work that names no file, raised on. stdout is held
    while the command runs, so a broken pipe there is not a reader that left (`| head`, which
    ends the process quietly with exit 0) but one of the command's own pipes (a worker pool's):
    a bug, one line and exit 3, never exit 0 with an empty stdout."""
    if isinstance(exc, BrokenPipeError):
        raise RuntimeError(f"a pipe of the command's own work broke ({exc})") from exc
    raise exc


def resume_gc() -> None:
    """The command's own work starts: what start-up built is frozen (later collections skip it)
    and the cycle collector runs again, so a long sweep's memory stays flat."""
    if _gc["paused"]:
        _gc["paused"] = False
        gc.freeze()
        _gc["frozen"] = True
        gc.enable()


def run(app: typer.Typer, commands: dict, gc_paused: bool = False) -> None:
    """Console entry point. Every bad input (our checks, or the parser's: a missing argument, an
    unknown option, a value of the wrong type) is one line on stderr and exit 2; a bug is one line
    and exit 3 (with the traceback under ROOFLINE_DEBUG=1). The cycle collector is paused until
    the command starts (resume_gc; gc_paused: the caller paused it earlier, as `python -m
    roofline` does before importing the app) and restored on the way out."""
    _gc["paused"] = gc_paused or gc.isenabled()
    gc.disable()
    _plain_streams()
    try:
        _main(app, commands)
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


def _main(app: typer.Typer, commands: dict) -> None:
    from roofline.cli.classcode import cached_dataclass_code

    try:
        sys.argv[1:] = verbose_first(sys.argv[1:])
        scope = _command_name(sys.argv[1:])
        if scope in commands:
            # every command's core imports numpy; imported here, at the bottom of the call stack,
            # its typing modules do not push frames across the interpreter's 16 KiB stack-chunk
            # boundary (each crossing maps and unmaps a chunk: hundreds of system calls)
            import numpy  # noqa: F401
        # the command's dataclasses: compiled once, then cached (a file per command)
        with cached_dataclass_code(scope or "other"):
            rv = app(standalone_mode=False, prog_name="roofline")
    except RooflineError as exc:  # raised outside a guarded command (e.g. a callback)
        hint = f" ({exc.hint})" if exc.hint else ""
        print(one_line(f"error: {exc}{hint}"), file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # `roofline ... | head`: the reader left; not an error of ours
        sys.stderr.close()
        os._exit(EXIT_OK)
    except OSError as exc:  # a file named outside a guarded command (e.g. --catalog's)
        named = file_error(exc)
        if named is None:
            _internal_error(exc)
        print(one_line(f"error: {named}"), file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as exc:
        # the parser's usage errors carry an exit code and a message (Click's UsageError)
        code, message = getattr(exc, "exit_code", None), getattr(exc, "format_message", None)
        if type(exc).__name__ == "Abort":
            print("error: interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
        if code is None or message is None:
            _internal_error(exc)
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None and not ctx.parent:
            print(ctx.get_help())  # `roofline` alone: its help, as asked for
            sys.exit(EXIT_OK)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:  # a group alone
            names = ", ".join(ctx.command.list_commands(ctx))
            text = f"{ctx.command_path} needs a command: {names}"
            print(one_line(f"error: {text} (see {ctx.command_path} -h)"), file=sys.stderr)
            sys.exit(code)
        text = message()
        if not text and ctx is not None:  # no arguments at all: show the help
            print(ctx.get_help())
            sys.exit(EXIT_OK)
        where = ctx.command_path if ctx is not None else "roofline"
        print(one_line(f"error: {text} (see {where} -h)"), file=sys.stderr)
        sys.exit(code)
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


@contextmanager
def native_stdout_to_stderr() -> Iterator[None]:
    """While native code runs that prints to file descriptor 1 on its own (HiGHS, behind scipy's
    milp, writes solver notes such as "HighsMipSolverData::transformNewIntegerFeasibleSolution"
    with printf), that descriptor points at stderr, so stdout carries only the result (a JSON
    document stays one); forked workers inherit it. Python's own sys.stdout is untouched."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (a closed stdout): nothing to guard
        yield
        return
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def verbose_first(args: list[str]) -> list[str]:
    """-v/--verbose is the root's option (every command's tables take it), so it is read where
    a user types it: after the command too (`roofline serve ... -v`, as the legends' "-v: more"
    invites), moved in front of the command; none of the commands has an option of that name."""
    cmd = _command_name(args)
    if cmd is None:
        return args
    at = args.index(cmd)
    end = args.index("--") if "--" in args[at:] else len(args)
    late = [a for a in args[at + 1 : end] if a in ("-v", "--verbose")]
    if not late:
        return args
    rest = [a for a in args[at + 1 : end] if a not in ("-v", "--verbose")]
    return [*late, *args[:at], cmd, *rest, *args[end:]]


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


def _internal_error(exc: BaseException) -> NoReturn:
    """A bug, not a user mistake: one line, exit 3; the traceback with ROOFLINE_DEBUG=1."""
    if os.environ.get("ROOFLINE_DEBUG"):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    where = f"{type(exc).__name__}: {exc}"
    print(
        one_line(
            f"internal error: {where} (a bug in roofline; please report it to {REPORT_URL} "
            "with the command line; ROOFLINE_DEBUG=1 shows the traceback)"
        ),
        file=sys.stderr,
    )
    sys.exit(EXIT_INTERNAL)

"""The Typer application: the table of commands (imported lazily), the root options, the
catalog the commands read, and their messages on stderr. The process's start-up machinery (exit
codes, stdout guard, ASCII fallback, the paused cycle collector) is roofline/cli/startup.py."""

import importlib
import sys
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from roofline import __version__
from roofline.cli.startup import guarded, guarded_stream, one_line, run

__all__ = ["COMMANDS", "app", "catalog", "guarded", "guarded_stream", "main", "note", "warn"]

if TYPE_CHECKING:
    from roofline.catalog.load import Catalog


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
    "fleet": ("fleet", "Many models on owned and rented GPUs, placed per hour."),
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
    def commands(self) -> MutableMapping[str, Any]:
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
            fn = info.callback
            if fn is not None and (info.name or typer.main.get_command_name(fn.__name__)) == name:
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


def warn(message: str) -> None:
    print(one_line(f"warning: {message}"), file=sys.stderr)


def note(message: str) -> None:
    """A message for people (e.g. 'wrote chart.svg') on stderr, never on stdout."""
    print(one_line(message), file=sys.stderr)


def catalog() -> "Catalog":
    """The shipped catalog plus --catalog directories and ROOFLINE_CATALOG."""
    from roofline.catalog.load import (
        load_catalog,  # the core loads with the first command that runs
    )

    cat = load_catalog(_state["catalog_dirs"])
    register_calibrations(cat)
    return cat


def register_calibrations(cat: "Catalog", add: bool = False) -> None:
    """Name the catalog's user calibrations in every output (render.core.user_calibration):
    per file its path, sha256 and the figures it sets, on the accelerator ids they resolve to."""
    import hashlib
    from pathlib import Path

    from roofline.render.core import set_user_calibrations

    files: dict[str, list[dict]] = {}
    for cal in cat.calibrations.values():
        path = cat.origin.get(f"calibrations:{cal.id}", "")
        try:
            hw = cat.accelerator(cal.hardware).id
        except Exception:  # a calibration naming no chip: the loader refused it already
            hw = cal.hardware
        fig = {"id": cal.id, "hardware": hw, "engine": cal.engine, **cal.values}
        files.setdefault(path, []).append(fig)
    items = []
    for path, figs in files.items():
        p = Path(path)
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        items.append({"file": path, "sha256": digest, "figures": figs})
    set_user_calibrations(items, add)


def catalog_dirs() -> list[str]:
    return list(_state["catalog_dirs"])


def _version(value: bool) -> None:
    if value:
        print(f"roofline {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    catalog: Annotated[
        list[str] | None,  # not Path: Path("") is ".", and an empty path is refused (load.py)
        typer.Option(
            "--catalog",
            metavar="<path>",
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
    _state["catalog_dirs"] = list(catalog or [])
    from roofline.render.core import (  # no rich: JSON commands load it too
        set_user_calibrations,
        set_verbose,
    )

    set_user_calibrations([])  # each command names its own (catalog())
    set_verbose(verbose)


def main(gc_paused: bool = False) -> None:
    """Console entry point (startup.run: exit codes, streams, the paused cycle collector; gc_paused:
    the caller paused it earlier, as `python -m roofline` does before importing the app)."""
    run(app, COMMANDS, gc_paused)

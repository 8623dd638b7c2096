"""cli.groups.grouped: a group's fields become the command's options in the group's order, a group
within a group spread in its place, and the command receives the groups rebuilt."""

import inspect
from dataclasses import dataclass
from typing import Annotated

import typer
from typer.testing import CliRunner

from roofline.cli import groups as grp
from roofline.cli import layout_options as lopt


@dataclass(frozen=True)
class _Inner:
    a: Annotated[int, typer.Option("--a")] = 1
    b: Annotated[int, typer.Option("--b")] = 2


@dataclass(frozen=True)
class _Outer:
    name: Annotated[str, typer.Argument()]
    inner: _Inner = _Inner()
    c: Annotated[int, typer.Option("--c")] = 3


def _cmd(o: _Outer, d: Annotated[int, typer.Option("--d")] = 4) -> tuple[_Outer, int]:
    return o, d


def test_a_group_within_a_group_is_spread_in_its_place():
    # the leaves in declaration order: the outer group's argument, the inner group's two
    # options where the inner group stands, the outer group's last option, then the command's own
    params = list(inspect.signature(grp.grouped(_cmd)).parameters)
    assert params == ["name", "a", "b", "c", "d"]


def test_the_command_receives_the_groups_rebuilt():
    got = grp.grouped(_cmd)(name="x", a=10, b=20, c=30, d=40)
    assert got == (_Outer("x", _Inner(10, 20), 30), 40)


def test_typer_reads_the_spread_options():
    seen = []
    app = typer.Typer()

    @app.command()
    @grp.grouped
    def cmd(o: _Outer, d: Annotated[int, typer.Option("--d")] = 4) -> None:
        seen.append((o, d))

    result = CliRunner().invoke(app, ["y", "--b", "7", "--d", "5"])
    assert result.exit_code == 0, result.output
    assert seen[-1] == (_Outer("y", _Inner(1, 7), 3), 5)


def test_placement_spreads_model_hardware_layout_and_formats_in_that_order():
    def cmd(pl: lopt.Placement) -> None: ...

    params = list(inspect.signature(grp.grouped(cmd)).parameters)
    layout = ["tp", "pp", "ep", "gpus", "dp", "attention_dp", "microbatches", "nodes"]
    layout += ["cross_node_tp", "scale_out", "attention_dp_balance"]  # as analyze -h lists them
    assert params == ["model", "hardware", *layout, "weights", "kv_dtype"]

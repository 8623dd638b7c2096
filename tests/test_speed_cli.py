"""The lazy command line (functional, not timing): `--help` lists every command from the table
without importing any, the table agrees with each command's own docstring, every command still
resolves and runs, and a single query imports only what it needs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer.main

from roofline.cli import COMMANDS, app


def _commands_in_help(text: str) -> dict[str, str]:
    lines = text.split("Commands:", 1)[1].splitlines()
    return {ln.split()[0]: " ".join(ln.split()[1:]) for ln in lines if ln.strip()}


def test_help_lists_every_command(run_main):
    r = run_main("--help")
    assert r.code == 0
    listed = _commands_in_help(r.stdout)
    assert list(listed) == list(COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        assert listed[name] == summary


def test_table_matches_the_commands_docstrings():
    """The short help in the table is each command's own first docstring line (or group help),
    and the table names every command the modules register: nothing is missing or extra."""
    root = typer.main.get_command(app)
    built = root.commands  # the full app: imports every command module
    assert set(built) == set(COMMANDS)
    for name, cmd in built.items():
        assert cmd.get_short_help_str(200) == COMMANDS[name][1], name
        module = COMMANDS[name][0]
        callback = getattr(cmd, "callback", None)
        if callback is not None and not hasattr(cmd, "commands"):
            assert callback.__module__ == f"roofline.cli.{module}", name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_resolves_and_shows_its_help(run, name):
    r = run(name, "--help")
    assert r.code == 0, r.stderr
    assert f"roofline {name}" in r.stdout or name in r.stdout


def test_commands_still_run(run):
    assert run("analyze", "llama-3.1-8b", "h100", "-f", "json").json()["command"] == "analyze"
    assert run("kv", "llama-3.1-8b", "-f", "json").json()["command"] == "kv"
    assert run("hardware", "list", "-f", "json").code == 0
    assert run("models", "show", "llama-3.1-8b", "-f", "json").code == 0
    assert run("sweep", "--batch", "1,2", "-f", "csv").stdout.count("\n") == 3


def test_unknown_command_still_suggests(run_main):
    r = run_main("analyse", "llama-3.1-8b", "h100")
    assert r.code == 2 and "analyze" in r.stderr


PROBE = """
import contextlib, io, json, sys
sys.argv = ["roofline", *sys.argv[1:]]
from roofline.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
mods = sorted(m for m in sys.modules if m.split(".")[0] in ("roofline", "rich", "yaml"))
print(json.dumps({"code": code, "modules": mods}))
"""


def _modules_after(*args: str) -> set[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    result = json.loads(r.stdout.splitlines()[-1])
    assert result["code"] in (0, None)
    return set(result["modules"])


def test_a_json_query_imports_only_what_it_needs():
    _modules_after("analyze", "llama-3.1-8b", "h100", "-f", "json")  # warms the parse cache
    mods = _modules_after("analyze", "llama-3.1-8b", "h100", "-f", "json")
    assert "roofline.cli.analyze" in mods and "roofline.step.phases" in mods
    unneeded = {
        "roofline.cli.serving",
        "roofline.cli.traffic",
        "roofline.cli.tools",
        "roofline.cli.check",
        "roofline.cli.catalog_cmds",
        "roofline.render.charts",
        "roofline.serving.sim.scheduler",
        "roofline.levers.kvcache",
        "rich.console",  # nothing is drawn for --format json
        "yaml",  # the catalog comes from the parse cache
    }
    assert not (mods & unneeded), mods & unneeded


def test_help_imports_no_command():
    mods = _modules_after("--help")
    plumbing = {"roofline.cli.app", "roofline.cli.startup", "roofline.cli.classcode"}
    assert not any(m.startswith("roofline.cli.") and m not in plumbing for m in mods), mods
    assert (
        "roofline.catalog.load" not in mods and "roofline.step.phases" not in mods
    )  # nor the core


def test_main_leaves_the_cycle_collector_as_it_found_it(run_main):
    """Start-up pauses the collector and the command freezes what start-up built; in process
    (as here) both are undone on the way out, after a run and after a usage error."""
    import gc

    assert gc.isenabled()
    assert run_main("kv", "llama-3.1-8b", "-f", "json").code == 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert run_main("kv", "--no-such-option").code == 2
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["analyze", "llama-3.1-8b", "h100"], "analyze"),
        (["--catalog", "kv", "analyze"], "analyze"),  # --catalog's value is not a command
        (["--catalog=dir", "hardware", "list"], "hardware"),
        (["--help"], None),
        ([], None),
    ],
)
def test_command_name_for_start_up(argv, name):
    from roofline.cli.startup import _command_name

    assert _command_name(argv) == name

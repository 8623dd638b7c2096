"""The `roofline` command line: parse, call the core, render, map errors to exit codes.

`app.py` holds the Typer application and the exit codes, `options.py` every shared option
(declared once), `convert.py` the JSON form of core objects, and one module per group of
commands registers them on the app: `analyze` (one deployment's physics: kv, analyze, capacity,
bytes), `levers` (speculate, tiers), `edge` (offload, edge), `serving` (many requests: cliff,
disagg), `plan` (parallel layouts), `tools` (check, sweep, plot, validate) and `catalog_cmds`
(hardware, models, catalog).
"""

from roofline.cli import (  # noqa: F401  (each module registers its commands)
    analyze,
    catalog_cmds,
    edge,
    levers,
    plan,
    serving,
    tools,
    traffic,
)
from roofline.cli.app import app, main

__all__ = ["app", "main"]

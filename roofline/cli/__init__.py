"""The `roofline` command line: parse, call the core, render, map errors to exit codes.

`app.py` holds the Typer application and the exit codes, `options.py` every shared option
(declared once), `convert.py` the JSON form of core objects, and one module per group of
commands registers them on the app: `catalog_cmds` (hardware, models, catalog), `analyze` (one
deployment's physics: kv, analyze, capacity, bytes, speculate, tiers), `serving` (many requests:
cliff, disagg, plan, validate) and `tools` (check, sweep, plot).
"""

from roofline.cli import analyze, catalog_cmds, serving, tools  # noqa: F401  (registration)
from roofline.cli.app import app, main

__all__ = ["app", "main"]

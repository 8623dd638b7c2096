"""The `roofline` command line: parse, call the core, render, map errors to exit codes.

`app.py` holds the Typer application and the table of commands (name, module,
one-line help): the root group imports a command's module only when that command runs, so a
single query imports only what it needs. `options.py` declares every shared option once
(`traffic_options.py` those of serve, size, disagg and check),
`convert.py` the JSON form of core objects, `publish.py` the HTML report's options and writer
(--format html, --out FILE.html), and one module per group of commands registers them on the
app: `analyze` (analyze), `memory` (kv, capacity, bytes), `levers` (speculate, tiers), `edge`
(offload, edge), `serving` (cliff, disagg), `traffic` (serve, size), `plan` (parallel layouts),
`check`, `report` (a spec's candidates as one HTML page), `tools` (sweep, plot, validate) and
`catalog_cmds` (hardware, models, catalog). A command's JSON document is built in a `*_json.py`
beside it; `startup.py` holds the process's start-up machinery (exit codes, the stdout guard, the
ASCII fallback, the paused cycle collector).
"""

from roofline.cli.app import COMMANDS, app, main

__all__ = ["COMMANDS", "app", "main"]

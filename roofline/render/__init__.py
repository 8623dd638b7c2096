"""Presentation: JSON documents, Rich tables, charts and the HTML report.

The only room (with the CLI) that imports rich.

`columns` and `textcols` write a sweep's chunks of numpy columns (CSV, JSONL, Parquet).
One module per group of commands, each table beside its siblings only: `core` (envelope, row
formats, consoles, number formatting), `width` (the width-safe table layout and the inputs
header), `catalog` (hardware, tiers, families, models), `analyze` (analyze, kv, capacity,
bytes), `serving` (cliff, disagg, plan), `levers` (speculate, tiers spill, offload, edge),
`tools` (validate, check, sweep), `traffic` (serve, disagg under a rate), `sizing` (size).
The HTML report (no rich) is the `html` package: `html.page` (the page), `html.parts` (values,
tables, headline figures, bands), `html.svg` (inline SVG charts), and each command's answer and
charts in `html.traffic` (serve, size, cliff, disagg), `html.static` (analyze, plan, speculate,
edge), `html.report` (report), grouped as cli/ groups the commands.
"""

import importlib
from typing import Any

from roofline.render.core import (
    RowFmt,
    console_width,
    document,
    emit,
    emit_json,
    progress_bar,
    stderr_console,
    stdout_console,
    to_jsonable,
)

# table -> module. Tables import rich, so a command that prints JSON never does: each name is a
# small stand-in that imports its module when the table is first drawn.
_TABLES = {
    "analyze_table": "analyze",
    "bytes_table": "analyze",
    "capacity_table": "analyze",
    "kv_allocation_table": "analyze",
    "kv_compare_table": "analyze",
    "kv_table": "analyze",
    "families_table": "catalog",
    "hardware_list_table": "catalog",
    "hardware_show_table": "catalog",
    "models_list_table": "catalog",
    "models_show_table": "catalog",
    "tiers_table": "catalog",
    "edge_table": "levers",
    "offload_table": "levers",
    "speculate_table": "levers",
    "tiers_spill_table": "levers",
    "cliff_table": "serving",
    "disagg_table": "serving",
    "plan_table": "serving",
    "bench_table": "tools",
    "check_table": "tools",
    "sweep_table": "tools",
    "validate_table": "tools",
    "disagg_traffic_table": "traffic",
    "launch_table": "launchlines",
    "serve_table": "traffic",
    "size_table": "sizing",
    "size_day_table": "day",
    "workload_serve_table": "workload",
    "workload_size_table": "workload",
}


def _deferred(name: str) -> Any:
    module = f"roofline.render.{_TABLES[name]}"

    def draw(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = f"{module}.{name}, imported when first drawn."
    return draw


# the sweep's column writers (columns.py, textcols.py), imported by the first command that
# writes columns: a single query never does
_COLUMNS = ("PARQUET_MISSING", "parquet_available", "write_columns", "write_parquet")


def __getattr__(name: str) -> Any:
    if name in _COLUMNS:
        value = getattr(importlib.import_module("roofline.render.columns"), name)
    elif name in _TABLES:
        value = _deferred(name)
    else:
        raise AttributeError(f"module 'roofline.render' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "PARQUET_MISSING",
    "RowFmt",
    "analyze_table",
    "bench_table",
    "bytes_table",
    "capacity_table",
    "check_table",
    "cliff_table",
    "console_width",
    "disagg_table",
    "disagg_traffic_table",
    "document",
    "edge_table",
    "emit",
    "emit_json",
    "families_table",
    "hardware_list_table",
    "hardware_show_table",
    "kv_allocation_table",
    "kv_compare_table",
    "kv_table",
    "launch_table",
    "models_list_table",
    "models_show_table",
    "offload_table",
    "parquet_available",
    "plan_table",
    "progress_bar",
    "serve_table",
    "size_day_table",
    "size_table",
    "speculate_table",
    "stderr_console",
    "stdout_console",
    "sweep_table",
    "tiers_spill_table",
    "tiers_table",
    "to_jsonable",
    "validate_table",
    "workload_serve_table",
    "workload_size_table",
    "write_columns",
    "write_parquet",
]

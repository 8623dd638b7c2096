"""Presentation: JSON documents and Rich tables. The only package (with the CLI) that imports rich.

One module per group of commands, each table beside its siblings only: `core` (envelope, row
formats, consoles, number formatting), `layout` (the width-safe table layout and the inputs
header), `catalog` (hardware, tiers, families, models), `analyze` (analyze, kv, capacity,
bytes), `serving` (cliff, disagg, plan), `levers` (speculate, tiers spill, offload, edge),
`tools` (validate, check, sweep), `traffic` (serve, size, disagg under a rate).
"""

from roofline.render.analyze import (
    analyze_table,
    bytes_table,
    capacity_table,
    kv_allocation_table,
    kv_compare_table,
    kv_table,
)
from roofline.render.catalog import (
    families_table,
    hardware_list_table,
    hardware_show_table,
    models_list_table,
    models_show_table,
    tiers_table,
)
from roofline.render.core import (
    SCHEMA_VERSION,
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
from roofline.render.levers import (
    edge_table,
    offload_table,
    speculate_table,
    tiers_spill_table,
)
from roofline.render.serving import cliff_table, disagg_table, plan_table
from roofline.render.tools import check_table, sweep_table, validate_table
from roofline.render.traffic import disagg_traffic_table, serve_table, size_table

__all__ = [
    "SCHEMA_VERSION",
    "RowFmt",
    "analyze_table",
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
    "models_list_table",
    "models_show_table",
    "offload_table",
    "plan_table",
    "progress_bar",
    "serve_table",
    "size_table",
    "speculate_table",
    "stderr_console",
    "stdout_console",
    "sweep_table",
    "tiers_spill_table",
    "tiers_table",
    "to_jsonable",
    "validate_table",
]

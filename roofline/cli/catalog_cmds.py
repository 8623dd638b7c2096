"""Catalog commands: `hardware list|show|tiers|families`, `models list|show|import`, `catalog
validate`."""

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from roofline import render
from roofline.catalog.load import (
    catalog_dir,
    dirs_in_use,
    model_from_config,
    model_yaml,
    read_hf_config,
    validate_dirs,
)
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli.app import (
    catalog,
    catalog_app,
    catalog_dirs,
    guarded,
    hardware_app,
    models_app,
    note,
)
from roofline.domain.errors import InputError


def _emit_rows(command: str, key: str, rows: list, fmt: render.RowFmt, table: Callable) -> None:
    """A listing's document, its rows under `key`: as the table or the rows in --format."""
    doc = render.document(command, {}, **{key: rows})
    render.emit(doc, fmt, doc[key], table)


def _emit_one(
    command: str, key: str, name: str, entry: dict, fmt: opt.Fmt, table: Callable
) -> None:
    """One catalog entry's document: the id asked for in `inputs`, the entry under `key`."""
    doc = render.document(command, {key: name}, **{key: entry})
    render.emit_json(doc) if fmt is opt.Fmt.json else table(doc)


# ---- hardware -------------------------------------------------------------------------------
@hardware_app.command("list")
@guarded
def hardware_list(fmt: opt.RowFormat = render.RowFmt.table) -> None:
    """List accelerators: memory, bandwidth, peaks, ridge.

    Example: roofline hardware list --format json | jq '.hardware[].id'"""
    rows = [convert.hardware_json(h) for h in catalog().accelerators.values()]
    _emit_rows("hardware list", "hardware", rows, fmt, render.hardware_list_table)


@hardware_app.command("show")
@guarded
def hardware_show(
    hardware: Annotated[str, typer.Argument(help="id or alias, e.g. h100")],
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Show one accelerator with every figure and source.

    Example: roofline hardware show h100"""
    entry = convert.hardware_json(catalog().accelerator(hardware))
    _emit_one("hardware show", "hardware", hardware, entry, fmt, render.hardware_show_table)


@hardware_app.command("tiers")
@guarded
def hardware_tiers(fmt: opt.RowFormat = render.RowFmt.table) -> None:
    """List memory tiers and links (PCIe, CXL, DDR5, NVMe).

    Also NVLink-C2C and InfiniBand: bandwidth, latency and capacity.
    Example: roofline hardware tiers"""
    tiers = [
        {
            "id": t.id,
            "name": t.name,
            "kind": t.kind,
            "bandwidth_bytes_per_s": t.bandwidth_bytes_per_s,
            "latency_s": t.latency_s,
            "capacity_bytes": t.capacity_bytes,
            "source": t.source,
        }
        for t in catalog().tiers.values()
    ]
    _emit_rows("hardware tiers", "tiers", tiers, fmt, render.tiers_table)


@hardware_app.command("families")
@guarded
def hardware_families(fmt: opt.RowFormat = render.RowFmt.table) -> None:
    """Calibrated efficiencies per hardware family.

    The efficiencies each family's accelerators share, with their provenance.
    Example: roofline hardware families --format json | jq '.families[].efficiency.memory'"""
    cat = catalog()
    families = [
        {
            "id": f.id,
            "name": f.name,
            "efficiency": convert.efficiency_json(f.efficiency),
            "members": [h.id for h in cat.accelerators.values() if h.family == f.id],
        }
        for f in cat.families.values()
    ]
    _emit_rows("hardware families", "families", families, fmt, render.families_table)


# ---- models ---------------------------------------------------------------------------------
@models_app.command("list")
@guarded
def models_list(fmt: opt.RowFormat = render.RowFmt.table) -> None:
    """List models: attention, parameters, KV per token.

    Example: roofline models list"""
    rows = [convert.model_json(m) for m in catalog().models.values()]
    _emit_rows("models list", "models", rows, fmt, render.models_list_table)


@models_app.command("show")
@guarded
def models_show(
    model: Annotated[str, typer.Argument(help="id or alias, e.g. llama-3.1-8b")],
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Show one model and its parameter breakdown.

    Example: roofline models show deepseek-r1"""
    entry = convert.model_json(catalog().model(model))
    _emit_one("models show", "model", model, entry, fmt, render.models_show_table)


# ---- catalog --------------------------------------------------------------------------------
@catalog_app.command("validate")
@guarded
def catalog_validate(
    dirs: Annotated[
        list[str] | None, typer.Argument(help="directories (default: all in use)")
    ] = None,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Check catalog files; print every problem.

    Each problem names the file, the entry and the key, on stderr; exit 2 if there is any.
    --format json also writes the document (ok, problems) on stdout; jsonl, csv and markdown a
    row per problem.
    Example: roofline catalog validate ./my-catalog --format json | jq '.problems[]'"""
    targets = [catalog_dir(d) for d in dirs] if dirs else dirs_in_use(catalog_dirs())
    problems = validate_dirs(targets)
    shown = [str(d) for d in targets]
    doc = render.document("catalog validate", {"dirs": shown}, ok=not problems, problems=problems)
    rows = [{"problem": p} for p in problems]
    render.emit(doc, fmt, rows, lambda _: None)  # the table is the lines on stderr below
    err = render.stderr_console()
    for p in problems:
        err.print(f"error: {p}", markup=False)
    if problems:
        raise typer.Exit(2)
    err.print(f"ok: {', '.join(shown)}", markup=False)


@models_app.command("import")
@guarded
def models_import(
    config: Annotated[
        str, typer.Argument(help="a config.json path, or a Hugging Face repo id in the local cache")
    ],
    id_: Annotated[
        str | None, typer.Option("--id", help="catalog id (default: folder or repo name)")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the YAML here")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="yaml or json")] = "yaml",
) -> None:
    """Turn a Hugging Face config.json into a catalog entry.

    Reads a local file or the local Hugging Face cache (never the network); the entry is checked
    like the catalog.
    Example: roofline models import examples/configs/Kimi-K2-Instruct/config.json -o kimi-k2.yaml"""
    if fmt not in ("yaml", "json"):
        raise InputError(f"--format must be yaml or json, got {fmt}")
    entry = read_hf_config(config, id_)
    m = model_from_config(config, id_)
    text = model_yaml(entry) if fmt == "yaml" else json.dumps({"models": [entry]}, indent=2) + "\n"
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {out}: {exc.strerror}") from None
        note(
            f"wrote {out}: {m.id}, {m.params_total / 1e9:.2f}B parameters "
            f"({m.params_active / 1e9:.2f}B active)"
        )
    else:
        sys.stdout.write(text)

"""The `roofline` command line: parse, call the core, render, map errors to exit codes.

Exit codes: 0 done; 1 a check failed; 2 bad input (unknown id, malformed catalog, out-of-range
value, a model that does not fit). stdout carries only results; messages go to stderr.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import typer

from roofline import __version__, render
from roofline.catalog import (
    Catalog,
    load_catalog,
    shipped_dirs,
    user_dirs,
    validate_dirs,
)
from roofline.errors import DoesNotFitError, InputError, RooflineError
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.memory import (
    ENGINES,
    MemoryPlan,
    kv_bytes_per_token,
)
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import PhaseResult
from roofline.precision import activation_format, kv_format, weight_format
from roofline.units import fmt_bytes, parse_bytes, parse_count, parse_seconds

app = typer.Typer(
    help="Analytical roofline calculator for LLM inference: how fast and how big, from first "
    "principles.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
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
F = TypeVar("F", bound=Callable[..., Any])


class Fmt(str, Enum):
    table = "table"
    json = "json"


FormatOpt = Annotated[Fmt, typer.Option("--format", "-f", help="table for people, json for pipes")]
RowFormat = Annotated[
    render.RowFmt,
    typer.Option("--format", "-f", help="table, json, jsonl, csv or markdown"),
]
MAX_TOKENS = 1e9
MAX_BATCH = 1e7


def fail(exc: RooflineError) -> None:
    """One line on stderr, exit code 2."""
    hint = f" ({exc.hint})" if exc.hint else ""
    render.stderr_console().print(f"error: {exc}{hint}", markup=False)
    raise typer.Exit(2)


def guarded(fn: F) -> F:
    """Turn RooflineError into one stderr line and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RooflineError as exc:
            fail(exc)

    return wrapper  # type: ignore[return-value]


def warn(message: str) -> None:
    render.stderr_console().print(f"warning: {message}", markup=False)


def _catalog() -> Catalog:
    return load_catalog(_state["catalog_dirs"])


def _version(value: bool) -> None:
    if value:
        print(f"roofline {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    catalog: Annotated[
        list[Path] | None,
        typer.Option(
            "--catalog",
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
) -> None:
    """Analytical roofline calculator for LLM inference."""
    _state["catalog_dirs"] = [str(p) for p in catalog or []]


# ---- parsing helpers ------------------------------------------------------------------------
def _tokens(text: str, what: str, minimum: float = 0) -> int:
    value = parse_count(text, what)
    if not minimum <= value <= MAX_TOKENS or value != int(value):
        raise InputError(
            f"{what} must be a whole number of tokens from {minimum:g} to 1e9, got {text}"
        )
    return int(value)


def _kv_budget(kv_budget: str | None, sink: str | None, window: str | None) -> int | None:
    """Tokens an eviction policy keeps: --kv-budget, or StreamingLLM's sink + window."""
    if kv_budget is not None and (sink or window):
        raise InputError("give either --kv-budget or --sink/--window, not both")
    if kv_budget is not None:
        return _tokens(kv_budget, "--kv-budget", 1)
    if sink or window:
        return _tokens(sink or "0", "--sink", 0) + _tokens(window or "0", "--window", 1)
    return None


def _batch(value: int) -> int:
    if not 1 <= value <= MAX_BATCH:
        raise InputError(f"--batch must be from 1 to {MAX_BATCH:.0e}, got {value}")
    return value


def _deployment(
    weights: str,
    kv_dtype: str,
    act_dtype: str,
    tp: int,
    pp: int,
    ep: int,
    sparsity: str | None,
    compute: str | None,
) -> Deployment:
    if sparsity not in (None, "none", "2:4"):
        raise InputError(f"--sparsity must be 2:4 or none, got {sparsity}")
    return Deployment(
        weights=weight_format(weights),
        kv=kv_format(kv_dtype),
        activations=activation_format(act_dtype),
        tp=tp,
        pp=pp,
        ep=ep,
        sparse_2_4=sparsity == "2:4",
        compute_dtype=compute,
    )


def _efficiency(
    hw: Accelerator, eta_compute: float | None, eta_memory: float | None, overhead: str | None
) -> Efficiency:
    base = hw.efficiency
    if eta_compute is None and eta_memory is None and overhead is None:
        return base
    return replace(
        base,
        compute=base.compute if eta_compute is None else eta_compute,
        memory=base.memory if eta_memory is None else eta_memory,
        step_overhead_s=base.step_overhead_s if overhead is None else parse_seconds(overhead),
        source=f"command line (catalog: {base.source})",
    )


def _capacity(hw: Accelerator, memory: str | None) -> float:
    if memory is None:
        return hw.usable_memory_bytes
    value = parse_bytes(memory, "--memory")
    if not 0 < value < 1e15:
        raise InputError(f"--memory must be positive and below 1 PB, got {memory}")
    return value * hw.gpu_memory_fraction


def _gpus(gpus: int | None, dep: Deployment) -> tuple[int, int]:
    n = dep.gpus_per_replica if gpus is None else gpus
    if n < dep.gpus_per_replica or n % dep.gpus_per_replica:
        raise InputError(f"--gpus {n} must be a multiple of TP×PP = {dep.gpus_per_replica}")
    return n, n // dep.gpus_per_replica


def _link_json(link: Tier | None) -> dict[str, Any] | None:
    if link is None:
        return None
    return {
        "name": link.name,
        "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
        "latency_s": link.latency_s,
    }


def _hardware_json(hw: Accelerator) -> dict[str, Any]:
    return {
        "id": hw.id,
        "name": hw.name,
        "vendor": hw.vendor,
        "family": hw.family,
        "aliases": list(hw.aliases),
        "memory_type": hw.memory_type,
        "memory_capacity_bytes": hw.memory_capacity_bytes,
        "memory_nominal_bytes": hw.memory_nominal_bytes,
        "usable_memory_bytes": hw.usable_memory_bytes,
        "memory_bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
        "peak_flops_per_s": dict(hw.peak_flops_per_s),
        "ridge_flops_per_byte": {k: hw.ridge_flops_per_byte(k) for k in hw.peak_flops_per_s},
        "sparsity_2_4": hw.sparsity_2_4,
        "gpu_memory_fraction": hw.gpu_memory_fraction,
        "scale_up": _link_json(hw.scale_up),
        "host_link": _link_json(hw.host_link),
        "efficiency": _efficiency_json(hw.efficiency),
        "source": hw.source,
        "notes": hw.notes,
    }


def _efficiency_json(eff: Efficiency) -> dict[str, Any]:
    return {
        "compute": eff.compute,
        "memory": eff.memory,
        "memory_weight_only": eff.memory_dequant,
        "step_overhead_s": eff.step_overhead_s,
        "source": eff.source,
    }


def _model_json(m: ModelArch) -> dict[str, Any]:
    p = m.param_breakdown()
    return {
        "id": m.id,
        "name": m.name,
        "aliases": list(m.aliases),
        "attention": m.attention_kind,
        "moe": m.is_moe,
        "params_total": p["total"],
        "params_active": p["active"],
        "params_mtp": p["mtp"],
        "params_breakdown": {k: v for k, v in p.items() if k not in ("total", "active", "mtp")},
        "kv_bytes_per_token_bf16": kv_bytes_per_token(m, 16.0),
        "max_position_embeddings": m.max_position_embeddings,
        "layer_groups": [
            {"count": g.count, "window": g.window, "moe": g.moe} for g in m.layer_groups
        ],
        "config": {
            k: getattr(m, k)
            for k in (
                "model_type",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "num_key_value_heads",
                "head_dim",
                "intermediate_size",
                "vocab_size",
                "n_routed_experts",
                "num_experts_per_tok",
                "moe_intermediate_size",
                "n_shared_experts",
                "first_k_dense_replace",
                "kv_lora_rank",
                "qk_rope_head_dim",
                "sliding_window",
            )
        },
        "source": m.source,
        "notes": m.notes,
    }


# ---- hardware -------------------------------------------------------------------------------
@hardware_app.command("list")
@guarded
def hardware_list(fmt: RowFormat = render.RowFmt.table) -> None:
    """List accelerators. Example: roofline hardware list --format json | jq '.hardware[].id'"""
    cat = _catalog()
    doc = render.document(
        "hardware list", {}, hardware=[_hardware_json(h) for h in cat.accelerators.values()]
    )
    render.emit(doc, fmt, doc["hardware"], render.hardware_list_table)


@hardware_app.command("show")
@guarded
def hardware_show(
    hardware: Annotated[str, typer.Argument(help="id or alias, e.g. h100")],
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Show one accelerator. Example: roofline hardware show h100"""
    doc = render.document(
        "hardware show",
        {"hardware": hardware},
        hardware=_hardware_json(_catalog().accelerator(hardware)),
    )
    render.emit_json(doc) if fmt is Fmt.json else render.hardware_show_table(doc)


@hardware_app.command("tiers")
@guarded
def hardware_tiers(fmt: RowFormat = render.RowFmt.table) -> None:
    """List memory tiers and links (PCIe, CXL, DDR5, NVMe, NVLink-C2C, InfiniBand).
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
        for t in _catalog().tiers.values()
    ]
    doc = render.document("hardware tiers", {}, tiers=tiers)
    render.emit(doc, fmt, doc["tiers"], render.tiers_table)


@hardware_app.command("families")
@guarded
def hardware_families(fmt: RowFormat = render.RowFmt.table) -> None:
    """The calibrated efficiencies each hardware family shares, with their provenance.
    Example: roofline hardware families --format json | jq '.families[].efficiency.memory'"""
    cat = _catalog()
    families = [
        {
            "id": f.id,
            "name": f.name,
            "efficiency": _efficiency_json(f.efficiency),
            "members": [h.id for h in cat.accelerators.values() if h.family == f.id],
        }
        for f in cat.families.values()
    ]
    doc = render.document("hardware families", {}, families=families)
    render.emit(doc, fmt, doc["families"], render.families_table)


# ---- models ---------------------------------------------------------------------------------
@models_app.command("list")
@guarded
def models_list(fmt: RowFormat = render.RowFmt.table) -> None:
    """List models. Example: roofline models list"""
    doc = render.document(
        "models list", {}, models=[_model_json(m) for m in _catalog().models.values()]
    )
    render.emit(doc, fmt, doc["models"], render.models_list_table)


@models_app.command("show")
@guarded
def models_show(
    model: Annotated[str, typer.Argument(help="id or alias, e.g. llama-3.1-8b")],
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Show one model and its parameter breakdown. Example: roofline models show deepseek-r1"""
    doc = render.document(
        "models show", {"model": model}, model=_model_json(_catalog().model(model))
    )
    render.emit_json(doc) if fmt is Fmt.json else render.models_show_table(doc)


# ---- catalog --------------------------------------------------------------------------------
@catalog_app.command("validate")
def catalog_validate(
    dirs: Annotated[
        list[Path] | None, typer.Argument(help="directories (default: all in use)")
    ] = None,
) -> None:
    """Check catalog files and print every problem with file, entry and key.
    Example: roofline catalog validate ./my-catalog"""
    targets = list(dirs) if dirs else shipped_dirs() + user_dirs(_state["catalog_dirs"])
    problems = validate_dirs(targets)
    err = render.stderr_console()
    for p in problems:
        err.print(f"error: {p}", markup=False)
    if problems:
        raise typer.Exit(2)
    err.print(f"ok: {', '.join(str(d) for d in targets)}", markup=False)


def _int_list(spec: str, what: str, parse: Callable[[str], int] = int) -> list[int]:
    """'1,8,64' | '1..1024' (powers of two) | '8..256:8' (a step); items may take units."""
    try:
        if ".." in spec:
            lo_text, _, rest = spec.partition("..")
            hi_text, _, step_text = rest.partition(":")
            lo, hi = parse(lo_text), parse(hi_text)
            if step_text:
                values = list(range(lo, hi + 1, parse(step_text)))
            else:
                count = int(np.log2(hi / lo)) + 1 if hi >= lo > 0 else 0
                values = sorted({round(v) for v in np.geomspace(lo, hi, count)} | {hi})
        else:
            values = [parse(v) for v in spec.split(",") if v.strip()]
    except (ValueError, ZeroDivisionError, RooflineError):
        raise InputError(
            f"cannot read {what} {spec!r}: use 1,8,64 or 1..1024 or 8..256:8"
        ) from None
    if not values:
        raise InputError(f"{what} {spec!r} gives no values")
    return values


def _batch_sweep(spec: str) -> list[int]:
    values = _int_list(spec, "--batch")
    if min(values) < 1 or max(values) > 65536 or len(values) > 256:
        raise InputError(f"--batch {spec!r}: 1 to 256 settings, each from 1 to 65536")
    return values


# ---- shared workload options ----------------------------------------------------------------
ModelArg = Annotated[str, typer.Argument(help="model id, alias or a config.json path")]
HardwareArg = Annotated[str, typer.Argument(help="accelerator id or alias")]
TpOpt = Annotated[int, typer.Option(help="tensor-parallel degree")]
PpOpt = Annotated[int, typer.Option(help="pipeline-parallel degree")]
EpOpt = Annotated[int, typer.Option(help="expert-parallel degree (divides --tp)")]
WeightsOpt = Annotated[str, typer.Option(help="weight format: bf16, fp8, int4, nvfp4, q4_0, ...")]
KvOpt = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16, fp8, int8, int4")]
ActOpt = Annotated[str, typer.Option("--act-dtype", help="activation format")]
EngineOpt = Annotated[str, typer.Option(help=f"KV-budget rule: {', '.join(ENGINES)}")]
MemoryOpt = Annotated[str | None, typer.Option(help="override memory per GPU, e.g. 64GB")]
SparsityOpt = Annotated[str | None, typer.Option(help="2:4 for structured sparsity")]
ComputeOpt = Annotated[str | None, typer.Option(help="override the matmul dtype, e.g. fp8")]


def _not_fit(m: ModelArch, hw: Accelerator, dep: Deployment, plan: MemoryPlan) -> DoesNotFitError:
    return DoesNotFitError(
        f"{m.id} in {dep.weights.name} needs {fmt_bytes(plan.weights_bytes)} of weights per GPU "
        f"(TP{dep.tp} PP{dep.pp}) plus "
        f"{fmt_bytes(plan.activation_bytes + plan.runtime_overhead_bytes)}"
        f" of activations and runtime, more than {plan.engine.name} leaves on {hw.id} "
        f"({fmt_bytes(plan.capacity_bytes * plan.engine.memory_fraction)})",
        hint="raise --tp or --pp, or use smaller --weights",
    )


def _phase_json(p: PhaseResult) -> dict[str, Any]:
    ops = [
        {
            "name": r.op.name,
            "kind": r.op.kind,
            "layers": r.op.layers,
            "flops": r.op.flops,
            "weight_bytes": r.op.weight_bytes,
            "kv_bytes": r.op.kv_bytes,
            "activation_bytes": r.op.act_bytes,
            "bytes": r.op.bytes,
            "link_bytes": np.asarray(r.op.message_bytes) * r.op.layers,
            "arithmetic_intensity": None if r.op.is_collective else r.intensity,
            "ridge_flops_per_byte": None if r.op.is_collective else r.ridge_flops_per_byte,
            "bound": r.bound,
            "t_ideal_s": r.t_ideal_s,
            "t_expected_s": r.t_expected_s,
        }
        for r in p.ops
    ]
    intensity = p.arithmetic_intensity
    return {
        "compute_dtype": p.compute_dtype,
        "flops": p.flops,
        "weight_bytes": p.weight_bytes,
        "kv_bytes": p.kv_bytes,
        "activation_bytes": p.activation_bytes,
        "bytes": p.bytes,
        "link_bytes": p.link_bytes,
        "arithmetic_intensity": intensity,
        "ridge_flops_per_byte": p.ridge_flops_per_byte,
        "ridge_over_intensity": p.ridge_flops_per_byte / intensity,
        "bound": p.bound,
        "t_ideal_s": p.t_ideal_s,
        "t_expected_s": p.t_expected_s,
        "ops": ops,
    }


def main() -> None:
    """Console entry point. Every bad input (our checks, or the parser's: a missing argument, an
    unknown option, a value of the wrong type) is one line on stderr and exit 2."""
    try:
        rv = app(standalone_mode=False, prog_name="roofline")
    except RooflineError as exc:  # raised outside a guarded command (e.g. a callback)
        hint = f" ({exc.hint})" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        # the parser's usage errors carry an exit code and a message (Click's UsageError)
        code, message = getattr(exc, "exit_code", None), getattr(exc, "format_message", None)
        if code is None or message is None:
            if type(exc).__name__ == "Abort":
                print("error: interrupted", file=sys.stderr)
                sys.exit(130)
            raise
        ctx = getattr(exc, "ctx", None)
        text = message()
        if not text and ctx is not None:  # no arguments at all: show the help
            print(ctx.get_help())
            sys.exit(0)
        where = ctx.command_path if ctx is not None else "roofline"
        print(f"error: {text} (see {where} -h)", file=sys.stderr)
        sys.exit(code)
    sys.exit(rv if isinstance(rv, int) else 0)


# the commands live in modules by theme and register themselves on `app`
from roofline import cli_analyze, cli_serving, cli_tools  # noqa: E402, F401

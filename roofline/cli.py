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
    load_cases,
    load_catalog,
    shipped_dirs,
    user_dirs,
    validate_dirs,
)
from roofline.errors import DoesNotFitError, InputError, RooflineError
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.kvcache import allocation_waste, attention_variants, parse_lengths
from roofline.levers import evaluate_levers
from roofline.memory import (
    ENGINES,
    MemoryPlan,
    activation_peak_bytes,
    engine,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.model import ModelArch
from roofline.ops import Deployment, cached_tokens_cap, kv_bytes_per_token_layer
from roofline.phases import PhaseResult, decode, prefill, request
from roofline.plot import check_output, save_cliff
from roofline.precision import KV_FORMATS, activation_format, kv_format, weight_format
from roofline.scheduler import StepModel, simulate
from roofline.units import fmt_bytes, parse_bytes, parse_count, parse_seconds
from roofline.validate import evaluate, summarize

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
    return Efficiency(
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


# ---- kv -------------------------------------------------------------------------------------
@app.command()
@guarded
def kv(
    model: Annotated[str, typer.Argument(help="model id or alias")],
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", help=f"{', '.join(KV_FORMATS)}")] = "bf16",
    kv_bits: Annotated[
        float | None,
        typer.Option(help="override bits per KV element, e.g. 6 (DeepSeek-V2's deployment)"),
    ] = None,
    context: Annotated[str, typer.Option(help="tokens per sequence, e.g. 32k")] = "32k",
    batch: Annotated[int, typer.Option(help="sequences")] = 1,
    tp: Annotated[int, typer.Option(help="tensor parallel: bytes per GPU")] = 1,
    compare: Annotated[
        bool, typer.Option("--compare", help="the model's attention next to MHA, GQA, MQA and MLA")
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option(help="with --compare: a baseline model (at bf16), e.g. deepseek-llm-67b"),
    ] = None,
    allocation: Annotated[
        str | None, typer.Option(help="paged or contiguous: allocated vs used KV for --lengths")
    ] = None,
    lengths: Annotated[
        str,
        typer.Option(
            help="sequence lengths: 100,250,900 | FILE | sharegpt | alpaca | "
            "lognormal:mean=500,sigma=0.9 | uniform:low=1,high=2048 (n=…, seed=…)"
        ),
    ] = "sharegpt",
    max_len: Annotated[
        str, typer.Option("--max-len", help="tokens a contiguous allocation reserves per request")
    ] = "2048",
    block: Annotated[int, typer.Option(help="paged KV block size in tokens")] = 16,
    kv_budget: Annotated[
        str | None,
        typer.Option("--kv-budget", help="KV eviction: tokens kept per sequence (H2O, SnapKV)"),
    ] = None,
    sink: Annotated[str | None, typer.Option(help="StreamingLLM: attention-sink tokens")] = None,
    window: Annotated[str | None, typer.Option(help="StreamingLLM: recent-window tokens")] = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            help="with --kv-budget: accelerator for the max-batch gain (with --tp, --weights)"
        ),
    ] = None,
    weights: Annotated[str, typer.Option(help="with --hardware: weight format")] = "bf16",
    fmt: FormatOpt = Fmt.table,
) -> None:
    """KV-cache bytes per token, per sequence and per batch; attention variants (--compare),
    paged vs contiguous allocation (--allocation), eviction (--kv-budget or --sink/--window).
    Example: roofline kv deepseek-r1 --context 32k --format json"""
    cat = _catalog()
    m = cat.model(model)
    fmt_kv = kv_format(kv_dtype)
    if kv_bits is not None:
        if not 1 <= kv_bits <= 32:
            raise InputError(f"--kv-bits must be from 1 to 32, got {kv_bits}")
        fmt_kv = replace(fmt_kv, name=f"{kv_bits:g}-bit", bits=kv_bits)
    ctx = _tokens(context, "--context", 1)
    budget = _kv_budget(kv_budget, sink, window)
    dep = Deployment(kv=fmt_kv, tp=tp, kv_token_budget=budget)
    b_kv = fmt_kv.bits / 8
    if compare:
        ref = cat.model(baseline) if baseline else None
        ref_bytes = kv_bytes_per_token(ref, 16.0) if ref else None
        mha_bytes = None
        rows = []
        for v in attention_variants(m):
            per_token = v.kv_elements_per_token_layer * m.num_hidden_layers * b_kv
            mha_bytes = per_token if v.name == "MHA" else mha_bytes
            rows.append(
                {"variant": v.name, "description": v.description, "kv_bytes_per_token": per_token}
            )
        for r in rows:
            r["ratio_to_mha"] = r["kv_bytes_per_token"] / mha_bytes
            r["reduction_vs_mha"] = 1 - r["ratio_to_mha"]
            if ref_bytes:
                r["ratio_to_baseline"] = r["kv_bytes_per_token"] / ref_bytes
                r["reduction_vs_baseline"] = 1 - r["ratio_to_baseline"]
        inputs = {
            "model": m.id,
            "kv_dtype": fmt_kv.name,
            "kv_bits": fmt_kv.bits,
            "baseline": ref.id if ref else None,
            "baseline_kv_bytes_per_token": ref_bytes,
            "baseline_kv_bits": 16.0 if ref else None,
        }
        doc = render.document("kv --compare", inputs, variants=rows)
        render.emit_json(doc) if fmt is Fmt.json else render.kv_compare_table(doc)
        return
    if allocation is not None:
        limit = _tokens(max_len, "--max-len", 1)
        if not 1 <= block <= 65536:
            raise InputError(f"--block must be from 1 to 65536 tokens, got {block}")
        values, desc = parse_lengths(lengths, limit)
        per_token = kv_bytes_per_token(m, fmt_kv.bits, tp)
        reports = {
            a: allocation_waste(values, per_token, a, block, limit) for a in ("contiguous", "paged")
        }
        chosen = reports.get(allocation)
        if chosen is None:
            raise InputError(f"--allocation must be paged or contiguous, got {allocation}")
        inputs = {
            "model": m.id,
            "kv_dtype": fmt_kv.name,
            "allocation": allocation,
            "block_tokens": block,
            "max_len_tokens": limit,
            "lengths": desc,
        }
        doc = render.document(
            "kv --allocation",
            inputs,
            sequences=chosen.sequences,
            mean_length_tokens=chosen.mean_length,
            used_bytes=chosen.used_bytes,
            allocated_bytes=chosen.allocated_bytes,
            waste_fraction=chosen.waste_fraction,
            compare={
                a: {"allocated_bytes": r.allocated_bytes, "waste_fraction": r.waste_fraction}
                for a, r in reports.items()
            },
        )
        render.emit_json(doc) if fmt is Fmt.json else render.kv_allocation_table(doc)
        return
    per_layer = kv_bytes_per_token_layer(m, fmt_kv.bits, tp)
    per_seq = float(kv_bytes_per_sequence(m, dep, ctx))
    groups = []
    for g in m.layer_groups:
        cap = cached_tokens_cap(g.window, dep)
        held = min(ctx, cap) if cap else ctx
        groups.append(
            {
                "layers": g.count,
                "window": g.window,
                "tokens_held": held,
                "kv_bytes_per_sequence": g.count * held * per_layer,
            }
        )
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "kv_bits": fmt_kv.bits,
        "context_tokens": ctx,
        "batch": _batch(batch),
        "tp": tp,
        "kv_budget_tokens": budget,
    }
    eviction = None
    if budget is not None:
        full = float(kv_bytes_per_sequence(m, replace(dep, kv_token_budget=None), ctx))
        eviction = {
            "kv_budget_tokens": budget,
            "kv_bytes_per_sequence_without_eviction": full,
            "kv_bytes_saved_per_sequence": full - per_seq,
            "saved_fraction": 1 - per_seq / full,
            # decode reads the whole cache every step: the read saved equals the bytes saved
            "decode_kv_read_saved_bytes_per_step": (full - per_seq) * batch,
            "max_batch_without_eviction": None,
            "max_batch_with_eviction": None,
            "accuracy_modelled": False,
            "note": "accuracy effects of eviction are not modelled",
        }
        if hardware is not None:
            hw = cat.accelerator(hardware)
            eng = engine("auto", hw)
            with_w = replace(dep, weights=weight_format(weights))
            plan = plan_memory(m, hw, with_w, eng)
            eviction["hardware"] = hw.id
            eviction["max_batch_without_eviction"] = int(
                max_batch(plan, m, replace(with_w, kv_token_budget=None), ctx)
            )
            eviction["max_batch_with_eviction"] = int(max_batch(plan, m, with_w, ctx))
    doc = render.document(
        "kv",
        inputs,
        attention=m.attention_kind,
        kv_bytes_per_token_per_layer=per_layer,
        kv_bytes_per_token=kv_bytes_per_token(m, fmt_kv.bits, tp),
        kv_bytes_per_sequence=per_seq,
        kv_bytes_total=per_seq * batch,
        layer_groups=groups,
        eviction=eviction,
    )
    render.emit_json(doc) if fmt is Fmt.json else render.kv_table(doc)


# ---- shared workload options ----------------------------------------------------------------
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


@app.command()
@guarded
def analyze(
    model: Annotated[str, typer.Argument(help="model id or alias")],
    hardware: Annotated[str, typer.Argument(help="accelerator id or alias")],
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    gpus: Annotated[int | None, typer.Option(help="GPUs in all; the rest are DP replicas")] = None,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16",
    act_dtype: ActOpt = "bf16",
    compute: ComputeOpt = None,
    sparsity: SparsityOpt = None,
    batch: Annotated[int, typer.Option(help="concurrent sequences per replica")] = 1,
    prompt: Annotated[str, typer.Option(help="prompt tokens, e.g. 1k")] = "1k",
    output: Annotated[str, typer.Option(help="output tokens, e.g. 10k")] = "1k",
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "auto",
    memory: MemoryOpt = None,
    eta_compute: Annotated[float | None, typer.Option(help="override compute efficiency")] = None,
    eta_memory: Annotated[float | None, typer.Option(help="override memory efficiency")] = None,
    overhead: Annotated[
        str | None, typer.Option(help="override per-step overhead, e.g. 20us")
    ] = None,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Prefill and decode on the roofline: per-op FLOPs, bytes, intensity vs ridge, bound, time,
    and TTFT / TPOT / E2E / throughput, ideal and expected.
    Example: roofline analyze llama-3.1-70b h100 --tp 4 --weights fp8 --batch 32 --prompt 2k"""
    cat = _catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = _deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, compute)
    n_gpus, replicas = _gpus(gpus, dep)
    b = _batch(batch)
    s, o = _tokens(prompt, "--prompt", 0), _tokens(output, "--output", 1)
    eff = _efficiency(hw, eta_compute, eta_memory, overhead)
    eng = engine(engine_name, hw)
    plan = plan_memory(m, hw, dep, eng, _capacity(hw, memory))
    if not plan.weights_fit:
        raise _not_fit(m, hw, dep, plan)
    if m.max_position_embeddings and s + o > m.max_position_embeddings:
        warn(
            f"{s + o:,} tokens exceed {m.id}'s max_position_embeddings "
            f"({m.max_position_embeddings:,})"
        )
    kv_end = float(kv_bytes_per_sequence(m, dep, s + o, eng.block_tokens)) * b
    fits = kv_end <= plan.kv_budget_bytes
    mb = int(max_batch(plan, m, dep, s + o))
    if not fits:
        warn(
            f"batch {b} needs {fmt_bytes(kv_end)} of KV per GPU at {s + o:,} tokens but the "
            f"budget is {fmt_bytes(plan.kv_budget_bytes)}: at most {mb} sequences fit "
            "(see `roofline capacity`)"
        )
    r = request(m, hw, dep, b, s, o, replicas, eff)
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "gpus": n_gpus,
        "replicas": replicas,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        "weights": dep.weights.name,
        "weight_bits": dep.linear_bits,
        "kv_dtype": dep.kv.name,
        "kv_bits": dep.kv.bits,
        "act_dtype": dep.activations.name,
        "compute_dtype": r.decode.compute_dtype,
        "sparsity": "2:4" if dep.sparse_2_4 else None,
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "engine": eng.name,
        "memory_capacity_bytes": plan.capacity_bytes,
        "efficiency": _efficiency_json(eff),
        "decode_context_tokens_mean": s + o / 2.0,
    }
    timing = {
        k: {
            "ttft_s": t.ttft_s,
            "tpot_s": t.tpot_s,
            "e2e_s": t.e2e_s,
            "output_tokens_per_s": t.output_tokens_per_s,
            "decode_time_fraction": t.decode_time_fraction,
        }
        for k, t in (("ideal", r.ideal), ("expected", r.expected))
    }
    doc = render.document(
        "analyze",
        inputs,
        prefill=_phase_json(r.prefill),
        decode=_phase_json(r.decode),
        memory={
            "capacity_bytes": plan.capacity_bytes,
            "weights_bytes_per_gpu": plan.weights_bytes,
            "activation_bytes": plan.activation_bytes,
            "runtime_overhead_bytes": plan.runtime_overhead_bytes,
            "kv_budget_bytes": plan.kv_budget_bytes,
            "kv_bytes_per_token_per_gpu": kv_bytes_per_token(m, dep.kv.bits, dep.tp, dep.pp),
            "kv_bytes_at_end": kv_end,
            "max_batch": mb,
            "fits": fits,
        },
        **timing,
        decode_time_fraction=r.expected.decode_time_fraction,
    )
    render.emit_json(doc) if fmt is Fmt.json else render.analyze_table(doc)


# ---- capacity -------------------------------------------------------------------------------
@app.command()
@guarded
def capacity(
    model: Annotated[str, typer.Argument(help="model id or alias")],
    hardware: Annotated[str, typer.Argument(help="accelerator id or alias")],
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16",
    act_dtype: ActOpt = "bf16",
    sparsity: SparsityOpt = None,
    context: Annotated[str, typer.Option(help="tokens per sequence (prompt + output)")] = "8k",
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "auto",
    memory: MemoryOpt = None,
    block: Annotated[
        int | None, typer.Option(help="KV block size in tokens (engine default)")
    ] = None,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Memory per GPU and the largest batch that fits at a context length.
    Example: roofline capacity llama-3.1-405b h100 --tp 8 --weights fp8 --context 128k"""
    cat = _catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = _deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, None)
    ctx = _tokens(context, "--context", 1)
    eng = engine(engine_name, hw)
    if block is not None:
        if not 1 <= block <= 65536:
            raise InputError(f"--block must be from 1 to 65536 tokens, got {block}")
        eng = type(eng)(**{**eng.__dict__, "block_tokens": block})
    plan = plan_memory(m, hw, dep, eng, _capacity(hw, memory))
    mb = int(max_batch(plan, m, dep, ctx))
    reason = None
    if not plan.weights_fit:
        reason = str(_not_fit(m, hw, dep, plan))
    elif mb == 0:
        reason = (
            f"one sequence of {ctx:,} tokens needs "
            f"{fmt_bytes(float(kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens)))} of KV "
            f"per GPU; the budget is {fmt_bytes(plan.kv_budget_bytes)}"
        )
    limit = m.max_position_embeddings or 131072
    grid = sorted({c for c in (1024, 4096, 8192, 32768, 131072, limit) if c <= limit} | {ctx})
    by_ctx = max_batch(plan, m, dep, np.array(grid, dtype=float))
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "gpus": dep.gpus_per_replica,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "context_tokens": ctx,
        "engine": eng.name,
        "engine_rule": eng.source,
        "memory_fraction": eng.memory_fraction,
        "block_tokens": eng.block_tokens,
    }
    doc = render.document(
        "capacity",
        inputs,
        max_batch=mb,
        kv_budget_bytes=plan.kv_budget_bytes,
        weights_bytes_per_gpu=plan.weights_bytes,
        reason=reason,
        memory={
            "capacity_bytes": plan.capacity_bytes,
            "weights_bytes_per_gpu": plan.weights_bytes,
            "activation_bytes": plan.activation_bytes,
            "runtime_overhead_bytes": plan.runtime_overhead_bytes,
            "kv_budget_bytes": plan.kv_budget_bytes,
            "kv_bytes_per_token_per_gpu": kv_bytes_per_token(m, dep.kv.bits, dep.tp, dep.pp),
        },
        max_batch_by_context=[
            {"context_tokens": c, "max_batch": int(v)} for c, v in zip(grid, by_ctx, strict=True)
        ],
    )
    render.emit_json(doc) if fmt is Fmt.json else render.capacity_table(doc)


# ---- bytes ----------------------------------------------------------------------------------
@app.command("bytes")
@guarded
def bytes_(
    model: Annotated[str, typer.Argument(help="model id or alias")],
    hardware: Annotated[str, typer.Argument(help="accelerator id or alias")],
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16",
    act_dtype: ActOpt = "bf16",
    sparsity: SparsityOpt = None,
    batch: Annotated[int, typer.Option(help="concurrent sequences")] = 1,
    prompt: Annotated[str, typer.Option(help="prompt tokens (the prefill)")] = "1k",
    context: Annotated[
        str | None, typer.Option(help="KV length of the decode step (default: the prompt)")
    ] = None,
    kv_budget: Annotated[
        str | None, typer.Option("--kv-budget", help="KV eviction: tokens kept per sequence")
    ] = None,
    levers: Annotated[bool, typer.Option("--levers", help="what-if table of every lever")] = False,
    max_len: Annotated[
        str | None,
        typer.Option(
            "--max-len", help="tokens contiguous allocation reserves (default: max positions)"
        ),
    ] = None,
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "auto",
    memory: MemoryOpt = None,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Where the bytes go: weight, KV and activation I/O per prefill and decode step, how the
    split moves with batch and context, and (--levers) what each lever saves.
    Example: roofline bytes llama-3.1-405b h100 --tp 8 --weights fp8 --batch 64 --context 32k"""
    cat = _catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    budget = _tokens(kv_budget, "--kv-budget", 1) if kv_budget else None
    dep = replace(
        _deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, None),
        kv_token_budget=budget,
    )
    b = _batch(batch)
    s = _tokens(prompt, "--prompt", 1)
    ctx = _tokens(context, "--context", 1) if context else s
    eng = engine(engine_name, hw)
    cap = _capacity(hw, memory)
    p = prefill(m, hw, dep, b, s)
    d = decode(m, hw, dep, b, ctx)

    def phase(r: PhaseResult) -> dict[str, Any]:
        total = float(r.bytes)
        return {
            **{k: v for k, v in _phase_json(r).items() if k != "ops"},
            "weight_share": float(r.weight_bytes) / total,
            "kv_share": float(r.kv_bytes) / total,
            "activation_share": float(r.activation_bytes) / total,
        }

    batches = np.array([1, 8, 32, 128, 512], dtype=float)
    contexts = np.array([1024, 8192, 32768, 131072], dtype=float)
    grid = decode(m, hw, dep, batches[:, None], contexts[None, :])
    kv_over_w = grid.kv_bytes / grid.weight_bytes
    weight_read = float(d.weight_bytes)
    kv_tok = float(d.kv_bytes) / (b * ctx)  # KV bytes per cached token read per step
    windowed = budget is not None or any(g.window for g in m.layer_groups)
    crossover = {
        "context_at_batch": None if windowed else weight_read / (b * kv_tok),
        "batch_at_context": weight_read / (ctx * kv_tok) if kv_tok > 0 else None,
    }
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        "weights": dep.weights.name,
        "weight_bits": dep.linear_bits,
        "kv_dtype": dep.kv.name,
        "batch": b,
        "prompt_tokens": s,
        "context_tokens": ctx,
        "kv_budget_tokens": budget,
        "efficiency": _efficiency_json(hw.efficiency),
    }
    result: dict[str, Any] = {
        "prefill": phase(p),
        "decode": phase(d),
        "activation": {
            "prefill_traffic_bytes": float(p.activation_bytes),
            "prefill_peak_bytes": float(activation_peak_bytes(m, dep, b * s)),
            "decode_traffic_bytes": float(d.activation_bytes),
        },
        "split": {
            "batches": batches.astype(int).tolist(),
            "contexts": contexts.astype(int).tolist(),
            "kv_over_weight": kv_over_w,
        },
        "crossover": crossover,
        "levers": None,
    }
    if levers:
        limit = _tokens(max_len, "--max-len", 1) if max_len else (m.max_position_embeddings or ctx)
        rows = evaluate_levers(m, hw, dep, eng, b, ctx, limit, budget or 2048, capacity_bytes=cap)
        base = rows[0]
        result["levers"] = {
            "max_len_tokens": limit,
            "kv_budget_tokens": budget or 2048,
            "note": "accuracy effects of KV eviction and quantisation are not modelled",
            "rows": [
                {
                    "lever": r.lever.name,
                    "bits_per_weight": r.bits_per_weight,
                    "weight_bytes_per_gpu": r.weight_bytes_per_gpu,
                    "kv_bytes_per_token": r.kv_bytes_per_token,
                    "kv_bytes_per_sequence": r.kv_bytes_per_sequence,
                    "t_step_ideal_s": r.t_step_ideal_s,
                    "t_step_expected_s": r.t_step_expected_s,
                    "max_batch": r.max_batch,
                    "weight_ratio": r.weight_bytes_per_gpu / base.weight_bytes_per_gpu,
                    "kv_ratio": r.kv_bytes_per_sequence / base.kv_bytes_per_sequence,
                    "step_ratio": r.t_step_ideal_s / base.t_step_ideal_s,
                    "max_batch_ratio": r.max_batch / base.max_batch if base.max_batch else None,
                }
                for r in rows
            ],
        }
    doc = render.document("bytes", inputs, **result)
    render.emit_json(doc) if fmt is Fmt.json else render.bytes_table(doc)


# ---- cliff ----------------------------------------------------------------------------------
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


@app.command()
@guarded
def cliff(
    model: Annotated[str, typer.Argument(help="model id or alias")],
    hardware: Annotated[str, typer.Argument(help="accelerator id or alias")],
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16",
    prompt: Annotated[str, typer.Option(help="prompt tokens per request")] = "1k",
    output: Annotated[str, typer.Option(help="output tokens per request (the trace)")] = "16k",
    batch: Annotated[
        str, typer.Option(help="max concurrent sequences to sweep: 1,8,64 | 1..1024 | 8..256:8")
    ] = "1..1024",
    requests: Annotated[
        int | None, typer.Option(help="requests served per setting (default 4 × the largest batch)")
    ] = None,
    prompt_dist: Annotated[
        str | None,
        typer.Option(
            help="draw prompt lengths: lognormal:mean=1000,sigma=0.5 | uniform:low=…,high=… | FILE"
        ),
    ] = None,
    output_dist: Annotated[
        str | None, typer.Option(help="draw output lengths, e.g. lognormal:mean=16000,sigma=0.5")
    ] = None,
    seed: Annotated[int, typer.Option(help="seed for drawn lengths")] = 0,
    preemption: Annotated[str, typer.Option(help="recompute (vLLM default) or swap")] = "recompute",
    swap_tier: Annotated[str, typer.Option(help="tier id for --preemption swap")] = "pcie5-x16",
    ideal: Annotated[bool, typer.Option("--ideal", help="speed-of-light step times")] = False,
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "auto",
    memory: MemoryOpt = None,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", "-o", help="also write cliff.svg|png|pdf (needs roofline[plot])"),
    ] = None,
    fmt: RowFormat = render.RowFmt.table,
) -> None:
    """The reasoning cliff: sweep max concurrent sequences through a continuous-batching
    scheduler with preemption; throughput, TTFT, TPOT and recompute against batch.
    Example: roofline cliff llama-3.1-405b h100 --tp 8 --weights fp8 --kv-dtype fp8 --prompt 1k
    --output 16k --batch 8..128:8"""
    if chart is not None:
        check_output(chart)
    cat = _catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = _deployment(weights, kv_dtype, "bf16", tp, pp, ep, None, None)
    s, o = _tokens(prompt, "--prompt", 1), _tokens(output, "--output", 1)
    settings = _batch_sweep(batch)
    n = requests if requests is not None else 4 * max(settings)
    if not 1 <= n <= 100_000:
        raise InputError(f"--requests must be from 1 to 100000, got {n}")
    if preemption not in ("recompute", "swap"):
        raise InputError(f"--preemption must be recompute or swap, got {preemption}")
    tier = cat.tier(swap_tier) if preemption == "swap" else None
    if prompt_dist:
        prompts, prompt_desc = parse_lengths(prompt_dist, 10**7, n, seed)
    else:
        prompts, prompt_desc = np.full(n, float(s)), f"fixed {s}"
    if output_dist:
        outputs, output_desc = parse_lengths(output_dist, 10**7, n, seed + 1)
    else:
        outputs, output_desc = np.full(n, float(o)), f"fixed {o}"
    prompts, outputs = prompts.astype(np.int64), outputs.astype(np.int64)
    if len(prompts) != n or len(outputs) != n:
        raise InputError(f"--prompt-dist/--output-dist must give {n} lengths (--requests)")
    s, o = round(float(prompts.mean())), round(float(outputs.mean()))
    eng = engine(engine_name, hw)
    plan = plan_memory(m, hw, dep, eng, _capacity(hw, memory))
    if not plan.weights_fit:
        raise _not_fit(m, hw, dep, plan)
    blk = eng.block_tokens
    block_bytes = float(kv_bytes_per_sequence(m, dep, blk, blk))
    budget_blocks = int(plan.kv_budget_bytes // block_bytes)
    per_request = float(kv_bytes_per_sequence(m, dep, s + o, blk))
    cliff_batch = int(plan.kv_budget_bytes // per_request)
    if int(np.ceil((s + 1) / blk)) > budget_blocks:
        raise InputError(
            f"not one prompt of {s:,} tokens fits in the KV budget "
            f"({fmt_bytes(plan.kv_budget_bytes)})"
        )
    steps = StepModel(m, hw, dep, max(settings), int(prompts.max() + outputs.max()), ideal)
    points = [
        simulate(steps, prompts, outputs, b, budget_blocks, blk, preemption, tier) for b in settings
    ]
    baseline = (
        [simulate(steps, prompts, outputs, b, budget_blocks, blk) for b in settings]
        if tier is not None
        else points
    )
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "prompt_tokens": s,
        "output_tokens": o,
        "prompt_lengths": prompt_desc,
        "output_lengths": output_desc,
        "requests": n,
        "preemption": preemption,
        "swap_tier": tier.id if tier else None,
        "step_times": "ideal" if ideal else "expected",
        "engine": eng.name,
        "kv_budget_bytes": plan.kv_budget_bytes,
        "block_tokens": blk,
        "efficiency": _efficiency_json(hw.efficiency),
    }
    doc = render.document(
        "cliff",
        inputs,
        cliff_batch=cliff_batch,
        points=[
            {
                "batch": p.max_seqs,
                "output_tokens_per_s": p.output_tokens_per_s,
                "ttft_mean_s": p.ttft_mean_s,
                "ttft_p99_s": p.ttft_p99_s,
                "tpot_mean_s": p.tpot_mean_s,
                "tpot_p99_s": p.tpot_p99_s,
                "preemptions": p.preemptions,
                "recomputed_tokens": p.recomputed_tokens,
                "swapped_bytes": p.swapped_bytes,
                "preemption_time_fraction": p.preemption_time_fraction,
                "decode_time_fraction": p.decode_time_fraction,
                "peak_kv_fraction": p.peak_kv_fraction,
                "makespan_s": p.makespan_s,
                "past_cliff": p.max_seqs > cliff_batch,
                "throughput_vs_recompute": p.output_tokens_per_s / r.output_tokens_per_s,
                "tpot_vs_recompute": p.tpot_mean_s / r.tpot_mean_s,
            }
            for p, r in zip(points, baseline, strict=True)
        ],
    )
    render.emit(doc, fmt, doc["points"], render.cliff_table)
    if chart is not None:
        save_cliff(doc, chart)
        render.stderr_console().print(f"wrote {chart}", markup=False)


# ---- validate -------------------------------------------------------------------------------
@app.command()
@guarded
def validate(
    cases: Annotated[
        Path, typer.Argument(help="cases YAML (schema of validation/public_cases.yaml)")
    ],
    fmt: RowFormat = render.RowFmt.table,
) -> None:
    """Predictions against published measurements: ideal, expected, measured, speed ratio, error.
    Example: roofline validate validation/public_cases.yaml --format json | jq .summary"""
    cat = _catalog()
    results = []
    for case in load_cases(cases):
        try:
            m, hw = cat.model(case.model), cat.accelerator(case.hardware)
        except RooflineError as exc:
            raise InputError(f"case '{case.id}': {exc}", hint=exc.hint) from None
        results.append(evaluate(case, m, hw))
    rows = [
        {
            "id": r.case.id,
            "model": r.case.model,
            "hardware": r.case.hardware,
            "metric": r.case.metric,
            "regime": r.regime,
            "batch": r.batch,
            "ideal": r.ideal,
            "expected": r.expected,
            "measured": r.measured,
            "speed_ratio_ideal": r.speed_ratio_ideal,
            "error_expected": r.error_expected,
            "bound_violation": r.bound_violation,
            "efficiency_source": cat.accelerator(r.case.hardware).efficiency.source,
        }
        for r in results
    ]
    doc = render.document("validate", {"cases": str(cases)}, cases=rows, summary=summarize(results))
    render.emit(doc, fmt, doc["cases"], render.validate_table)


def main() -> None:
    """Console entry point: user errors exit 2 with one line; internal errors also exit 2."""
    try:
        app()
    except RooflineError as exc:  # raised outside a guarded command (e.g. a callback)
        hint = f" ({exc.hint})" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        sys.exit(2)


# the commands for CI and pipes live in their own module and register on `app`
from roofline import cli_tools  # noqa: E402, F401

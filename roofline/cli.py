"""The `roofline` command line: parse, call the core, render, map errors to exit codes.

Exit codes: 0 done; 1 a check failed; 2 bad input (unknown id, malformed catalog, out-of-range
value, a model that does not fit). stdout carries only results; messages go to stderr.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
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
from roofline.memory import (
    ENGINES,
    MemoryPlan,
    engine,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.model import ModelArch
from roofline.ops import Deployment, kv_bytes_per_token_layer
from roofline.phases import PhaseResult, request
from roofline.precision import KV_FORMATS, activation_format, kv_format, weight_format
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
def hardware_list(fmt: FormatOpt = Fmt.table) -> None:
    """List accelerators. Example: roofline hardware list --format json | jq '.hardware[].id'"""
    cat = _catalog()
    doc = render.document(
        "hardware list", {}, hardware=[_hardware_json(h) for h in cat.accelerators.values()]
    )
    render.emit_json(doc) if fmt is Fmt.json else render.hardware_list_table(doc)


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
def hardware_tiers(fmt: FormatOpt = Fmt.table) -> None:
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
    render.emit_json(doc) if fmt is Fmt.json else render.tiers_table(doc)


# ---- models ---------------------------------------------------------------------------------
@models_app.command("list")
@guarded
def models_list(fmt: FormatOpt = Fmt.table) -> None:
    """List models. Example: roofline models list"""
    doc = render.document(
        "models list", {}, models=[_model_json(m) for m in _catalog().models.values()]
    )
    render.emit_json(doc) if fmt is Fmt.json else render.models_list_table(doc)


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
    context: Annotated[str, typer.Option(help="tokens per sequence, e.g. 32k")] = "32k",
    batch: Annotated[int, typer.Option(help="sequences")] = 1,
    tp: Annotated[int, typer.Option(help="tensor parallel: bytes per GPU")] = 1,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """KV-cache bytes per token, per sequence and per batch.
    Example: roofline kv deepseek-r1 --context 32k --format json"""
    m = _catalog().model(model)
    fmt_kv = kv_format(kv_dtype)
    ctx = _tokens(context, "--context", 1)
    dep = Deployment(kv=fmt_kv, tp=tp)
    per_layer = kv_bytes_per_token_layer(m, fmt_kv.bits, tp)
    per_seq = float(kv_bytes_per_sequence(m, dep, ctx))
    groups = [
        {
            "layers": g.count,
            "window": g.window,
            "tokens_held": min(ctx, g.window) if g.window else ctx,
            "kv_bytes_per_sequence": g.count
            * (min(ctx, g.window) if g.window else ctx)
            * per_layer,
        }
        for g in m.layer_groups
    ]
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "kv_bits": fmt_kv.bits,
        "context_tokens": ctx,
        "batch": _batch(batch),
        "tp": tp,
    }
    doc = render.document(
        "kv",
        inputs,
        attention=m.attention_kind,
        kv_bytes_per_token_per_layer=per_layer,
        kv_bytes_per_token=kv_bytes_per_token(m, fmt_kv.bits, tp),
        kv_bytes_per_sequence=per_seq,
        kv_bytes_total=per_seq * batch,
        layer_groups=groups,
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
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "vllm",
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
    eng = engine(engine_name)
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
    engine_name: Annotated[str, typer.Option("--engine", help="KV-budget rule")] = "vllm",
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
    eng = engine(engine_name)
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


# ---- validate -------------------------------------------------------------------------------
@app.command()
@guarded
def validate(
    cases: Annotated[
        Path, typer.Argument(help="cases YAML (schema of validation/public_cases.yaml)")
    ],
    fmt: FormatOpt = Fmt.table,
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
    render.emit_json(doc) if fmt is Fmt.json else render.validate_table(doc)


def main() -> None:
    """Console entry point: user errors exit 2 with one line; internal errors also exit 2."""
    try:
        app()
    except RooflineError as exc:  # raised outside a guarded command (e.g. a callback)
        hint = f" ({exc.hint})" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        sys.exit(2)

"""Commands on one deployment's memory: `kv`, `capacity`, `bytes`."""

from dataclasses import asdict, replace
from typing import Annotated, Any

import numpy as np
import typer

from roofline import render
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli.app import app, catalog, guarded, warn
from roofline.errors import InputError
from roofline.layout import check_shape
from roofline.memory import (
    engine,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.ops import Deployment
from roofline.phases import PhaseResult
from roofline.precision import kv_format, weight_format
from roofline.units import fmt_bytes


# ---- kv -------------------------------------------------------------------------------------
@app.command()
@guarded
def kv(
    model: opt.ModelArg,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    kv_bits: Annotated[
        float | None,
        typer.Option(help="override bits per KV element, e.g. 6 (DeepSeek-V2's deployment)"),
    ] = None,
    context: opt.Context = None,
    batch: opt.Batch = opt.BATCH,
    tp: opt.Tp = 1,
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
    max_len: opt.MaxLen = None,
    block: opt.Block = None,
    kv_budget: opt.KvBudget = None,
    sink: Annotated[str | None, typer.Option(help="StreamingLLM: attention-sink tokens")] = None,
    window: Annotated[str | None, typer.Option(help="StreamingLLM: recent-window tokens")] = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            help="with --kv-budget: accelerator for the max-batch gain (with --tp, --weights)"
        ),
    ] = None,
    weights: opt.Weights = opt.WEIGHTS,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """KV-cache bytes per token, sequence and batch.

    At --context (default prompt + output); attention variants (--compare), paged vs contiguous
    allocation (--allocation), eviction (--kv-budget or --sink/--window).
    Example: roofline kv deepseek-r1 --context 32k --format json"""
    # imported here: only `kv` needs them, and `analyze` should start fast
    from roofline.kvcache import (
        allocation_waste,
        compare_attention,
        eviction_gain,
        kv_footprint,
        parse_lengths,
    )

    cat = catalog()
    m = cat.model(model)
    fmt_kv = kv_format(kv_dtype)
    if kv_bits is not None:
        if not 1 <= kv_bits <= 32:
            raise InputError(f"--kv-bits must be from 1 to 32, got {kv_bits}")
        fmt_kv = replace(fmt_kv, name=f"{kv_bits:g}-bit", bits=kv_bits)
    if max_len is not None:
        opt.tokens(max_len, "--max-len", 1)  # refused early, even where it is not used
    ctx = opt.workload(opt.PROMPT, opt.OUTPUT, context)[2]
    if m.max_position_embeddings and ctx > m.max_position_embeddings:
        warn(
            f"--context {ctx:,} exceeds {m.id}'s max_position_embeddings "
            f"({m.max_position_embeddings:,}): the model was not trained that long"
        )
    budget = opt.kv_budget(kv_budget, sink, window)
    dep = Deployment(kv=fmt_kv, tp=tp, kv_token_budget=budget)
    check_shape(m, tp)
    if compare:
        ref = cat.model(baseline) if baseline else None
        ref_bytes = kv_bytes_per_token(ref, 16.0) if ref else None
        rows = [
            {
                "variant": r.variant,
                "description": r.description,
                "kv_bytes_per_token": r.kv_bytes_per_token,
                "ratio_to_mha": r.ratio_to_mha,
                "reduction_vs_mha": 1 - r.ratio_to_mha,
                **(
                    {
                        "ratio_to_baseline": r.ratio_to_baseline,
                        "reduction_vs_baseline": 1 - r.ratio_to_baseline,
                    }
                    if r.ratio_to_baseline is not None
                    else {}
                ),
            }
            for r in compare_attention(m, fmt_kv.bits, ref_bytes)
        ]
        inputs = {
            "model": m.id,
            "kv_dtype": fmt_kv.name,
            "kv_bits": fmt_kv.bits,
            "baseline": ref.id if ref else None,
            "baseline_kv_bytes_per_token": ref_bytes,
            "baseline_kv_bits": 16.0 if ref else None,
        }
        doc = render.document("kv --compare", inputs, variants=rows)
        render.emit_json(doc) if fmt is opt.Fmt.json else render.kv_compare_table(doc)
        return
    if allocation is not None:
        limit = opt.tokens(max_len, "--max-len", 1) if max_len is not None else ctx
        block = opt.block(block, engine(engine_name).block_tokens)
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
        render.emit_json(doc) if fmt is opt.Fmt.json else render.kv_allocation_table(doc)
        return
    b = opt.batch(batch)
    kv = kv_footprint(m, dep, ctx, b)
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "kv_bits": fmt_kv.bits,
        "context_tokens": ctx,
        "batch": b,
        "tp": tp,
        "kv_budget_tokens": budget,
    }
    eviction = None
    if budget is not None:
        hw = cat.accelerator(hardware) if hardware is not None else None
        with_w = replace(dep, weights=weight_format(opt.resolve_weights(weights, m)))
        plan = (
            plan_memory(m, hw, with_w, engine(engine_name, hw), opt.capacity(hw, memory))
            if hw is not None
            else None
        )
        gain = eviction_gain(m, with_w, ctx, b, plan)
        eviction = {
            "kv_budget_tokens": gain.kv_budget_tokens,
            "kv_bytes_per_sequence_without_eviction": gain.kv_bytes_per_sequence_without_eviction,
            "kv_bytes_saved_per_sequence": gain.kv_bytes_per_sequence_without_eviction
            - gain.kv_bytes_per_sequence_with_eviction,
            "saved_fraction": gain.saved_fraction,
            "decode_kv_read_saved_bytes_per_step": gain.decode_kv_read_saved_bytes_per_step,
            "max_batch_without_eviction": gain.max_batch_without_eviction,
            "max_batch_with_eviction": gain.max_batch_with_eviction,
            "accuracy_modelled": False,
            "note": "accuracy effects of eviction are not modelled",
        }
        if hw is not None:
            eviction["hardware"] = hw.id
    doc = render.document(
        "kv",
        inputs,
        attention=m.attention_kind,
        kv_bytes_per_token_per_layer=kv.kv_bytes_per_token_per_layer,
        kv_bytes_per_token=kv.kv_bytes_per_token,
        kv_bytes_per_sequence=kv.kv_bytes_per_sequence,
        kv_bytes_total=kv.kv_bytes_total,
        layer_groups=[asdict(g) for g in kv.layer_groups],
        eviction=eviction,
    )
    render.emit_json(doc) if fmt is opt.Fmt.json else render.kv_table(doc)


# ---- capacity -------------------------------------------------------------------------------
@app.command()
@guarded
def capacity(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    sparsity: opt.Sparsity = None,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    attention_dp: opt.AttentionDp = 1,
    microbatches: opt.Microbatches = None,
    nodes: opt.Nodes = None,
    cross_node_tp: opt.CrossNodeTp = False,
    scale_out: opt.ScaleOut = opt.SCALE_OUT,
    batch: opt.Batch = opt.BATCH,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    wired_limit: opt.WiredLimit = None,
    block: opt.Block = None,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Memory per GPU and the largest batch that fits.

    At --context tokens per sequence (default prompt + output), by the engine's KV-budget rule;
    with --gpus/--dp the concurrency of all replicas.
    Example: roofline capacity llama-3.1-405b h100 --tp 8 --weights fp8 --context 128k"""
    cat = catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = opt.deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, None, model=m)
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lay, dep = opt.layout(
        cat, m, hw, dep, gpus, dp, attention_dp, microbatches, nodes, cross_node_tp, scale_out
    )
    n_gpus, replicas = lay.gpus, lay.dp
    b = opt.batch(batch)
    ctx = opt.workload(prompt, output, context)[2]
    eng = engine(engine_name, hw)
    eng = replace(eng, block_tokens=opt.block(block, eng.block_tokens))
    plan = plan_memory(m, hw, dep, eng, opt.capacity(hw, memory, wired_limit))
    mb = int(max_batch(plan, m, dep, ctx))
    reason = None
    if not plan.weights_fit:
        reason = str(opt.not_fit(m, hw, dep, plan))
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
        "gpus": n_gpus,
        "replicas": replicas,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        **opt.layout_json(lay, dep),
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "batch": b,
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
        max_concurrency=mb * replicas,
        batch_fits=b <= mb,
        kv_budget_bytes=plan.kv_budget_bytes,
        weights_bytes_per_gpu=plan.weights_bytes,
        reason=reason,
        memory={
            "capacity_bytes": plan.capacity_bytes,
            "weights_bytes_per_gpu": plan.weights_bytes,
            "activation_bytes": plan.activation_bytes,
            "runtime_overhead_bytes": plan.runtime_overhead_bytes,
            "kv_budget_bytes": plan.kv_budget_bytes,
            "kv_bytes_per_token_per_gpu": kv_bytes_per_token(
                m, dep.kv.bits, dep.attention_tp, dep.pp
            ),
        },
        max_batch_by_context=[
            {"context_tokens": c, "max_batch": int(v)} for c, v in zip(grid, by_ctx, strict=True)
        ],
    )
    render.emit_json(doc) if fmt is opt.Fmt.json else render.capacity_table(doc)


# ---- bytes ----------------------------------------------------------------------------------
@app.command("bytes")
@guarded
def bytes_(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    attention_dp: opt.AttentionDp = 1,
    microbatches: opt.Microbatches = None,
    nodes: opt.Nodes = None,
    cross_node_tp: opt.CrossNodeTp = False,
    scale_out: opt.ScaleOut = opt.SCALE_OUT,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    sparsity: opt.Sparsity = None,
    batch: opt.Batch = opt.BATCH,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    kv_budget: opt.KvBudget = None,
    levers: Annotated[bool, typer.Option("--levers", help="what-if table of every lever")] = False,
    max_len: opt.MaxLen = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Where the bytes go: weight, KV and activation I/O.

    Per prefill and per decode step (the decode step at --context, default prompt + output), how
    the split moves with batch and context, and (--levers) what each lever saves; max batch is
    measured at --context as in `capacity`.
    Example: roofline bytes llama-3.1-405b h100 --tp 8 --weights fp8 --batch 64 --context 32k"""
    from roofline.flows import byte_traffic
    from roofline.levers import evaluate_levers  # only `bytes` needs these

    cat = catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    budget = opt.tokens(kv_budget, "--kv-budget", 1) if kv_budget else None
    dep = replace(
        opt.deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, None, model=m),
        kv_token_budget=budget,
    )
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lay, dep = opt.layout(
        cat, m, hw, dep, None, 1, attention_dp, microbatches, nodes, cross_node_tp, scale_out
    )
    b = opt.batch(batch)
    s, o, ctx = opt.workload(prompt, output, context)
    s = max(s, 1)
    eng = engine(engine_name, hw)
    cap = opt.capacity(hw, memory)
    t = byte_traffic(m, hw, dep, b, s, ctx, engine=eng.name)

    def phase(r: PhaseResult) -> dict[str, Any]:
        return {
            **{k: v for k, v in convert.phase_json(r).items() if k != "ops"},
            **t.shares(r),
        }

    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        **opt.layout_json(lay, dep),
        "weights": dep.weights.name,
        "weight_bits": dep.linear_bits,
        "kv_dtype": dep.kv.name,
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "context_tokens": ctx,
        "kv_budget_tokens": budget,
        "efficiency": convert.efficiency_json(hw.efficiency),
    }
    result: dict[str, Any] = {
        "prefill": phase(t.prefill),
        "decode": phase(t.decode),
        "activation": {
            "prefill_traffic_bytes": float(t.prefill.activation_bytes),
            "prefill_peak_bytes": t.prefill_activation_peak_bytes,
            "decode_traffic_bytes": float(t.decode.activation_bytes),
        },
        "split": {
            "batches": list(t.split_batches),
            "contexts": list(t.split_contexts),
            "kv_over_weight": t.kv_over_weight,
        },
        "crossover": {
            "context_at_batch": t.crossover_context_at_batch,
            "batch_at_context": t.crossover_batch_at_context,
        },
        "levers": None,
    }
    if levers:
        limit = opt.tokens(max_len, "--max-len", 1) if max_len is not None else ctx
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
    render.emit_json(doc) if fmt is opt.Fmt.json else render.bytes_table(doc)

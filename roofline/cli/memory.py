"""Commands on one deployment's memory: `kv`, `capacity`, `bytes`."""

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from roofline import render
from roofline.cli import groups as grp
from roofline.cli import layout_options as lopt
from roofline.cli import memory_json as mj
from roofline.cli import options as opt
from roofline.cli.app import catalog
from roofline.domain.errors import DoesNotFitError, InputError
from roofline.domain.layout import Layout, check_shape
from roofline.domain.precision import kv_format, weight_format
from roofline.domain.units import fmt_bytes, parse_memory_bytes
from roofline.engines.engine import engine
from roofline.step.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    max_batch_by_context,
    plan_memory,
)
from roofline.step.ops import Deployment

if TYPE_CHECKING:
    from roofline.timing.roofline import FloatArray


# ---- kv -------------------------------------------------------------------------------------
@grp.command()
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
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """KV-cache bytes per token, sequence and batch.

    At --context (default prompt + output); attention variants (--compare), paged vs contiguous
    allocation (--allocation), eviction (--kv-budget or --sink/--window).
    Example: roofline kv deepseek-r1 --context 32k --format json"""
    # imported here: only `kv` needs them, and `analyze` should start fast
    from roofline.levers.kvcache import (
        allocation_waste,
        compare_attention,
        eviction_gain,
        kv_footprint,
    )

    cat = catalog()
    m = cat.model(model)
    fmt_kv = kv_format(kv_dtype)
    if kv_bits is not None:
        if not 1 <= kv_bits <= 32:
            raise InputError(f"--kv-bits must be from 1 to 32, got {kv_bits}")
        fmt_kv = replace(fmt_kv, name=f"{kv_bits:g}-bit", bits=kv_bits)
    # every option is read, even where this mode does not use it: a typo is never ignored
    if max_len is not None:
        opt.tokens(max_len, "--max-len", 1)
    w_fmt = weight_format(opt.resolve_weights(weights, m))
    hw = cat.accelerator(hardware) if hardware is not None else None
    eng = engine(en.engine_name, hw)
    if en.memory is not None:
        parse_memory_bytes(en.memory, "--memory")
    ctx = opt.workload(opt.PROMPT, opt.OUTPUT, context, model=m)[2]
    budget = opt.kv_budget(kv_budget, sink, window)
    dep = Deployment(kv=fmt_kv, kv_token_budget=budget, layout=Layout(tp=tp))
    check_shape(m, dep.layout)
    json = fmt is opt.Fmt.json
    if compare:
        ref = cat.model(baseline) if baseline else None
        ref_bytes = kv_bytes_per_token(ref, 16.0) if ref else None
        variants = compare_attention(m, fmt_kv.bits, ref_bytes)
        doc = mj.kv_compare_doc(m, fmt_kv, ref, ref_bytes, variants)
        render.emit_json(doc) if json else render.kv_compare_table(doc)
        return
    if allocation is not None:
        limit = opt.tokens(max_len, "--max-len", 1) if max_len is not None else ctx
        block = opt.block(block, engine(en.engine_name).block_tokens)
        values, desc = _allocation_lengths(lengths, limit, max_len is not None)
        per_token = kv_bytes_per_token(m, fmt_kv.bits, tp)
        reports = {
            a: allocation_waste(values, per_token, a, block, limit) for a in ("contiguous", "paged")
        }
        if allocation not in reports:
            raise InputError(f"--allocation must be paged or contiguous, got {allocation}")
        doc = mj.kv_allocation_doc(m, fmt_kv, allocation, block, limit, desc, reports)
        render.emit_json(doc) if json else render.kv_allocation_table(doc)
        return
    b = opt.batch(batch)
    eviction = None
    if budget is not None:
        with_w = replace(dep, weights=w_fmt)
        plan = (
            plan_memory(m, hw, with_w, eng, opt.capacity(hw, en.memory)) if hw is not None else None
        )
        eviction = mj.eviction_json(eviction_gain(m, with_w, ctx, b, plan), hw)
    doc = mj.kv_doc(m, fmt_kv, ctx, b, tp, budget, kv_footprint(m, dep, ctx, b), eviction)
    render.emit_json(doc) if json else render.kv_table(doc)


def _allocation_lengths(lengths: str, limit: int, max_len_given: bool) -> tuple["FloatArray", str]:
    """`kv --allocation`'s lengths and their description: listed ones (a list, a file) are the
    user's own, and one past the limit a request may hold is refused, not clipped to it; drawn
    ones (sharegpt, lognormal:...) are truncated there (levers.kvcache.parse_lengths)."""
    from roofline.levers.kvcache import listed, parse_lengths

    values, desc = parse_lengths(lengths, int(opt.MAX_TOKENS) if listed(lengths) else limit)
    if values.max() > limit:
        said = "--max-len" if max_len_given else "--max-len (default --context)"
        raise InputError(
            f"--lengths: a length of {int(values.max()):,} tokens is past {said}, the "
            f"{limit:,} tokens a request may hold: raise --max-len or shorten the lengths"
        )
    return values, desc


# ---- capacity -------------------------------------------------------------------------------
@grp.command()
def capacity(
    pl: lopt.Placement,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    sparsity: opt.Sparsity = None,
    sb: grp.StaticBatch = grp.STATIC,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    wired_limit: opt.WiredLimit = None,
    block: opt.Block = None,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Memory per GPU and the largest batch that fits.

    At --context tokens per sequence (default prompt + output), by the engine's KV-budget rule;
    with --gpus/--dp the concurrency of all replicas.
    Example: roofline capacity llama-3.1-405b h100 --tp 8 --weights fp8 --context 128k"""
    cat = catalog()
    m, hw = pl.tg.load(cat)
    dep = pl.deployment(m, act_dtype, sparsity)
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lay, dep = lopt.layout(cat, m, hw, dep, pl.lo)
    b, _, _, ctx = sb.parse(m)
    eng = engine(en.engine_name, hw)
    eng = replace(eng, block_tokens=opt.block(block, eng.block_tokens))
    try:  # a Mac past its default wired limit: planned at the raised limit, with a note
        plan = opt.fitted_plan(m, hw, dep, eng, en.memory, wired_limit)
    except DoesNotFitError:
        plan = plan_memory(m, hw, dep, eng, opt.capacity(hw, en.memory, wired_limit, eng))
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
    grid, by_ctx = max_batch_by_context(plan, m, dep, ctx)
    doc = mj.capacity_doc(
        m, hw, lay, dep, eng, plan, b=b, ctx=ctx, mb=mb, reason=reason, grid=grid, by_ctx=by_ctx
    )
    render.emit_json(doc) if fmt is opt.Fmt.json else render.capacity_table(doc)


# ---- bytes ----------------------------------------------------------------------------------
@grp.command("bytes")
def bytes_(
    tg: grp.Target,
    dg: grp.Degrees = grp.DEGREES,
    attention_dp: opt.AttentionDp = 1,
    microbatches: opt.Microbatches = None,
    nd: grp.NodeOptions = grp.NODES,
    fm: grp.Formats = grp.FORMATS,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    sparsity: opt.Sparsity = None,
    sb: grp.StaticBatch = grp.STATIC,
    kv_budget: opt.KvBudget = None,
    levers: Annotated[bool, typer.Option("--levers", help="what-if table of every lever")] = False,
    max_len: opt.MaxLen = None,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Where the bytes go: weight, KV and activation I/O.

    Per prefill and per decode step (the decode step at --context, default prompt + output), how
    the split moves with batch and context, and (--levers) what each lever saves; max batch is
    measured at --context as in `capacity`.
    Example: roofline bytes llama-3.1-405b h100 --tp 8 --weights fp8 --batch 64 --context 32k"""
    from roofline.levers.table import evaluate_levers  # only `bytes` needs these
    from roofline.step.flows import byte_traffic

    cat = catalog()
    m, hw = tg.load(cat)
    budget = opt.tokens(kv_budget, "--kv-budget", 1) if kv_budget else None
    dep = replace(
        opt.deployment(
            fm.weights, fm.kv_dtype, act_dtype, dg.tp, dg.pp, dg.ep, sparsity, None, model=m
        ),
        kv_token_budget=budget,
    )
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lo = lopt.LayoutOptions(dg.tp, dg.pp, dg.ep, None, 1, attention_dp, microbatches, nd)
    lay, dep = lopt.layout(cat, m, hw, dep, lo)
    b, s, o, ctx = sb.parse(m)
    s = max(s, 1)
    eng = engine(en.engine_name, hw)
    opt.fitted_plan(m, hw, dep, eng, en.memory)  # weights that do not fit: refused, as analyze
    cap = opt.capacity(hw, en.memory)
    t = byte_traffic(m, hw, dep, b, s, ctx, engine=eng.name)
    lever_doc = None
    if levers:
        limit = opt.tokens(max_len, "--max-len", 1) if max_len is not None else ctx
        rows = evaluate_levers(m, hw, dep, eng, b, ctx, limit, budget or 2048, capacity_bytes=cap)
        lever_doc = mj.levers_json(rows, limit, budget or 2048)
    doc = mj.bytes_doc(m, hw, lay, dep, t, b=b, s=s, o=o, ctx=ctx, budget=budget, levers=lever_doc)
    render.emit_json(doc) if fmt is opt.Fmt.json else render.bytes_table(doc)

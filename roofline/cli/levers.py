"""Commands on single levers: `speculate` (speculative decoding) and `tiers` (KV spilled to a
slower memory tier)."""

from dataclasses import replace
from typing import Annotated, Any

import typer

from roofline import render
from roofline.cli import draft_options as dopt
from roofline.cli import groups as grp
from roofline.cli import layout_options as lopt
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli.app import catalog, note, warn
from roofline.cli.levers_json import reload_json, speculate_doc, tiers_doc
from roofline.cli.wired import one_node
from roofline.domain.errors import InputError
from roofline.domain.precision import weight_format
from roofline.domain.units import fmt_bytes, parse_bytes
from roofline.engines.engine import engine
from roofline.levers.drafter import drafter_fit
from roofline.levers.speculative_sweep import speculate_sweep
from roofline.levers.tiers import max_batch_with_tier, reload_prefix, spill
from roofline.render.charts import save_speedup
from roofline.step.memory import max_batch


# ---- speculate ------------------------------------------------------------------------------
@grp.command()
def speculate(
    tg: grp.Target,
    so: dopt.DraftOptions = dopt.DRAFT,
    dg: grp.Degrees = grp.DEGREES,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    fm: grp.Formats = grp.FORMATS,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    compute: opt.Compute = None,
    sparsity: opt.Sparsity = None,
    batch: opt.Batch = opt.BATCH,
    batches: opt.Batches = opt.BATCHES,
    rq: grp.Request = grp.REQUEST,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    out: pub.ChartOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """Speculative decoding: speed-up against batch, per drafter.

    Each drafter pays its own cost (a draft model's steps, a fused EAGLE/MTP head, Medusa heads,
    n-gram lookup); the verify pass over γ + 1 (or --tree-tokens) tokens per sequence and the
    rejection sampler are timed like any step. Rows: speed-up per γ at --batch; the best γ per
    batch over --batches and the crossover batch where speculation stops paying.
    Example: roofline speculate llama-3.1-8b h100 --drafter eagle --tau 3.2 --gamma 4"""
    cat = catalog()
    m, hw = tg.load(cat)
    kind = dopt.drafter_kind(so, m)
    d_m = cat.model(so.draft) if kind == "draft" and so.draft else None
    dep = opt.deployment(
        fm.weights, fm.kv_dtype, act_dtype, dg.tp, dg.pp, dg.ep, sparsity, compute, model=m
    )
    opt.check_formats(dep, hw)
    lopt.replicas(dep, gpus, dp)
    d_weights = opt.resolve_weights(so.draft_weights or fm.weights, d_m or m)
    d_dep = replace(dep, weights=weight_format(d_weights)).with_layout(ep=1, pp=1)
    gammas, tree, acc = dopt.round_options(so)
    b = opt.batch(batch)
    sweep = opt.batch_sweep(batches, "--batches")
    ctx = rq.parse(m)[2]
    pub.check_out(out, charts=True)
    eng = engine(en.engine_name, hw)
    plan = opt.fitted_plan(m, hw, dep, eng, en.memory)
    common = {"drafter": kind, "decay": so.decay, "draft_vocab": so.draft_vocab, "topk": so.topk}
    common["engine"] = None if en.engine_name == "auto" else en.engine_name
    s, sw = speculate_sweep(m, d_m, hw, dep, d_dep, b, sweep, ctx, gammas, tree, acc, **common)
    fit = drafter_fit(
        m, d_m, kind, dep, d_dep, max(gammas), so.draft_vocab, ctx, b, eng.block_tokens,
        plan.kv_budget_bytes,
    )  # fmt: skip
    doc = speculate_doc(
        m, hw, kind, d_m, dep, d_dep, eng, batch=b, sweep=sweep, ctx=ctx, acc=acc,
        decay=so.decay, tau=so.tau, tau_gamma=so.tau_gamma, gammas=gammas, tree=tree,
        topk=so.topk, s=s, sw=sw, fit=fit,
    )  # fmt: skip
    if not fit.fits:
        warn(
            f"drafter weights ({fmt_bytes(fit.drafter_weights_bytes)}) and the KV caches "
            f"({fmt_bytes(fit.kv_bytes)}) exceed the KV budget ({fmt_bytes(fit.kv_budget_bytes)})"
        )
    if out is not None and not pub.is_html(out):
        save_speedup(doc, out)
        note(f"wrote {out}")
    pub.publish(doc, fmt, doc["by_batch"], render.speculate_table, out)


# ---- tiers ----------------------------------------------------------------------------------
@grp.command()
def tiers(
    tg: grp.Target,
    tier: Annotated[
        str,
        typer.Option(
            help="tier id: micron-cz120 (a 256 GB CXL module), cxl2-x16, ddr5-socket-genoa, "
            "nvme-gen5, ... (see roofline hardware tiers; a tier without a capacity needs "
            "--tier-capacity)"
        ),
    ] = "micron-cz120",  # the default answers as it stands: a device whose capacity is known
    tier_capacity: Annotated[
        str | None,
        typer.Option(help="tier capacity per GPU, e.g. 256GB (default: the tier entry's capacity)"),
    ] = None,
    sharing: Annotated[
        int | None,
        typer.Option(help="GPUs reading the tier at once (default --tp; 1: a device per GPU)"),
    ] = None,
    link_efficiency: opt.LinkEfficiency = None,
    prefix: Annotated[
        str | None,
        typer.Option(help="returning turn: cached prefix tokens reloaded from the tier, e.g. 32k"),
    ] = None,
    dma_tokens: Annotated[
        int, typer.Option(help="tokens per KV copy (per layer) when reloading a prefix")
    ] = 256,
    tp: opt.Tp = 1,
    fm: grp.Formats = grp.FORMATS,
    rq: grp.Request = grp.REQUEST,
    batch: opt.BatchOrAuto = None,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    ideal: opt.Ideal = False,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """KV spilled from HBM to a slower tier (CXL, DDR5).

    How many more sequences fit, and what the tier read costs each decode step (overlapped and
    serial bounds) with the tier shared by --sharing GPUs; --batch defaults to as many as HBM +
    tier hold; --prefix: TTFT of a returning turn that reloads its cached KV.
    Example: roofline tiers llama-3.1-70b h100 --tp 4 --tier cxl2-x16 --tier-capacity 256GB"""
    cat = catalog()
    m, hw, t = *tg.load(cat), cat.tier(tier)
    dep = opt.deployment(fm.weights, fm.kv_dtype, opt.ACT_DTYPE, tp, model=m)
    opt.check_formats(dep, hw)
    one_node(cat, m, hw, dep, "tiers")
    s_new, _, ctx = rq.parse(m)
    p_tokens = opt.tokens(prefix, "--prefix", 1) if prefix is not None else None
    if p_tokens is not None and rq.context is not None and p_tokens + s_new > ctx:
        raise InputError(
            f"--prefix ({p_tokens:,} tokens) and --prompt ({s_new:,} new) exceed --context "
            f"({ctx:,} tokens): a returning turn holds its cached prefix and its new tokens"
        )
    if tier_capacity is not None:
        cap = parse_bytes(tier_capacity, "--tier-capacity")
    elif t.capacity_bytes is not None:
        cap = t.capacity_bytes
    else:
        raise InputError(f"tier {t.id} has no capacity in the catalog", hint="pass --tier-capacity")
    if not 0 < cap < 1e15:
        raise InputError(f"--tier-capacity must be positive and below 1 PB, got {tier_capacity}")
    plan = opt.fitted_plan(m, hw, dep, engine(en.engine_name, hw), en.memory)
    share = opt.sharing(tp, sharing, link_efficiency)
    if not 1 <= dma_tokens <= 1_000_000:
        raise InputError(f"--dma-tokens must be from 1 to 1e6, got {dma_tokens}")
    hbm_only = int(max_batch(plan, m, dep, ctx))
    with_tier = max_batch_with_tier(plan, m, dep, ctx, cap)
    b = opt.batch(batch) if batch is not None else max(with_tier, 1)
    kw: dict[str, Any] = {"sharing": share, "link_eff": link_efficiency}
    base = spill(m, hw, dep, plan, t, max(hbm_only, 1), ctx, ideal, **kw)
    r = spill(m, hw, dep, plan, t, b, ctx, ideal, **kw)
    if b > with_tier:  # said as analyze says a batch past the KV budget, then shown as asked
        warn(
            f"batch {b:,} needs {fmt_bytes(r.kv_bytes)} of KV per GPU at {ctx:,} tokens but HBM "
            f"and the tier hold {fmt_bytes(plan.kv_budget_bytes + cap)}: at most {with_tier:,} "
            "sequences fit (the tier column assumes a tier that holds the rest)"
        )
    reload = None
    if p_tokens is not None:
        x = reload_prefix(m, hw, dep, t, p_tokens, s_new, dma_tokens, **kw, ideal=ideal)
        reload = reload_json(x, dma_tokens)
    doc = tiers_doc(
        m, hw, t, dep, plan, ctx=ctx, cap=cap, share=share, link_efficiency=link_efficiency,
        ideal=ideal, hbm_only=hbm_only, with_tier=with_tier, base=base, r=r, reload=reload,
    )  # fmt: skip
    if fmt is opt.Fmt.json:
        render.emit_json(doc)
        return
    render.tiers_spill_table(doc)

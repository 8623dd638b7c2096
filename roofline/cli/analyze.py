"""`analyze`: one deployment's prefill and decode on the roofline, op by op."""

from typing import Annotated

import typer

from roofline import render
from roofline.cli import groups as grp
from roofline.cli import layout_options as lopt
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.analyze_json import analyze_doc
from roofline.cli.app import catalog, warn
from roofline.domain.units import fmt_bytes
from roofline.engines.engine import engine
from roofline.step.memory import kv_bytes_per_sequence, max_batch
from roofline.step.phases import prefill, request


@grp.command()
def analyze(
    pl: lopt.Placement,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    compute: opt.Compute = None,
    sparsity: opt.Sparsity = None,
    sb: grp.StaticBatch = grp.STATIC,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    wired_limit: opt.WiredLimit = None,
    eta_compute: Annotated[float | None, typer.Option(help="override compute efficiency")] = None,
    eta_memory: Annotated[float | None, typer.Option(help="override memory efficiency")] = None,
    overhead: Annotated[
        str | None, typer.Option(help="override per-step overhead, e.g. 20us")
    ] = None,
    price: topt.Price = None,
    out: pub.HtmlOut = None,
    fmt: pub.FormatOpt = pub.Fmt.table,
) -> None:
    """Prefill and decode on the roofline, op by op.

    Per-op FLOPs, bytes, intensity vs ridge, bound and time for a static batch (--batch requests
    launched together): the batch's prefill (batch_prefill_s), one request's TTFT on an idle
    replica (ttft_s), TPOT, E2E and throughput, ideal and expected.
    Example: roofline analyze llama-3.1-70b h100 --tp 4 --weights fp8 --batch 32 --prompt 2k"""
    pub.check_out(out)
    cat = catalog()
    m, hw = pl.tg.load(cat)
    dep = pl.deployment(m, act_dtype, sparsity, compute)
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lay, dep = lopt.layout(cat, m, hw, dep, pl.lo, en.engine_name)
    b, s, o, ctx = sb.parse(m, strict=True)
    if overhead is not None:
        opt.step_overhead(overhead, "--overhead")
    eff = opt.efficiency(hw, eta_compute, eta_memory, overhead)
    eng = engine(en.engine_name, hw)
    plan = opt.fitted_plan(m, hw, dep, eng, en.memory, wired_limit)
    kv_end = float(kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens)) * -(-b // lay.attention_dp)
    fits = kv_end <= plan.kv_budget_bytes
    mb = int(max_batch(plan, m, dep, ctx))
    if not fits:
        warn(
            f"batch {b} needs {fmt_bytes(kv_end)} of KV per GPU at {ctx:,} tokens but the "
            f"budget is {fmt_bytes(plan.kv_budget_bytes)}: at most {mb} sequences fit "
            "(see `roofline capacity`)"
        )
    at = ctx if sb.context is not None else None  # --context: the decode step's KV length
    r = request(m, hw, dep, b, s, o, lay.dp, eff, eng.profile_id, at)
    single = prefill(m, hw, dep, 1, max(s, 1), eff, eng.profile_id)  # one request, idle replica
    usd = topt.price_table(cat, price).get(hw.id)  # USD per GPU-hour, when known
    doc = analyze_doc(
        m, hw, lay, dep, eng, plan, r, single, usd, eff, b=b, s=s, o=o, ctx=ctx,
        context_given=sb.context is not None, kv_end=kv_end, mb=mb, fits=fits,
    )  # fmt: skip
    pub.publish(doc, fmt, [], render.analyze_table, out)

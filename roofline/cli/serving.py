"""Commands on serving many requests: `cliff` (the scheduler with every request at t = 0) and
`disagg` (prefill/decode disaggregation)."""

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any

import numpy as np
import typer

from roofline import render
from roofline.cli import groups as grp
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import catalog, note, warn
from roofline.cli.cliff_json import cliff_doc
from roofline.cli.disagg_json import disagg_doc, pool_split, pools_launch, traffic_json
from roofline.domain.errors import InputError
from roofline.domain.layout import check_degree, validate
from roofline.domain.units import fmt_bytes
from roofline.engines.engine import Engine, engine
from roofline.levers.kvcache import parse_lengths
from roofline.render.charts import save_cliff
from roofline.serving.cliff import cliff_sweep
from roofline.serving.disagg import compare_at_rate, disaggregate
from roofline.serving.kvtransfer import KvLink
from roofline.step.memory import kv_bytes_per_sequence, plan_memory
from roofline.step.ops import Deployment


# ---- cliff ----------------------------------------------------------------------------------
@grp.command()
def cliff(
    pl: grp.SimplePlacement,
    lens: topt.LengthOptions = topt.LENGTHS,
    max_seqs: opt.MaxSeqs = None,
    requests: opt.Requests = None,
    seed: opt.Seed = 0,
    preemption: Annotated[str, typer.Option(help="recompute (vLLM default) or swap")] = "recompute",
    swap_tier: Annotated[str, typer.Option(help="tier id for --preemption swap")] = "pcie5-x16",
    ideal: opt.Ideal = False,
    chunked_prefill: topt.ChunkedPrefill = None,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    out: pub.ChartOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """The reasoning cliff: throughput against max-seqs.

    Every request arrives at t = 0 (a closed batch, not a request rate) and a continuous-batching
    scheduler with preemption serves them; --max-seqs defaults to 1..1024 and --requests to 4 x
    the largest --max-seqs.
    Example: roofline cliff llama-3.1-405b h100 --tp 8 --weights fp8 --kv-dtype fp8 --prompt 1k
    --output 16k --max-seqs 8..128:8"""
    pub.check_out(out, charts=True)
    cat = catalog()
    m, hw = pl.tg.load(cat)
    dep = pl.deployment(m, "bf16")
    opt.check_formats(dep, hw)
    lens.once()
    s, o = opt.tokens(lens.prompt, "--prompt", 1), opt.tokens(lens.output, "--output", 1)
    settings = opt.batch_sweep(max_seqs or "1..1024")
    n = requests if requests is not None else 4 * max(settings)
    if not 1 <= n <= 100_000:
        raise InputError(f"--requests must be from 1 to 100000, got {n}")
    if preemption not in ("recompute", "swap"):
        raise InputError(f"--preemption must be recompute or swap, got {preemption}")
    tier = cat.tier(swap_tier) if preemption == "swap" else None
    if lens.prompt_dist:
        prompts, prompt_desc = parse_lengths(lens.prompt_dist, 10**7, n, seed, "--prompt-dist")
    else:
        prompts, prompt_desc = np.full(n, float(s)), f"fixed {s}"
    if lens.output_dist:
        outputs, output_desc = parse_lengths(lens.output_dist, 10**7, n, seed + 1, "--output-dist")
    else:
        outputs, output_desc = np.full(n, float(o)), f"fixed {o}"
    prompts, outputs = prompts.astype(np.int64), outputs.astype(np.int64)
    if len(prompts) != n or len(outputs) != n:
        raise InputError(f"--prompt-dist/--output-dist must give {n} lengths (--requests)")
    opt.positions(m, int((prompts + outputs).max()))
    s, o = round(float(prompts.mean())), round(float(outputs.mean()))
    eng = engine(en.engine_name, hw)
    plan = opt.fitted_plan(m, hw, dep, eng, en.memory)
    sw = cliff_sweep(m, hw, dep, eng, plan, prompts, outputs, settings, preemption, tier,
                     chunked_prefill, ideal)  # fmt: skip  # chunked None: the engine's default
    doc = cliff_doc(
        m, hw, dep, eng, plan, sw, s=s, o=o, prompt_desc=prompt_desc, output_desc=output_desc,
        n=n, preemption=preemption, tier=tier, ideal=ideal,
    )  # fmt: skip
    pub.publish(doc, fmt, doc["points"], render.cliff_table, out)
    if out is not None and not pub.is_html(out):
        save_cliff(doc, out)
        note(f"wrote {out}")


# ---- disagg ---------------------------------------------------------------------------------
@grp.command()
def disagg(
    model: opt.ModelArg,
    prefill_hardware: Annotated[str, typer.Option("--prefill", help="prefill accelerator")],
    decode_hardware: Annotated[str, typer.Option("--decode", help="decode accelerator")],
    prefill_tp: Annotated[int, typer.Option(help="TP of a prefill replica")] = 1,
    decode_tp: Annotated[int, typer.Option(help="TP of a decode replica")] = 1,
    prefill_pp: Annotated[int, typer.Option(help="PP stages of a prefill replica")] = 1,
    decode_pp: Annotated[int, typer.Option(help="PP stages of a decode replica")] = 1,
    prefill_ep: Annotated[int, typer.Option(help="EP of a prefill replica (divides its TP)")] = 1,
    decode_ep: Annotated[int, typer.Option(help="EP of a decode replica (divides its TP)")] = 1,
    prefill_attention_dp: Annotated[
        int, typer.Option(help="attention data-parallel groups of a prefill replica (MoE)")
    ] = 1,
    decode_attention_dp: Annotated[
        int, typer.Option(help="attention data-parallel groups of a decode replica (MoE)")
    ] = 1,
    prefill_batch: Annotated[
        int, typer.Option(help="prompts one prefill step runs (both ways of serving)")
    ] = 1,
    fm: grp.Formats = grp.FORMATS,
    link: Annotated[str, typer.Option(help="tier id the KV cache travels over")] = "infiniband-ndr",
    batch: opt.Batch = opt.BATCH,
    lens: topt.LengthOptions = topt.LENGTHS,
    engine_name: opt.Engine = opt.ENGINE,
    ideal: opt.Ideal = False,
    rate: topt.OneRate = None,
    requests: opt.Requests = None,
    seed: opt.Seed = 0,
    sl: topt.SloOptions = topt.SLO,
    link_efficiency: opt.LinkEfficiency = None,
    transfer_overhead: Annotated[
        str, typer.Option(help="fixed cost per KV transfer (set-up, block tables), e.g. 1ms")
    ] = "0s",
    layerwise: Annotated[
        bool, typer.Option("--layerwise", help="send each layer's KV as soon as it is computed")
    ] = False,
    pools: Annotated[
        str | None,
        typer.Option(
            "--pools",
            help="under --rate: the pool split P:D of one unit (e.g. 14:4 prefill:decode"
            " replicas); default: the best of 1-4 decode replicas",
        ),
    ] = None,
    out: pub.HtmlOut = None,
    fmt: pub.FormatOpt = pub.Fmt.table,
) -> None:
    """Prefill/decode disaggregation vs colocated serving.

    With --rate: both under the same traffic and SLOs, compared by capacity per GPU (each unit's
    highest rate within the SLOs / its GPUs) and the GPUs the rate needs; the KV transfer per
    request goes over --link at --link-efficiency plus --transfer-overhead.

    TTFT of one request (its prefill plus the KV transfer), TPOT at --batch, tokens/s per GPU, the
    KV transfer and the prefill:decode pool ratio.
    Example: roofline disagg llama-3.1-70b --prefill h100 --decode h200 --prefill-tp 4
    --decode-tp 4 --batch 64 --prompt 8k --output 1k"""
    pub.check_out(out)
    cat = catalog()
    m = cat.model(model)
    p_hw, d_hw = cat.accelerator(prefill_hardware), cat.accelerator(decode_hardware)
    tier = cat.tier(link)
    for name, v in (("prefill-tp", prefill_tp), ("decode-tp", decode_tp),
                    ("prefill-pp", prefill_pp), ("decode-pp", decode_pp),
                    ("prefill-ep", prefill_ep), ("decode-ep", decode_ep),
                    ("prefill-attention-dp", prefill_attention_dp),
                    ("decode-attention-dp", decode_attention_dp)):  # fmt: skip
        check_degree(name, v)  # named as given (the pool's Layout would say --tp)
    p_dep = _pool(fm, prefill_tp, prefill_pp, prefill_ep, prefill_attention_dp, m)
    d_dep = _pool(fm, decode_tp, decode_pp, decode_ep, decode_attention_dp, m)
    kv_link = KvLink(
        tier,
        link_efficiency,
        opt.step_overhead(transfer_overhead, "--transfer-overhead"),
        layerwise,
    )
    b, s, o = (
        opt.batch(batch),
        opt.tokens(lens.prompt, "--prompt", 1),
        opt.tokens(lens.output, "--output", 1),
    )
    if rate is None or not (lens.prompt_dist or lens.output_dist):  # else the drawn lengths, below
        opt.positions(m, s + o)
    d_eng = _check_pools(m, ((p_hw, p_dep), (d_hw, d_dep)), tier, engine_name, b, s + o)
    r = disaggregate(m, p_hw, d_hw, p_dep, d_dep, kv_link, b, s, o, ideal, prefill_batch)
    doc = disagg_doc(m, p_hw, d_hw, p_dep, d_dep, tier, kv_link, prefill_batch, (b, s, o), d_eng,
                     ideal, r)  # fmt: skip
    if pools is not None and rate is None:
        raise InputError("--pools splits a unit under traffic: give --rate too")
    if rate is not None:
        slo, shape = sl.slo(), topt.pool_split(pools)
        rates = topt.rates(rate)
        if len(rates) != 1:
            raise InputError("disagg takes one --rate")
        n = topt.SERVE_REQUESTS if requests is None else requests
        w = topt.serving_workload(lens, rates[0], None, n, None, seed)
        if lens.prompt_dist or lens.output_dist:
            opt.positions(m, int((w.prompts + w.outputs).max()))
        modes = compare_at_rate(m, p_hw, d_hw, p_dep, d_dep, d_eng, kv_link, w, slo, seed, ideal,
                                shape)  # fmt: skip
        doc["traffic"] = traffic_json(rates[0], w, slo, kv_link, ideal, modes)
    split = pool_split(r, modes[1] if rate is not None else None)
    doc["launch"] = pools_launch(m, ((p_hw, p_dep), (d_hw, d_dep)), d_eng, split, b, s + o,
                                 modes[1] if rate is not None else None)  # fmt: skip

    def tables(d: Mapping[str, Any]) -> None:
        render.disagg_table(d)
        if rate is not None:
            render.disagg_traffic_table(d)
        else:
            render.launch_table(d)

    pub.publish(doc, fmt, [], tables, out)


def _pool(fm: grp.Formats, tp: int, pp: int, ep: int, attention_dp: int, m) -> Deployment:
    """One pool's replica deployment."""
    dep = opt.deployment(fm.weights, fm.kv_dtype, opt.ACT_DTYPE, tp, pp, ep=ep, model=m)
    return dep.with_layout(attention_dp=attention_dp)


def _check_pools(m, pools, tier, engine_name: str, b: int, context: int) -> Engine:
    """Each pool's formats, layout rules (plan's and serve's; a pool spanning nodes uses the link
    between them) and weights fit; a warning when `b` sequences of `context` tokens overflow a
    decode GPU's KV budget. The decode pool's engine."""
    net = tier if tier.kind == "network" else None
    for hw, dep in pools:
        opt.check_formats(dep, hw)
        validate(replace(dep.layout, scale_out=net), m, hw)
        plan = plan_memory(m, hw, dep, engine(engine_name, hw))
        if not plan.weights_fit:
            raise opt.not_fit(m, hw, dep, plan)
    d_hw, d_dep = pools[1]
    d_eng = engine(engine_name, d_hw)
    d_plan = plan_memory(m, d_hw, d_dep, d_eng)
    # each attention-DP rank holds its own sequences' KV (the MLA latent once per sequence)
    per_seq = float(kv_bytes_per_sequence(m, d_dep, context, d_eng.block_tokens))
    kv_need = per_seq * -(-b // d_dep.attention_dp)
    if kv_need > d_plan.kv_budget_bytes:
        warn(
            f"batch {b} needs {fmt_bytes(kv_need)} of KV per decode GPU; the budget is "
            f"{fmt_bytes(d_plan.kv_budget_bytes)}"
        )
    return d_eng

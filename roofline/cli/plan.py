"""`plan`: the parallel layouts of N GPUs for one model, best first."""

from typing import Annotated

import typer

from roofline import render
from roofline.cli import convert
from roofline.cli import groups as grp
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import catalog
from roofline.cli.wired import wired_capacity
from roofline.domain.errors import DoesNotFitError, InputError
from roofline.domain.units import fmt_bytes, limit_seconds
from roofline.engines.engine import engine
from roofline.serving.cost import cost_per_hour, cost_per_million_output_tokens
from roofline.step.planner import Plan, explain, plans


def _row(p: Plan, usd_per_hour: float | None) -> dict[str, object]:
    lay = p.layout
    return {
        "layout": lay.describe(),
        "tp": lay.tp,
        "pp": lay.pp,
        "ep": lay.ep,
        "attention_dp": lay.attention_dp,
        "dp": lay.dp,
        "microbatches": lay.pipeline_microbatches,
        "nodes": lay.nodes,
        "fits": p.fits,
        "weights_bytes_per_gpu": p.weights_bytes_per_gpu,
        "kv_budget_bytes": p.kv_budget_bytes,
        "max_batch_per_replica": p.max_batch,
        "batch_per_replica": p.batch,
        "concurrency": p.concurrency,
        "batch_prefill_s": p.batch_prefill_s,
        "tpot_s": p.tpot_s,
        "output_tokens_per_s": p.output_tokens_per_s,
        "output_tokens_per_s_ideal": p.output_tokens_per_s_ideal,
        "cost_per_million_output_tokens": cost_per_million_output_tokens(
            usd_per_hour, p.output_tokens_per_s
        ),
        "latency_ttft_s": p.latency_ttft_s,
        "latency_tpot_s": p.latency_tpot_s,
        "latency_tpot_ideal_s": p.latency_tpot_ideal_s,
        "decode_terms_s": p.decode_terms_s,
        "dominant": p.dominant,
        "meets_slo": bool(p.fits and p.meets_slo),
    }


# ---- plan -----------------------------------------------------------------------------------
@grp.command()
def plan(
    tg: grp.Target,
    gpus: Annotated[
        int | None, typer.Option("--gpus", help="GPUs to split into layouts (default: 8)")
    ] = None,
    nd: grp.NodeOptions = grp.NODES,
    fm: grp.Formats = grp.FORMATS,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    max_tp: Annotated[
        int | None, typer.Option(help="largest TP to try (default: the layout rules decide)")
    ] = None,
    max_tpot: Annotated[
        str | None, typer.Option(help="SLO: throughput at the largest batch with TPOT ≤, e.g. 50ms")
    ] = None,
    price: topt.Price = None,
    out: pub.HtmlOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """Parallel layouts for N GPUs, searched and best first.

    Every TP x PP x EP x attention-DP x DP split of --gpus (default 8) the layout rules accept,
    with memory, the largest batch that fits (and meets --max-tpot), throughput (expected and
    ideal), batch-1 latency, and what dominates the decode step; the winner is explained.
    Example: roofline plan deepseek-r1 h200 --gpus 16 --weights fp8 --max-tpot 50ms"""
    pub.check_out(out)
    cat = catalog()
    m, hw = tg.load(cat)
    gpus = 8 if gpus is None else gpus
    if not 1 <= gpus <= opt.MAX_GPUS:
        raise InputError(f"--gpus must be from 1 to {opt.MAX_GPUS}, got {gpus}")
    if max_tp is not None and not 1 <= max_tp <= opt.MAX_GPUS:
        raise InputError(f"--max-tp must be from 1 to {opt.MAX_GPUS}, got {max_tp}")
    net = nd.network(cat)
    base = opt.deployment(fm.weights, fm.kv_dtype, model=m)
    s, o = opt.tokens(prompt, "--prompt"), opt.tokens(output, "--output")
    opt.positions(m, s + o)
    slo = limit_seconds(max_tpot, "--max-tpot") if max_tpot else None
    eng = engine(en.engine_name, hw)
    cap = wired_capacity(m, hw, base, eng, en.memory)  # one Mac: at the raised wired limit
    found = plans(m, hw, base, eng, gpus, s, o, slo, cap, net, nd.nodes, nd.cross_node_tp, max_tp)
    if not any(p.fits for p in found):
        least = min((p.weights_bytes_per_gpu for p in found), default=None)
        need = f": the least is {fmt_bytes(least)} of weights per GPU" if least else ""
        raise DoesNotFitError(
            f"{m.id} fits no layout of {gpus} x {hw.id} ({base.weights.name} weights){need}"
        )
    usd = topt.price_table(cat, price).get(hw.id)  # USD per GPU-hour, when known
    rows = [_row(p, cost_per_hour(usd, gpus)) for p in found]
    ok = [p for p in found if p.fits and p.meets_slo]
    best = rows[found.index(ok[0])] if ok else None
    fast = min((p for p in found if p.fits), key=lambda p: p.latency_tpot_s, default=None)
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "gpus": gpus,
        "nodes": nd.nodes,
        "scale_out": net.id,
        "cross_node_tp": nd.cross_node_tp,
        "engine": eng.name,
        **convert.formats_json(base),
        "prompt_tokens": s,
        "output_tokens": o,
        "max_tp": max_tp,
        "max_tpot_s": slo,
        "workload": "static batch per replica: the largest that fits and meets --max-tpot",
        "price_usd_per_gpu_hour": usd.usd_per_gpu_hour if usd else None,
        "efficiency": convert.efficiency_json(hw.efficiency),
    }
    doc = render.document(
        "plan",
        inputs,
        best=best,
        lowest_latency=rows[found.index(fast)] if fast else None,
        explanation=explain(ok[0], ok[1] if len(ok) > 1 else None) if ok else None,
        plans=rows,
    )
    pub.publish(doc, fmt, doc["plans"], render.plan_table, out)

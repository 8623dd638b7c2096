"""`plan`: the parallel layouts of N GPUs for one model, best first."""

from __future__ import annotations

from typing import Annotated

import typer

from roofline import render
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli.app import app, catalog, guarded
from roofline.errors import InputError
from roofline.memory import (
    engine,
)
from roofline.planner import plans
from roofline.serving.cost import cost_per_hour, cost_per_million_output_tokens
from roofline.units import parse_seconds


# ---- plan -----------------------------------------------------------------------------------
@app.command()
@guarded
def plan(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    gpus: opt.Gpus = None,
    ep: opt.Ep = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    max_tp: Annotated[int, typer.Option(help="largest TP (one scale-up domain)")] = 8,
    max_tpot: Annotated[
        str | None, typer.Option(help="SLO: keep plans with TPOT ≤, e.g. 50ms")
    ] = None,
    price: opt.Price = None,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Parallelism plans for N GPUs, best first.

    Every TP x PP x DP split of --gpus (default 8, one node) with its memory, batch, TTFT, TPOT
    and throughput, best first (within --max-tpot if given).
    Example: roofline plan llama-3.1-405b h100 --gpus 16 --weights fp8 --prompt 1k --output 16k"""
    cat = catalog()
    m, hw = cat.model(model), cat.accelerator(hardware)
    gpus = 8 if gpus is None else gpus
    if not 1 <= gpus <= 4096:
        raise InputError(f"--gpus must be from 1 to 4096, got {gpus}")
    if not 1 <= max_tp <= 4096:
        raise InputError(f"--max-tp must be from 1 to 4096, got {max_tp}")
    if not 1 <= ep <= gpus:
        raise InputError(f"--ep must be from 1 to --gpus ({gpus}), got {ep}")
    base = opt.deployment(weights, kv_dtype, tp=ep, ep=ep)  # plans() sets each TP it tries
    s, o = opt.tokens(prompt, "--prompt", 0), opt.tokens(output, "--output", 1)
    slo = parse_seconds(max_tpot, "--max-tpot") if max_tpot else None
    eng = engine(engine_name, hw)
    results = plans(m, hw, base, eng, gpus, s, o, max_tp, capacity_bytes=opt.capacity(hw, memory))
    usd = opt.price_table(cat, price).get(hw.id)  # USD per GPU-hour, when known
    rows = [
        {
            "tp": p.tp,
            "pp": p.pp,
            "dp": p.dp,
            "fits": p.fits,
            "weights_bytes_per_gpu": p.weights_bytes_per_gpu,
            "kv_budget_bytes": p.kv_budget_bytes,
            "batch_per_replica": p.batch,
            "concurrency": p.concurrency,
            "ttft_s": p.ttft_s,
            "tpot_s": p.tpot_s,
            "output_tokens_per_s": p.output_tokens_per_s,
            "cost_per_million_output_tokens": cost_per_million_output_tokens(
                cost_per_hour(usd, gpus), p.output_tokens_per_s
            ),
            "meets_slo": bool(p.fits and (slo is None or p.tpot_s <= slo)),
        }
        for p in results
    ]
    rows.sort(key=lambda r: (not r["meets_slo"], -r["output_tokens_per_s"]))
    best = next((r for r in rows if r["meets_slo"]), None)
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "gpus": gpus,
        "ep": ep,
        "engine": eng.name,
        "weights": base.weights.name,
        "kv_dtype": base.kv.name,
        "prompt_tokens": s,
        "output_tokens": o,
        "max_tp": max_tp,
        "max_tpot_s": slo,
        "price_usd_per_gpu_hour": usd.usd_per_gpu_hour if usd else None,
        "efficiency": convert.efficiency_json(hw.efficiency),
    }
    doc = render.document("plan", inputs, best=best, plans=rows)
    render.emit(doc, fmt, doc["plans"], render.plan_table)

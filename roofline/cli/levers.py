"""Commands on single levers: `speculate` (speculative decoding) and `tiers` (KV spilled to a
slower memory tier)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import numpy as np
import typer

from roofline import render
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli.app import app, catalog, guarded, warn
from roofline.errors import InputError
from roofline.memory import (
    engine,
    kv_bytes_per_sequence,
    max_batch,
    plan_memory,
    weight_bytes_per_gpu,
)
from roofline.precision import weight_format
from roofline.speculative import speculate as spec_core
from roofline.tiers import max_batch_with_tier, spill
from roofline.units import fmt_bytes, parse_bytes


# ---- speculate ------------------------------------------------------------------------------
@app.command()
@guarded
def speculate(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    draft: Annotated[str, typer.Option(help="draft model id (runs on the same GPUs)")],
    gamma: Annotated[
        str, typer.Option(help="draft tokens per round: 4 | 1,2,4 | 1..8:1")
    ] = "1..8:1",
    acceptance: Annotated[float, typer.Option(help="per-token acceptance rate α in [0, 1]")] = 0.7,
    tp: opt.Tp = 1,
    ep: opt.Ep = 1,
    weights: opt.Weights = opt.WEIGHTS,
    draft_weights: Annotated[
        str | None, typer.Option(help="draft weight format (default: --weights)")
    ] = None,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    batch: opt.Batch = opt.BATCH,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Speculative decoding: speed-up per draft length γ.

    A draft proposes γ tokens, the target verifies them in one pass of γ + 1 tokens; expected
    tokens per round (1 − α^(γ+1)) / (1 − α), time per token, speed-up,
    and how far the verify pass moves decode towards the ridge.
    Example: roofline speculate llama-3.1-70b h100 --tp 4 --draft llama-3.1-8b --acceptance 0.8"""
    cat = catalog()
    m, d_m, hw = cat.model(model), cat.model(draft), cat.accelerator(hardware)
    if not 0.0 <= acceptance <= 1.0:
        raise InputError(f"--acceptance must be in [0, 1], got {acceptance}")
    dep = opt.deployment(weights, kv_dtype, opt.ACT_DTYPE, tp, 1, ep)
    d_dep = replace(dep, weights=weight_format(draft_weights or weights), ep=1)
    gammas = opt.int_list(gamma, "--gamma")
    if min(gammas) < 1 or max(gammas) > 64:
        raise InputError(f"--gamma values must be from 1 to 64, got {gamma}")
    b, ctx = opt.batch(batch), opt.workload(prompt, output, context)[2]
    eng = engine(engine_name, hw)
    plan = plan_memory(m, hw, dep, eng, opt.capacity(hw, memory))
    if not plan.weights_fit:
        raise opt.not_fit(m, hw, dep, plan)
    draft_weights_bytes = weight_bytes_per_gpu(d_m, d_dep)
    kv_need = (
        float(kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens))
        + float(kv_bytes_per_sequence(d_m, d_dep, ctx, eng.block_tokens))
    ) * b
    s = spec_core(m, d_m, hw, dep, d_dep, b, ctx, np.array(gammas, dtype=float), acceptance)
    rows = [
        {
            "gamma": int(g),
            "tokens_per_round": s.tokens_per_round[i],
            "draft_step_s": float(s.draft.t_expected_s),
            "verify_step_s": s.verify.t_expected_s[i],
            "verify_arithmetic_intensity": s.verify.arithmetic_intensity[i],
            "verify_bound": s.verify.bound[i],
            "tpot_ideal_s": s.tpot_ideal_s[i],
            "tpot_expected_s": s.tpot_expected_s[i],
            "speedup_ideal": s.speedup_ideal[i],
            "speedup_expected": s.speedup_expected[i],
        }
        for i, g in enumerate(gammas)
    ]
    best = max(rows, key=lambda r: r["speedup_expected"])
    inputs = {
        "model": m.id,
        "draft": d_m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "weights": dep.weights.name,
        "draft_weights": d_dep.weights.name,
        "kv_dtype": dep.kv.name,
        "ep": dep.ep,
        "batch": b,
        "context_tokens": ctx,
        "engine": eng.name,
        "acceptance": acceptance,
        "efficiency": convert.efficiency_json(hw.efficiency),
        "note": "i.i.d. acceptance; the draft shares the target's GPUs and tokenizer",
    }
    doc = render.document(
        "speculate",
        inputs,
        baseline={
            "tpot_ideal_s": s.baseline.t_ideal_s,
            "tpot_expected_s": s.baseline.t_expected_s,
            "arithmetic_intensity": s.baseline.arithmetic_intensity,
            "ridge_flops_per_byte": s.baseline.ridge_flops_per_byte,
            "bound": s.baseline.bound,
        },
        best_gamma=best["gamma"],
        memory={
            "draft_weights_bytes_per_gpu": draft_weights_bytes,
            "kv_bytes_target_and_draft": kv_need,
            "kv_budget_bytes": plan.kv_budget_bytes,
            "fits": draft_weights_bytes + kv_need <= plan.kv_budget_bytes,
        },
        rows=rows,
    )
    if not doc["memory"]["fits"]:
        warn(
            f"draft weights ({fmt_bytes(draft_weights_bytes)}) and both KV caches "
            f"({fmt_bytes(kv_need)}) exceed the KV budget ({fmt_bytes(plan.kv_budget_bytes)})"
        )
    render.emit(doc, fmt, doc["rows"], render.speculate_table)


# ---- tiers ----------------------------------------------------------------------------------
@app.command()
@guarded
def tiers(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    tier: Annotated[
        str,
        typer.Option(
            help="tier id: cxl2-x16, micron-cz120, ddr5-socket-genoa, "
            "nvme-gen5, ... (see roofline hardware tiers)"
        ),
    ] = "cxl2-x16",
    tier_capacity: Annotated[
        str | None,
        typer.Option(help="tier capacity per GPU, e.g. 256GB (default: the tier entry's capacity)"),
    ] = None,
    tp: opt.Tp = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    batch: opt.BatchOrAuto = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    ideal: opt.Ideal = False,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """KV spilled from HBM to a slower tier (CXL, DDR5).

    How many more sequences fit, and what the tier read costs each decode step (overlapped and
    serial bounds); --batch defaults to as many as HBM + tier hold.
    Example: roofline tiers llama-3.1-70b h100 --tp 4 --tier cxl2-x16 --tier-capacity 256GB"""
    cat = catalog()
    m, hw, t = cat.model(model), cat.accelerator(hardware), cat.tier(tier)
    dep = opt.deployment(weights, kv_dtype, opt.ACT_DTYPE, tp)
    ctx = opt.workload(prompt, output, context)[2]
    if tier_capacity is not None:
        cap = parse_bytes(tier_capacity, "--tier-capacity")
    elif t.capacity_bytes is not None:
        cap = t.capacity_bytes
    else:
        raise InputError(f"tier {t.id} has no capacity in the catalog", hint="pass --tier-capacity")
    if not 0 < cap < 1e15:
        raise InputError(f"--tier-capacity must be positive and below 1 PB, got {tier_capacity}")
    plan = plan_memory(m, hw, dep, engine(engine_name, hw), opt.capacity(hw, memory))
    if not plan.weights_fit:
        raise opt.not_fit(m, hw, dep, plan)
    hbm_only = int(max_batch(plan, m, dep, ctx))
    with_tier = max_batch_with_tier(plan, m, dep, ctx, cap)
    b = opt.batch(batch) if batch is not None else max(with_tier, 1)
    base = spill(m, hw, dep, plan, t, max(hbm_only, 1), ctx, ideal)
    r = spill(m, hw, dep, plan, t, b, ctx, ideal)
    rows = []
    for name, x in (("HBM only", base), (f"with {t.id}", r)):
        rows.append(
            {
                "placement": name,
                "batch": x.batch,
                "kv_bytes_per_gpu": x.kv_bytes,
                "spilled_bytes_per_gpu": x.spilled_bytes,
                "t_tier_s": x.t_tier_s,
                "tpot_overlap_s": x.t_step_overlap_s,
                "tpot_serial_s": x.t_step_serial_s,
                "output_tokens_per_s_overlap": x.batch / x.t_step_overlap_s,
                "output_tokens_per_s_serial": x.batch / x.t_step_serial_s,
            }
        )
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "tier": t.id,
        "tp": dep.tp,
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "context_tokens": ctx,
        "tier_capacity_bytes": cap,
        "tier_bandwidth_bytes_per_s": r.tier_bandwidth_bytes_per_s,
        "hbm_bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
        "step_times": "ideal" if ideal else "expected",
    }
    doc = render.document(
        "tiers",
        inputs,
        max_batch_hbm=hbm_only,
        max_batch_with_tier=with_tier,
        kv_budget_bytes=plan.kv_budget_bytes,
        rows=rows,
    )
    render.emit_json(doc) if fmt is opt.Fmt.json else render.tiers_spill_table(doc)

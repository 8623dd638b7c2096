"""`analyze`: one deployment's prefill and decode on the roofline, op by op."""

from typing import Annotated

import typer

from roofline import render
from roofline.cli import convert
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded, warn
from roofline.layout import bubble_fraction
from roofline.memory import (
    engine,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    plan_memory,
)
from roofline.phases import PhaseResult, prefill, request
from roofline.serving.cost import cost_per_hour, cost_per_million_output_tokens
from roofline.units import fmt_bytes

# the bands of analyze's expected figures (roofline/bands.py): band -> the keys it applies to
ANALYZE_BANDS = {
    "ttft_p50": ["batch_prefill_s", "ttft_s"],
    "tpot_p50": ["tpot_s"],
    "e2e_p50": ["e2e_s"],
    "throughput": ["output_tokens_per_s"],
    "cost_per_million_output_tokens": ["cost_per_million_output_tokens"],
}


@app.command()
@guarded
def analyze(
    model: opt.ModelArg,
    hardware: opt.HardwareArg,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    attention_dp: opt.AttentionDp = 1,
    microbatches: opt.Microbatches = None,
    nodes: opt.Nodes = None,
    cross_node_tp: opt.CrossNodeTp = False,
    scale_out: opt.ScaleOut = opt.SCALE_OUT,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    act_dtype: opt.ActDtype = opt.ACT_DTYPE,
    compute: opt.Compute = None,
    sparsity: opt.Sparsity = None,
    batch: opt.Batch = opt.BATCH,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
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
    m, hw = cat.model(model), cat.accelerator(hardware)
    dep = opt.deployment(weights, kv_dtype, act_dtype, tp, pp, ep, sparsity, compute, model=m)
    opt.check_sparsity(dep, hw)
    opt.check_formats(dep, hw)
    lay, dep = opt.layout(
        cat, m, hw, dep, gpus, dp, attention_dp, microbatches, nodes, cross_node_tp, scale_out
    )
    n_gpus, replicas = lay.gpus, lay.dp
    b = opt.batch(batch)
    s, o, ctx = opt.workload(prompt, output, context, strict=True)
    eff = opt.efficiency(hw, eta_compute, eta_memory, overhead)
    eng = engine(engine_name, hw)
    plan = plan_memory(m, hw, dep, eng, opt.capacity(hw, memory, wired_limit))
    if not plan.weights_fit:
        raise opt.not_fit(m, hw, dep, plan)
    if m.max_position_embeddings and s + o > m.max_position_embeddings:
        warn(
            f"{s + o:,} tokens exceed {m.id}'s max_position_embeddings "
            f"({m.max_position_embeddings:,})"
        )
    kv_end = float(kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens)) * -(-b // lay.attention_dp)
    fits = kv_end <= plan.kv_budget_bytes
    mb = int(max_batch(plan, m, dep, ctx))
    if not fits:
        warn(
            f"batch {b} needs {fmt_bytes(kv_end)} of KV per GPU at {s + o:,} tokens but the "
            f"budget is {fmt_bytes(plan.kv_budget_bytes)}: at most {mb} sequences fit "
            "(see `roofline capacity`)"
        )
    at = ctx if context is not None else None  # --context: the decode step's KV length
    r = request(m, hw, dep, b, s, o, replicas, eff, eng.name, at)
    single = prefill(m, hw, dep, 1, max(s, 1), eff, eng.name)  # one request on an idle replica
    usd = topt.price_table(cat, price).get(hw.id)  # USD per GPU-hour, when known
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
        "weight_bits": dep.linear_bits,
        "kv_dtype": dep.kv.name,
        "kv_bits": dep.kv.bits,
        "act_dtype": dep.activations.name,
        "compute_dtype": r.decode.compute_dtype,
        "sparsity": "2:4" if dep.sparse_2_4 else None,
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "context_tokens": ctx,
        "workload": "static batch: --batch requests launched together on each replica",
        "engine": eng.name,
        "memory_capacity_bytes": plan.capacity_bytes,
        "efficiency": convert.efficiency_json(eff),
        "decode_context_tokens_mean": float(ctx) if context is not None else s + o / 2.0,
        "price_usd_per_gpu_hour": usd.usd_per_gpu_hour if usd else None,
    }
    timing = {
        k: {
            "batch_prefill_s": t.ttft_s,
            "ttft_s": float(getattr(single, f"t_{k}_s")),
            "tpot_s": t.tpot_s,
            "e2e_s": t.e2e_s,
            "output_tokens_per_s": t.output_tokens_per_s,
            "decode_time_fraction": t.decode_time_fraction,
            "cost_per_million_output_tokens": cost_per_million_output_tokens(
                cost_per_hour(usd, n_gpus), float(t.output_tokens_per_s)
            ),
        }
        for k, t in (("ideal", r.ideal), ("expected", r.expected))
    }
    cal = r.decode.calibration
    bands = convert.bands_json(cal.family, ANALYZE_BANDS)
    tpot_rel = bands["tpot_p50"]["rel"] if "tpot_p50" in bands else 0.0
    timing["expected"]["calibration"] = convert.calibration_json(cal)
    timing["expected"]["tpot_band_s"] = [
        float(r.expected.tpot_s) * (1 - tpot_rel),
        float(r.expected.tpot_s) * (1 + tpot_rel),
    ]
    timing["expected"]["bands"] = bands
    timing["expected"]["step_overhead_s"] = float(r.decode.t_overhead_s)
    doc = render.document(
        "analyze",
        inputs,
        prefill=convert.phase_json(r.prefill),
        decode=convert.phase_json(r.decode),
        memory={
            "capacity_bytes": plan.capacity_bytes,
            "weights_bytes_per_gpu": plan.weights_bytes,
            "activation_bytes": plan.activation_bytes,
            "runtime_overhead_bytes": plan.runtime_overhead_bytes,
            "kv_budget_bytes": plan.kv_budget_bytes,
            "kv_bytes_per_token_per_gpu": kv_bytes_per_token(
                m, dep.kv.bits, dep.attention_tp, dep.pp
            ),
            "kv_bytes_at_end": kv_end,
            "max_batch": mb,
            "fits": fits,
        },
        **timing,
        pipeline={
            "stages": dep.pp,
            "microbatches": dep.pipeline_microbatches,
            "gpipe_bubble_fraction": float(
                bubble_fraction(dep.pp, min(dep.pipeline_microbatches, b))
            ),
            "prefill_idle_fraction": _idle(r.prefill),
            "decode_idle_fraction": _idle(r.decode),
        },
        decode_time_fraction=r.expected.decode_time_fraction,
    )
    pub.publish(doc, fmt, [], render.analyze_table, out)


def _idle(p: PhaseResult) -> float:
    """Share of a pipelined step a GPU waits (the `pp.bubble` row); 0 without PP."""
    last = p.ops[-1] if p.ops else None
    if last is None or last.op.kind != "bubble":
        return 0.0
    return float(last.t_expected_s / p.t_expected_s)

"""The JSON document of `analyze` (roofline/cli/analyze.py)."""

from roofline import render
from roofline.cli import convert
from roofline.cli import layout_options as lopt
from roofline.domain.layout import bubble_fraction
from roofline.serving.cost import cost_per_hour, cost_per_million_output_tokens
from roofline.step.phases import PhaseResult

# the bands of analyze's expected figures (roofline/catalog/bands.py): band -> the keys it applies
# to
ANALYZE_BANDS = {
    "ttft_p50": ["batch_prefill_s", "ttft_s"],
    "tpot_p50": ["tpot_s"],
    "e2e_p50": ["e2e_s"],
    "throughput": ["output_tokens_per_s"],
    "cost_per_million_output_tokens": ["cost_per_million_output_tokens"],
}


def analyze_doc(
    m, hw, lay, dep, eng, plan, r, single, usd, eff, *, b: int, s: int, o: int, ctx: int,
    context_given: bool, kv_end: float, mb: int, fits: bool,
) -> dict:  # fmt: skip
    """The `analyze` document: inputs, prefill and decode op by op, memory, ideal and expected
    timing (with the calibration and its bands), the pipeline's bubbles."""
    inputs = {
        **lopt.layout_inputs(m, hw, lay, dep),
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
        **({"engine_profile": eng.profile} if eng.profile else {}),
        "memory_capacity_bytes": plan.capacity_bytes,
        "efficiency": convert.efficiency_json(eff),
        "decode_context_tokens_mean": float(ctx) if context_given else s + o / 2.0,
        "price_usd_per_gpu_hour": usd.usd_per_gpu_hour if usd else None,
    }
    timing = {
        k: {
            "batch_prefill_s": t.batch_prefill_s,
            "ttft_s": float(getattr(single, f"t_{k}_s")),
            "tpot_s": t.tpot_s,
            "e2e_s": t.e2e_s,
            "output_tokens_per_s": t.output_tokens_per_s,
            "decode_time_fraction": t.decode_time_fraction,
            "cost_per_million_output_tokens": cost_per_million_output_tokens(
                cost_per_hour(usd, lay.gpus), float(t.output_tokens_per_s)
            ),
        }
        for k, t in (("ideal", r.ideal), ("expected", r.expected))
    }
    cal = r.decode.calibration
    bands = convert.bands_json(cal.family, ANALYZE_BANDS, cal.engine)
    tpot = bands.get("tpot_p50", {"low": 1.0, "high": 1.0})  # the measured TPOT's 90% interval
    timing["expected"]["calibration"] = convert.calibration_json(cal)
    timing["expected"]["tpot_band_s"] = [
        float(r.expected.tpot_s) * tpot["low"],
        float(r.expected.tpot_s) * tpot["high"],
    ]
    timing["expected"]["bands"] = bands
    timing["expected"]["step_overhead_s"] = float(r.decode.t_overhead_s)
    return render.document(
        "analyze",
        inputs,
        prefill=convert.phase_json(r.prefill),
        decode=convert.phase_json(r.decode),
        memory={
            **convert.memory_plan_json(plan, m, dep),
            "kv_bytes_at_end": kv_end,
            "max_batch": mb,
            "fits": fits,
        },
        **timing,
        pipeline={
            "stages": dep.pp,
            # the micro-batches run: at most one per sequence of the batch
            "microbatches": min(dep.pipeline_microbatches, b),
            "microbatches_asked": dep.pipeline_microbatches,
            "gpipe_bubble_fraction": float(
                bubble_fraction(dep.pp, min(dep.pipeline_microbatches, b))
            ),
            "prefill_idle_fraction": _idle(r.prefill),
            "decode_idle_fraction": _idle(r.decode),
        },
        decode_time_fraction=r.expected.decode_time_fraction,
    )


def _idle(p: PhaseResult) -> float:
    """Share of a pipelined step a GPU waits (the `pp.bubble` row); 0 without PP."""
    last = p.ops[-1] if p.ops else None
    if last is None or last.op.kind != "bubble":
        return 0.0
    return float(last.t_expected_s / p.t_expected_s)

"""The JSON document of `cliff` (roofline/cli/serving.py)."""

from roofline import render
from roofline.cli import convert
from roofline.serving.cliff import CliffSweep


def _ratio(a: float, b: float) -> float | None:
    """a / b, or None where b is 0 (e.g. TPOT of one-token outputs)."""
    return a / b if b else None


def cliff_doc(
    m, hw, dep, eng, plan, sw: CliffSweep, *, s: int, o: int, prompt_desc: str,
    output_desc: str, n: int, preemption: str, tier, ideal: bool,
) -> dict:  # fmt: skip
    """The `cliff` document: a point per max-seqs setting, against recompute when swapping."""
    inputs = {
        **convert.deployment_inputs(m, hw, dep),
        **convert.formats_json(dep),
        "prompt_tokens": s,
        "output_tokens": o,
        "prompt_lengths": prompt_desc,
        "output_lengths": output_desc,
        "requests": n,
        "arrivals": "all at t = 0",
        "frontend": "none",  # the engine alone, as serve --frontend none (no API server)
        "preemption": preemption,
        "chunked_prefill": sw.chunked_prefill,  # the engine's default unless told
        "max_batched_tokens": sw.max_batched_tokens,  # a step's token budget, the engine's
        "swap_tier": tier.id if tier else None,
        "step_times": "ideal" if ideal else "expected",
        "engine": eng.name,
        "kv_budget_bytes": plan.kv_budget_bytes,
        "block_tokens": eng.block_tokens,
        "efficiency": convert.efficiency_json(hw.efficiency),
    }
    return render.document(
        "cliff",
        inputs,
        cliff_batch=sw.cliff_batch,
        points=[
            {
                "batch": p.max_seqs,
                "output_tokens_per_s": p.output_tokens_per_s,
                "ttft_mean_s": p.ttft_mean_s,
                "ttft_p99_s": p.ttft_p99_s,
                "tpot_mean_s": p.tpot_mean_s,
                "tpot_p99_s": p.tpot_p99_s,
                "preemptions": p.preemptions,
                "recomputed_tokens": p.recomputed_tokens,
                "swapped_bytes": p.swapped_bytes,
                "preemption_time_fraction": p.preemption_time_fraction,
                "decode_time_fraction": p.decode_time_fraction,
                "peak_kv_fraction": p.peak_kv_fraction,
                "makespan_s": p.makespan_s,
                "past_cliff": p.max_seqs > sw.cliff_batch,
                "throughput_vs_recompute": _ratio(p.output_tokens_per_s, r.output_tokens_per_s),
                "tpot_vs_recompute": _ratio(p.tpot_mean_s, r.tpot_mean_s),
            }
            for p, r in zip(sw.points, sw.baseline, strict=True)
        ],
    )

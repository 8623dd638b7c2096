"""The reasoning cliff: the serving scheduler (roofline.serving.sim.scheduler) with every request
arriving at t = 0, summarised per max-seqs setting (throughput, TTFT, TPOT, preemption)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_bytes
from roofline.serving.sim.scheduler import EngineRules, simulate_requests
from roofline.serving.sim.steps import StepModel, kv_budget_blocks
from roofline.step.memory import MemoryPlan, kv_bytes_per_sequence
from roofline.step.ops import Deployment


# ---- the reasoning cliff: every request at t = 0 ---------------------------------------------
@dataclass(frozen=True)
class CliffPoint:
    max_seqs: int
    output_tokens_per_s: float
    ttft_mean_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: float
    preemption_time_fraction: float
    decode_time_fraction: float
    peak_kv_fraction: float
    makespan_s: float
    finished: int


def simulate(
    steps: StepModel,
    prompts: np.ndarray,
    outputs: np.ndarray,
    max_seqs: int,
    budget_blocks: int,
    block: int,
    preemption: str = "recompute",
    swap_tier: Tier | None = None,
    chunked_prefill: bool = False,
    max_batched_tokens: int | None = None,
) -> CliffPoint:
    """The cliff: every request arrives at t = 0; serve them all and summarise this max_seqs.
    Chunked prefill needs a token budget; by default 2048 + max_seqs tokens per step."""
    if chunked_prefill and max_batched_tokens is None:
        max_batched_tokens = 2048 + max_seqs
    rules = EngineRules(
        max_seqs,
        budget_blocks,
        block,
        max_batched_tokens,
        chunked_prefill,
        preemption,
        swap_tier.bandwidth_bytes_per_s if swap_tier else None,
    )
    tr = simulate_requests(steps, np.zeros(len(prompts)), prompts, outputs, rules)
    ttft = tr.first_token_s - tr.arrival_s
    o = tr.outputs
    tpot = np.where(o > 1, (tr.finish_s - tr.first_token_s) / np.maximum(o - 1, 1), 0.0)
    total = tr.prefill_s + tr.decode_s
    now = tr.makespan_s
    return CliffPoint(
        max_seqs,
        float(o.sum() / now),
        float(ttft.mean()),
        float(np.percentile(ttft, 99)),
        float(tpot.mean()),
        float(np.percentile(tpot, 99)),
        tr.preemptions,
        tr.recomputed_tokens,
        tr.swapped_bytes,
        tr.preempt_s / now if now else 0.0,
        tr.decode_s / total if total else 0.0,
        tr.peak_blocks / budget_blocks,
        now,
        int(np.isfinite(tr.finish_s).sum()),
    )


@dataclass(frozen=True)
class CliffSweep:
    """The cliff over max-seqs settings: the batch whose KV fills the budget at the mean
    prompt + output, a point per setting, and the same under recompute (the baseline of swap)."""

    cliff_batch: int
    points: list[CliffPoint]
    baseline: list[CliffPoint]


def cliff_sweep(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    plan: MemoryPlan,
    prompts: np.ndarray,
    outputs: np.ndarray,
    settings: list[int],
    preemption: str = "recompute",
    swap_tier: Tier | None = None,
    chunked_prefill: bool = False,
    ideal: bool = False,
    engine: str | None = None,
) -> CliffSweep:
    """Every request at t = 0, served at each max-seqs setting (simulate); with a swap tier
    also under recompute, for the ratio; `engine` the profile whose host costs the step times
    carry (None: the CLI's auto rule). Refuses a budget that holds not one mean prompt."""
    s, o = round(float(prompts.mean())), round(float(outputs.mean()))
    blk = plan.engine.block_tokens
    budget_blocks = kv_budget_blocks(plan, model, dep, blk)
    per_request = float(kv_bytes_per_sequence(model, dep, s + o, blk))
    cliff_batch = int(plan.kv_budget_bytes // per_request)
    if int(np.ceil((s + 1) / blk)) > budget_blocks:
        raise InputError(
            f"not one prompt of {s:,} tokens fits in the KV budget "
            f"({fmt_bytes(plan.kv_budget_bytes)})"
        )
    max_len, b = int(prompts.max() + outputs.max()), max(settings)
    # the most tokens one step carries, as serve's make_replica sizes it: the decodes beside the
    # token budget (simulate's 2048 + max_seqs), or without chunking every admitted prompt (a
    # recompute's with its generated tokens); past it the tables would clamp and price the
    # step's extra prefill tokens at nothing
    top = b + 2048 + b if chunked_prefill else b * max_len
    steps = StepModel(model, hw, dep, b, max_len, ideal, max_tokens=top, engine=engine)
    cp = chunked_prefill
    points = [
        simulate(steps, prompts, outputs, b, budget_blocks, blk, preemption, swap_tier, cp)
        for b in settings
    ]
    baseline = (
        [simulate(steps, prompts, outputs, b, budget_blocks, blk, chunked_prefill=cp)
         for b in settings]
        if swap_tier is not None
        else points
    )  # fmt: skip
    return CliffSweep(cliff_batch, points, baseline)

"""The reasoning cliff: the serving scheduler (roofline.serving.sim.scheduler) with every request
arriving at t = 0, summarised per max-seqs setting (throughput, TTFT, TPOT, preemption)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_bytes
from roofline.engines.engine import Engine
from roofline.serving.serve import make_replica
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
    """The cliff on given step times and limits: every request arrives at t = 0; serve them all
    under vLLM's admission (nothing reserved) and summarise this max_seqs. Chunked prefill
    needs a token budget; by default 2048 + max_seqs tokens per step. (cliff_sweep takes the
    engine's own rules from serve's make_replica instead.)"""
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
    return burst(steps, prompts, outputs, rules)


def burst(
    steps: StepModel, prompts: np.ndarray, outputs: np.ndarray, rules: EngineRules
) -> CliffPoint:
    """Every request at t = 0 under `rules`, summarised (a CliffPoint)."""
    tr = simulate_requests(steps, np.zeros(len(prompts)), prompts, outputs, rules)
    ttft = tr.first_token_s - tr.arrival_s
    o = tr.outputs
    tpot = np.where(o > 1, (tr.finish_s - tr.first_token_s) / np.maximum(o - 1, 1), 0.0)
    total = tr.prefill_s + tr.decode_s
    now = tr.makespan_s
    return CliffPoint(
        rules.max_seqs,
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
        tr.peak_blocks / rules.budget_blocks,
        now,
        int(np.isfinite(tr.finish_s).sum()),
    )


@dataclass(frozen=True)
class CliffSweep:
    """The cliff over max-seqs settings: the batch whose KV fills the budget at the mean
    prompt + output, a point per setting, and the same under recompute (the baseline of swap);
    the engine's chunking and token budget a step that ran them."""

    cliff_batch: int
    points: list[CliffPoint]
    baseline: list[CliffPoint]
    chunked_prefill: bool = True
    max_batched_tokens: int | None = None


def cliff_sweep(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    plan: MemoryPlan,
    prompts: np.ndarray,
    outputs: np.ndarray,
    settings: list[int],
    preemption: str = "recompute",
    swap_tier: Tier | None = None,
    chunked_prefill: bool | None = None,
    ideal: bool = False,
) -> CliffSweep:
    """Every request at t = 0, served at each max-seqs setting by the replica serve builds for
    it (serve.make_replica at that --max-seqs on `plan`'s memory: the engine's chunking, token
    budget, admission rules, host costs and KV budget), with no API server in front: the run
    of serve --concurrency N --requests N --frontend none. With a swap tier also under
    recompute, for the ratio. `chunked_prefill` None: the engine's default. Refuses a budget
    that holds not one mean prompt."""
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
    max_len = int(prompts.max() + outputs.max())

    def at(b: int, how: str) -> tuple[CliffPoint, EngineRules]:
        rep = make_replica(model, hw, dep, eng, max_len, b, None, chunked_prefill, how,
                           swap_tier if how == "swap" else None, plan.capacity_bytes)  # fmt: skip
        return burst(rep.ideal if ideal else rep.expected, prompts, outputs, rep.rules), rep.rules

    ran = [at(b, preemption) for b in settings]
    points = [p for p, _ in ran]
    baseline = [at(b, "recompute")[0] for b in settings] if swap_tier is not None else points
    rules = ran[-1][1]
    return CliffSweep(
        cliff_batch, points, baseline, rules.chunked_prefill, rules.max_batched_tokens
    )

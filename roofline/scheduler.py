"""The reasoning cliff: a continuous-batching scheduler (vLLM-like) driven by roofline step times.

Requests all arrive at t = 0. Each step decodes one token for every running sequence. The
scheduler admits waiting requests (preempted ones first) while a slot is free (`max_seqs`) and
their *current* KV (prompt + tokens generated so far) fits in the paged KV budget; it does not
know their final length. When the next step's blocks do not fit, it preempts the most recently
admitted sequence: `recompute` (vLLM's default) drops its KV and later rebuilds it with a prefill
of prompt + generated tokens, which also samples the next token; `swap` copies its KV to a host
tier and back, both ways over the link. Nothing changes between events, so the simulation
advances in spans of many steps.

Step-time model (closed form, from the roofline core): a decode step of B sequences holding
Σ c_i cached tokens takes base(B) + Σ_groups k_g · Σ_i min(c_i, w_g), where base(B) is the step at
an empty cache and k_g the per-token attention cost of each layer group (attention is affine in
the KV length). Prefill times are interpolated on a log grid of lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.errors import InputError
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.memory import MemoryPlan
from roofline.model import ModelArch
from roofline.ops import (
    Deployment,
    attention_op_name,
    cached_tokens_cap,
    kv_bytes_per_token_layer,
)
from roofline.phases import decode, prefill


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


class StepModel:
    """Decode and prefill times for the simulator, precomputed once per configuration."""

    def __init__(
        self,
        model: ModelArch,
        hw: Accelerator,
        dep: Deployment,
        max_batch: int,
        max_len: int,
        ideal: bool,
        eff: Efficiency | None = None,
    ) -> None:
        eff = eff or hw.efficiency
        pick = (lambda r: r.t_ideal_s) if ideal else (lambda r: r.t_expected_s)
        batches = np.arange(1, max_batch + 1, dtype=float)
        empty = decode(model, hw, dep, batches, 1.0, eff=eff)
        self.base_s = np.asarray(pick(empty), dtype=float)  # index B-1
        layers = model.num_hidden_layers
        self.kv_groups = tuple(
            (g.count / layers, cached_tokens_cap(g.window, dep)) for g in model.layer_groups
        )
        self.groups = []  # (seconds per cached token per sequence, cap) per layer group
        for g in model.layer_groups:
            cap = cached_tokens_cap(g.window, dep)
            far = 1025 if cap is None else min(cap, 1025)  # both points below the cap
            name = attention_op_name(g)
            times = [
                next(
                    float(pick(r))
                    for r in decode(model, hw, dep, 1, t, eff=eff).ops
                    if r.op.name == name
                )
                for t in (1.0, float(far))
            ]
            self.groups.append(((times[1] - times[0]) / max(far - 1, 1), cap))
        self.grid = np.unique(np.geomspace(1, max(max_len, 2), 256).round())
        self.prefill_s = np.asarray(pick(prefill(model, hw, dep, 1, self.grid, eff=eff)))
        self.kv_bytes_per_token = (
            kv_bytes_per_token_layer(model, dep.kv.bits, dep.tp) * model.num_hidden_layers / dep.pp
        )

    kv_groups: tuple[tuple[float, int | None], ...] = ((1.0, None),)  # (share of layers, cap)

    def blocks(self, tokens: np.ndarray | int, block: int) -> np.ndarray:
        """KV blocks a sequence of `tokens` holds, in whole-model blocks (block tokens × every
        layer): sliding-window or evicted layers stop growing at their cap, block by block."""
        t = np.asarray(tokens, dtype=float)
        return sum(
            share * np.ceil((t if cap is None else np.minimum(t, cap)) / block)
            for share, cap in self.kv_groups
        )

    def decode_span_s(self, contexts: np.ndarray, steps: int) -> float:
        """Time of `steps` decode steps for sequences at `contexts` (tokens cached before)."""
        b = len(contexts)
        t = self.base_s[b - 1] * steps
        mid = contexts + (steps + 1) / 2.0  # mean KV length over the span
        for k, cap in self.groups:
            t += k * steps * float(np.sum(mid if cap is None else np.minimum(mid, cap)))
        return float(t)

    def prefill_total_s(self, lengths: np.ndarray, chunked: bool = False) -> float:
        """Prefill time of sequences of `lengths` tokens, one after another. Chunked prefill
        (vLLM's default) rides on decode steps that read the weights anyway, so each prefill
        costs its time less that of a one-token forward pass (the weight read): t(L) − t(1)."""
        t = np.interp(lengths, self.grid, self.prefill_s)
        if chunked:
            t = np.maximum(t - self.prefill_s[0], 0.0)
        return float(np.sum(t))


def kv_budget_blocks(plan: MemoryPlan, model: ModelArch, dep: Deployment, block: int) -> int:
    """The KV budget in whole-model blocks (`block` tokens in every layer), the unit
    StepModel.blocks counts in."""
    per_block = kv_bytes_per_token_layer(model, dep.kv.bits, dep.tp) * model.num_hidden_layers
    return int(plan.kv_budget_bytes // (per_block / dep.pp * block))


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
) -> CliffPoint:
    """Serve every request to completion; return the metrics of this max_seqs setting."""
    if max_seqs > len(steps.base_s):
        raise InputError(f"the step model covers batches up to {len(steps.base_s)}, not {max_seqs}")
    n = len(prompts)
    generated = np.zeros(n, dtype=np.int64)  # output tokens produced (the first by prefill)
    first_token_s = np.full(n, np.nan)
    finish_s = np.full(n, np.nan)
    waiting: list[int] = list(range(n))
    swapped: set[int] = set()
    running: list[int] = []  # admission order
    now = t_prefill = t_decode = t_preempt = 0.0
    preemptions = recomputed = 0
    swapped_bytes = 0.0
    peak_blocks = 0

    def blocks_for(tokens: np.ndarray | int) -> np.ndarray:
        return steps.blocks(tokens, block)

    while waiting or running:
        ctx = prompts[running] + generated[running] if running else np.zeros(0, dtype=np.int64)
        used = float(blocks_for(ctx + 1).sum())  # blocks the running set needs for its next step
        # admit while a slot is free and the request's current KV (+ its next token) fits next
        # to everyone else's next step (so a just-preempted sequence is not readmitted at once)
        admitted = []
        while waiting and len(running) + len(admitted) < max_seqs:
            r = waiting[0]
            need = float(blocks_for(prompts[r] + generated[r] + 1))
            if used + need > budget_blocks:
                break
            waiting.pop(0)
            admitted.append(r)
            used += need
        if admitted:
            adm = np.array(admitted)
            fresh = adm[~np.isin(adm, list(swapped))] if swapped else adm
            back = adm[np.isin(adm, list(swapped))] if swapped else adm[:0]
            lengths = prompts[fresh] + generated[fresh]
            t = steps.prefill_total_s(lengths.astype(float), chunked_prefill)
            recomputed += int(
                np.sum(
                    generated[fresh][generated[fresh] > 0] + prompts[fresh][generated[fresh] > 0]
                )
            )
            t_re = steps.prefill_total_s(
                lengths[generated[fresh] > 0].astype(float), chunked_prefill
            )
            if len(back):
                moved = float(np.sum(prompts[back] + generated[back])) * steps.kv_bytes_per_token
                t_sw = moved / swap_tier.bandwidth_bytes_per_s if swap_tier else 0.0
                swapped_bytes += moved
                t += t_sw
                t_re += t_sw
                swapped.difference_update(back.tolist())
            now += t
            t_prefill += t
            t_preempt += t_re
            new = fresh[generated[fresh] == 0]
            first_token_s[new] = now
            generated[fresh] += 1  # a prefill (first or recompute) samples the next token
            running.extend(admitted)
            done = [r for r in admitted if generated[r] >= outputs[r]]
            for r in done:
                finish_s[r] = now
                running.remove(r)
            continue
        if not running:
            raise RuntimeError("a waiting request can never fit: the KV budget is too small")
        run = np.array(running)
        ctx = prompts[run] + generated[run]
        remaining = outputs[run] - generated[run]
        k_finish = int(remaining.min())
        # the most steps whose blocks still fit: Σ ceil((c_i + k) / block) <= budget
        lo, hi = 0, k_finish
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if float(blocks_for(ctx + mid).sum()) <= budget_blocks:
                lo = mid
            else:
                hi = mid - 1
        k = lo
        if k == 0:  # the next step does not fit: preempt the most recently admitted sequence
            victim = running.pop()
            preemptions += 1
            if preemption == "swap":
                moved = float(prompts[victim] + generated[victim]) * steps.kv_bytes_per_token
                t_sw = moved / swap_tier.bandwidth_bytes_per_s if swap_tier else 0.0
                swapped_bytes += moved
                now += t_sw
                t_preempt += t_sw
                swapped.add(victim)
            waiting.insert(0, victim)
            continue
        t = steps.decode_span_s(ctx.astype(float), k)
        peak_blocks = max(peak_blocks, float(blocks_for(ctx + k).sum()))
        now += t
        t_decode += t
        generated[run] += k
        for r in run[generated[run] >= outputs[run]]:
            finish_s[r] = now
            running.remove(int(r))
    ttft = first_token_s
    tpot = np.where(outputs > 1, (finish_s - first_token_s) / np.maximum(outputs - 1, 1), 0.0)
    total = t_prefill + t_decode
    return CliffPoint(
        max_seqs,
        float(outputs.sum() / now),
        float(ttft.mean()),
        float(np.percentile(ttft, 99)),
        float(tpot.mean()),
        float(np.percentile(tpot, 99)),
        preemptions,
        recomputed,
        swapped_bytes,
        t_preempt / now if now else 0.0,
        t_decode / total if total else 0.0,
        peak_blocks / budget_blocks,
        now,
        int(np.isfinite(finish_s).sum()),
    )

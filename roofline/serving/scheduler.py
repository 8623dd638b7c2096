"""A continuous-batching scheduler (vLLM-like) driven by roofline step times, with arrivals.

Requests arrive over time (any arrival times, or a closed loop of N users each sending its next
request when the last one finishes). The engine's rules, as in vLLM (Kwon et al., SOSP'23, and
the vLLM scheduler docs):

- At most `max_seqs` sequences are active. Waiting requests are admitted first come, first served
  (preempted ones first) while a slot is free and their *current* KV (prompt + tokens generated so
  far, + the next token) fits in the paged KV budget next to every active sequence's next step.
- Non-chunked prefill (vLLM V0's default): a prefill-only step runs the admitted prompts, packed up
  to `max_batched_tokens`, and stalls the running decodes. Chunked prefill (vLLM V1's default):
  every step carries one token per decoding sequence plus prefill tokens up to the token budget
  (`max_batched_tokens`), first come first served, so prefills share steps with running decodes.
- When the next step's KV blocks do not fit, the most recently admitted sequence is preempted:
  `recompute` (vLLM's default) drops its KV and later re-prefills prompt + generated tokens (which
  samples its next token); `swap` copies its KV to a host tier and back over the link.

Nothing changes between events (an arrival that can be admitted, a prompt finishing its prefill, a
sequence finishing, the KV budget running out), so the simulation advances in spans of many
identical steps: the decode contexts grow by one token per step, which StepModel integrates in
closed form. The cliff (`simulate`) is the same model with every request arriving at t = 0.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from roofline.errors import InputError
from roofline.hardware import Tier
from roofline.serving.steps import StepModel


@dataclass(frozen=True)
class EngineRules:
    """The scheduler's limits. `max_batched_tokens` None: a prefill step takes every admitted
    prompt (no token budget)."""

    max_seqs: int
    budget_blocks: int
    block_tokens: int
    max_batched_tokens: int | None = None
    chunked_prefill: bool = False
    preemption: str = "recompute"
    swap_bandwidth_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.max_seqs <= 65_536:
            raise InputError(f"max sequences must be from 1 to 65536, got {self.max_seqs}")
        if self.budget_blocks < 1:
            raise InputError("the KV budget holds no block: the model leaves no room for KV")
        if self.block_tokens < 1:
            raise InputError(f"block tokens must be at least 1, got {self.block_tokens}")
        if self.preemption not in ("recompute", "swap"):
            raise InputError(f"--preemption must be recompute or swap, got {self.preemption}")
        if self.chunked_prefill and self.max_batched_tokens is None:
            raise InputError("chunked prefill needs a token budget per step")
        if self.max_batched_tokens is not None and self.max_batched_tokens <= (
            self.max_seqs if self.chunked_prefill else 0
        ):
            raise InputError(
                f"the token budget per step ({self.max_batched_tokens}) must exceed max sequences "
                f"({self.max_seqs}) with chunked prefill"
            )


@dataclass(frozen=True)
class Trace:
    """What happened to every request, and time integrals of the engine's state."""

    arrival_s: np.ndarray
    admitted_s: np.ndarray  # first admission (end of queueing)
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompts: np.ndarray
    outputs: np.ndarray
    itl_s: np.ndarray  # inter-token gaps (values)
    itl_weight: np.ndarray  # how many gaps have each value
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: float
    busy_s: float
    prefill_s: float
    decode_s: float
    preempt_s: float
    active_integral: float  # ∫ active sequences dt
    decoding_integral: float  # ∫ decoding sequences dt
    waiting_integral: float  # ∫ queued requests dt
    kv_block_integral: float  # ∫ KV blocks in use dt
    peak_blocks: float
    budget_blocks: int
    makespan_s: float

    @property
    def served(self) -> np.ndarray:
        """Requests that arrived (a closed loop stopped by a duration leaves the rest unsent)."""
        return np.isfinite(self.arrival_s)


def simulate_requests(
    steps: StepModel,
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    rules: EngineRules,
    prefilled: bool = False,
    closed_loop: int | None = None,
    release_until_s: float = math.inf,
) -> Trace:
    """Serve every request; `arrival_s` sorted. `prefilled`: the requests arrive with their KV and
    first token (a disaggregated decode pool). `closed_loop` N: the first N requests arrive at
    arrival_s[:N] and each finish releases the next request (until `release_until_s`)."""
    n = len(prompts)
    if rules.max_seqs > len(steps.base_s):
        raise InputError(
            f"the step model covers batches up to {len(steps.base_s)}, not {rules.max_seqs}"
        )
    prompts = np.asarray(prompts, dtype=np.int64)
    outputs = np.asarray(outputs, dtype=np.int64)
    arrival = np.array(arrival_s, dtype=float)
    next_release = n
    if closed_loop is not None:
        next_release = min(closed_loop, n)
        arrival[next_release:] = math.inf
    budget, blk, cap_tokens = rules.budget_blocks, rules.block_tokens, rules.max_batched_tokens
    generated = np.full(n, 1 if prefilled else 0, dtype=np.int64)
    pf_left = np.zeros(n, dtype=np.int64)  # prefill tokens still to run (0: decoding)
    pf_total = np.zeros(n, dtype=np.int64)  # length of the current prefill pass
    admitted_s = np.full(n, np.nan)
    first_token_s = arrival.copy() if prefilled else np.full(n, np.nan)
    finish_s = np.full(n, np.nan)
    last_tok = first_token_s.copy()
    recompute_pass = np.zeros(n, dtype=bool)
    kv_ready = np.full(n, prefilled)  # arrived with its KV (a disaggregated decode pool)
    waiting: deque[int] = deque()
    active: list[int] = []  # admission order
    swapped: set[int] = set()
    itl_v: list[np.ndarray] = []
    itl_w: list[np.ndarray] = []
    na = 0
    now = 0.0
    acc = dict.fromkeys(("busy", "prefill", "decode", "preempt", "act", "dec", "wait", "kv"), 0.0)
    preemptions = recomputed = 0
    swapped_bytes = peak_blocks = 0.0
    bw = rules.swap_bandwidth_bytes_per_s

    def blocks(tokens) -> np.ndarray:
        return steps.blocks(tokens, blk)

    def advance(dt: float, n_dec: int, kv_blocks: float) -> None:
        """Integrate the state over a span of dt seconds that starts now."""
        nonlocal now
        end = now + dt
        acc["busy"] += dt
        acc["act"] += len(active) * dt
        acc["dec"] += n_dec * dt
        acc["kv"] += kv_blocks * dt
        wait = len(waiting) * dt
        if na < n:  # arrivals during the span queue for the rest of it
            j = int(np.searchsorted(arrival, end, side="right"))
            if j > na:
                wait += float(np.sum(end - arrival[na:j]))
        acc["wait"] += wait
        now = end

    def finish(rs) -> None:
        nonlocal next_release
        for r in rs:
            r = int(r)
            finish_s[r] = now
            active.remove(r)
            if next_release < n and now < release_until_s:
                arrival[next_release] = now
                next_release += 1

    def complete_prefill(rs: np.ndarray) -> None:
        """Prompts whose prefill (first or recompute) ended now: each samples a token."""
        if rs.size == 0:
            return
        fresh = generated[rs] == 0
        first_token_s[rs[fresh]] = now
        again = rs[~fresh]
        if again.size:
            itl_v.append(now - last_tok[again])
            itl_w.append(np.ones(again.size))
        generated[rs] += 1
        last_tok[rs] = now
        pf_left[rs] = 0
        recompute_pass[rs] = False
        finish(rs[generated[rs] >= outputs[rs]])

    def decode_gaps(dec: np.ndarray, k: int, t: float) -> None:
        t_step = t / k
        itl_v.append(now + t_step - last_tok[dec])
        itl_w.append(np.ones(dec.size))
        if k > 1:
            itl_v.append(np.array([t_step]))
            itl_w.append(np.array([float(dec.size * (k - 1))]))

    while True:
        if na < n and arrival[na] <= now:
            j = int(np.searchsorted(arrival, now, side="right"))
            waiting.extend(range(na, j))
            na = j
        if not active and not waiting:
            if na >= n or not math.isfinite(arrival[na]):
                break
            now = float(arrival[na])  # idle until the next arrival
            continue
        # ---- admission ----
        if waiting and len(active) < rules.max_seqs:
            act = np.array(active, dtype=np.int64)
            used = float(blocks(prompts[act] + generated[act] + 1).sum()) if active else 0.0
            while waiting and len(active) < rules.max_seqs:
                r = waiting[0]
                need = float(blocks(int(prompts[r] + generated[r]) + 1))
                if used + need > budget:
                    break
                waiting.popleft()
                used += need
                active.append(r)
                if math.isnan(admitted_s[r]):
                    admitted_s[r] = now
                if r in swapped:  # swap back in: the engine waits for the copy
                    swapped.discard(r)
                    moved = float(prompts[r] + generated[r]) * steps.kv_bytes_per_token
                    swapped_bytes += moved
                    t_sw = moved / bw if bw else 0.0
                    acc["preempt"] += t_sw
                    advance(t_sw, 0, used)
                elif kv_ready[r]:
                    kv_ready[r] = False  # arrived with its KV (a disaggregated decode pool)
                else:
                    pf_left[r] = pf_total[r] = prompts[r] + generated[r]
                    if generated[r] > 0:
                        recompute_pass[r] = True
                        recomputed += int(pf_total[r])
            if not active:
                raise InputError(
                    f"a request of {int(prompts[waiting[0]]):,} prompt tokens can never fit in "
                    f"the KV budget ({budget} blocks of {blk} tokens)"
                )
        act = np.array(active, dtype=np.int64)
        left = pf_left[act]
        is_pf = left > 0
        dec, pfr = act[~is_pf], act[is_pf]
        ctx = prompts[dec] + generated[dec]
        reserved = float(blocks(prompts[pfr] + generated[pfr] + 1).sum()) if pfr.size else 0.0
        # ---- a prefill-only step (non-chunked) ----
        if pfr.size and not rules.chunked_prefill:
            lens = left[is_pf]
            take = 1
            if cap_tokens is not None:
                take = max(1, int(np.searchsorted(np.cumsum(lens), cap_tokens, side="right")))
            else:
                take = lens.size
            t = steps.prefill_step_s(lens[:take])
            re_tokens = float(lens[:take][recompute_pass[pfr[:take]]].sum())
            acc["prefill"] += t
            acc["preempt"] += t * re_tokens / float(lens[:take].sum())
            kv_now = reserved + (float(blocks(ctx + 1).sum()) if dec.size else 0.0)
            advance(t, 0, kv_now)
            peak_blocks = max(peak_blocks, kv_now)
            complete_prefill(pfr[:take])
            continue
        # ---- a span of decode steps (with prefill chunks when chunked) ----
        k = int((outputs[dec] - generated[dec]).min()) if dec.size else 1 << 40
        if pfr.size:
            room = cap_tokens - dec.size
            cum = np.cumsum(left[is_pf])
            k = min(k, -(-int(cum[0]) // room))
        kv_room = budget - reserved
        if dec.size and float(blocks(ctx + k).sum()) > kv_room:
            lo, hi = 0, k  # the most steps whose blocks still fit
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if float(blocks(ctx + mid).sum()) <= kv_room:
                    lo = mid
                else:
                    hi = mid - 1
            k = lo
        if k == 0:  # the next step does not fit: preempt the most recently admitted sequence
            victim = active.pop()
            preemptions += 1
            if rules.preemption == "swap" and generated[victim] > 0 and pf_left[victim] == 0:
                moved = float(prompts[victim] + generated[victim]) * steps.kv_bytes_per_token
                swapped_bytes += moved
                t_sw = moved / bw if bw else 0.0
                acc["preempt"] += t_sw
                advance(t_sw, 0, float(blocks(ctx + 1).sum()))
                swapped.add(victim)
            pf_left[victim] = 0
            waiting.appendleft(victim)
            continue
        lens = left[is_pf]

        ctx_f = ctx.astype(float)
        pf = (room, cum, lens, pf_total[pfr] - lens) if pfr.size else None
        t, processed, t_pf = _span(steps, ctx_f, k, pf)
        if not waiting and len(active) < rules.max_seqs and na < n and math.isfinite(arrival[na]):
            # an arrival can be admitted: stop at the first step boundary after it
            k_cut = max(1, math.ceil((float(arrival[na]) - now) * k / t)) if t > 0 else k
            if k_cut < k:
                k = k_cut
                t, processed, t_pf = _span(steps, ctx_f, k, pf)
        acc["prefill"] += t_pf
        acc["decode"] += t - t_pf
        if processed is not None and processed.sum():
            re_tokens = float(processed[recompute_pass[pfr]].sum())
            acc["preempt"] += t_pf * re_tokens / float(processed.sum())
        kv_mid = reserved + (float(blocks(ctx + (k + 1) // 2).sum()) if dec.size else 0.0)
        kv_end = reserved + (float(blocks(ctx + k).sum()) if dec.size else 0.0)
        peak_blocks = max(peak_blocks, kv_end)
        if dec.size:
            decode_gaps(dec, k, t)
        advance(t, dec.size, kv_mid)
        if dec.size:
            generated[dec] += k
            last_tok[dec] = now
        if processed is not None:
            pf_left[pfr] -= processed
            complete_prefill(pfr[pf_left[pfr] == 0])
        if dec.size:
            finish(dec[generated[dec] >= outputs[dec]])
    return Trace(
        arrival,
        admitted_s,
        first_token_s,
        finish_s,
        prompts,
        outputs,
        np.concatenate(itl_v) if itl_v else np.zeros(0),
        np.concatenate(itl_w) if itl_w else np.zeros(0),
        preemptions,
        recomputed,
        swapped_bytes,
        acc["busy"],
        acc["prefill"],
        acc["decode"],
        acc["preempt"],
        acc["act"],
        acc["dec"],
        acc["wait"],
        acc["kv"],
        peak_blocks,
        budget,
        now,
    )


def _span(steps: StepModel, ctx: np.ndarray, k: int, pf: tuple | None):
    """Time of k steps for sequences decoding at `ctx`, with pf = (token room per step, cumulative
    prefill tokens left, tokens left, tokens done) of the prompts in prefill: the time, the prefill
    tokens each prompt gets, and the share of the time the prefill adds."""
    if pf is None:
        return steps.decode_span_s(ctx, k), None, 0.0
    room, cum, lens, done = pf
    tokens = min(k * room, int(cum[-1]))
    processed = np.clip(tokens - (cum - lens), 0, lens)
    t = steps.mixed_span_s(ctx, k, done, done + processed)
    return t, processed, t - (steps.decode_span_s(ctx, k) if len(ctx) else 0.0)


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

"""Prefill-only steps (roofline.serving.sim.scheduler's non-chunked mode): whole prompts up to
the engine's token budget, the decodes waiting (vLLM V0's default; JetStream one prompt a step),
or, under SGLang's prefill batches (EngineRules.prefill_fill), the budget filled with a chunk of
the next prompt and a prompt longer than the budget run chunk by chunk, ahead of the decodes
(python/sglang/srt/managers/schedule_policy.py PrefillAdder at sgl-project/sglang@d51c1c21)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class PrefillSteps:
    """A mixin of the simulation's state (scheduler._Sim): one prefill-only step."""

    rules: Any
    steps: Any
    acc: dict
    cache: Any
    pf_skip: list[int]
    pf_total: list[int]
    pf_left: list[int]
    recompute_pass: list[bool]
    reserved: float
    peak_blocks: float
    now: float
    api: Any
    blocks_ahead: Callable[[int], float]  # the state's other parts (Decoders, _Sim)
    advance: Callable[[float, int, float], None]
    evict: Callable[[], None]
    complete_prefill: Callable[[list[int]], None]

    def prefill_only(self, pfr: list[int], lens: list[int], n_dec: int) -> None:
        """A prefill-only step (non-chunked): whole prompts up to the token budget (and up to
        rules.prefill_seqs of them when set), at least one; under rules.prefill_fill the budget
        filled with a chunk of the next prompt, or a prompt longer than the budget run a
        budget's worth at a time, each part attending the tokens before it (its cached prefix
        and its earlier chunks); the decodes wait."""
        cap_tokens, cap_seqs, acc = self.rules.max_batched_tokens, self.rules.prefill_seqs, self.acc
        take, tokens = 0, 0
        for x in lens:
            full = cap_tokens is not None and tokens + x > cap_tokens
            if take and (take == cap_seqs or full):
                break
            take, tokens = take + 1, tokens + x
        whole = take  # prompts run to their end; a chunk of the one after when filling
        fill = self.rules.prefill_fill and cap_tokens is not None  # SGLang: fill the budget
        if fill and tokens > cap_tokens:  # one prompt longer than the budget: its next chunk
            pfr, lens, whole = pfr[:1], [cap_tokens], 0
        elif fill and take < len(lens) and take != cap_seqs and tokens < cap_tokens:
            pfr, lens = pfr[: take + 1], [*lens[:take], cap_tokens - tokens]
        else:
            pfr, lens = pfr[:take], lens[:take]
        # each part attends, not computes, the tokens before it: its cached prefix, its chunks
        done = [self.pf_skip[r] + self.pf_total[r] - self.pf_left[r] for r in pfr]
        t = self.steps.prefill_step_s(lens, done)
        tokens = sum(lens)
        re_tokens = sum(x for x, r in zip(lens, pfr, strict=True) if self.recompute_pass[r])
        acc["prefill"] += t
        acc["preempt"] += t * re_tokens / tokens
        kv_now = self.reserved + (self.blocks_ahead(1) if n_dec else 0.0)
        self.advance(t, 0, kv_now)
        self.peak_blocks = max(self.peak_blocks, kv_now)
        self.api.stream(self.now, t, whole, whole)
        if self.cache is not None and self.cache.idle_blocks > self.rules.budget_blocks - kv_now:
            self.evict()
        if whole < len(pfr):  # the chunked prompt stays first in the queue
            self.pf_left[pfr[-1]] -= lens[-1]
        self.complete_prefill(pfr[:whole])

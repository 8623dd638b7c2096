"""Admission and preemption in the serving simulator (roofline.serving.sim.scheduler._Sim), as in
vLLM (Kwon et al., SOSP'23, and the vLLM scheduler docs): waiting requests are admitted first
come, first served (preempted ones first) while a slot is free and their current KV (prompt +
tokens generated so far, + the next token) fits in the paged KV budget next to every active
sequence's next step; when the next step does not fit, the most recently admitted sequence is
preempted (recompute: its KV is dropped and re-prefilled later; swap: copied to a host tier and
back). With a prefix cache (roofline.serving.sim.prefixcache) a prefill pass skips the tokens it
finds cached, shared blocks are counted once, and idle cached blocks give way when needed.
A scheduler that reserves a share ρ of the output (policy.EngineRules.reserve_output) also holds
back ρ of every running request's remaining output tokens and of the newcomer's: at ρ = 1
(TensorRT-LLM's GUARANTEED_NO_EVICT) a request needs the blocks of its whole sequence (prompt +
every output token) beside those committed to the running requests' whole sequences, counted
exactly, so the KV in use never outgrows the budget and nothing is preempted; below 1 (SGLang's
new_token_ratio) the remaining tokens are counted as a fluid (Σ over decoders = Σ last step − n·G,
Decoders.F)."""

from __future__ import annotations

import math

from roofline.domain.errors import InputError
from roofline.serving.sim.priority import order_waiting, preemptible, victim
from roofline.serving.sim.simstate import SimState


class Admission(SimState):
    """admit / preempt / evict on the simulation's state."""

    def admit(self) -> None:
        rules, steps, blk = self.rules, self.steps, self.rules.block_tokens
        waiting, active, prompts, gen, cache = (
            self.waiting,
            self.active,
            self.prompts,
            self.gen,
            self.cache,
        )
        budget, max_seqs, simple = rules.budget_blocks, rules.max_seqs, self.simple_kv
        if self.prio is not None:  # the queue in priority order (roofline.serving.sim.priority)
            order_waiting(waiting, self.prio, self.arr)
        n_dec = len(self.decoding)
        # decoders' next step, bounded first (Σ ceil(x/b) <= Σ x/b + n) and exact when it matters
        used = self.reserved + (self.S + n_dec * self.G + n_dec) / blk + n_dec
        exact = False
        rho = rules.reserve_output
        whole = rho >= 1.0
        ahead = 0.0  # ρ × the running requests' remaining output, in blocks (0 < ρ < 1)
        if 0.0 < rho < 1.0:
            left = self.F - n_dec * (self.G + 1)
            left += sum(self.outputs[p] - gen[p] - 1 for p in self.prefilling)
            ahead = rho * max(left, 0) / blk
        while waiting and len(active) < max_seqs:
            r = waiting[0]
            tokens = prompts[r] + gen[r] + 1
            need = -(-tokens // blk) if simple else steps.blocks_one(tokens, blk)
            full = 0.0
            if whole:  # the blocks of its whole sequence, beside those committed already
                seq = prompts[r] + self.outputs[r]
                full = -(-seq // blk) if simple else steps.blocks_one(seq, blk)
                if self.committed + full > budget:
                    break
            elif rho > 0.0:  # ρ of its remaining output beside ρ of the running requests'
                full = rho * max(self.outputs[r] - gen[r] - 1, 0) / blk
                if used + ahead + need + full > budget:
                    break
                ahead += full
                full = 0.0
            if cache is not None:  # the shared prefix's blocks are counted once
                need += cache.group_delta(r, tokens - 1)
            if used + need > budget:
                if not exact:
                    used = self.reserved + (self.blocks_ahead(1) if self.decoding else 0.0)
                    exact = True
                if used + need > budget:
                    if not self.preempt_for(r, used + need):
                        break
                    used = self.reserved + (self.blocks_ahead(1) if self.decoding else 0.0)
                    if used + need > budget:
                        break
            waiting.popleft()
            used += need
            self.committed += full
            self.commit[r] = full
            active.append(r)
            if math.isnan(self.admitted_s[r]):
                self.admitted_s[r] = self.now
            if r in self.swapped:  # swap back in: the engine waits for the copy
                self.swapped.discard(r)
                self.swap_stall(r)
                self.join(r)
                if cache is not None:
                    self.reserved += cache.admit(r, tokens - 1, count=False)[1]
            elif self.kv_ready[r]:  # arrived with its KV (a disaggregated decode pool)
                self.kv_ready[r] = False
                self.join(r)
            else:
                hit = 0
                if cache is not None:
                    hit, corr = cache.admit(r, tokens - 1)
                    self.reserved += corr
                    need -= corr
                self.pf_left[r] = self.pf_total[r] = tokens - 1 - hit
                self.pf_skip[r] = hit
                self.res_blocks[r] = need
                self.reserved += need
                self.prefilling.append(r)
                if gen[r] > 0:
                    self.recompute_pass[r] = True
                    self.recomputed += tokens - 1 - hit
        if cache is not None and cache.idle_blocks > budget - used:
            self.evict()
        if not active:
            r = waiting[0]
            held = int(prompts[r] + gen[r])
            raise InputError(
                f"one request alone outgrows the KV budget ({budget:,} blocks of "
                f"{blk} tokens): it holds {held:,} tokens ({int(prompts[r]):,} prompt + "
                f"{int(gen[r]):,} generated) of the {int(prompts[r] + self.outputs[r]):,}"
                " it needs",
                hint="shorten --output or --prompt, or add memory (--tp, --kv-dtype fp8)",
            )

    def preempt_for(self, r: int, needed: float) -> bool:
        """SGLang's preemption to admit waiting request r (roofline.serving.sim.priority): running
        requests of a priority worse by more than the threshold, worst first, when freeing all
        of them would bring the KV `needed` within the budget; whether any was preempted."""
        if self.prio is None or self.prio_preempt is None:
            return False
        cands = preemptible(r, self.active, self.prio, self.arr, self.prio_preempt)
        blk, budget = self.rules.block_tokens, self.rules.budget_blocks
        held = [  # a decoder's context is base + G (decoders.py), a prefill's its prompt so far
            -(
                -(self.base[v] + self.G if v in self.decoding else self.prompts[v] + self.gen[v])
                // blk
            )
            for v in cands
        ]
        if not cands or needed - sum(held) > budget:
            return False
        for v, b in zip(cands, held, strict=True):
            self.preempt(v)
            needed -= b
            if needed <= budget:
                break
        self.waiting.remove(r)  # r stays at the head, before the requests it displaced
        self.waiting.appendleft(r)
        return True

    def preempt(self, chosen: int | None = None) -> None:
        """The next step does not fit: preempt the most recently admitted sequence, or under
        priorities vLLM's victim (roofline.serving.sim.priority), or `chosen`."""
        if chosen is not None:
            victim_ = chosen
            self.active.remove(chosen)
        elif self.prio is not None:
            victim_ = victim(self.active, self.prio, self.arr)
            self.active.remove(victim_)
        else:
            victim_ = self.active.pop()
        self._preempt(victim_)

    def _preempt(self, victim: int) -> None:
        self.preemptions += 1
        self.committed -= self.commit[victim]
        self.commit[victim] = 0.0
        self.waiting.appendleft(victim)  # it waits (and counts as queued) from now
        swap = False
        if victim in self.decoding:
            self.leave(victim)
            kv = self.prompts[victim] + self.gen[victim] - 1
            if self.rules.preemption == "swap" and self.gen[victim] > 0:
                swap = True
                self.swap_stall(victim)
                self.swapped.add(victim)
        else:
            self.prefilling.remove(victim)
            self.reserved -= self.res_blocks[victim]
            self.res_blocks[victim] = 0.0
            kv = self.pf_skip[victim] + self.pf_total[victim] - self.pf_left[victim]
        if self.cache is not None:  # its blocks stay cached (a swap takes them off the device)
            self.reserved += self.cache.release(victim, kv, not swap)
        self.pf_left[victim] = 0

    def evict(self) -> None:
        """Idle cached blocks give way to the KV in use (the decoders' next step)."""
        assert self.cache is not None  # called with a prefix cache only
        used = self.reserved + (self.blocks_ahead(1) if self.decoding else 0.0)
        self.cache.fit(self.rules.budget_blocks - used)

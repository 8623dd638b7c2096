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
closed form. The cliff (roofline.serving.cliff) is this model with every request at t = 0.
The API server's queue is sim.apiserver, the record of a run sim.record.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from functools import partial
from heapq import heappop, heappush
from typing import Any

import numpy as np

from roofline.domain.errors import InputError
from roofline.engines.scheduler import EngineRules, Frontend
from roofline.serving.sim.admission import Admission
from roofline.serving.sim.apiserver import ApiQueue
from roofline.serving.sim.arrivalqueue import ArrivalQueue
from roofline.serving.sim.blockcache import BlockCache
from roofline.serving.sim.chunked import chunk_head
from roofline.serving.sim.decoders import Decoders
from roofline.serving.sim.freshstack import on_fresh_stack
from roofline.serving.sim.kvtiers import KvHierarchy, TierStore
from roofline.serving.sim.prefillsteps import PrefillSteps
from roofline.serving.sim.prefixcache import PrefixCache, PrefixInfo
from roofline.serving.sim.record import RunRecord
from roofline.serving.sim.runmemo import remembered
from roofline.serving.sim.slostop import SloStop, SloWatch
from roofline.serving.sim.steps import StepModel


def simulate_requests(
    steps: StepModel,
    arrival_s: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    rules: EngineRules,
    prefilled: bool = False,
    closed_loop: int | None = None,
    release_until_s: float = math.inf,
    frontend: Frontend | None = None,
    prefix: PrefixInfo | None = None,
    priority: np.ndarray | None = None,
    priority_preemption: int | None = None,
    kv: KvHierarchy | None = None,
    kv_gpus: int = 1,
    stop: SloStop | None = None,
) -> RunRecord:
    """Serve every request; `arrival_s` sorted. `prefilled`: the requests arrive with their KV and
    first token (a disaggregated decode pool). `closed_loop` N: the first N requests arrive at
    arrival_s[:N] and each finish releases the next request (until `release_until_s`) once the
    client has seen it. `frontend`: the API server between client and engine (policy.Frontend;
    None: none, as for the ideal). `prefix`: shared prefixes and conversations, cached
    (roofline.serving.sim.prefixcache; a later turn arrives when its predecessor is done).
    `priority` per request (lower first; roofline.serving.sim.priority), and
    `priority_preemption` the engine's threshold for preempting to admit (None: never). `kv`:
    tiers below HBM and the retention between turns (roofline.serving.sim.kvtiers), over a
    replica of `kv_gpus` GPUs. `stop`: raise SloMissed once the run misses an SLO (slostop).
    Inside sim.runmemo.shared_runs a run with the same inputs as one before is that run."""

    def simulate() -> RunRecord:
        sim = _Sim(steps, arrival_s, prompts, outputs, rules, prefilled, closed_loop, frontend,
                   prefix)  # fmt: skip
        sim.stop, sim.over = stop, [0, 0]  # requests over its TTFT and TPOT limits (SloWatch)
        if kv is not None and sim.cache is not None:
            store = TierStore.build(kv, rules.block_tokens, steps.kv_bytes_per_token, kv_gpus)
            store.choose(steps.prefill_step_s([2048]) / 2048 * rules.block_tokens)
            sim.cache.store, sim.cache.retention = store, kv.retention
            sim.cache.tier_hits = [0] * len(store.levels)
        sim.prio = None if priority is None else np.asarray(priority, dtype=np.int64).tolist()
        sim.prio_preempt = priority_preemption
        return on_fresh_stack(lambda: sim.run(release_until_s))

    arrays = (np.asarray(arrival_s), np.asarray(prompts), np.asarray(outputs))
    inputs = (*arrays, rules, prefilled, closed_loop, release_until_s, frontend, prefix,
              priority, priority_preemption, kv, kv_gpus, stop)  # fmt: skip
    return remembered(steps, inputs, simulate)


class _Sim(ArrivalQueue, Decoders, Admission, SloWatch, PrefillSteps):
    """The state of one simulation, in Python scalars (the spans are short; numpy only when the
    KV budget is near or a layer has a window); the decoding sequences in closed form
    (Decoders)."""

    def __init__(
        self, steps, arrival_s, prompts, outputs, rules, prefilled, closed_loop, front, pfx
    ) -> None:
        n = len(prompts)
        if rules.max_seqs > len(steps.base_s):
            raise InputError(
                f"the step model covers batches up to {len(steps.base_s)}, not {rules.max_seqs}"
            )
        self.steps, self.rules, self.n = steps, rules, n
        self.prompts_np = np.asarray(prompts, dtype=np.int64)
        self.outputs_np = np.asarray(outputs, dtype=np.int64)
        self.prompts = self.prompts_np.tolist()
        self.outputs = self.outputs_np.tolist()
        arrival = np.array(arrival_s, dtype=float)
        # requests n_in… (later turns) arrive when released by their predecessors (`later`)
        self.n_in = n if pfx is None else pfx.n_first
        cache_type = PrefixCache if pfx is None or pfx.hashes is None else BlockCache
        self.cache = None if pfx is None else cache_type(pfx, rules.block_tokens)
        self.succ = [-1] * n if pfx is None else pfx.succ.tolist()
        self.later: list[tuple[float, int]] = []
        arrival[self.n_in :] = math.inf
        self.next_release = self.n_in
        if closed_loop is not None:
            self.next_release = min(closed_loop, self.n_in)
            arrival[self.next_release :] = math.inf
        self.sent = arrival.tolist()
        self.api = ApiQueue(front)
        self.api.tokenize_sent(arrival, self.next_release)
        self.arr = arrival.tolist()
        self.first_wait = [0.0] * n
        self.finish_wait = [0.0] * n
        self.arr_cum = [0.0, *np.cumsum(arrival[: self.next_release]).tolist()]
        self.gen = [1 if prefilled else 0] * n  # tokens generated (decoders: see base)
        self.pf_left = [0] * n  # prefill tokens still to run
        self.pf_total = [0] * n  # length of the current prefill pass
        self.pf_skip = [0] * n  # prompt tokens the current pass found cached
        self.res_blocks = [0.0] * n  # KV blocks a prompt in prefill holds
        self.recompute_pass = [False] * n
        self.kv_ready = [prefilled] * n  # arrived with its KV (a disaggregated decode pool)
        nan = math.nan
        self.admitted_s = [nan] * n
        self.first_token_s = list(self.arr) if prefilled else [nan] * n
        self.finish_s = [nan] * n
        self.last_tok = list(self.first_token_s)
        self.waiting: deque[int] = deque()
        self.active: list[int] = []  # admission order
        self.prefilling: list[int] = []  # admission order
        self.decoding: dict[int, None] = {}
        self.base: dict[int, int] = {}
        self.base_arr: np.ndarray | None = None
        self.fin: dict[int, int] = {}
        self.heap: list[tuple[int, int]] = []
        self.S = 0  # Σ base over decoders: Σ contexts = S + n·G
        self.G = 0
        self.F = 0  # Σ fin over decoders
        self.spans = 0
        self.fresh: list[int] = []  # decoders with no decode span since they joined
        self.last_shared = 0.0  # end of the last decode span (multi-step: of the last batch)
        self.ms_left = 0  # multi-step: decode steps left in the current batch (multistep)
        self.ended: list[int] = []  # multi-step: sequences done inside the current batch
        self.swapped: set[int] = set()
        self.reserved = 0.0
        self.committed = 0.0
        self.commit = [0.0] * n
        self.itl_v: list[float] = []
        self.itl_w: list[float] = []
        self.na = 0
        self.now = 0.0
        self.acc = dict.fromkeys(("prefill", "preempt", "wait"), 0.0)  # (also written by mixins)
        # busy time and ∫ active, decoding sequences and KV blocks dt (advance and run alone)
        self.busy_s = self.act_int = self.dec_int = self.kv_int = 0.0
        self.preemptions = self.recomputed = 0
        self.swapped_bytes = self.peak_blocks = 0.0
        self.simple_kv = steps.kv_groups == ((1.0, None),)
        self.capped = any(cap is not None for _, cap in getattr(steps, "groups", []))
        self._track = self.capped or not self.simple_kv  # the decoders' buffer (Decoders)

    # ---- time ------------------------------------------------------------------------------
    def advance(self, dt: float, n_dec: int, kv_blocks: float) -> None:
        end = self.now + dt
        acc = self.acc
        self.busy_s += dt
        self.act_int += len(self.active) * dt
        self.dec_int += n_dec * dt
        self.kv_int += kv_blocks * dt
        wait = len(self.waiting) * dt
        na = self.na
        if na < self.n_in and self.arr[na] <= end:  # arrivals during the span queue for the rest
            self.arrive(na, end, wait)
        else:
            acc["wait"] += wait
        if self.cache is not None:
            self.land(end)
            self.cache.tick(dt)
        self.now = end

    def finish(self, r: int) -> None:
        now = self.now
        self.finish_s[r] = now
        wait = self.finish_wait[r] = self.api.wait_s(now) if self.api.queues else 0.0
        if self.stop is not None:
            self.watch_finish(r, now, wait)
        self.active.remove(r)
        self.committed -= self.commit[r]
        self.commit[r] = 0.0
        if self.cache is not None:  # its blocks stay cached; the next turn follows
            self.reserved += self.cache.release(
                r, self.prompts[r] + self.outputs[r] - 1, True, True
            )
            i = self.succ[r]
            if i >= 0:
                sent, arr = self.api.resend(now, wait)
                think = self.cache.info.think_at(i)
                self.sent[i], self.arr[i] = sent + think, arr + think
                heappush(self.later, (self.arr[i], i))
                return
        if self.next_release < self.n_in and now < self.release_until_s:
            # the client sees the end and sends the next
            i = self.next_release
            self.sent[i], self.arr[i] = self.api.resend(now, wait)
            self.next_release = i + 1

    def swap_stall(self, r: int) -> None:
        moved = float(self.prompts[r] + self.gen[r]) * self.steps.kv_bytes_per_token
        self.swapped_bytes += moved
        bw = self.rules.swap_bandwidth_bytes_per_s
        t_sw = moved / bw if bw else 0.0
        self.acc["preempt"] += t_sw
        self.advance(t_sw, 0, self.reserved)

    def complete_prefill(self, done: list[int]) -> None:
        """Prompts whose prefill (first or recompute) ended now: each samples a token."""
        now, gen, outputs, last_tok = self.now, self.gen, self.outputs, self.last_tok
        res_blocks, wait_s, stop, join = self.res_blocks, self.api.wait_s, self.stop, self.join
        pf_left, recompute, prefilling = self.pf_left, self.recompute_pass, self.prefilling
        queues, watch = self.api.queues, stop is not None and stop.ttft_s is not None
        for r in done:
            g = gen[r]
            if g == 0:
                self.first_token_s[r] = now
                self.first_wait[r] = wait = wait_s(now) if queues else 0.0
                if watch:  # the SLO search: stop once its verdict is known
                    self.watch_first(r, now, wait)
            else:  # a recompute samples the next token: one more gap
                self.itl_v.append(now - last_tok[r])
                self.itl_w.append(1.0)
            gen[r] = g + 1
            last_tok[r] = now
            pf_left[r] = 0
            recompute[r] = False
            self.reserved -= res_blocks[r]
            res_blocks[r] = 0.0
            prefilling.remove(r)
            if g + 1 >= outputs[r]:
                self.finish(r)
            else:
                join(r)

    def end_batch(self) -> None:
        """A multi-step batch ends (roofline.serving.sim.multistep): its tokens reach the client
        together, one inter-token gap per sequence since its last bunch (or its first token), and
        the sequences that ended inside it finish now; streamed step by step (rules.stream_steps)
        they have reached it already, and the scheduler runs next."""
        if self.rules.stream_steps:
            self.ms_left = 0
            return
        now, fresh, last_tok = self.now, self.fresh, self.last_tok
        for r in fresh + self.ended:
            self.itl_v.append(now - last_tok[r])
            self.itl_w.append(1.0)
        rest = len(self.decoding) - len(fresh)
        if rest > 0 and self.spans:
            self.itl_v.append(now - self.last_shared)
            self.itl_w.append(float(rest))
        for r in self.ended:
            last_tok[r] = now
            self.finish(r)
        self.ended, self.fresh, self.last_shared, self.ms_left = [], [], now, 0

    # ---- the loop --------------------------------------------------------------------------
    def run(self, release_until_s: float) -> RunRecord:
        self.release_until_s = release_until_s
        rules, steps, n, arr = self.rules, self.steps, self.n_in, self.arr
        blk, cap_tokens, budget = rules.block_tokens, rules.max_batched_tokens, rules.budget_blocks
        max_seqs, chunked, capped = rules.max_seqs, rules.chunked_prefill, self.capped
        acc, api, span_s = self.acc, self.api, steps.span_s
        waiting, active, prefilling = self.waiting, self.active, self.prefilling
        decoding, heap, fin = self.decoding, self.heap, self.fin
        pf_left, pf_total, recompute = self.pf_left, self.pf_total, self.recompute_pass
        pf_skip, cache, later, last_tok = self.pf_skip, self.cache, self.later, self.last_tok
        itl_v, itl_w = self.itl_v.append, self.itl_w.append
        streams, stream = api.token_s > 0, api.stream
        admit, arrive, complete_prefill = self.admit, self.arrive, self.complete_prefill
        leave, finish, inf, ceil = self.leave, self.finish, math.inf, math.ceil
        msteps = rules.scheduler_steps
        bunched = msteps > 1 and not rules.stream_steps  # tokens reach the client at batch ends
        # a span of decodes alone, inline (StepModel.span_s's sum with pf None, no PP, one
        # unwindowed layer group)
        groups: Any = getattr(steps, "groups", None)
        plain = steps.pp == 1 and groups is not None and len(groups) == 1 and groups[0][1] is None
        plain = plain and getattr(steps, "dense_cache", None) is None  # whole-cache decode
        base = steps.base_s.tolist() if plain else []
        kk = (np.asarray(groups[0][0], dtype=float) * np.ones(len(base))).tolist() if plain else []

        def decode_only_s(n_dec: int, k: int, total: float) -> float:
            slope = kk[n_dec - 1]  # the attention slope at this batch (StepModel.groups)
            return base[n_dec - 1] * k + slope * k * (total + n_dec * ((k - 1) / 2.0 - 1.0))

        decode_s = 0.0  # (run alone adds to it)
        while True:
            na = self.na
            if na < n and arr[na] <= self.now:
                j = bisect_right(arr, self.now, na, n)
                waiting.extend(range(na, j))
                self.na = na = j
            if later and later[0][0] <= self.now:
                self.land(self.now)
            if self.ms_left and not decoding:  # a multi-step batch left with no decoder
                self.end_batch()
            if not active and not waiting:
                t_next = self.next_arrival()
                if not math.isfinite(t_next):
                    break
                self.now = t_next  # idle until the next arrival
                continue
            if waiting and len(active) < max_seqs and not self.ms_left:  # multi-step: at the end
                if not active and cache is not None and cache.pinned_conv:
                    self.reserved += cache.unpin_all()  # pins yield rather than stall
                admit()
                if cache is not None and cache.load_s:  # KV loaded from a lower tier
                    t_load, cache.load_s = cache.load_s, 0.0
                    acc["prefill"] += t_load
                    self.advance(t_load, 0, self.reserved)
            n_dec = len(decoding)
            G = self.G
            total = float(self.S + n_dec * G)
            if prefilling and not chunked:
                pfr = list(prefilling)
                self.prefill_only(pfr, [pf_left[r] for r in pfr], n_dec)
                continue
            # ---- a span of decode steps (with prefill chunks when chunked) ----
            if n_dec:  # the fewest steps to a decoder's last token (kmin)
                top = heap[0]
                while fin.get(top[1]) != top[0]:
                    heappop(heap)  # a sequence that left (preempted) before its last step
                    top = heap[0]
                kmin = top[0] - G
            else:
                kmin = 1 << 40
            k = kmin
            if msteps > 1 and n_dec:  # a multi-step batch runs its N steps, then schedules
                self.ms_left = self.ms_left or msteps
                k = min(k, self.ms_left)
            pf = None
            if prefilling:
                room = cap_tokens - n_dec  # type: ignore[operator]  # chunked: a token budget
                k = min(k, -(-pf_left[prefilling[0]] // room))
                pfr, lens = chunk_head(prefilling, pf_left, k * room)  # those the span reaches
                done = [pf_skip[r] + pf_total[r] - x for r, x in zip(pfr, lens, strict=True)]
                pf = (room, lens, done)
            kv_room = budget - self.reserved
            near = n_dec and (total + n_dec * (k + blk)) / blk > kv_room
            ctx = self.ctx() if n_dec and capped else None  # windowed layers: the contexts
            if near and self.blocks_ahead(k) > kv_room:
                k = self.steps_within(k, kv_room)  # the most steps whose blocks still fit
            if k == 0:
                self.preempt()
                continue
            now0, reserved = self.now, self.reserved  # fixed until the span's end
            if plain and pf is None and n_dec:
                t = t_dec = decode_only_s(n_dec, k, total)
                processed = None
            else:
                t, t_dec, processed = span_s(n_dec, ctx, total, k, pf)
            na = self.na
            t_next = arr[na] if na < n else inf
            if later:
                t_next = min(t_next, later[0][0])
            if (
                not waiting and len(active) < max_seqs and t_next < inf and not self.ms_left
            ):  # an arrival can be admitted: stop at the first step boundary after it
                k_cut = ceil((t_next - now0) * k / t)
                k_cut = k_cut if k_cut > 1 else 1  # max(1, ·)
                if k_cut < k and plain and pf is None:
                    k = k_cut
                    t = t_dec = decode_only_s(n_dec, k, total)
                elif k_cut < k:
                    k = k_cut
                    t, t_dec, processed = span_s(n_dec, ctx, total, k, pf)
            acc["prefill"] += t - t_dec
            decode_s += t_dec
            if processed is not None:
                tokens = sum(processed)
                if tokens and self.preemptions:  # a recompute pass follows a preemption
                    re_tokens = sum(x for x, r in zip(processed, pfr, strict=True) if recompute[r])
                    acc["preempt"] += (t - t_dec) * re_tokens / tokens
            if not n_dec:
                kv_end = reserved
            elif near or not self.simple_kv:
                kv_end = reserved + self.blocks_ahead(k)
            else:  # far from full: the paging waste taken as half a block per sequence
                kv_end = reserved + (total + n_dec * k) / blk + n_dec * (blk - 1) / (2 * blk)
            if kv_end > self.peak_blocks:
                self.peak_blocks = kv_end
            kv_mid = kv_end - n_dec * k / (2.0 * blk)
            kv_mid = kv_mid if kv_mid > reserved else reserved  # max(reserved, ·)
            if n_dec and not bunched:  # bunched: at the batch's end (end_batch)
                t_step = t / k
                first = now0 + t_step
                fresh = self.fresh
                for r in fresh:  # their last token came at their own time
                    itl_v(first - last_tok[r])
                    itl_w(1.0)
                if n_dec > len(fresh):  # the rest got theirs at the end of the last span
                    itl_v(first - self.last_shared)
                    itl_w(float(n_dec - len(fresh)))
                if k > 1:
                    itl_v(t_step)
                    itl_w(float(n_dec * (k - 1)))
            # self.advance(t, n_dec, kv_mid), inline
            now = now0 + t
            self.busy_s += t
            self.act_int += len(active) * t
            self.dec_int += n_dec * t
            self.kv_int += kv_mid * t
            wait = len(waiting) * t
            if na < n and arr[na] <= now:  # arrivals during the span queue for the rest of it
                arrive(na, now, wait)
            else:
                acc["wait"] += wait
            if cache is not None:
                self.land(now)
                cache.tick(t)
            self.now = now
            done = []  # the prompts whose prefill the span ends
            if processed is not None:
                for r, x in zip(pfr, processed, strict=True):
                    left = pf_left[r] - x
                    pf_left[r] = left
                    if left == 0:
                        done.append(r)
            if streams:  # each prompt done streams its first token
                stream(now, t, n_dec * k + len(done), n_dec + len(done))
            if n_dec:
                self.G = G = G + k
                self.spans += 1
                if not bunched:
                    self.last_shared = now
                    if self.fresh:
                        self.fresh = []
            if done:
                complete_prefill(done)
            if n_dec and k == kmin:  # some decoders produced their last token
                G = self.G
                while heap and heap[0][0] <= G:
                    f, r = heappop(heap)
                    if fin.get(r) == f:
                        leave(r)
                        if bunched:  # seen at the batch's end
                            self.ended.append(r)
                            continue
                        last_tok[r] = self.now
                        finish(r)
            if self.ms_left:
                self.ms_left -= k
                if not self.ms_left or not decoding:
                    self.end_batch()
            if cache is not None and cache.idle_blocks > budget - kv_end:
                self.evict()
        acc, a = self.acc, partial(np.array, dtype=float)  # (given, not inferred: 20% faster)
        times = (a(self.arr), a(self.admitted_s), a(self.first_token_s), a(self.finish_s))
        itl = (a(self.itl_v), a(self.itl_w))
        busy = (self.busy_s, acc["prefill"], decode_s, acc["preempt"])
        integrals = (self.act_int, self.dec_int, acc["wait"], self.kv_int)
        counts = (self.preemptions, self.recomputed, self.swapped_bytes)
        ends = (self.peak_blocks, budget, self.now, a(self.sent), self.api.latency_s)
        waits = (a(self.first_wait), a(self.finish_wait))
        sizes = (self.prompts_np, self.outputs_np)
        pfx = (None if cache is None else cache.stats(self.prompts_np),)
        fields = (*times, *sizes, *itl, *counts, *busy, *integrals, *ends, *waits, *pfx)
        return RunRecord(*fields)

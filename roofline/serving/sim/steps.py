"""Step times for the serving simulator, in closed form from the roofline core
(roofline.step.phases).

A forward step of a continuous-batching engine carries one token per decoding sequence plus the
prefill chunks scheduled with them. Its time is assembled from `phases.decode`/`phases.prefill`,
evaluated once per configuration on a grid and interpolated:

- base(B): the decode step of B sequences at an empty cache (weight read, matmuls, collectives,
  B LM-head rows, the per-step overhead).
- decode attention is affine in the KV length (roofline: its bytes and FLOPs are both linear in
  T), so a sequence attending T tokens adds k_g(B)·(min(T, w_g) − 1) per layer group g in a step
  of B sequences (k_g(B) from two decode points of B sequences, T = 1 and 1025, so the kernel's
  efficiency is the one at the step's batch; w_g the window or eviction cap).
- a prompt of S tokens alone: A(S) = its attention-core ops (causal, so the queries of a chunk
  o+1 … o+c attend the prefix before them: the chunk costs A(o+c) − A(o)), lin(S) = every other
  op. Prefill tokens added to a step of n tokens cost lin(n + p) − lin(n): the weight read is
  paid once per step, which is what chunked prefill buys.

A single prompt of S tokens alone in a step therefore costs exactly prefill(1, S), and a single
sequence decoding from KV length S+1 for O−1 steps costs exactly (O−1) × decode(1, S+1, O−1).

Pipeline parallelism (pp stages): the engine keeps micro-batches in flight from step to step
(vLLM's PP virtual engines, one scheduler per stage in V0, and V1's batch queue of pp batches:
vllm/v1/engine/core.py step_with_batch_queue), so the pipeline never drains between steps. A
step of b sequences is m = min(M, b) micro-batches (M = dep.pipeline_microbatches) and lasts, in
steady state, max(m, pp) stage times of one micro-batch (layout.pipeline_time_s over many
rounds), not GPipe's max(m, pp) + min(m, pp) − 1 of a flushed step: phases.decode's one-step
time is scaled by that ratio; a stage time is T(b/m)/pp for the time T of the whole model, so
the per-sequence attention and the prefill tokens of a step take max(m, pp)/(pp·m) of their
unpipelined time and lin((n + p)/m)·max(m, pp)/pp. With m = 1 (one sequence, or one prompt
alone) nothing changes; with pp = 1, m = 1 always.
Attention-DP (adp ranks, each scheduling its own sequences; roofline.serving.attention_dp):
the tables above are of one prompt on one rank, so a step's prefill tokens are charged as if on
one rank, the engines' default "serialised" scheduler. Under a balancing scheduler
(attention_dp_balance "balanced": the ranks' prompts held back until each rank has one, then
run in the same step) the prompts of a step spread over r = min(adp, prompts in the step)
ranks: the rank-local part of their non-attention time (local(S): every op but the routed
experts and their all-to-all, attention_dp.rank_local_s) and their attention cores are paid
once per rank, 1/r of the one-rank figure (tokens split evenly; compute-bound prefill is linear
in them), while the experts still see every token:

    t_prefill(balanced) = [lin(n + p) − lin(n)] − (1 − 1/r)·[local(n + p) − local(n)] + ΣA / r

never more than the serialised charge, equal to it for one prompt (r = 1).
Ideal (η = 1, no overhead) or expected step times, as the caller chooses.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.serving.sim.runmemo import kept_tables
from roofline.step.memory import MemoryPlan
from roofline.step.ops import (
    Deployment,
    attention_op_name,
    cached_tokens_cap,
    kv_bytes_per_token_layer,
)
from roofline.step.phases import decode, prefill

_ADP_SHARED_OPS, _ADP_SHARED_KINDS = ("moe.experts",), ("alltoall",)  # attention_dp's split


def _grid(top: int, points: int = 192) -> np.ndarray:
    """Integer grid 1 … top: every integer up to 64, then log-spaced."""
    top = max(int(top), 2)
    head = np.arange(1, min(top, 64) + 1, dtype=float)
    tail = np.geomspace(64, top, points).round() if top > 64 else np.zeros(0)
    return np.unique(np.concatenate([head, tail, [float(top)]]))


def kv_groups(model: ModelArch, dep: Deployment) -> tuple[tuple[float, int | None], ...]:
    """(share of the layers, cap on the tokens each holds) per KV cap, in the order the model's
    layer groups first name it: the layer groups of one cap (DeepSeek-R1's 3 dense and 58 MoE
    layers, both uncapped) hold alike, so Σ share × ceil(min(t, cap) / block) is taken as one
    group of their summed layers (61/61 = 1.0: whole blocks, the simulator's integer count)."""
    layers: dict[int | None, int] = {}
    for g in model.layer_groups:
        cap = cached_tokens_cap(g.window, dep)
        layers[cap] = layers.get(cap, 0) + g.count
    return tuple((count / model.num_hidden_layers, cap) for cap, count in layers.items())


class StepModel:
    """Decode and prefill step times for one replica, precomputed once per configuration (the
    last few configurations' tables kept: sim.runmemo.kept_tables).

    `max_batch`: the most sequences decoding at once; `max_len`: the longest prompt (+ generated
    tokens, for a recompute) a prefill may cover; `max_tokens`: the most tokens one step carries
    (defaults to max_batch + max_len)."""

    kv_groups: tuple[tuple[float, int | None], ...] = ((1.0, None),)  # (share of layers, cap)
    # tokens every sequence's decode attends whatever it holds: the whole preallocated cache of
    # an engine whose decode is a dense masked einsum over it (EngineProfile.decode_whole_cache;
    # JetStream-PyTorch before ragged attention, jetstream_pt/layers.py at 781ec9e); None: held
    dense_cache: int | None = None
    pp, microbatches = 1, 1  # pipeline stages and micro-batches in flight (no PP by default)
    balanced_ranks = 1  # attention-DP ranks a balancing scheduler spreads prompts over

    def __init__(self, model: ModelArch, hw: Accelerator, dep: Deployment, max_batch: int,
                 max_len: int, ideal: bool, eff: Efficiency | None = None,
                 max_tokens: int | None = None, engine: str | None = None) -> None:  # fmt: skip
        args = (model, hw, dep, max_batch, max_len, ideal, eff or hw.efficiency, max_tokens, engine)
        self.__dict__.update(kept_tables(StepModel, args))

    def _build(self, model: ModelArch, hw: Accelerator, dep: Deployment, max_batch: int,
               max_len: int, ideal: bool, eff: Efficiency, max_tokens: int | None,
               engine: str | None) -> None:  # fmt: skip
        """The tables of __init__, computed."""
        pick = (lambda r: r.t_ideal_s) if ideal else (lambda r: r.t_expected_s)
        batches = np.arange(1, max_batch + 1, dtype=float)
        self.pp, self.microbatches = dep.pp, dep.pipeline_microbatches
        flushed = np.asarray(
            pick(decode(model, hw, dep, batches, 1.0, eff=eff, engine=engine)), dtype=float
        )
        m = np.minimum(float(self.microbatches), batches)
        hi = np.maximum(m, self.pp)
        self.base_s = flushed * hi / (hi + np.minimum(m, self.pp) - 1.0)  # steady state
        top = max(max_tokens or 0, max_batch + max_len, max_len, 2)
        self.kv_groups = kv_groups(model, dep)
        # per layer group: (seconds per cached token per sequence at each batch 1 … max_batch,
        # cap). The slope is taken at the step's own batch: the expected attention kernel's
        # efficiency grows with the bytes it reads (a launch-bound small kernel at batch 1), so
        # a batch-1 slope charged to every sequence of a large batch overstates its attention
        # (on B200, Llama-3.1-70B TP4: 1.2e-7 s per token at batch 1, 1.1e-8 at batch 256).
        self.groups = []
        for g in model.layer_groups:
            cap = cached_tokens_cap(g.window, dep)
            far = 1025 if cap is None else min(cap, 1025)  # both points at or below the cap
            name = attention_op_name(g)
            times = [
                np.asarray(
                    next(
                        pick(r)
                        for r in decode(model, hw, dep, batches, t, eff=eff, engine=engine).ops
                        if r.op.name == name
                    ),
                    dtype=float,
                )
                * np.ones_like(batches)
                for t in (1.0, float(far))
            ]
            self.groups.append(((times[1] - times[0]) / (batches * max(far - 1, 1)), cap))
        # one prompt of S tokens: its attention-core ops are A(S), everything else lin(S)
        self.grid = _grid(top)
        self.token_grid = self.grid
        pre = prefill(model, hw, dep, 1, self.grid, eff=eff, engine=engine)
        self.prefill_s = np.asarray(pick(pre), dtype=float) * np.ones_like(self.grid)
        names = {attention_op_name(g) for g in model.layer_groups}
        attn = sum(
            (np.asarray(pick(r), dtype=float) for r in pre.ops if r.op.name in names),
            np.zeros_like(self.grid),
        )
        self.attn_cum_s = np.maximum.accumulate(attn)
        # the same ops' ideal time: their work, exact per prompt; one kernel call per layer
        # runs a step's prompts together (shared_attention_s)
        work = sum(
            (np.asarray(r.t_ideal_s, dtype=float) for r in pre.ops if r.op.name in names),
            np.zeros_like(self.grid),
        )
        self.attn_work_cum_s = np.maximum.accumulate(work)
        self.lin_s = self.prefill_s - attn
        # balanced attention-DP (module docstring): the rank-local part of lin, per token count
        self.balanced_ranks = 1
        if dep.attention_dp > 1 and dep.layout.attention_dp_balance == "balanced":
            self.balanced_ranks = int(dep.attention_dp)
            local = sum(
                (
                    np.asarray(pick(r), dtype=float)
                    for r in pre.ops
                    if r.op.name not in names
                    and r.op.name not in _ADP_SHARED_OPS
                    and r.op.kind not in _ADP_SHARED_KINDS
                ),
                np.zeros_like(self.grid),
            )
            self.local_s = np.minimum(local, self.lin_s)
        self._tables()
        self.kv_bytes_per_token = (
            kv_bytes_per_token_layer(model, dep.kv.bits, dep.tp) * model.num_hidden_layers / dep.pp
        )

    TABLE_MAX = 1 << 18

    def _tables(self) -> None:
        """Per-integer lookup tables of lin and A (np.interp on the grids, done once)."""
        top = int(min(self.token_grid[-1], self.TABLE_MAX))
        self.lin_table = np.interp(np.arange(top + 2), self.token_grid, self.lin_s).tolist()
        if self.balanced_ranks > 1:
            self.local_table = np.interp(np.arange(top + 2), self.token_grid, self.local_s).tolist()
        alen = int(min(self.grid[-1], self.TABLE_MAX))
        self.attn_list = np.interp(
            np.arange(alen + 1), self.grid, self.attn_cum_s, left=0.0
        ).tolist()
        work = getattr(self, "attn_work_cum_s", None)
        if work is not None:
            self.attn_work_list = np.interp(np.arange(alen + 1), self.grid, work, left=0.0).tolist()

    # ---- KV blocks ---------------------------------------------------------------------------
    def blocks(self, tokens: np.ndarray | int, block: int) -> np.ndarray:
        """KV blocks a sequence of `tokens` holds, in whole-model blocks (block tokens × every
        layer): sliding-window or evicted layers stop growing at their cap, block by block."""
        t = np.asarray(tokens, dtype=float)
        whole: dict[int | None, np.ndarray] = {}  # whole blocks per cap, shared by its groups
        total: Any = 0
        for share, cap in self.kv_groups:  # group by group, as sum() adds them
            c = whole.get(cap)
            if c is None:
                c = whole[cap] = np.ceil((t if cap is None else np.minimum(t, cap)) / block)
            total = total + share * c
        return cast(np.ndarray, total)  # kv_groups is never empty: an array

    def blocks_total(self, tokens: np.ndarray, block: int) -> float:
        """float(blocks(tokens, block).sum()) for whole token counts, bit for bit: a sequence's
        blocks depend only on its whole blocks c = ceil(t / block) (a group capped at w holds
        min(c, ceil(w / block)), ceil being monotone), so each c's figure is looked up in a
        table made by the same operations (blocks_by_whole), and the array summed as before."""
        whole = (tokens + (block - 1)) // block
        tabs = self.__dict__.setdefault("_whole_tabs", {})
        tab = tabs.get(block)
        top = int(whole.max()) if whole.size else 0
        if tab is None or top >= len(tab):
            n = max(top + 1, 2 * (0 if tab is None else len(tab)), 1024)
            tab = tabs[block] = self.blocks_by_whole(np.arange(n, dtype=float), block)
        return float(tab[whole].sum())

    def blocks_of_whole(self, whole: np.ndarray, block: int) -> float:
        """blocks_total of sequences holding `whole` whole blocks (an int array), bit for bit:
        the same table, the same sum; the table grown only when a lookup falls off its end."""
        tabs = self.__dict__.setdefault("_whole_tabs", {})
        tab = tabs.get(block)
        if tab is not None:
            try:
                return float(tab.take(whole).sum())
            except IndexError:  # past the table (whole is never negative)
                pass
        top = int(whole.max()) if whole.size else 0
        n = max(top + 1, 2 * (0 if tab is None else len(tab)), 1024)
        tab = tabs[block] = self.blocks_by_whole(np.arange(n, dtype=float), block)
        return float(tab[whole].sum())

    def blocks_by_whole(self, whole: np.ndarray, block: int) -> np.ndarray:
        """blocks() of sequences holding `whole` whole blocks (floats), group by group."""
        total: Any = 0
        for share, cap in self.kv_groups:
            total = total + share * (whole if cap is None else np.minimum(whole, -(-cap // block)))
        return cast(np.ndarray, total)

    def blocks_one(self, tokens: int, block: int) -> float:
        """blocks() of one sequence, in Python floats: the same IEEE operations in the same
        order (each group's share × its whole blocks, summed group by group), without numpy's
        per-call cost (the simulator's admission asks once per request it considers)."""
        t = float(tokens)
        total = 0.0
        for share, cap in self.kv_groups:
            total += share * math.ceil((t if cap is None else min(t, float(cap))) / block)
        return total

    # ---- step times --------------------------------------------------------------------------
    def pipe(self, seqs: int) -> tuple[int, float]:
        """(micro-batches, stage times per round ÷ pp) of a step of `seqs` sequences under PP in
        steady state (module docstring); (1, 1.0) without PP."""
        if self.pp == 1:
            return 1, 1.0
        m = max(min(self.microbatches, seqs), 1)
        return m, max(m, self.pp) / self.pp

    def lin(self, tokens: float) -> float:
        """Non-attention time of one step carrying `tokens` tokens."""
        tab = getattr(self, "lin_table", None)
        if tab is not None and tokens < len(tab) - 1:
            i = int(tokens)
            return tab[i] + (tokens - i) * (tab[i + 1] - tab[i])
        return float(np.interp(tokens, self.token_grid, self.lin_s))

    def local(self, tokens: float) -> float:
        """Rank-local part of lin (balanced attention-DP only; module docstring)."""
        tab = self.__dict__.get("local_table")
        if tab is not None and tokens < len(tab) - 1:
            i = int(tokens)
            return tab[i] + (tokens - i) * (tab[i + 1] - tab[i])
        return float(np.interp(tokens, self.token_grid, self.local_s))

    def balanced_saving_s(self, lo: float, hi: float, attn_s: float, prompts: int) -> float:
        """What a balancing attention-DP scheduler takes off a step whose prefill tokens raise
        lin's argument from `lo` to `hi`, with `attn_s` of prompt attention over `prompts`
        prompts: (1 − 1/r) of their rank-local and attention time, r = min(adp, prompts)
        (module docstring); 0 for the serialised scheduler or one prompt."""
        r = min(self.balanced_ranks, prompts)
        if r <= 1:
            return 0.0
        local = self.local(hi) - (self.local(lo) if lo > 0 else 0.0)
        return (1.0 - 1.0 / r) * (max(local, 0.0) + attn_s)

    def attention_decode_s(
        self, contexts, steps: int, total: float | None = None, b: int | None = None
    ) -> float:
        """Decode attention of `steps` steps, summed over sequences whose first step attends
        `contexts` tokens (the new one included); the mean length is contexts + (steps−1)/2.
        `total` = Σ contexts and `b` = their number when the caller has them (then `contexts`
        is needed only for windowed layers)."""
        b = len(contexts) if b is None else b
        t = 0.0
        if self.dense_cache is not None:  # every slot attends the whole cache: b·(cache − 1)
            contexts = np.full(b, self.dense_cache - (steps - 1) / 2.0)
            total = float(np.sum(contexts))
        for slope, cap in self.groups:
            k = float(slope[min(max(b, 1), len(slope)) - 1]) if np.ndim(slope) else slope
            if cap is None:
                s = float(np.sum(contexts)) if total is None else total
                t += k * steps * (s + b * ((steps - 1) / 2.0 - 1.0))
            else:
                mid = np.asarray(contexts) + (steps - 1) / 2.0
                t += k * steps * float(np.sum(np.minimum(mid, cap) - 1.0))
        return t

    def decode_span_s(self, contexts: np.ndarray, steps: int, total: float | None = None) -> float:
        """`steps` decode steps of len(contexts) sequences, the first step at KV `contexts`."""
        return self.decode_n_s(len(contexts), steps, total, contexts)

    def decode_n_s(self, b: int, steps: int, total: float | None, contexts=None) -> float:
        """`steps` decode steps of b sequences whose contexts sum to `total`."""
        m, f = self.pipe(b)
        return float(self.base_s[b - 1]) * steps + self.attention_decode_s(
            contexts, steps, total, b
        ) * (f / m)

    def shared_attention_s(self, done: list[int], upto: list[int], parts: int) -> float | None:
        """Causal attention of a step's `parts` prompt parts (done+1 … upto, whole token counts
        on the tables) in one kernel call per layer, as the engines batch a step's prompts:
        vLLM V1's FlashAttention backend one flash_attn_varlen_func over the step's cu_seqlens
        (vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.forward), SGLang's FlashInfer
        one BatchPrefillWithRaggedKVCacheWrapper.forward per layer, TensorRT-LLM one context FMHA
        over the packed tokens. Each part's work is its own (the ideal's exact causal time, Σ over
        parts); the call runs it at the efficiency of one prompt of the same causal work
        (S_eff = √Σ(upto² − done²): the expected over the ideal time of A(S_eff)), so its fixed
        cost is paid once per layer, not once per prompt (16 µs a layer: 38 ShareGPT prompts of
        216 tokens in a step of Qwen3-235B at TP8 on H100, 57 ms charged one by one, 2.7 ms in one
        call). None: no tables, fewer than two parts (the per-prompt sums are exact then), or
        pipeline parallelism (each micro-batch is a call of its own)."""
        tab, work = getattr(self, "attn_list", None), getattr(self, "attn_work_list", None)
        if parts < 2 or self.pp > 1 or tab is None or work is None or max(upto) >= len(tab):
            return None
        ideal = sq = 0.0
        for d, u in zip(done, upto, strict=True):
            ideal += work[u] - work[d]
            sq += u * u - d * d
        s = min(round(sq**0.5), len(tab) - 1)
        return ideal * tab[s] / work[s] if work[s] > 0.0 else None

    def prefill_attention_s(self, done, upto) -> float:
        """Causal attention of prompt tokens done+1 … upto, summed over prompts (lists or
        arrays of whole token counts); two or more prompts in one kernel call per layer
        (shared_attention_s)."""
        tab = getattr(self, "attn_list", None)
        if tab is not None and isinstance(done, list) and (not upto or max(upto) < len(tab)):
            parts = sum(1 for d, u in zip(done, upto, strict=True) if u > d)
            shared = self.shared_attention_s(done, upto, parts)
            if shared is not None:
                return shared
            return sum(tab[u] - tab[d] for d, u in zip(done, upto, strict=True))
        g, a_cum = self.grid, self.attn_cum_s
        a = np.interp(upto, g, a_cum, left=0.0) - np.interp(done, g, a_cum, left=0.0)
        return float(np.sum(a))

    def prefill_step_s(
        self, lengths: np.ndarray | list[int], cached: list[int] | None = None
    ) -> float:
        """One prefill-only step of whole prompts of `lengths` tokens batched together (the
        engine's non-chunked prefill): lin(Σ L) + Σ A(L); a single prompt costs prefill(1, L).
        `cached`: tokens before each prompt's whose KV is cached (attended, not computed)."""
        if not isinstance(lengths, list):
            lengths = np.asarray(lengths).astype(int).tolist()
        m, f = self.pipe(len(lengths))
        done = cached or [0] * len(lengths)
        upto = [d + x for d, x in zip(done, lengths, strict=True)]
        attn = self.prefill_attention_s(done, upto)
        total = float(sum(lengths)) / m
        t = self.lin(total) + attn / m
        if self.balanced_ranks > 1:
            t -= self.balanced_saving_s(0.0, total, attn / m, len(lengths))
        return t * f

    def span_s(self, n: int, ctx, total: float, k: int, pf: tuple | None):
        """k steps for n sequences decoding (Σ contexts = total; `ctx` the contexts, needed only
        for windowed layers), with pf = (token room per step, tokens left, tokens done) of the
        prompts in prefill, first come first served (vLLM's chunked prefill: the decodes are
        scheduled first, prefill tokens fill the rest of the step's budget): the time, the
        decode part of it, and the prefill tokens each prompt gets. The simulator's inner loop:
        decode_n_s, lin and prefill_attention_s on their lookup tables (same sums)."""
        fast = self.__dict__.get("_fast")
        if fast is None:
            groups = getattr(self, "groups", [])
            one = len(groups) == 1 and groups[0][1] is None and np.ndim(groups[0][0]) == 1
            fast = self._fast = (
                self.base_s.tolist(),
                getattr(self, "lin_table", None),
                getattr(self, "attn_list", None),
                np.asarray(groups[0][0], dtype=float).tolist() if one else None,
            )
        base, lin_tab, attn_tab, slopes = fast
        if n:  # decode_n_s
            m, f = (1, 1.0) if self.pp == 1 else self.pipe(n)
            if slopes is not None and self.dense_cache is None:  # attention_decode_s, inline
                slope = slopes[min(n, len(slopes)) - 1]
                attn = 0.0 + slope * k * (total + n * ((k - 1) / 2.0 - 1.0))
            else:
                attn = self.attention_decode_s(ctx, k, total, n)
            t_dec = base[n - 1] * k + attn * (f / m)
        else:
            t_dec = 0.0
        if pf is None:
            return t_dec, t_dec, None
        room, lens, dones = pf
        budget = k * room
        if len(lens) == 1:  # one prompt in prefill (the common span): the loop below, unrolled
            take = lens[0] if lens[0] < budget else budget
            processed, budget = [take], budget - take
            top = dones[0] + take
            upto, busy = [top], 1 if take else 0
        else:
            processed, upto = [], []
            busy = top = 0
            for x, d in zip(lens, dones, strict=True):
                take = x if x < budget else budget
                processed.append(take)
                budget -= take
                u = d + take
                upto.append(u)
                if u > top:
                    top = u
                if take:
                    busy += 1
        tokens = k * room - budget
        m, f = (1, 1.0) if self.pp == 1 else self.pipe(n + busy)
        x = (n + tokens / k) / m
        if lin_tab is not None and x < len(lin_tab) - 1:
            i = int(x)
            lin_hi = lin_tab[i] + (x - i) * (lin_tab[i + 1] - lin_tab[i])
            if n:
                x = n / m
                i = int(x)
                lin_lo = lin_tab[i] + (x - i) * (lin_tab[i + 1] - lin_tab[i])
            else:
                lin_lo = 0.0
            t_pf = (lin_hi - lin_lo) * k * f
        else:
            t_pf = (self.lin((n + tokens / k) / m) - (self.lin(n / m) if n else 0.0)) * k * f
        shared = self.shared_attention_s(dones, upto, busy) if busy > 1 and k == 1 else None
        if shared is not None:
            a = shared
        elif len(upto) == 1 and attn_tab is not None and top < len(attn_tab):
            a = 0 + (attn_tab[top] - attn_tab[dones[0]])  # sum() of the one term, bit for bit
        elif attn_tab is not None and top < len(attn_tab):
            a = sum([attn_tab[u] - attn_tab[d] for d, u in zip(dones, upto, strict=True)])
        else:
            a = self.prefill_attention_s(dones, upto)
        t_pf += a * f / m
        if self.balanced_ranks > 1 and busy > 1:
            lo = n / m
            t_pf -= self.balanced_saving_s(lo, lo + tokens / k / m, a / m / k, busy) * k * f
        return t_dec + t_pf, t_dec, processed

    def mixed_span_s(
        self, contexts: np.ndarray, steps: int, chunk_done: np.ndarray, chunk_upto: np.ndarray
    ) -> float:
        """`steps` steps each carrying one decode token per sequence at `contexts` plus an even
        share of the prefill tokens chunk_done+1 … chunk_upto (chunked prefill)."""
        done = np.asarray(chunk_done).astype(int).tolist()
        upto = np.asarray(chunk_upto).astype(int).tolist()
        per_step = len(contexts) + (sum(upto) - sum(done)) / steps
        attn = self.prefill_attention_s(done, upto)
        t = self.lin(per_step) * steps + self.attention_decode_s(contexts, steps) + attn
        if self.balanced_ranks > 1:
            prompts = sum(1 for d, u in zip(done, upto, strict=True) if u > d)
            lo = float(len(contexts))
            t -= self.balanced_saving_s(lo, per_step, attn / steps, prompts) * steps
        return t


def kv_budget_blocks(plan: MemoryPlan, model: ModelArch, dep: Deployment, block: int) -> int:
    """The KV budget of one replica in whole-model blocks (`block` tokens in every layer), the
    unit StepModel.blocks counts in: one GPU's budget over a block's bytes on it (KV heads split
    over the attention TP group), times the attention-DP ranks, each holding the KV of its own
    sequences only (SGLang's DP attention, vLLM's DP+EP: one engine and KV pool per rank)."""
    per_block = (
        kv_bytes_per_token_layer(model, dep.kv.bits, dep.attention_tp) * model.num_hidden_layers
    )
    return int(plan.kv_budget_bytes // (per_block / dep.pp * block)) * dep.attention_dp

"""Prefix caching in the serving simulator: shared prompt prefixes and multi-turn conversations.

The engines' rule (vLLM automatic prefix caching, docs "Automatic Prefix Caching" and
vllm/v1/core/kv_cache_manager.py; SGLang RadixAttention, Zheng et al., "SGLang", NeurIPS'24):
KV is kept in blocks of `block_tokens` tokens (vLLM 16, SGLang page size 1: roofline.step.memory
ENGINES block_tokens) keyed by their whole prefix, so a request reuses the longest run of cached
full blocks its prompt starts with, but computes at least its last prompt token (the logits come
from it: a hit covers at most floor((L − 1) / block) blocks of an L-token prefill). Blocks in use
are pinned and counted once however many sequences share them; when the last sequence using a
block ends, the block stays cached in the free space (idle) and is evicted least recently freed
first when a new block is needed (vLLM's free-block queue: a request's blocks are freed tail
first, so a conversation's history goes before the system prompt it hangs from). A finished
sequence leaves the KV of its prompt and of its output but the last token (never fed back):
prompt + output − 1 tokens, in full blocks.

Requests (PrefixInfo, per request): a shared-prefix group (`--shared-prefix`: the first P tokens
of every prompt are one system prompt), and a conversation (`--turns N`): turn k's prompt is turn
k−1's prompt + output + the user's new tokens, sent `think_s` after turn k−1's last token
reached the client. A cached block is two-level here: the group's prefix blocks, then the
conversation's own (a recompute after preemption hits its own blocks the same way).

Simplifications: a prefix counts as cached from the admission of the first request that holds
it (its prefill under way), so at start-up a few requests hit a little early; the engine's
block size is roofline.step.memory ENGINES block_tokens (sourced there); sliding-window layers are
counted as full attention in the cache's blocks.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from roofline.domain.errors import InputError
from roofline.serving.sim.kvtiers import RETENTIONS, TierStore
from roofline.serving.sim.prefixreport import PrefixReport, PrefixStats, prefix_report

MAX_TURNS = 1000


@dataclass(frozen=True)
class PrefixConfig:
    """What the user asked for: `shared_tokens` (or `shared_fraction` of each prompt) of every
    prompt are a shared prefix, one of `prefixes` (each conversation draws one at random, seeded
    by `seed`: the system prompts of several applications); `turns` turns per conversation with
    `think_s` between them."""

    shared_tokens: int = 0
    shared_fraction: float = 0.0
    turns: int = 1
    think_s: float = 0.0
    prefixes: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        n, f = self.shared_tokens, self.shared_fraction
        if not 0 <= n <= 10_000_000:
            raise InputError(f"--shared-prefix must be from 0 to 10M tokens, got {n}")
        if not (math.isfinite(f) and 0 <= f < 1):
            raise InputError(f"--shared-prefix as a share of the prompt must be below 1, got {f}")
        if not 1 <= self.turns <= MAX_TURNS:
            raise InputError(f"--turns must be from 1 to {MAX_TURNS}, got {self.turns}")
        if not (math.isfinite(self.think_s) and 0 <= self.think_s <= 86_400):
            raise InputError(f"--think-time must be from 0 to 1 day, got {self.think_s}")
        if not 1 <= self.prefixes <= 100_000:
            raise InputError(f"--prefixes must be from 1 to 100000, got {self.prefixes}")
        if self.prefixes > 1 and not (n or f):
            raise InputError("--prefixes needs --shared-prefix (how long each prefix is)")

    def shared(self, prompts: np.ndarray) -> np.ndarray:
        """Tokens of each (first-turn) prompt in the shared prefix; at least one token of the
        prompt is the user's own."""
        p = np.asarray(prompts, dtype=np.int64)
        if self.shared_fraction > 0:
            s = np.floor(self.shared_fraction * p).astype(np.int64)
        else:
            s = np.full(p.shape, self.shared_tokens, dtype=np.int64)
        return np.minimum(s, p - 1)

    def text(self) -> str:
        share = (
            f"{self.shared_fraction:g} of each prompt"
            if self.shared_fraction
            else f"{self.shared_tokens:,} tokens"
        )
        out = f"shared prefix {share}" if self.shared_tokens or self.shared_fraction else ""
        if self.prefixes > 1:
            out += f", one of {self.prefixes} drawn per conversation"
        if self.turns > 1:
            turns = f"{self.turns} turns per conversation, think time {self.think_s:g} s"
            out = f"{out}; {turns}" if out else turns
        return out

    def build(
        self, prompts: np.ndarray, outputs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, PrefixInfo]:
        """Requests from drawn lengths: ceil(n / turns) conversations (the lengths are cycled to
        fill them); request k·C + c is turn k + 1 of conversation c, so the C first turns come
        first (they arrive as the workload says; the later turns are released by their
        predecessors). Turn 1's prompt is the drawn prompt (shared prefix included); a later
        turn's new tokens are the drawn prompt less its shared share (the system prompt is not
        sent again)."""
        t = self.turns
        conv_n = -(-len(prompts) // t)
        n = conv_n * t
        p = np.resize(np.asarray(prompts, dtype=np.int64), n)
        o = np.resize(np.asarray(outputs, dtype=np.int64), n)
        own = self.shared(p)
        shared = np.resize(own[:conv_n], n)  # every turn carries its conversation's prefix
        new = np.maximum(p - own, 1)
        full = p.copy()
        history = np.zeros(n, dtype=np.int64)
        for k in range(1, t):
            cur, prev = slice(k * conv_n, (k + 1) * conv_n), slice((k - 1) * conv_n, k * conv_n)
            history[cur] = full[prev] + o[prev]
            full[cur] = history[cur] + new[cur]
        succ = np.arange(n, dtype=np.int64) + conv_n
        succ[succ >= n] = -1
        conv = np.arange(n, dtype=np.int64) % conv_n
        pick = np.random.default_rng(self.seed).integers(0, self.prefixes, conv_n)
        group = np.where(shared > 0, pick[conv], -1).astype(np.int64)
        turn = np.arange(n, dtype=np.int64) // conv_n
        info = PrefixInfo(group, shared, conv, history, succ, self.think_s, conv_n, turn)
        return full, o, info


@dataclass(frozen=True)
class PrefixInfo:
    """Per request: shared-prefix group (−1: none) and the prompt tokens in it, conversation,
    tokens of history (the previous turn's prompt + output) its prompt starts with, the next
    turn (−1: none); `n_first` requests (the first turns) arrive as the workload says."""

    group: np.ndarray
    shared: np.ndarray
    conv: np.ndarray
    history: np.ndarray
    succ: np.ndarray
    think_s: float
    n_first: int
    turn: np.ndarray  # 0 for a conversation's first turn
    wait_s: np.ndarray | None = None  # per request, its own wait after its predecessor
    session: np.ndarray | None = None  # per request, what keeps it on one replica (None: conv)
    hashes: np.ndarray | None = None  # per request, its blocks' hash ids (sim.blockcache)
    hash_block_tokens: int = 512  # tokens per hashed block
    # per request, its class's retention between turns (an index of kvtiers.RETENTIONS; -1 or
    # None: the deployment's --retention)
    retention: np.ndarray | None = None

    def think_at(self, i: int) -> float:
        """Seconds request i is sent after its predecessor's last token reached the client."""
        return self.think_s if self.wait_s is None else float(self.wait_s[i])

    def take(self, sel: np.ndarray) -> PrefixInfo:
        """The requests `sel` (sorted indices, every turn of the conversations they hold)."""
        succ = self.succ[sel]
        local = np.where(succ >= 0, np.searchsorted(sel, np.maximum(succ, 0)), -1)
        return self.reorder(sel, self.conv[sel], local, int(np.sum(sel < self.n_first)))

    def reorder(
        self, idx: np.ndarray, conv: np.ndarray, succ: np.ndarray, n_first: int
    ) -> PrefixInfo:
        """The requests `idx` in that order: every per-request field taken at `idx`, with the
        conversations, successors (indices into `idx`) and first-turn count the caller derived."""

        def opt(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx]

        return PrefixInfo(
            self.group[idx],
            self.shared[idx],
            conv,
            self.history[idx],
            succ,
            self.think_s,
            n_first,
            self.turn[idx],
            opt(self.wait_s),
            opt(self.session),
            opt(self.hashes),
            self.hash_block_tokens,
            opt(self.retention),
        )

    def possible_hit_tokens(self, prompts: np.ndarray, block: int) -> np.ndarray:
        """Tokens each first prefill would find cached if nothing were ever evicted and every
        prefix had been seen: whole blocks of the longer of the shared prefix and the history
        (a history's last output token has no KV), at most floor((L − 1) / block) blocks."""
        kv = np.maximum(self.shared, np.maximum(self.history - 1, 0))
        cap = (np.asarray(prompts) - 1) // block
        return np.minimum(kv // block, cap) * block


def replica_selection(info: PrefixInfo, n: int, replicas: int, j: int) -> np.ndarray:
    """Requests of replica j: round robin over the requests, or over conversations when they have
    more than one turn (a conversation's turns go to the replica holding its history), or over
    sessions when given (a workload file's samples and agent sessions)."""
    if info.session is not None:
        return np.flatnonzero(info.session % replicas == j)
    if info.n_first == n:
        return np.arange(j, n, replicas)
    return np.flatnonzero(info.conv % replicas == j)


class PrefixCache:
    """The cache's state in one simulation. The scheduler counts every sequence's blocks in
    full (blocks(context)); `admit` and `release` return the change of a correction it adds to
    its KV in use: − the group blocks each active sequence counts + the group blocks pinned once.
    Idle blocks lie in the free space and are evicted (`fit`) when the KV in use needs it."""

    def __init__(
        self, info: PrefixInfo, block: int, store: TierStore | None = None, retention: str = "cache"
    ) -> None:
        """`store`: the tiers below HBM (roofline.serving.sim.kvtiers); `retention` what a
        finished turn with a next turn leaves (kvtiers: cache, pinned, offload, drop)."""
        self.info, self.blk = info, block
        self.store, self.retention = store, retention
        # the per-request fields read on every admission and release, as Python ints (reading
        # a numpy array one element at a time costs about 5 times more)
        self.group, self.shared = info.group.tolist(), info.shared.tolist()
        self.conv, self.succ = info.conv.tolist(), info.succ.tolist()
        self.kept = None if info.retention is None else info.retention.tolist()
        self.waits = None if info.wait_s is None else info.wait_s.tolist()
        self.tier_hits = [0] * (0 if store is None else len(store.levels))
        self.load_s = 0.0  # tier loads not yet charged to the engine's time (the scheduler's)
        self.load_total_s = 0.0
        self.pinned_conv: dict[int, int] = {}  # a session's blocks held between turns
        self.group_blocks: dict[int, int] = {}  # cached blocks of a group's prefix
        self.pins: dict[int, int] = {}  # active sequences using a group
        self.conv_total: dict[int, int] = {}  # cached blocks of a conversation, from token 0
        self.idle: OrderedDict[tuple[int, int], int] = OrderedDict()  # eviction order
        self.idle_blocks = 0
        self.pinned_blocks = 0
        self.seen: dict[tuple[int, int], int] = {}  # size when cached (the no-eviction hit)
        self.counted: dict[int, int] = {}  # group blocks an active sequence counts
        self.received = self.hits = self.possible = 0
        self.evicted = 0.0
        self.held = 0.0
        self.first_hit: dict[int, int] = {}

    def group_delta(self, r: int, prefill_tokens: int) -> int:
        """The change of the correction `admit` will return (nothing changes)."""
        g = self.group[r]
        if g < 0:
            return 0
        g_r = min(self.shared[r] // self.blk, (prefill_tokens - 1) // self.blk)
        cached = self.group_blocks.get(g, 0)
        before = cached if self.pins.get(g, 0) else 0
        return max(cached, g_r) - before - g_r

    def admit(self, r: int, prefill_tokens: int, count: bool = True) -> tuple[int, int]:
        """Sequence r starts a prefill pass of `prefill_tokens` tokens (prompt + generated), or
        comes back from a swap (`count` False): (tokens found cached, change of the
        correction)."""
        blk = self.blk
        cap = (prefill_tokens - 1) // blk
        g, c = self.group[r], self.conv[r]
        delta, hit_g, g_r, chain = 0, 0, 0, True
        possible = 0
        if g >= 0:
            g_r = min(self.shared[r] // blk, cap)
            cached = self.group_blocks.get(g, 0)
            hit_g = min(cached, g_r)
            possible = min(self.seen.get((0, g), 0), g_r)
            pinned_before = cached if self.pins.get(g, 0) else 0
            if not self.pins.get(g, 0) and (0, g) in self.idle:
                self.idle_blocks -= self.idle.pop((0, g))
            after = max(cached, g_r)
            self.group_blocks[g] = after
            self.pins[g] = self.pins.get(g, 0) + 1
            self.pinned_blocks += after - pinned_before
            self.counted[r] = g_r
            delta = after - pinned_before - g_r
            chain = hit_g == g_r
        hit = hit_g
        total = self.conv_total.pop(c, 0)
        held = self.pinned_conv.pop(c, 0)
        if held:  # pinned between turns: now the sequence counts them
            self.pinned_blocks -= held
            delta -= held
        if total:
            own = self.idle.pop((1, c), 0)
            self.idle_blocks -= own
            if chain:
                hit = max(hit, min(total, cap))
        if self.store is not None and chain:
            level, kept = self.store.take(c)
            extra = min(kept, cap) - hit
            if level >= 0 and extra > 0 and self.store.worth[level]:  # loaded back from a tier
                t = extra * self.store.load_s[level]
                self.load_s += t
                self.load_total_s += t
                if count:
                    self.tier_hits[level] += extra * blk
                hit += extra
        seen_c = min(self.seen.get((1, c), 0), cap)
        possible = max(possible, seen_c)
        if count:
            self.first_hit.setdefault(r, hit * blk)
            self.received += prefill_tokens
            self.hits += hit * blk
            self.possible += max(possible, hit) * blk
        return hit * blk, delta

    def release(self, r: int, kv_tokens: int, keep: bool = True, ended: bool = False) -> int:
        """Sequence r leaves (finished or preempted) holding the KV of `kv_tokens` tokens; its
        own full blocks stay cached when `keep` (not for a swap, whose KV leaves the device),
        as the retention policy says when it `ended` and a next turn follows. Returns the
        change of the correction."""
        blk = self.blk
        g, c = self.group[r], self.conv[r]
        g_r = self.counted.pop(r, 0)
        delta = g_r
        if keep:
            total = kv_tokens // blk
            own = max(total - g_r, 0)
            retain = "cache"
            if ended and self.succ[r] >= 0:  # a next turn follows: the class's or the policy
                code = -1 if self.kept is None else self.kept[r]
                retain = RETENTIONS[code] if code >= 0 else self.retention
            if retain == "pinned" and own:
                self.pinned_conv[c] = own
                self.pinned_blocks += own
                delta += own
                self.conv_total[c] = total
            elif retain == "offload" and self.store is not None:
                self.store.put(c, total)
            elif retain == "cache" or retain == "pinned":
                if own:
                    self.idle[(1, c)] = own
                    self.idle_blocks += own
                self.conv_total[c] = total
            self.seen[(1, c)] = max(self.seen.get((1, c), 0), total)
        if g >= 0:
            self.pins[g] -= 1
            self.seen[(0, g)] = max(self.seen.get((0, g), 0), self.group_blocks[g])
            if self.pins[g] == 0:
                b = self.group_blocks[g]
                self.pinned_blocks -= b
                delta -= b
                if b:
                    self.idle[(0, g)] = b
                    self.idle_blocks += b
        return delta

    def unpin_all(self) -> int:
        """Pinned sessions go back to the evictable cache, least recently pinned first (the
        engine has nothing running and a waiting request that needs their room: pins yield to
        memory pressure rather than stall the engine). Returns the change of the correction."""
        delta = 0
        for c, own in self.pinned_conv.items():
            self.idle[(1, c)] = own
            self.idle_blocks += own
            self.pinned_blocks -= own
            delta -= own
        self.pinned_conv.clear()
        return delta

    def fit(self, free_blocks: float) -> None:
        """Evict idle blocks, least recently freed first, until they fit in `free_blocks`."""
        over = self.idle_blocks - max(free_blocks, 0.0)
        while over > 0 and self.idle:
            key, b = next(iter(self.idle.items()))
            take = min(b, math.ceil(over))
            self.evicted += take
            self.idle_blocks -= take
            over -= take
            kind, k = key
            if take == b:
                del self.idle[key]
            else:
                self.idle[key] = b - take
            if kind == 0:
                self.group_blocks[k] -= take
            else:
                if self.store is not None:  # spilled to the first tier below HBM
                    self.store.put(k, self.conv_total[k])
                self.conv_total[k] -= take
                if take == b:
                    self.conv_total.pop(k, None)

    def tick(self, dt: float) -> None:
        self.held += (self.pinned_blocks + self.idle_blocks) * dt

    def stats(self, prompts: np.ndarray) -> PrefixStats:
        first = np.full(len(prompts), -1, dtype=np.int64)  # -1: never prefilled
        if self.first_hit:
            first[list(self.first_hit)] = list(self.first_hit.values())
        return PrefixStats(
            self.received,
            self.hits,
            self.possible,
            self.evicted,
            self.held,
            self.blk,
            first,
            np.asarray(prompts),
            self.info.turn,
            tuple(self.tier_hits),
            self.load_total_s,
        )


__all__ = ["PrefixCache", "PrefixConfig", "PrefixInfo", "PrefixReport", "PrefixStats",
           "prefix_report", "replica_selection"]  # fmt: skip

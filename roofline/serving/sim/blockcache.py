"""Block-level prefix hits from a trace's `hash_ids` (Mooncake's ids of 512-token prompt blocks).

Mooncake's traces list for each request the ids of its prompt's blocks of `block_tokens` = 512
tokens, a block's id standing for its whole prefix, so two requests share a block exactly when
they share the prompt up to its end (kvcache-ai/Mooncake, FAST'25 "Mooncake", traces/README:
"hash_ids ... block size 512").

The engine's rule is the prefix cache's (roofline.serving.sim.prefixcache: vLLM automatic prefix
caching, SGLang RadixAttention): a request reuses the longest run of cached blocks its prompt
starts with, at most floor((L − 1) / block_tokens) of them (its last prompt token is computed);
a block in use is pinned and counted once however many sequences hold it; a released block
stays cached, idle in the free space, evicted least recently freed first (a request's blocks
freed tail first, as vLLM's free-block queue does), to the tiers below HBM when given
(roofline.serving.sim.kvtiers), from where a later hit loads it back. Within one replica: the
cache is each replica's own.

A trace block of 512 tokens is 512 / engine-block engine blocks of KV (32 of vLLM's 16). The
output's KV is not in any later prompt's hash ids (Mooncake's requests carry no conversation
links) and is not cached here.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from roofline.domain.errors import InputError
from roofline.serving.sim.kvtiers import TierStore
from roofline.serving.sim.prefixcache import PrefixCache, PrefixInfo

TRACE_BLOCK_TOKENS = 512  # Mooncake traces' hash_ids block size (traces/README)


def hashed_info(hashes: list[np.ndarray], block_tokens: int = TRACE_BLOCK_TOKENS) -> PrefixInfo:
    """PrefixInfo for requests with `hashes` (ids of their prompt's blocks) and no turns."""
    n = len(hashes)
    zero = np.zeros(n, dtype=np.int64)
    arr = np.empty(n, dtype=object)
    for i, h in enumerate(hashes):
        arr[i] = np.asarray(h, dtype=np.int64)
    return PrefixInfo(
        np.full(n, -1, dtype=np.int64),
        zero,
        np.arange(n, dtype=np.int64),
        zero,
        np.full(n, -1, dtype=np.int64),
        0.0,
        n,
        zero,
        hashes=arr,
        hash_block_tokens=block_tokens,
    )


class BlockCache(PrefixCache):
    """The scheduler's cache for hashed blocks: PrefixCache's interface, every method its own.
    `admit` and `release` return the change of the scheduler's correction: a block held by
    k > 1 active sequences is counted k times by the scheduler and once on the device, so the
    correction is −Σ bpb·(k − 1)."""

    def __init__(
        self, info: PrefixInfo, block: int, store: TierStore | None = None, retention: str = "cache"
    ) -> None:  # no super().__init__: none of PrefixCache's state is used
        self.info, self.blk, self.store, self.retention = info, block, store, retention
        self.hash_tokens = info.hash_block_tokens
        self.bpb = max(self.hash_tokens // block, 1)  # engine blocks per trace block
        self.hashes: list[list[int]] = (
            [] if info.hashes is None else [h.tolist() for h in info.hashes]
        )
        self.ref: dict[int, int] = {}  # active sequences holding a block
        self.lru: OrderedDict[int, None] = OrderedDict()  # idle blocks, eviction order
        self.idle_blocks = 0
        self.seen_ids: set[int] = set()
        self.held_by: dict[int, int] = {}  # hashes a sequence pinned
        self.received = self.hits = self.possible = 0
        self.evicted = 0.0
        self.held = 0.0
        self.first_hit: dict[int, int] = {}
        self.tier_hits = [0] * (0 if store is None else len(store.levels))
        self.load_s = self.load_total_s = 0.0
        self.pinned_conv: dict[int, int] = {}  # nothing pinned between turns (no turns here)

    def _mine(self, r: int, prefill_tokens: int) -> tuple[list[int], int]:
        """r's hashes and how many a hit may cover (floor((L − 1) / block) engine blocks)."""
        cap = (prefill_tokens - 1) // self.blk * self.blk // self.hash_tokens
        return self.hashes[r], cap

    def group_delta(self, r: int, prefill_tokens: int) -> int:
        """The change of the correction `admit` will return (nothing changes)."""
        hs, _ = self._mine(r, prefill_tokens)
        return -self.bpb * sum(1 for h in hs if self.ref.get(h, 0) > 0)

    def admit(self, r: int, prefill_tokens: int, count: bool = True) -> tuple[int, int]:
        """Sequence r starts a prefill pass: (tokens found cached, change of the correction)."""
        hs, cap = self._mine(r, prefill_tokens)
        hit = possible = tier = 0
        chain = seen_chain = True
        for h in hs[:cap]:
            cached = self.ref.get(h, 0) > 0 or h in self.lru
            seen_chain = seen_chain and h in self.seen_ids
            possible += seen_chain
            if chain and cached:
                hit += 1
                continue
            if chain and self.store is not None:
                level, got = self.store.take(h)
                if level >= 0 and self.store.worth[level]:
                    t = got * self.store.load_s[level]
                    self.load_s += t
                    self.load_total_s += t
                    if count:
                        self.tier_hits[level] += self.hash_tokens
                    hit += 1
                    tier += 1
                    continue
            chain = False
        delta = 0
        for h in hs:
            k = self.ref.get(h, 0)
            if k:
                delta -= self.bpb
            elif h in self.lru:
                del self.lru[h]
                self.idle_blocks -= self.bpb
            self.ref[h] = k + 1
            self.seen_ids.add(h)
        self.held_by[r] = len(hs)
        if count:
            self.first_hit.setdefault(r, hit * self.hash_tokens)
            self.received += prefill_tokens
            self.hits += hit * self.hash_tokens
            self.possible += max(possible, hit) * self.hash_tokens
        return hit * self.hash_tokens, delta

    def release(self, r: int, kv_tokens: int, keep: bool = True, ended: bool = False) -> int:
        """Sequence r leaves; its blocks stay cached when `keep` (tail first in the eviction
        order). Returns the change of the correction."""
        hs = self.hashes[r][: self.held_by.pop(r, 0)]
        delta = 0
        for h in reversed(hs):
            k = self.ref.get(h, 0)
            if k > 1:
                delta += self.bpb
                self.ref[h] = k - 1
                continue
            self.ref.pop(h, None)
            if keep and h not in self.lru:
                self.lru[h] = None
                self.idle_blocks += self.bpb
        return delta

    def fit(self, free_blocks: float) -> None:
        """Evict idle blocks, least recently freed first, until they fit in `free_blocks`."""
        over = self.idle_blocks - max(free_blocks, 0.0)
        lru, bpb, store = self.lru, self.bpb, self.store
        if over <= 0 or not lru:
            return
        # the blocks of bpb each that bring `over` to 0 or below, one at a time: the k with
        # over − (k−1)·bpb > 0 ≥ over − k·bpb (exact: whole-block counts far below 2**52)
        k = max(math.ceil(over / bpb), 1)
        while k > 1 and over - (k - 1) * bpb <= 0:
            k -= 1
        while over - k * bpb > 0:
            k += 1
        k = min(k, len(lru))
        self.idle_blocks -= bpb * k
        self.evicted += bpb * k  # (whole numbers: the same float as k additions)
        if store is None:
            for _ in range(k):
                lru.popitem(last=False)
            return
        for _ in range(k):
            store.put(lru.popitem(last=False)[0], bpb)

    def tick(self, dt: float) -> None:
        pinned = self.bpb * len(self.ref)
        self.held += (pinned + self.idle_blocks) * dt


def mooncake_prefix(text: str, t: np.ndarray, where: str = "the log") -> PrefixInfo | None:
    """The hash ids of a Mooncake JSONL log (`text`, one record a line; `t` the records' times in
    file order) as PrefixInfo in arrival order (the stable sort of `t`, as replayed sorts the
    requests); None when a record has no hash_ids list."""
    import json

    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for n, row in enumerate(rows, 1):  # given, they must be block ids: never dropped silently
        h = row.get("hash_ids")
        if h is not None and not (
            isinstance(h, list) and all(type(x) is int and 0 <= x < 2**63 for x in h)
        ):
            raise InputError(
                f"{where} record {n}: hash_ids must be a list of block ids (whole numbers)"
            )
    out = []
    for i in np.argsort(t, kind="stable"):
        h = rows[int(i)].get("hash_ids")
        if h is None:
            return None
        out.append(np.asarray(h, dtype=np.int64))
    return hashed_info(out)

"""The prefix cache's figures over a run (roofline.serving.sim.prefixcache), all replicas: hit
rate = prefill tokens found cached / received (vLLM's prefix cache hit rate metric,
vllm:prefix_cache_hits / vllm:prefix_cache_queries, counts tokens the same way), with the share
found in each tier below HBM (roofline.serving.sim.kvtiers) beside it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PrefixStats:
    """What the cache did in one simulation (tokens over every prefill pass)."""

    received_tokens: int  # prompt tokens of the prefill passes (a recompute's included)
    hit_tokens: int  # of them found cached
    possible_tokens: int  # found cached had nothing been evicted
    evicted_blocks: float
    held_block_integral: float  # ∫ blocks the cache holds (pinned shared + idle) dt
    block_tokens: int
    first_hit: np.ndarray  # tokens each request's first prefill found cached (-1: none ran)
    prompts: np.ndarray
    turn: np.ndarray
    tier_hit_tokens: tuple[int, ...] = ()  # of hit_tokens, loaded from each tier below HBM
    tier_load_s: float = 0.0  # the engine's time stalled loading them


@dataclass(frozen=True)
class PrefixReport:
    """The cache over a run, all replicas: hit rate = prefill tokens found cached / received."""

    hit_rate: float
    possible_hit_rate: float  # had nothing been evicted (prefixes seen before)
    prefill_tokens_received: int
    prefill_tokens_computed: int
    evicted_blocks: float
    cache_kv_blocks: float  # time-averaged blocks held by the cache, per replica
    block_tokens: int
    cached_share_by_turn: tuple[float, ...]  # mean share of a turn's prompt found cached
    tier_hit_rates: tuple[float, ...] = ()  # of the received tokens, found in each lower tier
    tier_load_s: float = 0.0  # engine time stalled loading them, all replicas

    @property
    def hbm_hit_rate(self) -> float:
        return self.hit_rate - sum(self.tier_hit_rates)


def prefix_report(stats: list[PrefixStats], spans_s: list[float]) -> PrefixReport | None:
    if not stats:
        return None
    rec = sum(s.received_tokens for s in stats)
    hit = sum(s.hit_tokens for s in stats)
    pos = sum(s.possible_tokens for s in stats)
    held = sum(s.held_block_integral / max(t, 1e-30) for s, t in zip(stats, spans_s, strict=True))
    ran = np.concatenate([s.first_hit >= 0 for s in stats])
    share = np.concatenate([s.first_hit / s.prompts for s in stats])[ran]
    turn = np.concatenate([s.turn for s in stats])[ran]
    top = int(turn.max()) + 1 if turn.size else 0
    by_turn = tuple(
        float(share[turn == k].mean()) if np.any(turn == k) else 0.0 for k in range(top)
    )
    return PrefixReport(
        hit / rec if rec else 0.0,
        pos / rec if rec else 0.0,
        rec,
        rec - hit,
        sum(s.evicted_blocks for s in stats),
        held / len(stats),
        stats[0].block_tokens,
        by_turn,
        _tier_rates(stats, rec),
        sum(s.tier_load_s for s in stats),
    )


def _tier_rates(stats: list[PrefixStats], received: int) -> tuple[float, ...]:
    levels = max((len(s.tier_hit_tokens) for s in stats), default=0)
    if not levels or not received:
        return ()
    return tuple(
        sum(s.tier_hit_tokens[k] for s in stats if len(s.tier_hit_tokens) > k) / received
        for k in range(levels)
    )

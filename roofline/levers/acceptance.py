"""Acceptance of speculative drafts: the tokens a round yields, for a chain or a tree.

Sources:
- Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding" (ICML
  2023) and Chen et al., "Accelerating LLM Decoding with Speculative Sampling" (2023): a drafter
  proposes γ tokens, the target verifies them in one pass of γ + 1 tokens per sequence; with an
  i.i.d. per-token acceptance α a round yields E = (1 − α^(γ+1)) / (1 − α) tokens, the bonus
  token included.
- Per-position acceptance (acceptance falls with depth: Spec-Bench, Xia et al. 2024; "Speculative
  Decoding: Performance or Illusion?", arXiv 2601.11580): with p_i the chance that draft token i is
  accepted given tokens 1..i−1 were, E = 1 + Σ_{i=1..γ} Π_{j≤i} p_j; a geometric decay sets
  p_i = α·d^(i−1), d = 1 gives the i.i.d. formula.
- τ, the mean accepted length per round that EAGLE and Medusa papers report (bonus token
  included), is E at the γ it was measured with; α follows by inverting E(α), which is increasing.

Tree verification (SpecInfer, Miao et al. 2024; EAGLE-2, Li et al. 2024): the verify pass carries
`tree_tokens` T tokens per sequence (the root, the last accepted token, included, as SGLang's
--speculative-num-draft-tokens counts them) instead of γ + 1; the draft steps then propose
min(topk, (T − 1) / γ) tokens per depth. What a tree of T tokens yields:
- Sequoia (Chen et al. 2024, §3.1 "positional acceptance"): the k-th candidate under an accepted
  node is accepted with a probability q_k that depends only on its rank; a tree's expected yield
  is 1 + Σ over its nodes of the product of q along the node's path. The best tree of n draft
  nodes holds the n largest path products (they decrease down a path, so the set is closed under
  ancestors): EAGLE-2 (§4.2, re-ranking) verifies exactly those, scoring nodes by the draft's
  confidence, which it shows is calibrated against acceptance (§3, Fig. 6). The yield grows
  without bound but only about logarithmically in T (Sequoia Theorem 3.6), while a chain's is
  capped at 1 / (1 − α).
- Ranks: q_1 = p_i (the chain's acceptance at depth i); lower ranks share the rest,
  q_k = c_k·Π_{j<k}(1 − c_j) with c_1 = p_i and c_k = s·p_i: once the top candidate is
  rejected each further one is accepted s times as often (s = 1 would be a geometric law over
  ranks, top-k coverage 1 − (1 − p)^k). s = SIBLING_SHARE = 0.35 reproduces SpecDecode-Bench's
  chain-to-tree pair (EAGLE, Qwen3-8B, GSM8K: τ 2.25 at k = 3 → 2.92 with 21 drafts) [uncertain:
  one pair, one drafter; a topk of 1 and T = γ + 1 give the chain's E exactly].
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.timing.roofline import FloatArray

TREE_TOPK = 8  # candidates per node: SGLang's EAGLE-3 launch example (eagle-topk 8); EAGLE-2: 10
# c_k = s·p for ranks k ≥ 2: s fitted to the one published chain/tree pair of the same drafter
# we found, SpecDecode-Bench (Liu et al. 2026, specdecode-bench.github.io, "Tree vs. Chain
# Verification", Fig. 2): EAGLE on Qwen3-8B/GSM8K in SGLang, accepted length 2.25 with a chain
# of k = 3 and 2.92 with a tree of 21 drafts (depth 3, branching 4); s = 1 would give 3.57
SIBLING_SHARE = 0.35


# ---- acceptance -------------------------------------------------------------------------------
def position_acceptance(
    positions: int,
    acceptance: float | Sequence[float],
    decay: float = 1.0,
) -> FloatArray:
    """p_1 .. p_n: the chance draft token i is accepted once 1..i−1 were. A number α gives
    p_i = α·d^(i−1); a list gives p_i directly (its last value repeats past its end)."""
    if isinstance(acceptance, (int, float, np.floating)):
        p = float(acceptance) * decay ** np.arange(positions, dtype=float)
    else:
        given = np.asarray(list(acceptance), dtype=float)
        if given.size == 0:
            raise InputError("per-position acceptance needs at least one value")
        p = np.concatenate([given, np.full(max(positions - given.size, 0), given[-1])])[:positions]
    if np.any(p < 0) or np.any(p > 1):
        raise InputError("acceptance rates must be in [0, 1]")
    return p


def expected_tokens_per_round(
    gamma: ArrayLike, acceptance: float | Sequence[float], decay: float = 1.0
) -> FloatArray:
    """E(γ) = 1 + Σ_{i=1..γ} Π_{j≤i} p_j: tokens a round yields, the bonus token included.
    With one α and no decay this is (1 − α^(γ+1)) / (1 − α) (γ + 1 at α = 1)."""
    g = np.asarray(gamma, dtype=float)
    n = int(np.max(g)) if g.size else 0
    p = position_acceptance(max(n, 1), acceptance, decay)
    cum = np.concatenate([[1.0], 1.0 + np.cumsum(np.cumprod(p))])
    return cum[np.rint(g).astype(int)]


def alpha_from_tau(
    tau: float,
    gamma: int,
    decay: float = 1.0,
    tree_tokens: int | None = None,
    topk: int = 8,
) -> float:
    """The α (with p_i = α·d^(i−1)) at which E equals the measured mean accepted length τ: the
    chain's E(γ), or with `tree_tokens` the best tree's of that size (tree_tokens_per_round).
    E is increasing in α, so bisection finds it; τ must lie in [1, E at α = 1]."""

    def e_of(a: float) -> float:
        if tree_tokens is None:
            return float(expected_tokens_per_round(gamma, a, decay))
        return float(tree_tokens_per_round(tree_tokens, gamma, a, decay, topk))

    top = e_of(1.0)
    if not 1.0 <= tau <= top + 1e-12:
        raise InputError(
            f"--tau {tau:g} is out of reach at γ = {gamma}: it must be from 1 to {top:.4g} "
            "(every draft accepted, plus the bonus token)"
        )
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if e_of(mid) < tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def rank_acceptance(p: float, topk: int, sibling: float = SIBLING_SHARE) -> FloatArray:
    """q_1 .. q_topk: the chance the target's token is the k-th candidate under an accepted node,
    q_k = c_k·Π_{j<k}(1 − c_j) with c_1 = p and c_k = s·p (module docstring)."""
    c = np.full(max(int(topk), 1), sibling * p)
    c[0] = p
    miss = np.concatenate([[1.0], np.cumprod(1.0 - c)[:-1]])
    return c * miss


@lru_cache(maxsize=4096)
def _tree_tokens(
    tree_tokens: int,
    depth: int,
    acceptance: tuple[float, ...],
    decay: float,
    topk: int,
    sibling: float = SIBLING_SHARE,
) -> float:
    """Best-first enumeration of the draft tree's nodes by path product (lazy k-best: a popped
    node offers its next sibling and its first child, both no likelier than itself)."""
    acc: float | list[float] = acceptance[0] if len(acceptance) == 1 else list(acceptance)
    p = position_acceptance(max(depth, 1), acc, decay)
    q = [rank_acceptance(float(pi), topk, sibling) for pi in p]
    total, heap = 1.0, [(-q[0][0], 0, 0, 1.0)]  # (−path product, depth index, rank, parent's)
    for _ in range(max(tree_tokens - 1, 0)):
        if not heap:
            break
        neg, i, k, parent = heapq.heappop(heap)
        total -= neg
        if k + 1 < len(q[i]) and q[i][k + 1] > 0:
            heapq.heappush(heap, (-parent * q[i][k + 1], i, k + 1, parent))
        if i + 1 < depth and q[i + 1][0] > 0:
            heapq.heappush(heap, (neg * q[i + 1][0], i + 1, 0, -neg))
    return total


def tree_tokens_per_round(
    tree_tokens: ArrayLike,
    depth: ArrayLike,
    acceptance: float | Sequence[float],
    decay: float = 1.0,
    topk: ArrayLike = TREE_TOPK,
    sibling: float = SIBLING_SHARE,
) -> FloatArray:
    """E of the best draft tree of T verified tokens (the root included), at most `depth` draft
    tokens deep and `topk` wide: 1 + the T − 1 largest path products (Sequoia §3.1; EAGLE-2 §4.2).
    topk = 1 and T = depth + 1 give the chain's E; E ≤ min(T, depth + 1)."""
    key = (
        (float(acceptance),)
        if isinstance(acceptance, (int, float, np.floating))
        else tuple(float(a) for a in acceptance)
    )
    t, d, k = np.broadcast_arrays(
        np.asarray(tree_tokens, dtype=float), np.asarray(depth, dtype=float), np.asarray(topk)
    )
    out = np.empty(t.shape)
    for idx in np.ndindex(t.shape):
        out[idx] = _tree_tokens(
            round(float(t[idx])),
            round(float(d[idx])),
            key,
            float(decay),
            int(k[idx]),
            float(sibling),
        )
    return out

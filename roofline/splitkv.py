"""How many pieces a flash-decoding kernel splits each KV stream into (split-KV), as the kernel
itself decides: pure functions, numpy broadcasting.

FlashAttention-2 (Dao-AILab/flash-attention, csrc/flash_attn/flash_api.cpp, `num_splits_heuristic`
and `set_params_splitkv`; the vLLM fork vllm_flash_attn keeps them): the grid has
u = batch · KV heads · ⌈g/64⌉ thread blocks (the query group of g heads is swapped into the
sequence dimension, 64-row m-blocks); with u ≥ 0.8 · slots (slots = 2 · SMs: "we're using 128
threads per block") it never splits; otherwise, among the split counts s ≤ min(128, slots, n)
(n = ⌈L / block_n⌉ KV blocks, block_n = 256 / 128 / 64 for head dim ≤ 64 / 128 / 256, so one
block holds block_n · d = 16384 K and V elements: 64 KiB in bf16) whose blocks-per-split
⌈n/s⌉ differs from ⌈n/(s−1)⌉, it takes the smallest whose wave efficiency
e(s) = x/⌈x⌉, x = u·s/slots, reaches 85% of the best one. It splits only on the grouped-query
decode path (mha_varlen_fwd: `seqlenq_ngroups_swapped`, query heads > KV heads).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

FA2_BLOCKS_PER_SM = 2.0  # flash_api.cpp: num_SMs * 2 "for 128 threads per block"
FA2_MAX_SPLITS = 128
FA2_BLOCK_BYTES = 16384.0 * 2.0 * 2.0  # block_n · d = 16384 elements of K and of V, bf16
FA2_M_BLOCK = 64.0  # rows (swapped query heads) per thread block


def fa2_num_splits(units: ArrayLike, slots: float, n_blocks: ArrayLike) -> np.ndarray:
    """FlashAttention-2's num_splits_heuristic(units, slots, n_blocks, 128), vectorised."""
    u = np.asarray(units, dtype=float)
    nb = np.maximum(np.asarray(n_blocks, dtype=float), 1.0)
    u, nb = np.broadcast_arrays(u, nb)
    shape = u.shape
    u, nb = u.ravel(), nb.ravel()
    cap = np.minimum(np.minimum(FA2_MAX_SPLITS, slots), nb)
    s = np.arange(1.0, FA2_MAX_SPLITS + 1.0)[:, None]
    prev = np.ceil(nb / np.maximum(s - 1.0, 1.0))
    eligible = ((s == 1.0) | (np.ceil(nb / s) != prev)) & (s <= cap)
    x = u * s / slots
    eff = np.where(eligible, x / np.maximum(np.ceil(x), 1.0), 0.0)
    good = eligible & (eff >= 0.85 * eff.max(axis=0))
    pick = np.argmax(good, axis=0) + 1.0  # the smallest split count that qualifies
    out = np.where(u >= 0.8 * slots, 1.0, pick)
    return out.reshape(shape)


def fa2_num_splits_one(units: float, slots: float, n_blocks: float) -> float:
    """fa2_num_splits for one point in Python floats (the same comparisons, bit for bit)."""
    if not (math.isfinite(units) and math.isfinite(n_blocks)):
        with np.errstate(all="ignore"):  # numpy's NaN and inf rules, as on the array path
            return float(fa2_num_splits(units, slots, n_blocks))
    nb = max(n_blocks, 1.0)
    if units >= 0.8 * slots:
        return 1.0
    cap = min(min(FA2_MAX_SPLITS, slots), nb)
    effs = []
    for i in range(1, FA2_MAX_SPLITS + 1):
        s = float(i)
        eligible = (s == 1.0 or math.ceil(nb / s) != math.ceil(nb / max(s - 1.0, 1.0))) and s <= cap
        x = units * s / slots
        effs.append(x / max(math.ceil(x), 1.0) if eligible else 0.0)
    best = max(effs)
    for i, e in enumerate(effs):
        if e > 0.0 and e >= 0.85 * best:
            return float(i + 1)
    return 1.0

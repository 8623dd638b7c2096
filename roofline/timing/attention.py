"""How long the fused (flash) attention kernels take for their FLOPs and bytes, decode and
prefill, and how many pieces a flash-decoding kernel splits each KV stream into (SPLIT-KV below).
Pure functions, SI units, numpy broadcasting, each with its one-point float twin (*_one, beside
it; see roofline/timing/roofline.py); the catalog supplies the parameters (hardware/kernels.yaml,
fitted by validation/calibrate_kernels.py).

Decode, per layer,
    t = t₀ + rows·t_row + S·t_S + max(F/(P·η_max), KV·(1 + S½/S)/(W·η_attn), w·(q/p)/B_cta)
with S the KV streams (sequences × KV heads), each a thread block's work (t_S: its fixed cost);
a stream of q bytes is split into p = ⌈q/q_split⌉ pieces when the kernel splits KV
(flash-decoding; only for query groups of at least g_split heads), the pieces run in
w = ⌈S·p/SMs⌉ waves and one block streams at most B_cta. A FlashAttention-2 kernel
(split_rule fa2) splits by FA2's own heuristic instead (SPLIT-KV below; FA2 splits only a
grouped query, g ≥ 2) and pays its grouped path's re-layout and split-KV combine kernels.
Prefill over a prompt of s tokens,
per layer, t = t₀ + F·(1 + S½/s)/(P·η_max·u) + w·t_w: R query heads (sequences × heads) cut into
⌈s/t_q⌉ query tiles each run in w = ⌈R·⌈s/t_q⌉/SMs⌉ waves, u = R·s/(w·SMs·t_q) the useful share.

SPLIT-KV, as the kernel itself decides. FlashAttention-2 (Dao-AILab/flash-attention,
csrc/flash_attn/flash_api.cpp, `num_splits_heuristic`
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
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.timing.roofline import FloatOrArray, ceil, maximum

FloatArray = np.ndarray
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


@dataclass(frozen=True)
class AttentionCurve:
    """Fused decode attention: bandwidth share on the KV read, a fixed latency, a cost per
    (query, head) row and per KV stream (sequence × KV head), the KV streams at which half the
    share is lost, and the split-KV / per-block bandwidth limit (block_bw = 0: none)."""

    eta_memory: float
    latency_s: float = 0.0
    per_row_s: float = 0.0
    streams_half: float = 0.0
    fit_median_error: float | None = None
    per_stream_s: float = 0.0
    split_bytes: float = 0.0  # KV bytes of one stream per split-KV piece (0: never splits)
    split_min_group: float = 1.0  # query heads per KV head from which the kernel splits KV
    block_bw_bytes_per_s: float = 0.0  # what one thread block streams (0: no limit)
    sm_count: float = 0.0
    # split_rule "fa2": the kernel is FlashAttention-2's split-KV kernel (SPLIT-KV above);
    # it splits by its own heuristic, runs 2 blocks per SM and, on the grouped-query path, pays
    # swap_s (the swapped query / output re-layout), copy_s (q copied: batch ≥ 2 and ≥ 2 KV
    # heads) and combine_s (the split-KV combine kernel, when it splits)
    split_rule: str = ""
    swap_s: float = 0.0
    copy_s: float = 0.0
    combine_s: float = 0.0
    # the share of the bf16 peak a compute-bound decode reaches (only MLA's absorbed decode gets
    # there: 128 query heads on one latent KV head): measured on the family's MLA decode kernel
    # (validation/kernel_attention.py fit_mla_compute_share); 0: the GEMM plateau
    eta_compute: float = 0.0
    # query heads of one latent stream a tile of the family's MLA decode kernel computes: fewer
    # are padded (mla_tile_padding); 0: none (validation/kernel_attention.py MLA_HEAD_TILE)
    head_tile: float = 0.0


def mla_tile_padding(group: ArrayLike, head_tile: float) -> FloatOrArray:
    """The factor on MLA's absorbed decode FLOPs for the query rows its kernel computes: a
    latent stream's g = q·H/TP query heads run in tiles of `head_tile` rows, ⌈g/tile⌉·tile/g
    (FlashMLA's wgmma tiles of BLOCK_SIZE_M = 64 rows on Hopper, csrc/kernels/traits.h at
    deepseek-ai/FlashMLA@00b3c0e8: 16 heads a rank at TP8 compute as 64); 1 with no tile or
    no group (g = 0: not MLA decode)."""
    if not head_tile:
        return 1.0
    if np.ndim(group) == 0:  # one op (the point path): no arrays
        g0 = float(group)  # type: ignore[arg-type]
        return math.ceil(g0 / head_tile) * head_tile / g0 if g0 > 0.0 else 1.0
    g = np.asarray(group, dtype=float)
    safe = np.maximum(g, 1e-9)
    pad = np.where(g > 0.0, np.ceil(safe / head_tile) * head_tile / safe, 1.0)
    return float(pad) if pad.ndim == 0 else pad


@dataclass(frozen=True)
class PrefillAttentionCurve:
    """Causal flash attention over s tokens: t = t₀ + F·(1 + S½/s)/(P·η_max·u) + w·t_w, with the
    query tiles of t_q rows in waves over the SMs (tile_q = 0: no wave term)."""

    eta_max: float
    s_half: float = 0.0
    latency_s: float = 0.0
    fit_median_error: float | None = None
    tile_q: float = 0.0
    wave_latency_s: float = 0.0
    sm_count: float = 0.0


def attention_decode_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: AttentionCurve,
    eta_compute: float,
    rows: ArrayLike,
    streams: ArrayLike,
    layers: float = 1.0,
    kv_heads: ArrayLike | None = None,
) -> FloatArray:
    """Fused decode attention (flash-decoding): per layer t₀ + rows·t_row + S·t_S, plus
    max(F/(P·η_c), Q·(1 + S½/S)/(W·η_attn), w·(q/p)/B_cta) — S KV streams (sequences × KV heads)
    of q = Q/(S·layers) bytes each, split into p = ⌈q/q_split⌉ pieces when the query group
    (rows/S) reaches g_split, run in w = ⌈S·p/SMs⌉ waves of blocks that stream at most B_cta
    each (Dao et al., "Flash-Decoding", 2023, split-KV).
    split_rule "fa2" (FlashAttention-2, flash_api.cpp mha_varlen_fwd): only a grouped query
    (g = rows/S ≥ 2) takes the swapped path, which splits by FA2's own heuristic
    (SPLIT-KV above) over 2·SMs block slots, with S·⌈g/64⌉ blocks; it adds t_swap, t_copy
    when q's (b, K, g, d) → (b·g, K, d) re-layout is not a view (batch ≥ 2 and K ≥ 2 KV heads
    per GPU; kv_heads None: assumed whenever S ≥ 2) and t_combine when it splits."""
    s = np.maximum(np.asarray(streams, dtype=float), 1e-9)
    r = np.asarray(rows, dtype=float)
    q_all = np.asarray(bytes_moved, dtype=float)
    t_math = np.asarray(flops, dtype=float) / (peak_flops_per_s * eta_compute)
    t_mem = q_all * (1.0 + curve.streams_half / s) / (bw_bytes_per_s * curve.eta_memory)
    fixed = curve.latency_s + curve.per_row_s * r + curve.per_stream_s * s
    if curve.split_rule == "fa2" and curve.sm_count > 0:
        q = q_all / (s * layers)
        group = r / s
        swapped = group >= 2.0
        units = s * np.ceil(group / FA2_M_BLOCK)
        slots = curve.sm_count * FA2_BLOCKS_PER_SM
        pieces = np.where(swapped, fa2_num_splits(units, slots, np.ceil(q / FA2_BLOCK_BYTES)), 1.0)
        waves = np.ceil(units * pieces / slots)
        if curve.block_bw_bytes_per_s > 0:
            t_blk = waves * q / pieces / curve.block_bw_bytes_per_s * layers
            t_mem = np.maximum(t_mem, t_blk)
        if kv_heads is None:
            copied = s >= 2.0
        else:
            k = np.asarray(kv_heads, dtype=float)
            copied = (s / np.maximum(k, 1e-9) >= 2.0) & (k >= 2.0)
        fixed = fixed + np.where(
            swapped,
            curve.swap_s + curve.copy_s * copied + curve.combine_s * (pieces > 1.0),
            0.0,
        )
    elif curve.block_bw_bytes_per_s > 0 and curve.sm_count > 0:
        q = q_all / (s * layers)
        split = curve.split_bytes > 0
        pieces = np.ceil(q / curve.split_bytes) if split else np.ones_like(q)
        pieces = np.where(r / s >= curve.split_min_group, np.maximum(pieces, 1.0), 1.0)
        waves = np.ceil(s * pieces / curve.sm_count)
        t_mem = np.maximum(t_mem, waves * q / pieces / curve.block_bw_bytes_per_s * layers)
    return fixed * layers + np.maximum(t_math, t_mem)


def attention_decode_time_one(
    flops: float,
    bytes_moved: float,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: AttentionCurve,
    eta_compute: float,
    rows: float,
    streams: float,
    layers: float = 1.0,
    kv_heads: float | None = None,
) -> float:
    """attention_decode_time_s for one point (formula: its docstring)."""
    s = maximum(streams, 1e-9)
    t_math = flops / (peak_flops_per_s * eta_compute)
    t_mem = bytes_moved * (1.0 + curve.streams_half / s) / (bw_bytes_per_s * curve.eta_memory)
    fixed = curve.latency_s + curve.per_row_s * rows + curve.per_stream_s * s
    if curve.split_rule == "fa2" and curve.sm_count > 0:
        q = bytes_moved / (s * layers)
        group = rows / s
        swapped = group >= 2.0
        units = s * ceil(group / FA2_M_BLOCK)
        slots = curve.sm_count * FA2_BLOCKS_PER_SM
        pieces = fa2_num_splits_one(units, slots, ceil(q / FA2_BLOCK_BYTES)) if swapped else 1.0
        waves = ceil(units * pieces / slots)
        if curve.block_bw_bytes_per_s > 0:
            t_mem = maximum(t_mem, waves * q / pieces / curve.block_bw_bytes_per_s * layers)
        if swapped:
            if kv_heads is None:  # no KV-head count: the copy is assumed whenever S ≥ 2
                copied = 1.0 if s >= 2.0 else 0.0
            else:
                copied = 1.0 if (s / maximum(kv_heads, 1e-9) >= 2.0 and kv_heads >= 2.0) else 0.0
            split = 1.0 if pieces > 1.0 else 0.0
            fixed = fixed + (curve.swap_s + curve.copy_s * copied + curve.combine_s * split)
    elif curve.block_bw_bytes_per_s > 0 and curve.sm_count > 0:
        q = bytes_moved / (s * layers)
        pieces = ceil(q / curve.split_bytes) if curve.split_bytes > 0 else 1.0
        pieces = maximum(pieces, 1.0) if rows / s >= curve.split_min_group else 1.0
        waves = ceil(s * pieces / curve.sm_count)
        t_mem = maximum(t_mem, waves * q / pieces / curve.block_bw_bytes_per_s * layers)
    return fixed * layers + maximum(t_math, t_mem)


def prefill_attention_time_s(
    flops: ArrayLike,
    bytes_moved: ArrayLike,
    prompt: ArrayLike,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: PrefillAttentionCurve,
    eta_memory: float,
    layers: float = 1.0,
    rows: ArrayLike = 0.0,
) -> FloatArray:
    """Causal flash attention over s tokens: (t₀ + w·t_w)·layers +
    max(F(1 + S½/s)/(P·η_max·u), Q/(W·η_m)): a short sequence gives each head few query tiles to
    keep the SMs busy (Dao, FlashAttention-2, 2023, §3.2: parallelism over the batch, the heads
    and the sequence length). With R = rows query heads (0: unknown, no wave term) cut into
    ⌈s/t_q⌉ tiles: w = ⌈R·⌈s/t_q⌉/SMs⌉ waves, u = R·s/(w·SMs·t_q)."""
    s = np.maximum(np.asarray(prompt, dtype=float), 1.0)
    t_math = (
        np.asarray(flops, dtype=float)
        * (1.0 + curve.s_half / s)
        / (peak_flops_per_s * curve.eta_max)
    )
    fixed: FloatOrArray = curve.latency_s * layers
    r = np.asarray(rows, dtype=float)
    if curve.tile_q > 0 and curve.sm_count > 0 and np.any(r > 0):
        tiles = np.ceil(s / curve.tile_q)
        units = np.maximum(r, 1.0) * tiles
        waves = np.ceil(units / curve.sm_count)
        u = units / (waves * curve.sm_count) * s / (tiles * curve.tile_q)
        known = r > 0
        t_math = np.where(known, t_math / u, t_math)
        fixed = fixed + np.where(known, waves * curve.wave_latency_s * layers, 0.0)
    t_mem = np.asarray(bytes_moved, dtype=float) / (bw_bytes_per_s * eta_memory)
    return fixed + np.maximum(t_math, t_mem)


def prefill_attention_time_one(
    flops: float,
    bytes_moved: float,
    prompt: float,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: PrefillAttentionCurve,
    eta_memory: float,
    layers: float = 1.0,
    rows: float = 0.0,
) -> float:
    """prefill_attention_time_s for one point (formula: its docstring)."""
    s = maximum(prompt, 1.0)
    t_math = flops * (1.0 + curve.s_half / s) / (peak_flops_per_s * curve.eta_max)
    fixed = curve.latency_s * layers
    if curve.tile_q > 0 and curve.sm_count > 0 and rows > 0:
        tiles = ceil(s / curve.tile_q)
        units = maximum(rows, 1.0) * tiles
        waves = ceil(units / curve.sm_count)
        u = units / (waves * curve.sm_count) * s / (tiles * curve.tile_q)
        t_math = t_math / u
        fixed = fixed + waves * curve.wave_latency_s * layers
    t_mem = bytes_moved / (bw_bytes_per_s * eta_memory)
    return fixed + maximum(t_math, t_mem)

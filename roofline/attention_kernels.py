"""Per-op efficiency of the fused (flash) attention kernels: how long decode and prefill
attention take for their FLOPs and bytes. Pure functions, SI units, numpy broadcasting; the
catalog supplies the parameters (hardware/kernels.yaml, fitted by validation/calibrate_kernels.py).
roofline/pointkernels.py holds one-point float twins of the time functions.

Decode, per layer,
    t = t₀ + rows·t_row + S·t_S + max(F/(P·η_max), KV·(1 + S½/S)/(W·η_attn), w·(q/p)/B_cta)
with S the KV streams (sequences × KV heads), each a thread block's work (t_S: its fixed cost);
a stream of q bytes is split into p = ⌈q/q_split⌉ pieces when the kernel splits KV
(flash-decoding; only for query groups of at least g_split heads), the pieces run in
w = ⌈S·p/SMs⌉ waves and one block streams at most B_cta. A FlashAttention-2 kernel
(split_rule fa2) splits by FA2's own heuristic instead (roofline/splitkv.py; FA2 splits only a
grouped query, g ≥ 2) and pays its grouped path's re-layout and split-KV combine kernels.
Prefill over a prompt of s tokens,
per layer, t = t₀ + F·(1 + S½/s)/(P·η_max·u) + w·t_w: R query heads (sequences × heads) cut into
⌈s/t_q⌉ query tiles each run in w = ⌈R·⌈s/t_q⌉/SMs⌉ waves, u = R·s/(w·SMs·t_q) the useful share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.splitkv import FA2_BLOCK_BYTES, FA2_BLOCKS_PER_SM, FA2_M_BLOCK, fa2_num_splits

FloatArray = np.ndarray


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
    # split_rule "fa2": the kernel is FlashAttention-2's split-KV kernel (roofline/splitkv.py);
    # it splits by its own heuristic, runs 2 blocks per SM and, on the grouped-query path, pays
    # swap_s (the swapped query / output re-layout), copy_s (q copied: batch ≥ 2 and ≥ 2 KV
    # heads) and combine_s (the split-KV combine kernel, when it splits)
    split_rule: str = ""
    swap_s: float = 0.0
    copy_s: float = 0.0
    combine_s: float = 0.0


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
    (roofline/splitkv.py) over 2·SMs block slots, with S·⌈g/64⌉ blocks; it adds t_swap, t_copy
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
    fixed = curve.latency_s * layers
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

"""One-point twins of the kernel-time functions, in Python floats: the GEMM's of efficiency.py,
the fused attention's of attention_kernels.py and the engine step's of hostcost.py.

For one point every op quantity is one number; numpy's per-call overhead (about a microsecond a
ufunc) then costs far more than the arithmetic. These functions take and return Python floats and
do the same IEEE operations in the same order as their array originals, with numpy's semantics
for the few non-arithmetic steps (np.maximum/np.minimum keep NaN, np.ceil/np.floor keep ±inf and
NaN), so every value is bit for bit the array function's on a 0-d array
(tests/test_point_path.py). A change to a formula in those modules must be made here too;
that test fails until it is.
"""

from __future__ import annotations

import math

from roofline.attention_kernels import AttentionCurve, PrefillAttentionCurve
from roofline.efficiency import MMA_ROWS, TILE_AREA_REF, GemmCurve
from roofline.hostcost import EngineProfile
from roofline.splitkv import FA2_BLOCK_BYTES, FA2_BLOCKS_PER_SM, FA2_M_BLOCK, fa2_num_splits_one
from roofline.tilerules import rule_tiles_one
from roofline.timing.roofline import ceil, floor, maximum, minimum


def tile_shape_one(m: float, n: float, curve: GemmCurve) -> tuple[float, float]:
    """efficiency.tile_shape for one GEMM."""
    if curve.tile_rule:
        return rule_tiles_one(curve.tile_rule, m, n)
    return curve.tile_m, curve.tile_n


def wave_quantisation_one(
    m: float, n: float, curve: GemmCurve, groups: float = 1.0
) -> tuple[float, float]:
    """efficiency.wave_quantisation for one GEMM (u, w); see its docstring for the formula."""
    sms = curve.sm_count
    if not curve.tiled or not (math.isfinite(m) and math.isfinite(n)):
        return 1.0, 0.0  # no tile, or an unknown shape
    tm, tn = tile_shape_one(m, n, curve)
    cols = ceil(n / tn)
    tiles = ceil(m / tm) * cols
    if not math.isfinite(groups):  # grouped: the tile padding only
        return m * (n / (tm * tn)) / tiles, 0.0
    tiles = tiles * groups
    if curve.split_k_max > 1:
        split = minimum(maximum(floor(sms / tiles), 1.0), curve.split_k_max)
        waves = ceil(tiles * split / sms)
        return m * (n * groups / (sms * tm * tn)) * split / waves, waves
    waves = ceil(tiles / sms)
    return m * (n * groups / (sms * tm * tn)) / waves, waves


def gemm_time_one(
    flops: float,
    bytes_moved: float,
    m: float,
    n: float,
    peak_flops_per_s: float,
    bw_bytes_per_s: float,
    curve: GemmCurve,
    kernels: float = 1.0,
    groups: float = 1.0,
) -> float:
    """efficiency.gemm_time_s for one GEMM; see its docstring for the formula."""
    mm, nn = maximum(m, 1e-9), maximum(n, 1e-9)
    shape = (1.0 + curve.m_half / (mm + MMA_ROWS)) * (1.0 + curve.n_half / nn)
    t_math = flops * shape / (peak_flops_per_s * curve.eta_max)
    if curve.m_large > 0:
        t_math = t_math / (curve.large_ratio if mm >= curve.m_large else 1.0)
    if curve.tiled:
        u, waves = wave_quantisation_one(mm, nn, curve, groups)
        t_wave = curve.wave_latency_s
        if curve.wave_area_s > 0:
            tm, tn = tile_shape_one(mm, nn, curve)
            t_wave = t_wave + curve.wave_area_s * (tm * tn / TILE_AREA_REF)
        t_math = t_math / u + waves * t_wave * kernels
    t_mem = bytes_moved / (bw_bytes_per_s * curve.eta_memory)
    t = curve.latency_s * kernels + maximum(t_math, t_mem)
    if curve.quant_bytes > 0:
        t = t + curve.quant_bytes * (flops / (2.0 * nn)) / (bw_bytes_per_s * curve.eta_memory)
    return t


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
    """attention_kernels.attention_decode_time_s for one point (formula: its docstring)."""
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
    """attention_kernels.prefill_attention_time_s for one point (formula: its docstring)."""
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


def step_time_one(t_gpu_s: float, layers: int, engine: EngineProfile | None, phase: str) -> float:
    """hostcost.step_time_s for one point; see its docstring for the formula."""
    if engine is None:
        return t_gpu_s
    n_k = engine.kernels_per_layer * layers
    graphs = engine.graphs_decode if phase == "decode" else engine.graphs_prefill
    launch = 0.0 if graphs else engine.launch_s
    return maximum(t_gpu_s + n_k * engine.gap_s, n_k * launch) + engine.cpu_step_s

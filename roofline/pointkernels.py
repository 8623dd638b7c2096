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

from roofline.attention_kernels import AttentionCurve, PrefillAttentionCurve
from roofline.hostcost import EngineProfile
from roofline.splitkv import FA2_BLOCK_BYTES, FA2_BLOCKS_PER_SM, FA2_M_BLOCK, fa2_num_splits_one
from roofline.timing.roofline import ceil, maximum


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

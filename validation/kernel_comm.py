"""The collective and MoE fits of validation/calibrate_kernels.py: NCCL and the engines' own
all-reduce / all-to-all per GPU count, the fused MoE layer (TensorRT-LLM) per dtype, and
DeepEP's dispatch / combine all-to-all (expert parallelism). The forms are those of
roofline/timing/collectives.py and roofline/timing/gemm.py moe_time_s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from roofline.timing.gemm import moe_tiles
from validation.kernel_data import MMA_ROWS, cite, data_path


def fit_allreduce(df, op: str = "all_reduce"):
    """Per GPU count: t = α + 2(n−1)/n · bytes / B_bus (NCCL all_reduce, fp16; or an engine's
    custom all-reduce in CUDA-graph mode, bf16). message_size counts 2-byte elements."""
    out = {}
    if "nccl_dtype" in df:
        d = df[(df.op_name == op) & (df.nccl_dtype == "half")]
    else:
        d = df[df.backend.str.contains("graph")] if "backend" in df else df
    for n, g in d.groupby("num_gpus"):
        size = g.message_size.to_numpy(float) * 2.0  # elements of half -> bytes
        t = g.latency.to_numpy(float) * 1e-3
        factor = (2.0 if op == "all_reduce" else 1.0) * (n - 1) / n  # all-to-all: (n−1)/n

        def resid(x, size=size, t=t, factor=factor):
            return np.log((np.exp(x[0]) + factor * size / np.exp(x[1])) / t)

        r = least_squares(resid, [np.log(1e-5), np.log(2e11)])
        err = np.abs(np.exp(resid(r.x)) - 1.0)
        out[int(n)] = (float(np.exp(r.x[0])), float(np.exp(r.x[1])), float(np.median(err)))
    return out


# ---- MoE layers and DeepEP all-to-all (expert parallelism) --------------------------------------
MOE_VERSION = "1.3.0rc20"  # TensorRT-LLM fused MoE (moe_perf.parquet)
A2A_VERSION = "1.3.0rc11"  # TensorRT-LLM DeepEP all-to-all (moe_a2a_perf.parquet)
MLA_VERSION = "1.3.0rc20"  # TensorRT-LLM MLA decode (generation_mla_perf.parquet)
MOE_CHIPS = {  # group -> chips whose moe tables it is fitted on (each against its own datasheet)
    "nvidia-hopper": [("h100_sxm", "nvidia-h100-sxm"), ("h200_sxm", "nvidia-h200-sxm")],
    "nvidia-blackwell": [("b200_sxm", "nvidia-b200-hgx")],
    "nvidia-ampere": [("a100_sxm", "nvidia-a100-80gb-sxm")],
}
# a chip whose TensorRT-LLM moe table is another release's, kernel's or routing's: (version,
# kernel_source, distribution). aiconfigurator-core 0.12.0 times TensorRT-LLM 1.0.0's
# moe_torch_flow on the A100 under power-law routing only (Zipf 1.01 and 1.2: the milder one),
# bf16 only, its moe_ep_size 1 rows (under skewed routing an EP row times its own rank's share)
# [uncertain: no balanced rows]
FAMILY_MOE_TABLE = {"a100_sxm": ("1.0.0", "moe_torch_flow", "power_law_1.01")}
# groups whose grouped GEMM walks the expert list (DeepGEMM's GroupedWithOffset scheduler on
# Hopper and Blackwell, fit_moe's t_g and t_wave); the A100's CUTLASS grouped GEMM is fitted
# without them
MOE_SCHEDULER_GROUPS = ("nvidia-hopper", "nvidia-blackwell")
# measured dtype -> (curve dtype, weight bytes per value): fp8 block-scaled (DeepSeek's 128×128
# blocks: one fp32 scale per 16,384 weights), cutlass on Hopper, DeepGEMM on Blackwell; MXFP4
# weight-only (W4A16: 32 FP4 values share an E8M0 scale, 4.25 bits; gpt-oss), which Hopper, with
# no FP4 tensor cores, dequantises to bf16 inside the grouped GEMM (TensorRT-LLM's
# moe_torch_flow kernel): its MMAs run at the bf16 peak (MOE_PEAK)
MOE_DTYPES = {
    "bfloat16": ("bf16", 2.0),
    "fp8_block": ("fp8", 1.0 + 4.0 / 128**2),
    "w4a16_mxfp4": ("mxfp4", 4.25 / 8.0),
}
MOE_PEAK = {"mxfp4": "bf16"}  # curve dtype -> the datasheet peak its MMAs run at
MOE_KERNEL = {
    "b200_sxm": {"fp8_block": "deepgemm"},
    "h100_sxm": {"w4a16_mxfp4": "moe_torch_flow"},
    "h200_sxm": {"w4a16_mxfp4": "moe_torch_flow"},
}
MIN_HIDDEN = 2048  # LLM-sized MoE layers


def moe_shapes(d, b_w: float):
    """(F, Q_w, Q_act, M, E_local, tiles) per rank of a measured MoE layer, built as
    roofline/step/ops.py builds the moe.experts op: T tokens routed top-k over E experts on ep
    ranks, R = T·k/ep rows over the experts touched, F = 6·d·f·R, Q_w = touched·3·d·f·b_w,
    Q_act = R·(2d + 3f)·2 (16-bit activations), f = width / moe_tp, E_local = E/ep, and the tiles
    of the touched experts (roofline/timing/gemm.py moe_tiles). The tables' routing is balanced:
    token i takes experts (i + j·⌈E/k⌉) mod E (collector/helper.py balanced_logits at
    ai-dynamo/aiconfigurator@095f58a5), so min(E, T·k) distinct experts, min(E, T·k)/ep on the
    measured rank (the runtime's random routing touches E·(1 − (1 − k/E)^T), ops.py)."""
    t, k, e = (d[c].to_numpy(float) for c in ("num_tokens", "topk", "num_experts"))
    ep, tp = d.moe_ep_size.to_numpy(float), d.moe_tp_size.to_numpy(float)
    h, f = d.hidden_size.to_numpy(float), d.inter_size.to_numpy(float) / tp
    rows = t * k / ep
    touched = np.maximum(np.minimum(e, t * k) / ep, 1.0)
    tiles = moe_tiles(touched, 2.0 * f, h)
    q_act = rows * (2 * h + 3 * f) * 2.0
    return 6 * h * f * rows, touched * 3 * h * f * b_w, q_act, rows / touched, e / ep, tiles


def moe_model(x, flops, q_w, q_act, m, experts, tiles, peak, bw, sms):
    """roofline/timing/gemm.py moe_time_s with 2 grouped GEMMs, one layer; x = (η_max, M½, η_w,
    η_act, t₀[, t_g, t_wave]): without the last two the scheduler's terms are 0."""
    eta_max, m_half, eta_w, eta_act, t0 = x[:5]
    walk, wave = (x[5], x[6]) if len(x) > 5 else (0.0, 0.0)
    t_c = flops * (1.0 + m_half / (np.maximum(m, 1.0) + MMA_ROWS)) / (peak * eta_max)
    t = 2.0 * t0 + np.maximum(t_c, q_w / (bw * eta_w)) + q_act / (bw * eta_act)
    return t + 2.0 * walk * experts + wave * np.ceil(tiles / sms)


def fit_moe(cat, chips, sms: float):
    """One MoE curve per dtype over the chips of a group, balanced routing (the model adds the
    expected load imbalance itself: roofline/domain/layout.py expert_load_imbalance), with the
    grouped GEMM's scheduler terms (moe_model t_g, t_wave; `sms`: the group's SMs). Returns
    {dtype: (params, median |error| per chip, rows)} and the files used."""

    def rows(chip, raw):
        usual = (
            MOE_VERSION,
            MOE_KERNEL.get(chip, {}).get(raw, "moe_torch_flow_cutlass"),
            "balanced",
        )
        version, kernel, routing = FAMILY_MOE_TABLE.get(chip, usual)
        p = data_path(chip, "moe", "trtllm", version, "moe_perf.parquet")
        d = pd.read_parquet(p)
        d = d[(d.moe_dtype == raw) & (d.distribution == routing)]
        if routing != "balanced":  # an EP row times its rank's skewed share: EP1 rows only
            d = d[d.moe_ep_size == 1]
        return p, d[(d.kernel_source == kernel) & (d.hidden_size >= MIN_HIDDEN)]

    return _fit_moe_rows(cat, chips, MOE_DTYPES, rows, sms)


# the engines' own fused MoE per group (aiconfigurator-core 0.12.0 moe tables): the Triton
# fused_moe both run by default on Hopper and Ampere, which reads the routed rows through
# sorted_token_ids instead of TensorRT-LLM's separate permute passes. Blackwell is not fitted:
# there vLLM 0.24's tables hold only FlashInfer's TensorRT-LLM kernels (the family curve's own) and
# SGLang's both. On the A100 the tables are older releases', vLLM's under power-law routing only
# (Zipf 1.01) [uncertain: no balanced rows], and bf16 only: a weight-only format (Marlin's MXFP4 or
# FP8 W8A16 MoE, vLLM on Ampere) runs on the bf16 curve at its own weight bytes [approximation:
# SGLang 0.5.10's int4 Marlin MoE rows on the A100 fit a plateau of 0.571 of the bf16 peak and
# 0.776 of the bandwidth, its bf16 fused_moe 0.511 and 0.760].
ENGINE_MOE = {  # group -> engine -> (version, {measured dtype: kernel_source}, distribution)
    "nvidia-hopper": {
        "vllm": (
            "0.24.0",
            {
                "bfloat16": "vllm_unquantizedfusedmoe_triton_tritonexperts",
                "fp8_block": "vllm_fp8moe_triton_tritonexperts",
            },
            "balanced",
        ),
        "sglang": (
            "0.5.14",
            {"bfloat16": "sglang_fused_moe_triton", "fp8_block": "sglang_fused_moe_triton"},
            "balanced",
        ),
    },
    "nvidia-ampere": {
        "vllm": ("0.14.0", {"bfloat16": "vllm_fused_moe"}, "power_law_1.01"),
        "sglang": ("0.5.10", {"bfloat16": "sglang_fused_moe_triton"}, "balanced"),
    },
}
ENGINE_MOE_GROUPS = tuple(ENGINE_MOE)


def fit_engine_moe(cat, chips, engine: str, group: str = "nvidia-hopper"):
    """An engine's own fused MoE curve per dtype (fit_moe's form and shapes), on its rows with
    moe_ep_size 1 only: in vLLM's and SGLang's collectors an EP2 row takes the time of the EP1
    row (DeepSeek-R1 fp8_block, H200, 8,192 tokens, SGLang: 7.97 against 7.98 ms), where
    TensorRT-LLM's halves, so their EP size does not mean the per-rank share moe_shapes takes.
    No scheduler terms: Triton's fused_moe grid runs over the sorted rows' blocks, walking no
    expert list (vllm/model_executor/layers/fused_moe/fused_moe.py fused_moe_kernel). `group`:
    the kernel group whose ENGINE_MOE entry names the release, kernels and routing."""
    version, kernels, routing = ENGINE_MOE[group][engine]

    def rows(chip, raw):
        p = data_path(chip, "moe", engine, version, "moe_perf.parquet")
        if raw not in kernels or not p.exists():
            return p, None
        d = pd.read_parquet(p)
        d = d[(d.moe_dtype == raw) & (d.distribution == routing) & (d.moe_ep_size == 1)]
        return p, d[(d.kernel_source == kernels[raw]) & (d.hidden_size >= MIN_HIDDEN)]

    return _fit_moe_rows(cat, chips, MOE_DTYPES, rows)


def _fit_moe_rows(cat, chips, dtypes, rows, sms: float = 0.0):
    """fit_moe's least-squares fit (log error) per dtype, on rows(chip, raw dtype) ->
    (file, rows or None) over the group's chips, each against its own datasheet; with `sms`
    the scheduler's t_g and t_wave too (7 parameters), else 5."""
    n = 7 if sms > 0 else 5
    out, files = {}, []
    for raw, (dtype, b_w) in dtypes.items():
        parts = []
        for chip, hw_id in chips:
            p, d = rows(chip, raw)
            hw = cat.accelerator(hw_id)
            peak_dtype = MOE_PEAK.get(dtype, dtype)
            if d is None or d.empty or peak_dtype not in hw.peak_flops_per_s:
                continue
            files.append(p)
            peak, bw = hw.peak_flops_per_s[peak_dtype], hw.memory_bandwidth_bytes_per_s
            y = d.latency.to_numpy(float) * 1e-3
            parts.append((chip, *moe_shapes(d, b_w), peak, bw, max(sms, 1.0), y))
        if not parts:
            continue

        def unpack(x):
            return (x[0], np.exp(x[1]), x[2], x[3], *np.exp(x[4:]))

        def resid(x, parts=parts):
            return np.concatenate([np.log(moe_model(unpack(x), *p[1:10]) / p[10]) for p in parts])

        sched = [np.log(1e-7), np.log(5e-7)]  # t_g, t_wave starts
        starts = (
            [0.5, np.log(64.0), 0.7, 0.3, np.log(5e-6), *sched][:n],
            [0.3, np.log(8.0), 0.8, 0.1, -11, *sched][:n],
        )
        lo, hi = [0.02, -5, 0.05, 0.01, -16, -20, -20][:n], [1, 9, 1, 1, -8, -10, -10][:n]
        x = min((least_squares(resid, x0, bounds=(lo, hi)) for x0 in starts), key=lambda r: r.cost)
        params = tuple(float(v) for v in unpack(x.x))
        errs = {
            p[0]: float(np.median(np.abs(moe_model(params, *p[1:10]) / p[10] - 1.0))) for p in parts
        }
        out[dtype] = (params, errs, sum(len(p[10]) for p in parts))
    return out, sorted({cite(p) for p in files})


# bytes per value DeepEP moves: the low-latency dispatch sends fp8 with one fp32 scale per 128
# channels, the combine bf16 (deepseek-ai/DeepEP README, low-latency kernels); the high-throughput
# kernels as measured (comm_dtype)
A2A_BYTES = {"fp8": 1.0 + 4.0 / 128.0, "bfloat16": 2.0}


LOW_LATENCY, NORMAL = "trtllm_deepep_ll", "trtllm_deepep_ht"  # DeepEP's two kernel families


def ranks_per_token(ranks, topk):
    """Distinct ranks a token's top-k experts land on, k of E experts spread uniformly over R
    ranks (E ≫ k): R·(1 − (1 − 1/R)^k), e.g. top-8 over 4 ranks 3.60, over 8 ranks 5.25. What
    DeepEP's high-throughput ("normal") kernels send: one copy per destination rank
    (get_dispatch_layout's num_tokens_per_rank / is_token_in_rank; the intranode test counts
    recv_x.numel(), one row per token and rank: deepseek-ai/DeepEP@dd758caf,
    tests/legacy/test_intranode.py), where the low-latency kernels send one per selected expert."""
    r = np.asarray(ranks, dtype=float)
    return r * (1.0 - (1.0 - 1.0 / r) ** np.asarray(topk, dtype=float))


def ep_alltoall_pairs(df, per_rank: bool = False):
    """DeepEP dispatch / combine pairs of moe_a2a_perf.parquet: low-latency kernels (fp8 dispatch,
    bf16 combine) up to 256 tokens per rank, high-throughput (bf16) from 512; t (µs, the pair's
    sum) and b, the pair's bytes per rank, T·k·d·b (every top-k copy, as roofline/step/ops.py
    counts it), or with `per_rank` the high-throughput rows at T·ranks_per_token·d·b."""
    d = df[df.comm_dtype.isin(list(A2A_BYTES))]
    ll = d[(d.comm_backend == LOW_LATENCY) & (d.num_tokens <= 256)]
    ll = ll[(ll.phase == "combine") == (ll.comm_dtype == "bfloat16")]  # fp8 in, bf16 back
    ht = d[(d.comm_backend == NORMAL) & (d.num_tokens >= 512)]
    ht = ht[ht.comm_dtype == "bfloat16"]
    d = pd.concat([ll, ht])
    copies = d.topk.to_numpy(float)
    if per_rank:
        ht_rows = (d.comm_backend == NORMAL).to_numpy()
        copies = np.where(ht_rows, ranks_per_token(d.ep_size, d.topk), copies)
    d = d.assign(bytes=d.num_tokens * copies * d.hidden_size * d.comm_dtype.map(A2A_BYTES))
    keys = ["comm_backend", "ep_size", "hidden_size", "topk", "num_experts", "num_tokens"]
    pairs = d.groupby(keys).agg(t=("latency", "sum"), b=("bytes", "sum"), c=("phase", "nunique"))
    return pairs[pairs.c == 2].reset_index()


def ep_alltoall_time_s(pairs, alpha: float, share: float, link_bw: float):
    """A pair's time under a fit: 2α + (n−1)/n · b / (s·W) (two calls, roofline/timing/
    collectives.py measured_alltoall_time_s each)."""
    n = pairs.ep_size.to_numpy(float)
    return 2.0 * alpha + (n - 1) / n * pairs.b.to_numpy(float) / (share * link_bw)


def fit_ep_alltoall(df, link_bw: float, per_rank: bool = False, kernel: str | None = None):
    """One call of a dispatch / combine pair: t = α + (n−1)/n · M / (s·W) with M the pair's bytes
    per rank (ep_alltoall_pairs: every top-k copy, as roofline/step/ops.py counts it), α and s
    fitted on the pairs' sums, per GPU count; `kernel` (LOW_LATENCY, the decode's, or NORMAL, the
    prefill's) fits one kernel family alone. Returns {n: (α, share, median |error|)}."""
    pairs = ep_alltoall_pairs(df, per_rank)
    if kernel is not None:
        pairs = pairs[pairs.comm_backend == kernel]
    out = {}
    for n, g in pairs.groupby("ep_size"):
        t = g.t.to_numpy(float) * 1e-6

        def resid(x, g=g, t=t):
            return np.log(ep_alltoall_time_s(g, np.exp(x[0]), np.exp(x[1]), link_bw) / t)

        r = least_squares(resid, [np.log(3e-5), np.log(0.5)], bounds=([-16, -6], [-6, 0]))
        err = float(np.median(np.abs(np.exp(resid(r.x)) - 1.0)))
        out[int(n)] = (float(np.exp(r.x[0])), float(np.exp(r.x[1])), err)
    return out

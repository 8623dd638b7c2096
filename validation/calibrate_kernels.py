# ruff: noqa: C408
"""Fit the per-op kernel curves (roofline/efficiency.py, attention_kernels.py) to kernel timings.

Data: NVIDIA's aiconfigurator-core 0.12.0 (Apache-2.0), which ships measured kernel latencies as
parquet files under aiconfigurator_core/systems/data/<chip>/<op>/<engine>/<version>/. Run on demand
with `make calibrate` (the `calibrate` extra: aiconfigurator-core, pyarrow, pandas, scipy,
matplotlib); roofline never imports this package. Writes
- hardware/kernels.yaml: curve parameters per kernel group (a GPU generation), with the file and
  package version every figure came from;
- validation/kernel_gemm_sample.csv: a sample of the measured GEMMs the curves were fitted on
  (tests/test_efficiency.py checks the model reproduces them, without the package);
- docs/kernel_efficiency.svg: GEMM efficiency against M per dtype and group.

Fitted forms (see roofline/efficiency.py and roofline/attention_kernels.py for the formulas and
their sources):
- GEMM: t = t0 + max(F·(1 + M½/(M+16))·(1 + N½/N) / (P·η_max·u) + w·t_w, Q / (W·η_mem)) per
  dtype, with u and w the wave quantisation of a t_m × t_n tile grid over the SMs (split-K up to
  s_max); the tile, s_max (and t_m = 0: no tile grid) are picked from a small grid per dtype;
  and, from M ≥ m_large on (picked from LARGE_M when it lowers the BIC), a plateau
  large_ratio·η_max: the library switching kernels by M; a kernel whose library picks its tile
  per shape (GROUPS tile_rules: vLLM's CUTLASS FP8 GEMM on Ada) takes that rule instead
  (roofline/tilerules.py; no split-K; per-wave cost t_w + t_area·t_m·t_n/128²) and, when its
  engine quantises the activations in a kernel of its own, that pass (QUANT_BYTES);
- the measurement harness: aiconfigurator's vLLM collector times 6 weight copies on one input
  in a CUDA graph (HARNESS_COPIES); the rows whose copies fit in the chip's L2 are fitted with
  their weights streamed r_L2 times faster (harness_l2_ratio; the runtime never uses it: a
  model's weights do not stay in L2 between steps);
- weight-only GEMM: a GEMM curve of its own (the same form, against the 16-bit peak);
- decode attention: t = t0 + rows·t_row + S·t_S + max(KV·(1 + S½/S) / (W·η_attn), w·(q/p)/B_cta)
  (S streams of q bytes split into p pieces of split_kib for query groups ≥ split_min_group, in
  w waves over the SMs), fitted on cache-cold calls of the kernel most rows were measured with;
  a FlashAttention-2 kernel splits by FA2's own heuristic instead (roofline/splitkv.py) and pays
  the grouped path's re-layout (swap_us, copy_us) and the split-KV combine (combine_us);
- prefill attention: t = t0 + F·(1 + S½/s) / (P·η_max·u) + w·t_w (query tiles in waves);
- all-reduce: t = α + 2(n−1)/n · bytes / B_bus, α and B_bus per GPU count (NCCL, and each
  engine's own custom all-reduce); all-to-all: t = α + (n−1)/n · bytes / B (NCCL);
- MoE layer (TensorRT-LLM fused MoE, balanced routing, H100 + H200 for Hopper, B200 for
  Blackwell): t = 2·t0 + max(F·(1 + M½/(M+16)) / (P·η_max), Q_w / (W·η_w)) + Q_act / (W·η_act);
- DeepEP all-to-all (TensorRT-LLM): α + (n−1)/n · bytes / (s·W) per call of a dispatch/combine
  pair, fp8 + scales dispatch and bf16 combine (roofline/ops.py ep_alltoall_bytes_per_value).
One parameter set per generation and dtype, never per shape.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    import aiconfigurator_core
    import pandas as pd
    from scipy.optimize import least_squares
except ImportError as exc:  # pragma: no cover - only with the calibrate extra missing
    sys.exit(f"calibrate_kernels: needs the calibrate extra ({exc.name}); run `make calibrate`")

from roofline.catalog import load_catalog  # noqa: E402
from roofline.efficiency import GemmCurve, gemm_time_s  # noqa: E402
from roofline.tilerules import VLLM_SM89_FP8  # noqa: E402

PKG = "aiconfigurator-core==0.12.0"
DATA = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
MIN_NK = 512  # fit shapes of LLM layers: N and K of a layer's GEMM are at least 512 after TP
MMA_ROWS = 16.0  # roofline/efficiency.py: a GEMV pads to the 16-row MMA tile
M_TILE = 128  # rows of M one CTA of a weight-only (fpA_intB) GEMM dequantises its weights for

# kernel group -> (chip dir, catalog accelerator it is measured on, engine, version,
#                  members of the group, weight-only sources {dtype: (engine, version)})
GROUPS = {
    "nvidia-ampere": dict(
        chip="a100_sxm",
        hw="nvidia-a100-80gb-sxm",
        sms=(108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: 108 SMs"),
        gemm=("trtllm", "1.0.0"),
        attn=("vllm", "0.14.0"),
        nccl="2.27.3",
        members=[
            "nvidia-a100-80gb-sxm",
            "nvidia-a100-40gb-sxm",
            "nvidia-a100-80gb-pcie",
        ],
        borrowers=["nvidia-a10", "nvidia-t4", "nvidia-v100-sxm"],
    ),
    "nvidia-hopper": dict(
        chip="h100_sxm",
        hw="nvidia-h100-sxm",
        sms=(132, "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 2: 132 SMs"),
        gemm=("trtllm", "1.3.0rc20"),
        attn=("vllm", "0.24.0"),
        nccl="2.27.3",
        members=[
            "nvidia-h100-sxm",
            "nvidia-h200-sxm",
            "nvidia-h800-sxm",
            "nvidia-h100-pcie",
            "nvidia-h100-nvl",
            "nvidia-h200-nvl",
        ],
        borrowers=["nvidia-h20"],
        siblings=[("h200_sxm", "nvidia-h200-sxm")],
    ),
    "nvidia-blackwell": dict(
        chip="b200_sxm",
        hw="nvidia-b200-hgx",
        sms=(
            148,
            "Chips and Cheese, 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (2025): "
            "74 SMs enabled per die, 148 per GPU",
        ),
        gemm=("trtllm", "1.3.0rc20"),
        attn=("vllm", "0.24.0"),
        nccl="2.27.3",
        members=["nvidia-b200-hgx", "nvidia-b300-hgx", "nvidia-gb200"],
        siblings=[("b300_sxm", "nvidia-b300-hgx"), ("gb200", "nvidia-gb200")],
        borrowers=[],
    ),
    "nvidia-ada": dict(
        chip="l40s",
        hw="nvidia-l40s",
        sms=(142, "NVIDIA L40S datasheet (2023): 18,176 CUDA cores = 142 SMs × 128"),
        gemm=("vllm", "0.24.0"),
        attn=("vllm", "0.24.0"),
        nccl=None,
        members=["nvidia-l40s"],
        borrowers=["nvidia-l4"],
        # vLLM's CUTLASS FP8 GEMM picks its tile per shape (roofline/tilerules.py)
        tile_rules={"CutlassFP8ScaledMMLinearKernel": VLLM_SM89_FP8},
        l2=(
            96 * 2**20,
            "NVIDIA Ada Lovelace GPU architecture whitepaper (2023), AD102: 96 MB L2 [uncertain: "
            "the L40S's enabled share; the measured rows step from L2 to HBM speed between "
            "6 weight copies of 88 and 100 MB]",
        ),
    ),
}
# A FP8 GEMM behind vLLM's Fp8LinearMethod with a static activation scale (the collector's
# Fp8Config(activation_scheme="static")) quantises its bf16 input first, in a kernel of its own
# (CutlassFP8ScaledMMLinearKernel.apply_weights: QuantFP8 -> ops.scaled_fp8_quant, then
# ops.cutlass_scaled_mm): M·K values read in bf16 and written in fp8, 3 bytes each, timed with it.
QUANT_BYTES = {"CutlassFP8ScaledMMLinearKernel": 3.0}
# aiconfigurator's vLLM GEMM collector (collector/vllm/collect_gemm.py, run_gemm) times
# outside_loop_count = 6 Linear layers of distinct weights on one input, replayed in a CUDA
# graph: when the 6 weight copies and the input fit in L2 the weights stream from L2, not HBM.
HARNESS_COPIES = {"vllm": 6}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "sq": "int8"}
WEIGHT_ONLY = {"int8_wo": ("int8", 1.0), "int4_wo": ("int4", 0.5)}  # bytes per weight
ACT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5, "int8": 1.0}
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5625, "int8": 1.0}  # nvfp4: 4 bit + 1/16 scale


def _path(chip: str, op: str, engine: str, version: str, name: str) -> Path:
    return DATA / chip / op / engine / version / name


def _rel(p: Path) -> str:
    return f"{PKG}: aiconfigurator_core/systems/data/{p.relative_to(DATA)}"


TILES = [(0, 0, 1)] + [(tm, tn, s) for tm in (64, 128) for tn in (64, 128, 256) for s in (1, 4, 16)]


def waves(m, n, sms, tm, tn, smax):
    """(u, w) of roofline/efficiency.py wave_quantisation (one group)."""
    if not tm:
        return 1.0, 0.0
    tiles = np.ceil(m / tm) * np.ceil(n / tn)
    s = np.clip(np.floor(sms / tiles), 1.0, smax)
    w = np.ceil(tiles * s / sms)
    return m * n * s / (w * sms * tm * tn), w


def gemm_model(params, m, n, k, peak, bw, b_w, b_a, tile=(0, 0, 1, 1), large=(0.0, 1.0), l2=None):
    """t = t0 + max(2MNK(1 + M½/(M+16))(1 + N½/N)/(P·η_max·r·u) + w·t_w,
    (NK·b_w + M(N+K)·b_a)/(W·η_mem)); tile = (t_m, t_n, s_max, SMs); large = (m_large, ratio):
    r = ratio from M ≥ m_large on (m_large 0: r = 1); l2 = (resident, r_L2): the rows the
    harness keeps in L2 stream their weights r_L2 times faster (harness_resident)."""
    eta_max, m_half, eta_mem, t0, n_half, t_w = params[:6]
    tm, tn, smax, sms = tile
    u, w = waves(m, n, sms, tm, tn, smax)
    if large[0] > 0:
        eta_max = eta_max * np.where(m >= large[0], large[1], 1.0)
    shape = (1.0 + m_half / (m + MMA_ROWS)) * (1.0 + n_half / n)
    t_c = 2.0 * m * n * k * shape / (peak * eta_max * u) + w * t_w
    w_bytes = n * k * b_w if l2 is None else n * k * b_w / np.where(l2[0], l2[1], 1.0)
    t_m = (w_bytes + m * (n + k) * b_a) / (bw * eta_mem)
    return t0 + np.maximum(t_c, t_m)


def _resident(df, b_w, harness):
    """harness_resident of the rows (harness = (copies, L2 bytes)), or None without a harness."""
    if harness is None:
        return None
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    return harness_resident(m, n, k, b_w, *harness)


def _fit_gemm_tile(df, peak, bw, b_w, b_a, tile, harness=None):
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    t = df.latency.to_numpy(float) * 1e-3
    res = _resident(df, b_w, harness)
    extra = 0 if res is None else 1  # log r_L2 last

    def unpack(x):
        p = (x[0], np.exp(x[1]), x[2], np.exp(x[3]), np.exp(x[4]), np.exp(x[5]))
        return p if res is None else (*p, np.exp(x[6]))

    def resid(x):
        p = unpack(x)
        l2 = None if res is None else (res, p[6])
        return np.log(gemm_model(p, m, n, k, peak, bw, b_w, b_a, tile, l2=l2) / t)

    starts = [  # a few starting points: the max() makes the loss surface non-convex
        [eta, np.log(mh), em, np.log(5e-6), np.log(64.0), np.log(1e-6)] + [0.5] * extra
        for eta in (0.6, 0.9)
        for mh in (1.0, 128.0)
        for em in (0.75,)
    ]
    lo, hi = [0.05, -5, 0.05, -16, -5, -20] + [0.0] * extra, [1, 9, 1, -8, 10, -9] + [3.0] * extra
    fits = [least_squares(resid, x0, bounds=(lo, hi)) for x0 in starts]
    x = min(fits, key=lambda f: f.cost).x
    err = np.abs(np.exp(resid(x)) - 1.0)
    return tuple(float(v) for v in unpack(x)), float(np.median(err))


LARGE_M = (2048, 4096, 8192, 16384)  # candidate M from which another kernel runs
# A step is kept only when it is material: at least 10%, the fit target the curves are held to
# (a smaller one is inside the form's scatter, and its discontinuity would be an artefact)
MATERIAL_STEP = 0.9


def _bic(resid: np.ndarray, n_params: int) -> float:
    """Bayesian information criterion of a least-squares fit in log time (Schwarz, 1978)."""
    n = len(resid)
    return float(n * np.log(np.mean(resid**2)) + n_params * np.log(n))


def fit_large_m(df, peak, bw, b_w, b_a, tile, params, harness=None):
    """Does the plateau step down from some M on (the library switching kernels by M)? Refit
    with a ratio r for M ≥ m_large, m_large from LARGE_M; keep the step only when it lowers the
    BIC (one parameter more) and r ≤ MATERIAL_STEP. Returns (params, (m_large, r), median) or
    None."""
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    t = df.latency.to_numpy(float) * 1e-3
    res = _resident(df, b_w, harness)
    extra = 0 if res is None else 1  # log r_L2 after the step's ratio

    def unpack(x):
        p = (x[0], np.exp(x[1]), x[2], np.exp(x[3]), np.exp(x[4]), np.exp(x[5]))
        return p if res is None else (*p, np.exp(x[7]))

    def resid_of(x, m_large):
        p = unpack(x)
        l2 = None if res is None else (res, p[6])
        model = gemm_model(p, m, n, k, peak, bw, b_w, b_a, tile, (m_large, x[6]), l2)
        return np.log(model / t)

    x0 = [params[0], np.log(max(params[1], 7e-3)), params[2], np.log(params[3])]
    x0 += [np.log(max(params[4], 7e-3)), np.log(params[5])]
    l2_0 = [np.log(params[6])] if extra else []
    base = resid_of([*x0, 1.0, *l2_0], 0.0)
    best, best_bic = None, _bic(base, 6 + extra)
    lo = [0.05, -5, 0.05, -16, -5, -20, 0.3] + [0.0] * extra
    hi = [1, 9, 1, -8, 10, -9, 1.0] + [3.0] * extra
    for m_large in LARGE_M:
        if not ((m >= m_large).any() and (m < m_large).any()):
            continue
        x_start = np.clip([*x0, 0.9, *l2_0], np.array(lo) + 1e-9, np.array(hi) - 1e-9)
        r = least_squares(lambda x, ml=m_large: resid_of(x, ml), x_start, bounds=(lo, hi))
        bic = _bic(r.fun, 7 + extra)
        if bic < best_bic and r.x[6] <= MATERIAL_STEP:
            x = r.x
            p = unpack(x)
            med = float(np.median(np.abs(np.exp(r.fun) - 1.0)))
            best, best_bic = (tuple(float(v) for v in p), (m_large, float(x[6])), med), bic
    return best


def fit_gemm(df, peak, bw, b_w, b_a, sms, harness=None):
    """Every tile of TILES on a sample, then the best two on all rows: the lowest median
    |error| wins; then the large-M step (fit_large_m). Returns ((η_max, M½, η_mem, t0, N½, t_w
    [, r_L2 with a harness]), (t_m, t_n, s_max, SMs), median, (m_large, ratio))."""
    sample = df.sample(min(len(df), 2000), random_state=0)
    tiles = [(tm, tn, s, sms) for tm, tn, s in TILES]
    ranked = sorted(
        tiles, key=lambda tl: _fit_gemm_tile(sample, peak, bw, b_w, b_a, tl, harness)[1]
    )
    best = None
    for tile in ranked[:2]:
        params, med = _fit_gemm_tile(df, peak, bw, b_w, b_a, tile, harness)
        if best is None or med < best[2]:
            best = (params, tile, med)
    step = fit_large_m(df, peak, bw, b_w, b_a, best[1], best[0], harness)
    if step is None:
        return (*best, (0, 1.0))
    return step[0], best[1], step[2], step[1]


def harness_resident(m, n, k, b_w, copies, l2_bytes):
    """Rows whose timed working set fits in L2: `copies` weight matrices of N·K·b_w bytes and
    the shared bf16 input of M·K values (aiconfigurator's collector replays the copies in a
    CUDA graph, so a working set within L2 is served from it at every replay)."""
    return copies * n * k * b_w + m * k * 2.0 <= l2_bytes


def gemm_rule_model(x, m, n, k, peak, bw, b_w, b_a, sms, rule, quant_bytes, resident):
    """roofline/efficiency.py gemm_time_s under a library's tile rule (no split-K), a per-wave
    cost t_w + t_area·(t_m·t_n)/128² and the activation quantisation pass; the rows the harness
    keeps in L2 stream their weights r = exp(x[7]) times faster (the measurement, not the
    kernel: a model's weights never stay in L2 between decode steps)."""
    curve = GemmCurve(
        eta_max=x[0],
        eta_memory=x[2],
        m_half=np.exp(x[1]),
        n_half=np.exp(x[4]),
        latency_s=np.exp(x[3]),
        wave_latency_s=np.exp(x[5]),
        sm_count=sms,
        tile_rule=rule,
        wave_area_s=np.exp(x[6]),
        quant_bytes=quant_bytes,
    )
    w_bytes = n * k * b_w / np.where(resident, np.exp(x[7]), 1.0)
    return gemm_time_s(2.0 * m * n * k, w_bytes + m * (n + k) * b_a, m, n, peak, bw, curve)


def fit_gemm_rule(df, peak, bw, b_w, b_a, sms, rule, quant_bytes, resident):
    """The GEMM form under a library's tile rule (roofline/tilerules.py): every block runs the
    whole K loop (no split-K), the tile's prologue and epilogue cost t_w + t_area·(t_m·t_n)/128²
    per wave (the epilogue writes t_m·t_n outputs), plus the activations' quantisation pass.
    Returns ((η_max, M½, η_mem, t0, N½, t_w, t_area, r_L2), median)."""
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    t = df.latency.to_numpy(float) * 1e-3
    args = (m, n, k, peak, bw, b_w, b_a, sms, rule, quant_bytes, resident)

    def resid(x):
        return np.log(gemm_rule_model(x, *args) / t)

    lo = [0.05, -5, 0.05, -16, -5, -20, -20, 0.0]
    hi = [1, 9, 1, -8, 10, -9, -9, 3.0]
    fits = [
        least_squares(
            resid,
            [eta, np.log(mh), 0.75, np.log(3e-6), np.log(64.0), np.log(3e-6), np.log(3e-6), 0.5],
            bounds=(lo, hi),
        )
        for eta in (0.6, 0.9)
        for mh in (1.0, 128.0)
    ]
    x = min(fits, key=lambda f: f.cost).x
    med = float(np.median(np.abs(np.exp(resid(x)) - 1.0)))
    p = (x[0], np.exp(x[1]), x[2], np.exp(x[3]), np.exp(x[4]), np.exp(x[5]), np.exp(x[6]))
    return (*(float(v) for v in p), float(np.exp(x[7]))), med


def fit_weight_only(df, peak, bw, b_w, sms):
    """A weight-only kernel (int8/int4 weights, 16-bit math) is a GEMM of its own: the same
    form (tile grid, waves, knee) against the 16-bit peak, with its own plateau η_max, which
    carries the dequantisation ALU work (the kernels unpack weights inside the K loop: TensorRT-LLM
    fpA_intB; Frantar et al., MARLIN, 2024, §3), and its own weight-streaming share."""
    return fit_gemm(df, peak, bw, b_w, 2.0, sms)


def fit_prefill_attention(df, peak, sms):
    """Causal flash attention over s tokens, the kernel most rows were measured with, bf16 KV,
    full attention: F = 2·b·H·d·s(s+1); t = t0 + F(1 + S½/s)/(P·η_max·u) + w·t_w with the b·H
    query heads cut into ⌈s/t_q⌉ query tiles run in waves over the SMs (t_q from {64, 128})."""
    d = df[df.kv_cache_dtype == "bfloat16"]
    if "window_size" in d:
        d = d[d.window_size == 0]
    kernel = d.kernel_source.value_counts().index[0]
    d = d[d.kernel_source == kernel]
    d = d[d.isl >= 16]  # a one-token "prefill" is a decode call
    seq = d.isl.to_numpy(float)
    heads = (d.batch_size * d.num_heads).to_numpy(float)
    flops = (2.0 * d.batch_size * d.num_heads * d.head_dim * d.isl * (d.isl + 1)).to_numpy(float)
    t = d.latency.to_numpy(float) * 1e-3
    best = None
    for tile_q in (64, 128):
        tiles = np.ceil(seq / tile_q)
        waves = np.ceil(heads * tiles / sms)
        u = heads * tiles / (waves * sms) * seq / (tiles * tile_q)

        def resid(x, u=u, waves=waves):
            model = (
                np.exp(x[2])
                + flops * (1.0 + np.exp(x[1]) / seq) / (peak * x[0] * u)
                + waves * np.exp(x[3])
            )
            return np.log(model / t)

        for sh in (1.0, 300.0):
            r = least_squares(
                resid,
                [0.6, np.log(sh), np.log(1e-5), np.log(1e-6)],
                bounds=([0.05, -5, -16, -20], [1, 12, -7, -9]),
            )
            med = float(np.median(np.abs(np.exp(resid(r.x)) - 1.0)))
            if best is None or med < best[0]:
                best = (med, r.x, tile_q)
    med, x, tile_q = best
    return {
        "kernel": str(kernel),
        "eta_max": round(float(x[0]), 3),
        "s_half": round(float(np.exp(x[1])), 1),
        "latency_us": round(float(np.exp(x[2])) * 1e6, 2),
        "tile_q": tile_q,
        "wave_latency_us": round(float(np.exp(x[3])) * 1e6, 3),
        "fit_median_error": round(med, 3),
        "rows": len(d),
    }


def decode_attention_model(x, kv_bytes, rows, streams, bw, sms, split_bytes, min_group):
    """roofline/attention_kernels.py attention_decode_time_s for one layer, bf16 KV, memory side:
    t0 + rows·t_row + S·t_S + max(KV(1 + S½/S)/(W·η), w·(q/p)/B_cta)."""
    t0, t_row, eta, t_s, b_cta, s_half = (
        np.exp(x[0]),
        np.exp(x[1]),
        x[2],
        np.exp(x[3]),
        np.exp(x[4]),
        np.exp(x[5]),
    )
    q = kv_bytes / streams
    pieces = np.where(rows / streams >= min_group, np.ceil(q / split_bytes), 1.0)
    waves = np.ceil(streams * pieces / sms)
    t_mem = np.maximum(kv_bytes * (1.0 + s_half / streams) / (bw * eta), waves * q / pieces / b_cta)
    return t0 + rows * t_row + streams * t_s + t_mem


SPLITS = [(kib, g) for kib in (64, 256, 1024) for g in (1, 2)]
FA2_KERNELS = ("vllm_flash_attn", "vllm_flash_attn_fa2")  # FlashAttention-2 (vLLM's fork)
FA2_START = (np.log(2e-6), np.log(5e-6), np.log(3e-6))  # t_swap, t_copy, t_combine (s, log)


def decode_attention_fa2_model(x, kv_bytes, rows, streams, kv_heads, bw, sms):
    """roofline/attention_kernels.py attention_decode_time_s, split_rule fa2, one layer, bf16 KV:
    t0 + rows·t_row + S·t_S + [g ≥ 2](t_swap + t_copy·[b ≥ 2, K ≥ 2] + t_comb·[p > 1])
    + max(KV(1 + S½/S)/(W·η), w·(q/p)/B_cta), p from FA2's num_splits_heuristic."""
    from roofline.attention_kernels import AttentionCurve, attention_decode_time_s

    curve = AttentionCurve(
        eta_memory=x[2],
        latency_s=np.exp(x[0]),
        per_row_s=np.exp(x[1]),
        streams_half=np.exp(x[5]),
        per_stream_s=np.exp(x[3]),
        block_bw_bytes_per_s=np.exp(x[4]),
        sm_count=sms,
        split_rule="fa2",
        swap_s=np.exp(x[6]),
        copy_s=np.exp(x[7]),
        combine_s=np.exp(x[8]),
    )
    return attention_decode_time_s(
        0.0, kv_bytes, 1.0, bw, curve, 1.0, rows, streams, kv_heads=kv_heads
    )


def fit_decode_attention(df, bw, sms):
    """The kernel most rows were measured with, bf16 KV, full attention (no window). A
    FlashAttention-2 kernel gets FA2's own split rule (roofline/splitkv.py); any other kernel
    the generic split-KV form, its split size and the smallest query group that splits picked
    from SPLITS."""
    d = df[df.kv_cache_dtype == "bfloat16"]
    if "window_size" in d:
        d = d[d.window_size == 0]
    kernel = d.kernel_source.value_counts().index[0]
    d = d[d.kernel_source == kernel]
    kv_len = (d.isl + d.step).to_numpy(float)
    kv_bytes = 2.0 * d.batch_size * d.num_key_value_heads * d.head_dim * 2.0 * kv_len
    kv_bytes = kv_bytes.to_numpy(float)
    # Fit the cache-cold regime only: a benchmark that re-reads the same KV serves a cache that
    # fits in L2 (A100 40 MB, H100 50 MB, L40S 96 MB: the vendors' whitepapers) from L2, which a
    # real decode step never does (every layer's weights stream through L2 in between). Keep the
    # latency-bound calls (KV < 1 MB) and those whose KV exceeds every L2 (> 128 MB).
    cold = (kv_bytes < 1e6) | (kv_bytes > 128e6)
    d, kv_bytes = d[cold], kv_bytes[cold]
    t = d.latency.to_numpy(float) * 1e-3
    rows = (d.batch_size * d.num_heads).to_numpy(float)
    streams = (d.batch_size * d.num_key_value_heads).to_numpy(float)
    kv_heads = d.num_key_value_heads.to_numpy(float)
    extra: dict = {}
    if kernel in FA2_KERNELS:
        args = (kv_bytes, rows, streams, kv_heads, bw, sms)

        def resid_fa2(x):
            return np.log(decode_attention_fa2_model(x, *args) / t)

        r = least_squares(
            resid_fa2,
            [np.log(1e-5), np.log(1e-9), 0.8, np.log(1e-8), np.log(3e10), 0.0, *FA2_START],
            bounds=(
                [-16, -25, 0.05, -25, 18, -5, -20, -20, -20],
                [-8, -12, 1, -12, 30, 8, -9, -9, -9],
            ),
        )
        x = r.x
        med = float(np.median(np.abs(np.exp(resid_fa2(x)) - 1.0)))
        kib, group = 0, 2
        extra = {
            "split_rule": "fa2",
            "swap_us": round(float(np.exp(x[6])) * 1e6, 3),
            "copy_us": round(float(np.exp(x[7])) * 1e6, 3),
            "combine_us": round(float(np.exp(x[8])) * 1e6, 3),
        }
    else:
        best = None
        for kib, group in SPLITS:
            args = (kv_bytes, rows, streams, bw, sms, kib * 1024.0, group)

            def resid(x, args=args):
                return np.log(decode_attention_model(x, *args) / t)

            r = least_squares(
                resid,
                [np.log(1e-5), np.log(1e-9), 0.8, np.log(1e-8), np.log(3e10), 0.0],
                bounds=([-16, -25, 0.05, -25, 18, -5], [-8, -12, 1, -12, 30, 8]),
            )
            med = float(np.median(np.abs(np.exp(resid(r.x)) - 1.0)))
            if best is None or med < best[0]:
                best = (med, r.x, kib, group)
        med, x, kib, group = best
    pick = d.sample(min(len(d), 300), random_state=0)
    sample = [
        (r.batch_size, r.num_heads, r.num_key_value_heads, r.head_dim, r.isl + r.step, r.latency)
        for r in pick.itertuples()
    ]
    out = {
        "sample": sample,
        "kernel": str(kernel),
        "eta_memory": round(float(x[2]), 3),
        "latency_us": round(float(np.exp(x[0])) * 1e6, 2),
        "per_query_head_ns": round(float(np.exp(x[1])) * 1e9, 3),
        "per_stream_ns": round(float(np.exp(x[3])) * 1e9, 2),
        "streams_half": round(float(np.exp(x[5])), 3),
    }
    if not extra:
        out.update(split_kib=kib, split_min_group=group)
    out.update(extra)
    out.update(
        block_bandwidth_gb_s=round(float(np.exp(x[4])) / 1e9, 2),
        fit_median_error=round(med, 3),
        rows=len(d),
    )
    return out


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
MOE_CHIPS = {  # group -> chips whose moe tables it is fitted on (each against its own datasheet)
    "nvidia-hopper": [("h100_sxm", "nvidia-h100-sxm"), ("h200_sxm", "nvidia-h200-sxm")],
    "nvidia-blackwell": [("b200_sxm", "nvidia-b200-hgx")],
}
# measured dtype -> (curve dtype, weight bytes per value, kernel): fp8 block-scaled (DeepSeek's
# 128×128 blocks: one fp32 scale per 16,384 weights), cutlass on Hopper, DeepGEMM on Blackwell
MOE_DTYPES = {"bfloat16": ("bf16", 2.0), "fp8_block": ("fp8", 1.0 + 4.0 / 128**2)}
MOE_KERNEL = {"b200_sxm": {"fp8_block": "deepgemm"}}
MIN_HIDDEN = 2048  # LLM-sized MoE layers


def moe_shapes(d, b_w: float):
    """(F, Q_w, Q_act, M) per rank of a measured MoE layer, built as roofline/ops.py builds the
    moe.experts op: T tokens routed top-k over E experts on ep ranks (balanced routing),
    R = T·k/ep rows over the E·(1 − (1 − k/E)^T)/ep experts touched, F = 6·d·f·R,
    Q_w = touched·3·d·f·b_w, Q_act = R·(2d + 3f)·2 (16-bit activations), f = width / moe_tp."""
    t, k, e = (d[c].to_numpy(float) for c in ("num_tokens", "topk", "num_experts"))
    ep, tp = d.moe_ep_size.to_numpy(float), d.moe_tp_size.to_numpy(float)
    h, f = d.hidden_size.to_numpy(float), d.inter_size.to_numpy(float) / tp
    rows = t * k / ep
    touched = e * (1.0 - (1.0 - k / e) ** t) / ep
    return 6 * h * f * rows, touched * 3 * h * f * b_w, rows * (2 * h + 3 * f) * 2.0, rows / touched


def moe_model(x, flops, q_w, q_act, m, peak, bw):
    """roofline/efficiency.py moe_time_s with 2 grouped GEMMs."""
    eta_max, m_half, eta_w, eta_act, t0 = x
    t_c = flops * (1.0 + m_half / (np.maximum(m, 1.0) + MMA_ROWS)) / (peak * eta_max)
    return 2.0 * t0 + np.maximum(t_c, q_w / (bw * eta_w)) + q_act / (bw * eta_act)


def fit_moe(cat, chips):
    """One MoE curve per dtype over the chips of a group, balanced routing (the model adds the
    expected load imbalance itself: roofline/layout.py expert_load_imbalance). Returns
    {dtype: (params, median |error| per chip, rows)} and the files used."""
    out, files = {}, []
    for raw, (dtype, b_w) in MOE_DTYPES.items():
        parts = []
        for chip, hw_id in chips:
            p = _path(chip, "moe", "trtllm", MOE_VERSION, "moe_perf.parquet")
            d = pd.read_parquet(p)
            kernel = MOE_KERNEL.get(chip, {}).get(raw, "moe_torch_flow_cutlass")
            d = d[(d.moe_dtype == raw) & (d.distribution == "balanced")]
            d = d[(d.kernel_source == kernel) & (d.hidden_size >= MIN_HIDDEN)]
            hw = cat.accelerator(hw_id)
            if d.empty or dtype not in hw.peak_flops_per_s:
                continue
            files.append(p)
            peak, bw = hw.peak_flops_per_s[dtype], hw.memory_bandwidth_bytes_per_s
            parts.append((chip, *moe_shapes(d, b_w), peak, bw, d.latency.to_numpy(float) * 1e-3))
        if not parts:
            continue

        def unpack(x):
            return (x[0], np.exp(x[1]), x[2], x[3], np.exp(x[4]))

        def resid(x, parts=parts):
            return np.concatenate([np.log(moe_model(unpack(x), *p[1:7]) / p[7]) for p in parts])

        starts = ([0.5, np.log(64.0), 0.7, 0.3, np.log(5e-6)], [0.3, np.log(8.0), 0.8, 0.1, -11])
        lo, hi = [0.02, -5, 0.05, 0.01, -16], [1, 9, 1, 1, -8]
        x = min((least_squares(resid, x0, bounds=(lo, hi)) for x0 in starts), key=lambda r: r.cost)
        params = tuple(float(v) for v in unpack(x.x))
        errs = {
            p[0]: float(np.median(np.abs(moe_model(params, *p[1:7]) / p[7] - 1.0))) for p in parts
        }
        out[dtype] = (params, errs, sum(len(p[7]) for p in parts))
    return out, sorted({_rel(p) for p in files})


# bytes per value DeepEP moves: the low-latency dispatch sends fp8 with one fp32 scale per 128
# channels, the combine bf16 (deepseek-ai/DeepEP README, low-latency kernels); the high-throughput
# kernels as measured (comm_dtype)
A2A_BYTES = {"fp8": 1.0 + 4.0 / 128.0, "bfloat16": 2.0}


def fit_ep_alltoall(df, link_bw: float):
    """One call of a dispatch / combine pair: t = α + (n−1)/n · M / (s·W) with M = T·k·d·b bytes
    per rank (every top-k copy, as roofline/ops.py counts it). Low-latency kernels (fp8 dispatch,
    bf16 combine) up to 256 tokens per rank, high-throughput (bf16) above; α and s fitted on the
    pairs' sums, per GPU count. Returns {n: (α, share, median |error|)}."""
    d = df[df.comm_dtype.isin(list(A2A_BYTES))]
    ll = d[(d.comm_backend == "trtllm_deepep_ll") & (d.num_tokens <= 256)]
    ll = ll[(ll.phase == "combine") == (ll.comm_dtype == "bfloat16")]  # fp8 in, bf16 back
    ht = d[(d.comm_backend == "trtllm_deepep_ht") & (d.num_tokens >= 512)]
    ht = ht[ht.comm_dtype == "bfloat16"]
    d = pd.concat([ll, ht])
    d = d.assign(bytes=d.num_tokens * d.topk * d.hidden_size * d.comm_dtype.map(A2A_BYTES))
    keys = ["comm_backend", "ep_size", "hidden_size", "topk", "num_experts", "num_tokens"]
    pairs = d.groupby(keys).agg(t=("latency", "sum"), b=("bytes", "sum"), c=("phase", "nunique"))
    pairs = pairs[pairs.c == 2].reset_index()
    out = {}
    for n, g in pairs.groupby("ep_size"):
        t, size = g.t.to_numpy(float) * 1e-6, g.b.to_numpy(float)
        factor = (n - 1) / n

        def resid(x, t=t, size=size, factor=factor):
            return np.log((2.0 * np.exp(x[0]) + factor * size / (np.exp(x[1]) * link_bw)) / t)

        r = least_squares(resid, [np.log(3e-5), np.log(0.5)], bounds=([-16, -6], [-6, 0]))
        err = float(np.median(np.abs(np.exp(resid(r.x)) - 1.0)))
        out[int(n)] = (float(np.exp(r.x[0])), float(np.exp(r.x[1])), err)
    return out


def _large_keys(large) -> dict:
    """The catalog keys of a large-M step (none when the fit kept one kernel)."""
    if not large[0]:
        return {}
    return {"m_large": int(large[0]), "large_ratio": round(large[1], 3)}


def _harness_keys(params, harness) -> dict:
    """The catalog keys of a fit on a harness's L2-resident rows (none without a harness)."""
    if harness is None:
        return {}
    return {"harness_l2_ratio": round(params[6], 3), "harness_l2_bytes": harness[1]}


def main() -> None:
    cat = load_catalog()
    groups_out = []
    samples = []
    attn_samples: list[tuple] = []
    curves = {}
    rng = np.random.default_rng(0)
    for gid, g in GROUPS.items():
        hw = cat.accelerator(g["hw"])
        peaks, bw = dict(hw.peak_flops_per_s), hw.memory_bandwidth_bytes_per_s
        entry: dict = {"id": gid, "accelerators": g["members"], "borrowed_by": g["borrowers"]}
        entry["sm_count"], entry["sm_count_source"] = g["sms"]
        gemm_file = _path(g["chip"], "gemm", *g["gemm"], "gemm_perf.parquet")
        df = pd.read_parquet(gemm_file)
        df = df[(df.n >= MIN_NK) & (df.k >= MIN_NK)]
        gemm = {}
        l2_note = ""
        for raw, dtype in DTYPES.items():
            d = df[df.gemm_dtype == raw]
            if d.empty or dtype not in peaks:
                continue
            kernel = str(d.kernel_source.value_counts().index[0])
            rule = g.get("tile_rules", {}).get(kernel)
            if rule:
                m, n, k = (d[c].to_numpy(float) for c in ("m", "n", "k"))
                copies = HARNESS_COPIES.get(g["gemm"][0], 0)
                resident = harness_resident(m, n, k, WEIGHT_BYTES[dtype], copies, g["l2"][0])
                quant = QUANT_BYTES.get(kernel, 0.0)
                p, med = fit_gemm_rule(
                    d,
                    peaks[dtype],
                    bw,
                    WEIGHT_BYTES[dtype],
                    ACT_BYTES[dtype],
                    g["sms"][0],
                    rule,
                    quant,
                    resident,
                )
                gemm[dtype] = {
                    "eta_max": round(p[0], 3),
                    "m_half": round(p[1], 1),
                    "n_half": round(p[4], 1),
                    "eta_memory": round(p[2], 3),
                    "latency_us": round(p[3] * 1e6, 2),
                    "tile_m": 0,
                    "tile_n": 0,
                    "tile_rule": rule,
                    "split_k_max": 1,
                    "wave_latency_us": round(p[5] * 1e6, 3),
                    "wave_area_us": round(p[6] * 1e6, 3),
                    "quant_bytes": quant,
                    "harness_l2_ratio": round(p[7], 3),
                    "harness_l2_bytes": g["l2"][0],
                    "fit_median_error": round(med, 3),
                    "rows": len(d),
                }
                l2_note = f" (harness_l2_bytes: {g['l2'][1]})"
                curves[(gid, dtype)] = (p, rule, peaks[dtype], None)
                pick = d.sample(min(len(d), 200), random_state=int(rng.integers(1 << 30)))
                for row in pick.itertuples():
                    samples.append((gid, dtype, row.m, row.n, row.k, row.latency * 1e-3))
                print(f"{gid} {dtype}: {gemm[dtype]}")
                continue
            # The generic form does not take the harness yet: on Ada bf16 (the same collector) it
            # lowers the median from 9.7% to 8.6% but moves the large-M step (M >= 2048 at 0.90
            # instead of 4096 at 0.84) and the M = 8192 prefill GEMM sum to -16% of the measured
            # one, beyond the 15% the tests hold; fit_gemm(..., harness) is there for that work.
            harness = None
            params, tile, med, large = fit_gemm(
                d, peaks[dtype], bw, WEIGHT_BYTES[dtype], ACT_BYTES[dtype], g["sms"][0], harness
            )
            gemm[dtype] = {
                "eta_max": round(params[0], 3),
                "m_half": round(params[1], 1),
                "n_half": round(params[4], 1),
                "eta_memory": round(params[2], 3),
                "latency_us": round(params[3] * 1e6, 2),
                "tile_m": int(tile[0]),
                "tile_n": int(tile[1]),
                "split_k_max": int(tile[2]),
                "wave_latency_us": round(params[5] * 1e6, 3) if tile[0] else 0.0,
                **_large_keys(large),
                **_harness_keys(params, harness),
                "fit_median_error": round(med, 3),
                "rows": len(d),
            }
            if harness:
                l2_note = f" (harness_l2_bytes: {g['l2'][1]})"
            curves[(gid, dtype)] = (params[:6], tile, peaks[dtype], large)
            pick = d.sample(min(len(d), 200), random_state=int(rng.integers(1 << 30)))
            for row in pick.itertuples():
                samples.append((gid, dtype, row.m, row.n, row.k, row.latency * 1e-3))
            print(f"{gid} {dtype}: {gemm[dtype]}")
        if "bf16" in gemm:
            gemm["fp16"] = dict(gemm["bf16"])
        entry["gemm"] = gemm
        entry["gemm_source"] = _rel(gemm_file) + l2_note
        wo_file = gemm_file
        wdf = pd.read_parquet(wo_file)
        wdf = wdf[(wdf.n >= MIN_NK) & (wdf.k >= MIN_NK)]
        wo = {}
        for raw, (name, b_w) in WEIGHT_ONLY.items():
            d = wdf[wdf.gemm_dtype == raw]
            if d.empty:
                continue
            params, tile, med, large = fit_weight_only(d, peaks["bf16"], bw, b_w, g["sms"][0])
            wo[name] = {
                "alu_ops_per_weight": 0.0,  # carried by the curve's own eta_max
                "eta_memory": round(params[2], 3),
                "latency_us": round(params[3] * 1e6, 2),
                "eta_max": round(params[0], 3),
                "m_half": round(params[1], 1),
                "n_half": round(params[4], 1),
                "tile_m": int(tile[0]),
                "tile_n": int(tile[1]),
                "split_k_max": int(tile[2]),
                "wave_latency_us": round(params[5] * 1e6, 3) if tile[0] else 0.0,
                **_large_keys(large),
                "fit_median_error": round(med, 3),
                "rows": len(d),
            }
            print(f"{gid} weight-only {name}: {wo[name]}")
        if wo:
            entry["weight_only"] = wo
            entry["weight_only_source"] = _rel(wo_file)
        attn_file = _path(g["chip"], "attention", *g["attn"], "generation_attention_perf.parquet")
        if attn_file.exists():
            fit = fit_decode_attention(pd.read_parquet(attn_file), bw, g["sms"][0])
            kernel = fit.pop("kernel")
            attn_samples += [(gid, *r[:5], f"{r[5] * 1e-3:.6e}") for r in fit.pop("sample")]
            entry["decode_attention"] = fit
            entry["decode_attention_source"] = f"{_rel(attn_file)} (kernel {kernel})"
            print(f"{gid} decode attention: {entry['decode_attention']}")
        ctx_file = _path(g["chip"], "attention", *g["attn"], "context_attention_perf.parquet")
        if ctx_file.exists():
            fit = fit_prefill_attention(pd.read_parquet(ctx_file), peaks["bf16"], g["sms"][0])
            kernel = fit.pop("kernel")
            entry["prefill_attention"] = fit
            entry["prefill_attention_source"] = f"{_rel(ctx_file)} (kernel {kernel})"
            print(f"{gid} prefill attention: {entry['prefill_attention']}")
        if g["nccl"]:
            nccl_file = _path(g["chip"], "comm", "nccl", g["nccl"], "nccl_perf.parquet")
            ar = fit_allreduce(pd.read_parquet(nccl_file))
            link_bw = hw.scale_up.bandwidth_bytes_per_s
            entry["allreduce"] = {
                str(n): {
                    "latency_us": round(a * 1e6, 2),
                    "bandwidth_share": round(min(b / link_bw, 1.0), 3),
                    "fit_median_error": round(e, 3),
                }
                for n, (a, b, e) in ar.items()
            }
            entry["allreduce_source"] = _rel(nccl_file)
            a2a = fit_allreduce(pd.read_parquet(nccl_file), "alltoall")
            entry["alltoall"] = {
                str(n): {
                    "latency_us": round(a * 1e6, 2),
                    "bandwidth_share": round(min(b / link_bw, 1.0), 3),
                    "fit_median_error": round(e, 3),
                }
                for n, (a, b, e) in a2a.items()
            }
            entry["alltoall_source"] = _rel(nccl_file)
            print(f"{gid} all-to-all: {entry['alltoall']}")
            a2a_file = _path(g["chip"], "comm", "trtllm", A2A_VERSION, "moe_a2a_perf.parquet")
            if a2a_file.exists():
                ep = fit_ep_alltoall(pd.read_parquet(a2a_file), link_bw)
                entry["ep_alltoall"] = {
                    str(n): {
                        "latency_us": round(a * 1e6, 2),
                        "bandwidth_share": round(b, 3),
                        "fit_median_error": round(e, 3),
                    }
                    for n, (a, b, e) in ep.items()
                }
                entry["ep_alltoall_source"] = (
                    f"{_rel(a2a_file)} (DeepEP low-latency fp8 dispatch + bf16 combine up to 256 "
                    "tokens per rank, high-throughput bf16 above; per call of a pair)"
                )
                print(f"{gid} DeepEP all-to-all: {entry['ep_alltoall']}")
            print(f"{gid} all-reduce: {entry['allreduce']}")
            by_engine, sources = {}, []
            for eng in ("vllm", "sglang", "trtllm"):
                files = sorted(
                    (DATA / g["chip"] / "comm" / eng).glob("*/custom_allreduce_perf.parquet"),
                    key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parent.name.split(".")],
                )
                if not files:
                    continue
                ar = fit_allreduce(pd.read_parquet(files[-1]))
                by_engine[eng] = {
                    str(n): {
                        "latency_us": round(a * 1e6, 2),
                        "bandwidth_share": round(min(b / link_bw, 1.0), 3),
                        "fit_median_error": round(e, 3),
                    }
                    for n, (a, b, e) in ar.items()
                }
                sources.append(_rel(files[-1]))
                print(f"{gid} {eng} custom all-reduce: {by_engine[eng]}")
            if by_engine:
                entry["engine_allreduce"] = by_engine
                entry["engine_allreduce_source"] = "; ".join(sources)
        if gid in MOE_CHIPS:
            moe, moe_files = fit_moe(cat, MOE_CHIPS[gid])
            entry["moe"] = {
                dtype: {
                    "eta_max": round(x[0], 3),
                    "m_half": round(x[1], 1),
                    "eta_memory": round(x[2], 3),
                    "eta_act": round(x[3], 3),
                    "latency_us": round(x[4] * 1e6, 2),
                    "fit_median_error": round(max(errs.values()), 3),
                    "rows": rows,
                }
                for dtype, (x, errs, rows) in moe.items()
            }
            entry["moe_source"] = (
                "; ".join(moe_files) + " (balanced routing; fp8 = fp8_block, 128x128 block scales)"
            )
            for dtype, (_, errs, _) in moe.items():
                print(f"{gid} MoE {dtype}: {entry['moe'][dtype]} median error per chip {errs}")
        groups_out.append(entry)
    write_yaml(groups_out)
    write_samples(samples)
    with (ROOT / "validation/kernel_decode_attention_sample.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "batch", "heads", "kv_heads", "head_dim", "kv_len", "measured_s"])
        w.writerows(attn_samples)
    # held-out siblings: the same engine's GEMMs measured on another chip of the generation, which
    # the curves (shares of the fitted chip's datasheet) predict against the sibling's datasheet
    with (ROOT / "validation/kernel_sibling_sample.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "hardware", "dtype", "m", "n", "k", "measured_s"])
        for gid, g in GROUPS.items():
            for chip, hw_id in g.get("siblings", []):
                df = pd.read_parquet(_path(chip, "gemm", *g["gemm"], "gemm_perf.parquet"))
                df = df[(df.n >= MIN_NK) & (df.k >= MIN_NK)]
                for raw, dtype in DTYPES.items():
                    d = df[df.gemm_dtype == raw]
                    if d.empty or dtype not in cat.accelerator(hw_id).peak_flops_per_s:
                        continue
                    for row in d.sample(min(len(d), 60), random_state=1).itertuples():
                        w.writerow(
                            [gid, hw_id, dtype, row.m, row.n, row.k, f"{row.latency * 1e-3:.6e}"]
                        )
    with (ROOT / "validation/kernel_prefill_gemms.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "dtype", "m", "n", "k", "measured_s"])
        for r in prefill_rows():
            w.writerow([*r[:5], f"{r[5]:.6e}"])
    plot(curves)


def write_yaml(groups: list[dict]) -> None:
    import yaml  # noqa: TID251 (writes the catalog file; reading stays in catalog.py)

    head = (
        "# Per-op kernel curves per GPU generation, fitted by validation/calibrate_kernels.py\n"
        f"# (`make calibrate`) on the measured kernel timings shipped in {PKG}.\n"
        "# Every figure is a share of the measured chip's own catalog peak / bandwidth, so a\n"
        "# member of the group uses it against its own datasheet. `borrowed_by`: accelerators\n"
        "# with no data of their own that use this group's curves (flagged in the output).\n"
        "# fit_median_error: median |model / measured - 1| over the rows fitted.\n"
        "# tile_m × tile_n, split_k_max, wave_latency_us: the GEMM's tile grid in waves over the\n"
        "# measured chip's sm_count SMs (tile_m 0: no grid); decode attention: per-stream cost,\n"
        "# split-KV pieces of split_kib and the per-block bandwidth (roofline/efficiency.py).\n"
        "# tile_rule: the library picks the tile per shape (roofline/tilerules.py), with a\n"
        "# per-wave cost wave_latency_us + wave_area_us per 128x128 of tile; quant_bytes: the\n"
        "# activations' quantisation pass timed with the GEMM (bytes per M*K value).\n"
        "# harness_l2_ratio, harness_l2_bytes: the collector timed copies of the weights that fit\n"
        "# in L2 on some rows, served that much faster (the measurement, never the runtime).\n"
    )
    body = yaml.safe_dump({"kernels": groups}, sort_keys=False, width=100)
    (ROOT / "hardware/kernels.yaml").write_text(head + body)


# Prefill GEMMs of a GPT-style layer (d = 4096, 4d FFN, MHA: qkv 3d, o, up 4d, down) whose exact
# shapes the measurement grid holds: the test checks their sums (tests/test_efficiency.py).
PREFILL_SHAPES = ((12288, 4096), (4096, 4096), (16384, 4096), (4096, 16384))
PREFILL_M = (512, 2048, 8192)


def prefill_rows() -> list[tuple]:
    rows = []
    for gid, g in GROUPS.items():
        df = pd.read_parquet(_path(g["chip"], "gemm", *g["gemm"], "gemm_perf.parquet"))
        for raw, dtype in DTYPES.items():
            for m in PREFILL_M:
                for n, k in PREFILL_SHAPES:
                    hit = df[(df.gemm_dtype == raw) & (df.m == m) & (df.n == n) & (df.k == k)]
                    if len(hit):
                        rows.append((gid, dtype, m, n, k, float(hit.latency.median()) * 1e-3))
    return rows


def write_samples(samples) -> None:
    with (ROOT / "validation/kernel_gemm_sample.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "dtype", "m", "n", "k", "measured_s"])
        for s in samples:
            w.writerow([s[0], s[1], int(s[2]), int(s[3]), int(s[4]), f"{s[5]:.6e}"])


def plot(curves) -> None:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "roofline"  # the same file on every run
    import matplotlib.pyplot as plt

    dtypes = ("bf16", "fp8", "fp4", "int8")
    fig, axes = plt.subplots(1, len(dtypes), figsize=(16, 4.2), sharey=True)
    m = np.unique(np.round(np.logspace(0, 4.5, 400)))
    n = k = 8192.0
    colors = dict(zip(GROUPS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for ax, dtype in zip(axes, dtypes, strict=True):
        for (gid, dt), (p, tile, peak, lg) in curves.items():
            if dt == dtype and isinstance(tile, str):  # a library's tile rule
                from roofline.efficiency import tile_shape, wave_quantisation

                c = GemmCurve(p[0], p[2], sm_count=GROUPS[gid]["sms"][0], tile_rule=tile)
                u, w = wave_quantisation(m, n, c)
                tm, tn = tile_shape(m, n, c)
                t_w = p[5] + p[6] * tm * tn / (128.0 * 128.0)
                shape = (1.0 + p[1] / (m + MMA_ROWS)) * (1.0 + p[4] / n)
                eta = 1.0 / (shape / (p[0] * u) + w * t_w * peak / (2.0 * m * n * k))
                ax.plot(m, eta, label=gid, color=colors[gid], lw=1)
            elif dt == dtype:
                eta_max, m_half, _, _, n_half, t_w = p
                u, w = waves(m, n, tile[3], *tile[:3])
                if lg[0]:
                    u = u * np.where(m >= lg[0], lg[1], 1.0)
                shape = (1.0 + m_half / (m + MMA_ROWS)) * (1.0 + n_half / n)
                eta = 1.0 / (shape / (eta_max * u) + w * t_w * peak / (2.0 * m * n * k))
                ax.plot(m, eta, label=gid, color=colors[gid], lw=1)
        ax.set_xscale("log")
        ax.set_title(f"{dtype} GEMM, N = K = 8192", fontsize=9)
        ax.set_xlabel("M (tokens in the GEMM)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("compute-side share of dense peak (tile grid, waves, knee)")
    fig.suptitle(f"Fitted on {PKG} measured GEMM latencies", fontsize=9)
    fig.tight_layout()
    fig.savefig(ROOT / "docs/kernel_efficiency.svg", metadata={"Date": None})


if __name__ == "__main__":
    main()

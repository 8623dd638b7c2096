# ruff: noqa: C408
"""Fit the per-op kernel curves of roofline/efficiency.py to measured kernel timings.

Data: NVIDIA's aiconfigurator-core 0.12.0 (Apache-2.0), which ships measured kernel latencies as
parquet files under aiconfigurator_core/systems/data/<chip>/<op>/<engine>/<version>/. Run on demand
with `make calibrate` (the `calibrate` extra: aiconfigurator-core, pyarrow, pandas, scipy,
matplotlib); roofline never imports this package. Writes
- hardware/kernels.yaml: curve parameters per kernel group (a GPU generation), with the file and
  package version every figure came from;
- validation/kernel_gemm_sample.csv: a sample of the measured GEMMs the curves were fitted on
  (tests/test_efficiency.py checks the model reproduces them, without the package);
- docs/kernel_efficiency.svg: GEMM efficiency against M per dtype and group.

Fitted forms (see roofline/efficiency.py for the formulas and their sources):
- GEMM: t = t0 + max(F·(1 + M½/(M+16))·(1 + N½/N) / (P·η_max), Q / (W·η_mem)) per dtype;
- weight-only GEMM: the 16-bit curve plus an ALU term ops·N·K·max(1, M/128) / P_fp32;
- decode attention: t = t0 + rows·t_row + KV·(1 + S½/S) / (W·η_attn), fitted on cache-cold calls;
- all-reduce: t = α + 2(n−1)/n · bytes / B_bus, α and B_bus per GPU count (NCCL, and each
  engine's own custom all-reduce); all-to-all: t = α + (n−1)/n · bytes / B (NCCL).
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
        gemm=("vllm", "0.24.0"),
        attn=("vllm", "0.24.0"),
        nccl=None,
        members=["nvidia-l40s"],
        borrowers=["nvidia-l4"],
    ),
}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "sq": "int8"}
WEIGHT_ONLY = {"int8_wo": ("int8", 1.0), "int4_wo": ("int4", 0.5)}  # bytes per weight
ACT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5, "int8": 1.0}
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5625, "int8": 1.0}  # nvfp4: 4 bit + 1/16 scale


def _path(chip: str, op: str, engine: str, version: str, name: str) -> Path:
    return DATA / chip / op / engine / version / name


def _rel(p: Path) -> str:
    return f"{PKG}: aiconfigurator_core/systems/data/{p.relative_to(DATA)}"


def gemm_model(params, m, n, k, peak, bw, b_w, b_a):
    """t = t0 + max(2MNK(1 + M½/(M+16))(1 + N½/N)/(P·η_max), (NK·b_w + M(N+K)·b_a)/(W·η_mem))."""
    eta_max, m_half, eta_mem, t0, n_half = params
    t_c = 2.0 * m * n * k * (1.0 + m_half / (m + MMA_ROWS)) * (1.0 + n_half / n) / (peak * eta_max)
    t_m = (n * k * b_w + m * (n + k) * b_a) / (bw * eta_mem)
    return t0 + np.maximum(t_c, t_m)


def fit_gemm(df, peak, bw, b_w, b_a):
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    t = df.latency.to_numpy(float) * 1e-3

    def resid(x):
        p = (x[0], np.exp(x[1]), x[2], np.exp(x[3]), np.exp(x[4]))
        return np.log(gemm_model(p, m, n, k, peak, bw, b_w, b_a) / t)

    starts = [  # a few starting points: the max() makes the loss surface non-convex
        [eta, np.log(mh), em, np.log(5e-6), np.log(256.0)]
        for eta in (0.5, 0.8)
        for mh in (16.0, 128.0, 512.0)
        for em in (0.6, 0.85)
    ]
    fits = [
        least_squares(resid, x0, bounds=([0.05, 0, 0.05, -16, 0], [1, 9, 1, -8, 10]))
        for x0 in starts
    ]
    x = min(fits, key=lambda f: f.cost).x
    params = (
        float(x[0]),
        float(np.exp(x[1])),
        float(x[2]),
        float(np.exp(x[3])),
        float(np.exp(x[4])),
    )
    err = np.abs(np.exp(resid(x)) - 1.0)
    return params, float(np.median(err))


def fit_weight_only(df, base, peak, bw, b_w, p_alu):
    """ALU ops per weight element per M tile, the bandwidth share and the kernel latency, with the
    16-bit curve's compute parameters (η_max, M½)."""
    m, n, k = (df[c].to_numpy(float) for c in ("m", "n", "k"))
    t = df.latency.to_numpy(float) * 1e-3
    eta_max, m_half, _, _, n_half = base

    def model(x):
        ops, eta_mem, log_t0 = x
        p = (eta_max, m_half, eta_mem, np.exp(log_t0), n_half)
        core = gemm_model(p, m, n, k, peak, bw, b_w, 2.0)
        return core + ops * n * k * np.maximum(1.0, m / M_TILE) / p_alu

    r = least_squares(
        lambda x: np.log(model(x) / t),
        [2.0, 0.6, np.log(1e-5)],
        bounds=([0, 0.05, -16], [50, 1, -8]),
    )
    err = np.abs(model(r.x) / t - 1.0)
    return float(r.x[0]), float(r.x[1]), float(np.exp(r.x[2])), float(np.median(err))


def fit_prefill_attention(df, peak):
    """Causal flash attention over s tokens: F = 2·b·H·d·s(s+1); t = t0 + F(1 + S½/s)/(P·η_max)
    (short sequences fill few tiles per head), bf16 KV, full attention."""
    d = df[df.kv_cache_dtype == "bfloat16"]
    if "window_size" in d:
        d = d[d.window_size == 0]
    seq = d.isl.to_numpy(float)
    flops = (2.0 * d.batch_size * d.num_heads * d.head_dim * d.isl * (d.isl + 1)).to_numpy(float)
    t = d.latency.to_numpy(float) * 1e-3
    keep = seq >= 16  # a one-token "prefill" is a decode call

    def resid(x):
        model = np.exp(x[2]) + flops * (1.0 + np.exp(x[1]) / seq) / (peak * x[0])
        return np.log(model / t)[keep]

    fits = [
        least_squares(resid, [0.6, np.log(sh), np.log(1e-5)], bounds=([0.05, 0, -16], [1, 12, -7]))
        for sh in (100.0, 1000.0)
    ]
    r = min(fits, key=lambda f: f.cost)
    err = np.abs(np.exp(resid(r.x)) - 1.0)
    return {
        "eta_max": round(float(r.x[0]), 3),
        "s_half": round(float(np.exp(r.x[1])), 1),
        "latency_us": round(float(np.exp(r.x[2])) * 1e6, 2),
        "fit_median_error": round(float(np.median(err)), 3),
        "rows": int(keep.sum()),
    }


def fit_decode_attention(df, bw):
    """t = t0 + KV bytes/(W·η) for bf16 KV, full attention (no window)."""
    d = df[df.kv_cache_dtype == "bfloat16"]
    if "window_size" in d:
        d = d[d.window_size == 0]
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

    def resid(x):
        mem = kv_bytes * (1.0 + np.exp(x[3]) / streams) / (bw * x[0])
        return np.log((np.exp(x[1]) + rows * np.exp(x[2]) + mem) / t)

    r = least_squares(
        resid,
        [0.7, np.log(1e-5), np.log(1e-8), 0.0],
        bounds=([0.05, -16, -25, -5], [1, -8, -12, 8]),
    )
    err = np.abs(np.exp(resid(r.x)) - 1.0)
    return (
        float(r.x[0]),
        float(np.exp(r.x[1])),
        float(np.exp(r.x[2])),
        float(np.exp(r.x[3])),
        float(np.median(err)),
        len(d),
    )


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


def main() -> None:
    cat = load_catalog()
    groups_out = []
    samples = []
    curves = {}
    rng = np.random.default_rng(0)
    for gid, g in GROUPS.items():
        hw = cat.accelerator(g["hw"])
        peaks, bw = dict(hw.peak_flops_per_s), hw.memory_bandwidth_bytes_per_s
        entry: dict = {"id": gid, "accelerators": g["members"], "borrowed_by": g["borrowers"]}
        gemm_file = _path(g["chip"], "gemm", *g["gemm"], "gemm_perf.parquet")
        df = pd.read_parquet(gemm_file)
        df = df[(df.n >= MIN_NK) & (df.k >= MIN_NK)]
        gemm = {}
        for raw, dtype in DTYPES.items():
            d = df[df.gemm_dtype == raw]
            if d.empty or dtype not in peaks:
                continue
            params, med = fit_gemm(d, peaks[dtype], bw, WEIGHT_BYTES[dtype], ACT_BYTES[dtype])
            gemm[dtype] = {
                "eta_max": round(params[0], 3),
                "m_half": round(params[1], 1),
                "n_half": round(params[4], 1),
                "eta_memory": round(params[2], 3),
                "latency_us": round(params[3] * 1e6, 2),
                "fit_median_error": round(med, 3),
                "rows": len(d),
            }
            curves[(gid, dtype)] = params
            pick = d.sample(min(len(d), 60), random_state=int(rng.integers(1 << 30)))
            for row in pick.itertuples():
                samples.append((gid, dtype, row.m, row.n, row.k, row.latency * 1e-3))
            print(f"{gid} {dtype}: {gemm[dtype]}")
        if "bf16" in gemm:
            gemm["fp16"] = dict(gemm["bf16"])
        entry["gemm"] = gemm
        entry["gemm_source"] = _rel(gemm_file)
        wo_file = gemm_file
        wdf = pd.read_parquet(wo_file)
        wdf = wdf[(wdf.n >= MIN_NK) & (wdf.k >= MIN_NK)]
        wo = {}
        for raw, (name, b_w) in WEIGHT_ONLY.items():
            d = wdf[wdf.gemm_dtype == raw]
            if d.empty:
                continue
            ops, eta_mem, t0, med = fit_weight_only(
                d, curves[(gid, "bf16")], peaks["bf16"], bw, b_w, peaks["fp32"]
            )
            wo[name] = {
                "alu_ops_per_weight": round(ops, 2),
                "eta_memory": round(eta_mem, 3),
                "latency_us": round(t0 * 1e6, 2),
                "fit_median_error": round(med, 3),
                "rows": len(d),
            }
            print(f"{gid} weight-only {name}: {wo[name]}")
        if wo:
            entry["weight_only"] = wo
            entry["weight_only_source"] = _rel(wo_file)
        attn_file = _path(g["chip"], "attention", *g["attn"], "generation_attention_perf.parquet")
        if attn_file.exists():
            fit = fit_decode_attention(pd.read_parquet(attn_file), bw)
            eta, t0, t_row, s_half, med, rows = fit
            entry["decode_attention"] = {
                "eta_memory": round(eta, 3),
                "latency_us": round(t0 * 1e6, 2),
                "per_query_head_ns": round(t_row * 1e9, 3),
                "streams_half": round(s_half, 2),
                "fit_median_error": round(med, 3),
                "rows": rows,
            }
            entry["decode_attention_source"] = _rel(attn_file)
            print(f"{gid} decode attention: {entry['decode_attention']}")
        ctx_file = _path(g["chip"], "attention", *g["attn"], "context_attention_perf.parquet")
        if ctx_file.exists():
            entry["prefill_attention"] = fit_prefill_attention(
                pd.read_parquet(ctx_file), peaks["bf16"]
            )
            entry["prefill_attention_source"] = _rel(ctx_file)
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
        groups_out.append(entry)
    write_yaml(groups_out)
    write_samples(samples)
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
    m = np.logspace(0, 4.5, 200)
    colors = dict(zip(GROUPS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for ax, dtype in zip(axes, dtypes, strict=True):
        for (gid, dt), (eta_max, m_half, _, _, n_half) in curves.items():
            if dt == dtype:
                eta = eta_max / (1.0 + m_half / (m + MMA_ROWS)) * 8192 / (8192 + n_half)
                ax.plot(m, eta, label=gid, color=colors[gid])
        ax.set_xscale("log")
        ax.set_title(f"{dtype} GEMM, N = 8192", fontsize=9)
        ax.set_xlabel("M (tokens in the GEMM)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("η = η_max / (1 + M½/(M+16)) · N/(N+N½), share of dense peak")
    fig.suptitle(f"Fitted on {PKG} measured GEMM latencies", fontsize=9)
    fig.tight_layout()
    fig.savefig(ROOT / "docs/kernel_efficiency.svg", metadata={"Date": None})


if __name__ == "__main__":
    main()

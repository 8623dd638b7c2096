"""What validation/calibrate_kernels.py writes besides the fits' printout: hardware/kernels.yaml,
the measured samples the tests check the model against (validation/kernel_*.csv) and
docs/kernel_efficiency.svg.
"""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd

from roofline.timing.gemm import GemmCurve
from validation.kernel_data import DTYPES, GROUPS, MMA_ROWS, PKG, ROOT, data_path, static_scale_rows
from validation.kernel_gemm import waves


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
        "# split-KV pieces of split_kib and the per-block bandwidth (roofline/timing/gemm.py).\n"
        "# tile_rule: the library picks the tile per shape (roofline/timing/gemm.py), with a\n"
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
        df = pd.read_parquet(data_path(g["chip"], "gemm", *g["gemm"], "gemm_perf.parquet"))
        df = static_scale_rows(df, g["chip"], *g["gemm"])  # TensorRT-LLM fp8: static scale
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
                from roofline.timing.gemm import tile_shape, wave_quantisation

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

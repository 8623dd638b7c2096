"""Fit the collective curves of hardware/links.yaml (PCIe, xGMI, InfiniBand): per GPU count n,
t = α + f(n) · M / B with f = 2(n−1)/n for an all-reduce and (n−1)/n for an all-to-all, fitted in
log space (least squares on log(model / measured)), as validation/calibrate_kernels.py fits the
NVLink all-reduce; the share printed is B over the measured platform's catalog link bandwidth.

Sources:
- PCIe: aiconfigurator-core==0.12.0 nccl_perf.parquet of the L40S (NCCL 2.27.3, PCIe Gen4, 32 GB/s)
  and the RTX PRO 6000 server (NCCL 2.29.2, PCIe Gen5, 64 GB/s); needs the `calibrate` extra
  (pandas, pyarrow, scipy, aiconfigurator-core), skipped without it.
- xGMI: AMD ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X"
  (2 Mar 2025), rccl-tests all_reduce_perf -G 1 on 8 MI300X, out-of-place times (typed below).
- InfiniBand NDR: NVIDIA/nccl-tests issue #232, 2 nodes x 1 H100, all_reduce_perf (typed below).

Run `python validation/calibrate_links.py`; it prints the figures to copy into hardware/links.yaml.
"""

from __future__ import annotations

import numpy as np

# (bytes, out-of-place µs): the blog's graph-mode table, 16 KB (one token of a 8192-wide model in
# 16 bits) to 128 MB (a long prefill's activations), the range TP all-reduces take
XGMI_MI300X_8 = [
    (16384, 8.71),
    (32768, 9.05),
    (65536, 9.14),
    (131072, 9.51),
    (262144, 10.26),
    (524288, 14.26),
    (1048576, 19.40),
    (2097152, 35.03),
    (4194304, 51.83),
    (8388608, 83.74),
    (16777216, 149.1),
    (33554432, 243.4),
    (67108864, 427.9),
    (134217728, 795.3),
]
XGMI_BW = 448e9  # hardware/amd-mi300x.yaml scale_up.bandwidth_gb_s
IB_NDR_2 = [
    (2097152, 113.2),
    (4194304, 154.4),
    (8388608, 231.4),
    (16777216, 420.5),
    (33554432, 812.3),
]
IB_BW = 50e9  # hardware/tiers/infiniband-ndr.yaml
PCIE = {  # aiconfigurator chip dir -> (NCCL version, catalog link bandwidth)
    "l40s": ("2.27.3", 32e9),
    "rtx_pro_6000_server": ("2.29.2", 64e9),
}


def fit(size: np.ndarray, t_s: np.ndarray, factor: float) -> tuple[float, float, float]:
    """(α seconds, B bytes/s, median |model/measured − 1|) of t = α + factor·M/B."""
    from scipy.optimize import least_squares

    def resid(x):
        return np.log((np.exp(x[0]) + factor * size / np.exp(x[1])) / t_s)

    r = least_squares(resid, [np.log(1e-5), np.log(1e11)])
    err = float(np.median(np.abs(np.exp(resid(r.x)) - 1.0)))
    return float(np.exp(r.x[0])), float(np.exp(r.x[1])), err


def _print(name: str, n: int, alpha: float, bw: float, link: float, err: float, rows: int) -> None:
    print(
        f"{name} n={n}: latency_us {alpha * 1e6:.2f}, bandwidth_share {bw / link:.3f}, "
        f"fit_median_error {err:.3f}, rows {rows}"
    )


def main() -> None:
    s, t = np.array(XGMI_MI300X_8, dtype=float).T
    a, b, e = fit(s, t * 1e-6, 2 * 7 / 8)
    _print("xgmi allreduce", 8, a, b, XGMI_BW, e, len(s))
    s, t = np.array(IB_NDR_2, dtype=float).T
    a, b, e = fit(s, t * 1e-6, 1.0)
    _print("infiniband allreduce", 2, a, b, IB_BW, e, len(s))
    try:
        import aiconfigurator_core
        import pandas as pd
    except ImportError:
        print("PCIe: aiconfigurator-core / pandas not installed (pip install -e '.[calibrate]')")
        return
    from pathlib import Path

    data = Path(next(iter(aiconfigurator_core.__path__))) / "systems" / "data"
    for chip, (version, link) in PCIE.items():
        df = pd.read_parquet(data / chip / "comm" / "nccl" / version / "nccl_perf.parquet")
        for op, key in (("all_reduce", "allreduce"), ("alltoall", "alltoall")):
            d = df[(df.op_name == op) & (df.nccl_dtype == "half")]
            for n, g in d.groupby("num_gpus"):
                size = g.message_size.to_numpy(float) * 2.0  # half elements -> bytes
                factor = (2.0 if op == "all_reduce" else 1.0) * (n - 1) / n
                a, b, e = fit(size, g.latency.to_numpy(float) * 1e-3, factor)
                _print(f"pcie {chip} {key}", int(n), a, b, link, e, len(g))


if __name__ == "__main__":
    main()

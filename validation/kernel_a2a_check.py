"""Which byte count times DeepEP's measured all-to-all (issue 34, the MoE exchange under expert
parallelism): every top-k copy of a token (hardware/kernels.yaml ep_alltoall, as
roofline/step/ops.py counts it) or, for the high-throughput ("normal", prefill) kernels, one copy
per destination rank (validation/kernel_comm.py ranks_per_token, DeepEP's own count).

Each kernel family is fitted alone (as validation/calibrate_kernels.py does: ep_alltoall the
low-latency kernels, decode's; ep_alltoall_prefill the normal ones, prefill's), the normal
kernels under both conventions, on B200's 8-rank tables (the only GPU count TensorRT-LLM's
DeepEP was measured at on an HGX node) and checked out of sample on GB200's 4-rank tables (the
same NVLink 5 at the same catalog bandwidth: hardware/nvidia-gb200.yaml), the GPU count the
attention-DP 4 runs take; then how the high-throughput pair grows with the hidden width (the
bytes) at a fixed token count. Nothing here is written to the catalog.

Run with the calibrate extra (aiconfigurator-core): python validation/kernel_a2a_check.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.catalog.load import load_catalog  # noqa: E402
from validation.kernel_comm import (  # noqa: E402
    A2A_VERSION,
    LOW_LATENCY,
    NORMAL,
    ep_alltoall_pairs,
    ep_alltoall_time_s,
    fit_ep_alltoall,
)
from validation.kernel_data import data_path  # noqa: E402

FIT = ("b200_sxm", "nvidia-b200-hgx")  # 8 ranks
CHECK = ("gb200", "nvidia-gb200")  # 4 ranks
TOKENS = 8192  # tokens a rank: one 8,192-token prompt a rank, the prefill of the 8k/1k rows


def _table(chip: str) -> pd.DataFrame:
    return pd.read_parquet(data_path(chip, "comm", "trtllm", A2A_VERSION, "moe_a2a_perf.parquet"))


def _error(pairs: pd.DataFrame, alpha: float, share: float, bw: float) -> str:
    e = ep_alltoall_time_s(pairs, alpha, share, bw) / (pairs.t.to_numpy(float) * 1e-6) - 1.0
    return f"{np.median(np.abs(e)):.1%} ({np.median(e):+.1%}) n={len(e)}"


def main() -> None:
    cat = load_catalog()
    bw = cat.accelerator(FIT[1]).scale_up.bandwidth_bytes_per_s
    assert cat.accelerator(CHECK[1]).scale_up.bandwidth_bytes_per_s == bw
    fit_df, check_df = _table(FIT[0]), _table(CHECK[0])
    for kernel, per_rank in ((LOW_LATENCY, False), (NORMAL, False), (NORMAL, True)):
        label = "one copy per rank" if per_rank else "every top-k copy"
        [(n, (alpha, share, _))] = fit_ep_alltoall(fit_df, bw, per_rank, kernel).items()
        line = f"{kernel}, {label}: {FIT[0]} {n} ranks α {alpha * 1e6:.1f} µs, share {share:.3f}"
        for chip, df in ((FIT[0], fit_df), (CHECK[0], check_df)):
            pairs = ep_alltoall_pairs(df, per_rank)
            line += f"; {chip} {_error(pairs[pairs.comm_backend == kernel], alpha, share, bw)}"
        print(line)
    print(f"normal-kernel pair (dispatch + combine, µs) at {TOKENS} tokens a rank, top-8:")
    for chip in ("h200_sxm", FIT[0], CHECK[0]):
        d = _table(chip)
        d = d[(d.comm_backend == NORMAL) & (d.comm_dtype == "bfloat16")]
        d = d[(d.num_tokens == TOKENS) & (d.topk == 8) & (d.num_experts == 256)]
        t = d.groupby("hidden_size").latency.sum()
        ratio = t.iloc[-1] / t.iloc[0]
        widths = t.index[-1] / t.index[0]
        pairs = ", ".join(f"d={h} {v:.0f}" for h, v in t.items())
        print(f"  {chip} ({int(d.ep_size.iloc[0])} ranks): {pairs}; x{ratio:.2f} for x{widths:.2f}")


if __name__ == "__main__":
    main()

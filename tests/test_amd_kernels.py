"""The CDNA 3 (MI300X / MI325X) GEMM curve against AMD's measured GEMMs, and the engine fit that
no single hardware family may dominate.

Measured figures are transcribed in validation/kernel_cdna3_gemm.csv: AMD's AITER tuner timings
(ROCm/aiter aiter/configs/a8w8_blockscale_tuned_gemm.csv, cu_num 304 rows), hipBLASLt's
16-bit GEMVs on MI300X (ROCm/rocm-libraries pull request #12329), and plain hipBLASLt FP8/BF16
GEMMs (AMD's Max-Achievable FLOPs blog, Azure's ND MI300X v5 results). The shares below are
worked out by hand from those rows and the MI300X datasheet, never printed by the model."""

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.case import Case
from roofline.catalog.load import load_catalog
from roofline.timing.gemm import compute_efficiency, gemm_time_s
from validation.crossval import Base, fit

ROOT = Path(__file__).resolve().parent.parent
CAT = load_catalog()
ENTRY = CAT.kernels["amd-cdna3"]
CURVE = ENTRY.kernels.gemm["fp8"]  # the fit on AITER's block-scaled FP8 GEMMs
# hipBLASLt's per-tensor FP8 GEMMs: the fit's shape at the plateau measured on its large GEMMs
# (validation/calibrate_amd_kernels.py prints 0.424; not adopted, ADOPT_PER_TENSOR says why)
TENSOR = replace(CURVE, eta_max=0.424)
MI300X = CAT.accelerator("amd-mi300x")
# bytes per (weight, activation) value: block-scaled FP8 (one FP32 scale per 128 x 128 block)
BYTES = {"fp8": (1.0 + 4.0 / 128**2, 1.0), "fp16": (2.0, 2.0)}
BLOCK_FIT = ("fp8", "fp16")  # the CSV's dtypes the block-scaled curve was fitted on


def _model_us(dtype: str, m: float, n: float, k: float) -> float:
    b_w, b_a = BYTES[dtype]
    curve = CURVE if dtype == "fp8" else ENTRY.kernels.gemm["bf16"]
    t = gemm_time_s(
        2 * m * n * k,
        n * k * b_w + m * (n + k) * b_a,
        m,
        n,
        MI300X.peak(dtype),
        MI300X.memory_bandwidth_bytes_per_s,
        curve,
    )
    return float(t) * 1e6


def _errors() -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with (ROOT / "validation/kernel_cdna3_gemm.csv").open() as f:
        for r in csv.DictReader(f):
            if r["dtype"] not in BLOCK_FIT:
                continue
            t = _model_us(r["dtype"], float(r["m"]), float(r["n"]), float(r["k"]))
            out.setdefault(r["dtype"], []).append(abs(t / float(r["measured_us"]) - 1))
    return out


def test_cdna3_curve_reproduces_the_gemms_it_was_fitted_on():
    errs = _errors()
    assert {d: len(e) for d, e in errs.items()} == {"fp8": 110, "fp16": 14}
    everything = [e for es in errs.values() for e in es]
    assert np.median(everything) <= 0.10  # the bar: within 10% median per family
    assert abs(np.median(everything) - CURVE.fit_median_error) <= 0.01  # the fit's formula
    for dtype, es in errs.items():
        assert np.median(es) <= 0.12, dtype
    # one curve, written for both dtypes (each against its own datasheet peak)
    assert ENTRY.kernels.gemm["bf16"] == CURVE


def test_per_tensor_fp8_plateau_is_hipblaslt_measured_share():
    # hipBLASLt FP8 without block scales on MI300X: 8192^3 at 1159.23 TFLOPS (Azure ND MI300X v5,
    # 10,000 warm-up iterations) = 0.443 of the 2614.9 TFLOPS datasheet peak; AMD's MAF, 1273
    # TFLOPS at 4096 x 3648 x 32896 = 0.487. The per-tensor plateau's share at the large square
    # sits between them, well above the block-scaled kernels' 0.295 (AITER's 16384 x 7168 x 2304,
    # the hand-worked test above) that the catalog keeps
    share = float(compute_efficiency(8192.0, 8192.0, TENSOR))
    assert 0.40 <= share <= 0.50
    assert share > 1.3 * float(compute_efficiency(16384.0, 7168.0, CURVE))


def test_block_scaled_checkpoints_are_marked():
    # DeepSeek-R1 ships FP8 with 128x128 weight blocks (config.json weight_block_size): its
    # linears run block-scaled GEMMs (AITER's on ROCm); Llama 3.1 70B FP8 (per-tensor) does not.
    from roofline.cli.options import deployment
    from roofline.step.ops import prefill_ops

    for model, block in (("deepseek-r1", True), ("llama-3.1-70b", False)):
        m = CAT.model(model)
        ops = prefill_ops(m, MI300X, deployment(weights="fp8", tp=8, model=m), 1, 1024)
        assert {o.block_scaled for o in ops if o.kind == "matmul" and o.quantized} == {block}
    # a group with a block-scaled FP8 curve gives it to block-scaled GEMMs only; one without
    # (CDNA 3 as shipped, Hopper) keeps its FP8 curve for both
    both = replace(ENTRY.kernels, gemm={**ENTRY.kernels.gemm, "fp8_block": CURVE, "fp8": TENSOR})
    assert both.gemm_curve("fp8", block_scaled=True) is CURVE
    assert both.gemm_curve("fp8") is TENSOR
    for ks in (ENTRY.kernels, CAT.kernels["nvidia-hopper"].kernels):
        assert ks.gemm_curve("fp8", block_scaled=True) is ks.gemm_curve("fp8")


def test_cdna3_plateau_matches_a_hand_worked_large_gemm():
    # M=16384, N=7168, K=2304 measured 701.16 us: F = 2*16384*7168*2304 = 541.17 GFLOP,
    # 541.17e9 / 701.16e-6 = 771.8 TFLOP/s (aiter's own tflops column: 771.82), which is
    # 771.8 / 2614.9 = 0.295 of the MI300X FP8 datasheet peak.
    assert float(compute_efficiency(16384.0, 7168.0, CURVE)) == pytest.approx(0.295, rel=0.15)


def test_cdna3_gemv_streams_three_quarters_of_hbm():
    # hipBLASLt M=1, N=13312, K=17792 (16 bit) measured 118.96 us: weights
    # 13312*17792*2 B = 473.69 MB, 473.69e6 / 118.96e-6 = 3.98 TB/s = 0.751 of 5.3 TB/s.
    assert CURVE.eta_memory == pytest.approx(0.751, abs=0.05)
    assert _model_us("fp16", 1, 13312, 17792) == pytest.approx(118.96, rel=0.10)


def test_cdna3_curves_attach_to_cdna3_chips_only():
    for hw_id in ("amd-mi300x", "amd-mi325x"):
        eff = CAT.accelerator(hw_id).efficiency
        assert eff.kernels is not None and eff.kernels.id == "amd-cdna3"
        assert not eff.kernels.borrowed
    # MI355X is CDNA 4 (256 CUs, other MFMA rates): no data here, the family's scalar shares
    assert CAT.accelerator("amd-mi355x").efficiency.kernels is None


def _base(family: str, measured_ms: float, t_decode_s: float, case: Case) -> Base:
    c = replace(case, id=f"{family}-{measured_ms}", metric="tpot_ms", measured=measured_ms)
    return Base(c, family, family, "vllm", "decode", True, False, 1, 1,
                0.0, t_decode_s, 1.0, 1.0, 1.0, measured_ms)  # fmt: skip


def test_engine_cpu_fit_weighs_every_family_the_same():
    # Ten cases of family A at 10 ms (no CPU time wanted) and one of family B at 12.1 ms, all
    # with a 10 ms GPU step. Each family's mean log^2 error counts once, so the optimum solves
    # log((10 + c)/10) = -log((10 + c)/12.1): (10 + c)^2 = 10 * 12.1 = 121, c = 1.0 ms.
    # (Weighted by rows instead, 10:1, it would sit at 10^(10/11) * 12.1^(1/11) - 10 = 0.175 ms.)
    case = Case("x", "llama-3.1-8b", "nvidia-h100-sxm", 1, 1, 1, 1, "bf16", "bf16", 1, 128,
                128, "tpot_ms", 10.0, "test")  # fmt: skip
    bases = [_base("fam-a", 10.0, 10e-3, case) for _ in range(10)]
    bases.append(_base("fam-b", 12.1, 10e-3, case))
    params = fit(bases, {"compute": 0.8, "memory": 0.8})
    assert params["cpu:vllm"] == pytest.approx(1.0e-3, abs=13e-6)  # the 25 us grid


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 65536),
    n=st.integers(64, 65536),
    k=st.integers(64, 32768),
)
def test_per_tensor_fp8_between_block_scaled_and_the_speed_of_light(m, n, k):
    # the per-tensor curve differs from the block-scaled one only by a higher plateau: never
    # slower than the block-scaled GEMM of the same shape, never under the roofline's ideal
    # (F / peak, Q / bandwidth)
    f, q = 2.0 * m * n * k, float(n * k + m * (n + k))
    peak, bw = MI300X.peak("fp8"), MI300X.memory_bandwidth_bytes_per_s
    plain = float(gemm_time_s(f, q, m, n, peak, bw, TENSOR))
    block = float(gemm_time_s(f, q, m, n, peak, bw, CURVE))
    assert plain <= block * (1 + 1e-12)
    assert plain >= max(f / peak, q / bw) * (1 - 1e-12)

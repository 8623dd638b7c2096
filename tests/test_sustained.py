"""Power-limited boards (hardware.Accelerator.sustained_compute_ratio): the expected time runs
compute at the sustained share of the datasheet peak; the ideal never moves."""

from __future__ import annotations

import statistics
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import Catalog, load_catalog
from roofline.domain.errors import CatalogError
from roofline.domain.precision import kv_format, weight_format
from roofline.step.ops import Deployment
from roofline.step.optime import kernel_view
from roofline.step.phases import request
from roofline.timing.gemm import gemm_time_s

CAT = load_catalog()
DEP = Deployment(weights=weight_format("bf16"), kv=kv_format("bf16"))
T4_DEP = Deployment(weights=weight_format("fp16"), kv=kv_format("fp16"))


def _square_gemm_tflops(hw_id: str, dtype: str, n: int) -> float:
    """What the kernel curves give an N×N×N GEMM at the datasheet peak (full clock): 2N³ FLOPs,
    three N×N 16-bit matrices moved."""
    hw = CAT.accelerator(hw_id)
    view = kernel_view(hw.efficiency, dtype)
    f, q = 2.0 * n**3, 6.0 * n * n
    w = hw.memory_bandwidth_bytes_per_s
    t = float(gemm_time_s(f, q, float(n), float(n), hw.peak(dtype), w, view.base, 1.0, 1.0))
    return f / t / 1e12


def test_l4_ratio_reproduces_the_published_sustained_gemms():
    """github.com/zzc0721/torch-performance-test-data/issues/120 (NVIDIA L4, torch.matmul):
    FP16 53.02 / 53.80 / 52.47, BF16 54.91 / 59.40 / 56.90 TFLOPS at N = 4096 / 8192 / 10240.
    The catalog ratio is the median of measured over the borrowed curves at full clock."""
    published = {
        ("fp16", 4096): 53.02,
        ("fp16", 8192): 53.80,
        ("fp16", 10240): 52.47,
        ("bf16", 4096): 54.91,
        ("bf16", 8192): 59.40,
        ("bf16", 10240): 56.90,
    }
    ratios = [v / _square_gemm_tflops("nvidia-l4", d, n) for (d, n), v in published.items()]
    assert CAT.accelerator("nvidia-l4").sustained_compute_ratio == pytest.approx(
        statistics.median(ratios), abs=0.01
    )


def test_t4_ratio_reproduces_the_nvidia_forum_figure():
    """forums.developer.nvidia.com/t/264462: cuBLAS FP16 4096³ on a T4 runs at about 24 TFLOPS
    (power capped at 70 W)."""
    ratio = 24.0 / _square_gemm_tflops("nvidia-t4", "fp16", 4096)
    assert CAT.accelerator("nvidia-t4").sustained_compute_ratio == pytest.approx(ratio, abs=0.01)


def test_gaudi3_ratio_is_its_matmul_share_over_gaudi2s():
    """stas00/ml-engineering compute/accelerator/README.md @744d01e, Maximum Achievable Matmul
    FLOPS table (graph mode, PT_HPU_LAZY_MODE=1): Gaudi 3 1,243.0 BF16 / 1,289.5 FP8 TFLOPS
    against a 1,835 datasheet; Gaudi 2 418.7 of 432 BF16, 826.5 of 865 FP8. Both run on the
    intel-gaudi family's shares, so Gaudi 3's ratio is its share over Gaudi 2's, by hand:
    BF16 0.6774 / 0.9692 = 0.699, FP8 0.7027 / 0.9555 = 0.736, mean 0.717."""
    bf16 = (1243.0 / 1835) / (418.7 / 432)
    fp8 = (1289.5 / 1835) / (826.5 / 865)
    assert CAT.accelerator("intel-gaudi3").sustained_compute_ratio == pytest.approx(
        (bf16 + fp8) / 2, abs=0.01
    )
    assert CAT.accelerator("intel-gaudi2").sustained_compute_ratio == 1.0
    # the shipping MME clock alone (1,600 of the 1,750 MHz the datasheet needs) explains less
    assert CAT.accelerator("intel-gaudi3").sustained_compute_ratio < 1600 / 1750


def test_boards_without_a_published_figure_run_at_the_datasheet_peak():
    for hw_id in ("nvidia-h100-sxm", "nvidia-a100-80gb-sxm", "nvidia-l40s", "amd-mi300x"):
        assert CAT.accelerator(hw_id).sustained_compute_ratio == 1.0


@settings(max_examples=40, deadline=None)
@given(
    ratio=st.floats(0.2, 1.0),
    batch=st.integers(1, 64),
    prompt=st.integers(1, 8192),
    output=st.integers(1, 512),
)
def test_ratio_moves_the_expected_time_never_the_ideal(ratio, batch, prompt, output):
    """Lower sustained clock: the ideal is the same object of arithmetic (datasheet peak), the
    expected time only grows, and it stays at or above the ideal."""
    hw = CAT.accelerator("nvidia-l4")
    model = CAT.model("llama-3.1-8b")
    full = request(model, replace(hw, sustained_compute_ratio=1.0), DEP, batch, prompt, output)
    low = request(model, replace(hw, sustained_compute_ratio=ratio), DEP, batch, prompt, output)
    for a, b in ((full.prefill, low.prefill), (full.decode, low.decode)):
        assert a.t_ideal_s == b.t_ideal_s
        assert b.t_expected_s >= a.t_expected_s * (1 - 1e-12)
        assert b.t_expected_s >= b.t_ideal_s


def test_compute_bound_prefill_slows_by_the_ratio_and_decode_barely():
    """A 4096-token prefill of an 8B model on an L4 is compute-bound: its GEMM time scales by
    1/ratio, so the step (less its fixed host costs) slows by nearly 1/0.74 = 1.35; a batch-1
    decode step streams the weights and stays within 3%."""
    hw = CAT.accelerator("nvidia-l4")
    model = CAT.model("llama-3.1-8b")
    dep = Deployment(weights=weight_format("fp8"), kv=kv_format("fp8"))
    full = request(model, replace(hw, sustained_compute_ratio=1.0), dep, 1, 4096, 2)
    low = request(model, hw, dep, 1, 4096, 2)
    slow = (low.prefill.t_expected_s - low.prefill.t_overhead_s) / (
        full.prefill.t_expected_s - full.prefill.t_overhead_s
    )
    assert 1.25 < slow <= 1.0 / 0.74 + 1e-9
    assert low.decode.t_expected_s / full.decode.t_expected_s < 1.03


def test_point_path_keeps_the_ratio(monkeypatch):
    """The one-point float path (optime, Python floats) gives, bit for bit, what the per-op path
    gives for a board with a ratio (the sustained peak is in both)."""
    from roofline.step import optime

    hw = CAT.accelerator("nvidia-t4")
    model = CAT.model("llama-3.1-8b")
    point = request(model, hw, T4_DEP, 8, 512, 32)
    monkeypatch.setattr(optime, "is_point", lambda ops, shape: False)
    general = request(model, hw, T4_DEP, np.array(8), np.array(512), np.array(32))
    for a, b in ((point.prefill, general.prefill), (point.decode, general.decode)):
        assert float(a.t_expected_s) == float(b.t_expected_s)
        assert float(a.t_ideal_s) == float(b.t_ideal_s)
        for x, y in zip(a.ops, b.ops, strict=True):
            assert float(x.t_expected_s) == float(y.t_expected_s), x.op.name


_ENTRY = """accelerators:
- id: test-gpu
  name: Test GPU
  vendor: test
  family: nvidia-datacenter
  memory: {capacity_gb: 10, bandwidth_tb_s: 1.0}
  dense_tflops: {bf16: 100}
  sparsity_2_4: false
  sustained_compute: RATIO
  source: "a test"
"""


@pytest.mark.parametrize(
    "value, message",
    [
        ('{ratio: 0, source: "a test"}', "must be in (0, 1]"),
        ('{ratio: 1.5, source: "a test"}', "must be in (0, 1]"),
        ("{ratio: 0.5}", "missing required key 'source'"),
    ],
)
def test_bad_sustained_entries_are_refused(tmp_path, value, message):
    (tmp_path / "x.yaml").write_text(_ENTRY.replace("RATIO", value))
    with pytest.raises(CatalogError) as e:
        Catalog().add_dir(tmp_path)
    assert message in str(e.value)


def test_a_sourced_ratio_loads(tmp_path):
    (tmp_path / "x.yaml").write_text(_ENTRY.replace("RATIO", '{ratio: 0.5, source: "a test"}'))
    cat = Catalog()
    cat.add_dir(tmp_path)
    hw = cat.accelerator("test-gpu")
    assert hw.sustained_compute_ratio == 0.5
    assert hw.expected_peak("bf16") == 0.5 * hw.peak("bf16")

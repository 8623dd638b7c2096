"""The NVIDIA unified-memory devices' efficiency families (hardware/families.yaml): which device
belongs where, the ideal decode step of a Spark llama.cpp case by hand, and the calibrated figures
against published llama.cpp measurements."""

import pytest

from roofline.domain.precision import weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode


def test_edge_devices_have_families_of_their_own(cat):
    assert cat.accelerator("dgx-spark").family == "nvidia-edge"
    assert cat.accelerator("jetson-thor").family == "nvidia-edge"
    assert cat.accelerator("jetson-orin").family == "nvidia-jetson-orin"
    for fam in ("nvidia-edge", "nvidia-jetson-orin"):
        eff = cat.families[fam].efficiency
        assert 0.2 <= eff.memory_weight_only <= 0.9  # calibrate.py's grid
        assert eff.kernels is None  # no kernel curves: the scalar shares are what runs


def test_spark_q8_decode_ideal_by_hand(cat):
    # Qwen2.5-7B (D 3584, 28 layers, 28 heads / 4 KV heads of 128, F 18944, vocab 152064):
    # per layer q,o 2·3584² + k,v 2·3584·512 + MLP 3·3584·18944 = 232,980,480 weights;
    # 28 layers + the untied head 152064·3584 = 7,068,450,816 weights at Q8_0's 8.5 bits
    # = 7.510 GB per token (the embedding is a gather of one row) -> 27.5 ms at 273 GB/s
    weights = 28 * (2 * 3584**2 + 2 * 3584 * 512 + 3 * 3584 * 18944) + 152064 * 3584
    t_ideal_s = weights * 8.5 / 8 / 273e9
    m, hw = cat.model("qwen2.5-7b"), cat.accelerator("dgx-spark")
    dep = Deployment(weights=weight_format("q8_0"))
    d = decode(m, hw, dep, 1, 16, engine="llamacpp")
    assert float(d.t_ideal_s) == pytest.approx(t_ideal_s, rel=0.02)


@pytest.mark.parametrize(
    ("model", "hw", "weights", "measured_tok_s", "band"),
    [
        # ggml-org/llama.cpp benches/dgx-spark.md: Qwen2.5-Coder-7B Q8_0 tg32 = 29.30 t/s
        ("qwen2.5-7b", "dgx-spark", "q8_0", 29.30, 0.10),
        # nvidia-holoscan/holohub #170: Llama 2 70B 4-bit on the Orin iGPU, 3.0 tok/s
        ("llama-2-70b", "jetson-orin", "q4_0", 3.0, 0.20),
    ],
)
def test_calibrated_decode_near_published(cat, model, hw, weights, measured_tok_s, band):
    m, a = cat.model(model), cat.accelerator(hw)
    d = decode(m, a, Deployment(weights=weight_format(weights)), 1, 64, engine="llamacpp")
    assert 1.0 / float(d.t_expected_s) == pytest.approx(measured_tok_s, rel=band)
    assert 1.0 / float(d.t_ideal_s) > measured_tok_s  # no measurement beats the speed of light

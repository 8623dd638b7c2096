"""Property tests (hypothesis) for the physics: monotonicity, linearity, bounds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.hardware import Efficiency
from roofline.domain.layout import Layout
from roofline.domain.precision import WEIGHT_FORMATS
from roofline.engines.engine import ENGINES
from roofline.step.memory import kv_bytes_per_sequence, max_batch, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill, request
from roofline.timing.roofline import arithmetic_intensity, bound, op_time_s

CAT = load_catalog()
MODELS = ["llama-3.1-8b", "deepseek-r1", "gemma-3-27b", "mixtral-8x7b", "gpt-oss-120b"]
positive = st.floats(min_value=1e3, max_value=1e15, allow_nan=False)
eta = st.floats(min_value=0.05, max_value=1.0)


@given(flops=positive, q=positive, extra=positive, peak=positive, bw=positive)
def test_time_never_decreases_with_more_bytes(flops, q, extra, peak, bw):
    assert op_time_s(flops, q + extra, peak, bw) >= op_time_s(flops, q, peak, bw)


@given(flops=positive, q=positive, peak=positive, bw=positive, factor=st.floats(1.0, 100.0))
def test_time_never_decreases_with_less_bandwidth(flops, q, peak, bw, factor):
    assert op_time_s(flops, q, peak, bw / factor) >= op_time_s(flops, q, peak, bw)


@given(flops=positive, q=positive, peak=positive, bw=positive)
def test_the_bound_names_the_term_that_sets_the_time(flops, q, peak, bw):
    verdict = bound(arithmetic_intensity(flops, q), peak / bw)
    binding = flops / peak if verdict == "compute" else q / bw
    assert float(op_time_s(flops, q, peak, bw)) == pytest.approx(binding, rel=1e-9)


def test_llama_8b_up_projection_on_h100_by_hand():
    # H100 SXM datasheet: 989.5 TFLOP/s dense BF16 (1,979 with sparsity), 3.35 TB/s HBM3:
    # ridge 989.5e12 / 3.35e12 = 295.4 FLOP/B. Llama-3.1-8B's up projection, 4096 × 14336 BF16
    # weights = 117,440,512 B.
    peak, bw = 989.5e12, 3.35e12
    # decode, one token: 2 × 4096 × 14336 = 117,440,512 FLOP over the weights: 1 FLOP/B
    f, q = 117_440_512, 117_440_512
    assert bound(arithmetic_intensity(f, q), peak / bw) == "memory"
    assert float(op_time_s(f, q, peak, bw)) == pytest.approx(35.057e-6, rel=1e-4)  # q / bw
    # prefill of 4096 tokens: 481,036,337,152 FLOP over weights + 4096 × 4096 × 2 B in +
    # 4096 × 14336 × 2 B out = 268,435,456 B: 1,792 FLOP/B
    f, q = 481_036_337_152, 268_435_456
    assert float(arithmetic_intensity(f, q)) == 1792.0
    assert bound(1792.0, peak / bw) == "compute"
    assert float(op_time_s(f, q, peak, bw)) == pytest.approx(486.14e-6, rel=1e-4)  # f / peak


@settings(max_examples=30, deadline=None)
@given(model=st.sampled_from(MODELS), t=st.integers(1, 100_000), k=st.integers(2, 8))
def test_kv_is_linear_in_context_without_windows(model, t, k):
    m = CAT.model(model)
    dep = Deployment()
    one, many = kv_bytes_per_sequence(m, dep, t), kv_bytes_per_sequence(m, dep, k * t)
    if all(g.window is None for g in m.layer_groups):
        assert np.isclose(many, k * one)
    else:  # windowed layers stop growing: never more than linear
        assert many <= k * one * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(model=st.sampled_from(MODELS), t=st.integers(1, 200_000), more=st.integers(0, 200_000))
def test_max_batch_never_increases_with_context(model, t, more):
    m, hw = CAT.model(model), CAT.accelerator("b200")
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], layout=Layout(tp=8))
    plan = plan_memory(m, hw, dep, ENGINES["vllm"])
    assert max_batch(plan, m, dep, t + more) <= max_batch(plan, m, dep, t)


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    batch=st.integers(1, 256),
    prompt=st.integers(1, 8192),
    output=st.integers(1, 8192),
    c=eta,
    m_=eta,
    overhead=st.floats(0, 1e-3),
)
def test_expected_is_never_faster_than_ideal(model, batch, prompt, output, c, m_, overhead):
    eff = Efficiency(compute=c, memory=m_, step_overhead_s=overhead, source="test")
    r = request(
        CAT.model(model),
        CAT.accelerator("h200"),
        Deployment(layout=Layout(tp=8)),
        batch,
        prompt,
        output,
        eff=eff,
    )
    assert r.expected.batch_prefill_s >= r.ideal.batch_prefill_s
    assert r.expected.tpot_s >= r.ideal.tpot_s
    assert r.expected.output_tokens_per_s <= r.ideal.output_tokens_per_s


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    batch=st.integers(1, 512),
    t=st.integers(1, 65536),
    dt=st.integers(1, 65536),
)
def test_decode_step_time_grows_with_context(model, batch, t, dt):
    m, hw = CAT.model(model), CAT.accelerator("h100")
    dep = Deployment(layout=Layout(tp=8))
    assert decode(m, hw, dep, batch, t + dt).t_ideal_s >= decode(m, hw, dep, batch, t).t_ideal_s


def test_every_accelerator_expects_a_plausible_share_of_its_speed_of_light():
    # a memory-bound decode (8B, batch 1) and a compute-bound prefill (8B, 4k tokens) must land
    # between the ideal and 4× it on every catalog entry: a unit slip (µs for s, GB for GiB), a
    # share outside (0, 1] or a per-op latency counted per token would leave this window
    m = CAT.model("llama-3.1-8b")
    for hw in CAT.accelerators.values():
        dep = Deployment(
            weights=WEIGHT_FORMATS["int4" if hw.memory_capacity_bytes < 20e9 else "bf16"]
        )
        for phase in (decode(m, hw, dep, 1, 1024), prefill(m, hw, dep, 1, 4096)):
            ratio = float(phase.t_expected_s / phase.t_ideal_s)
            assert 1.0 <= ratio < 4.0, (hw.id, phase.name, ratio)

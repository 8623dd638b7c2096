"""The per-point fast path (roofline/step/optime.py: one point in Python floats, through the float
twins of roofline/timing/) gives, bit for bit, what the general per-op path gives for the same
point passed as 0-d arrays (the path every scalar call took before the fast path; the fast path
switched off), and what the array path gives to 1e-12: every op's intensity, ridge, bound, ideal
and expected times, every phase total and every timing, over random deployments; and each twin
is, bit for bit, the array function beside it."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.layout import Layout
from roofline.domain.precision import kv_format, weight_format
from roofline.step import optime
from roofline.step.ops import Deployment
from roofline.step.phases import RequestResult, request

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"]
HARDWARE = ["h100", "a100", "mi300x", "b200", "l40s"]
PHASE_FIELDS = (
    "flops",
    "weight_bytes",
    "kv_bytes",
    "activation_bytes",
    "link_bytes",
    "t_ideal_s",
    "t_expected_s",
    "t_overhead_s",
)
OP_FIELDS = ("intensity", "ridge_flops_per_byte", "bound", "t_ideal_s", "t_expected_s")
TIMING_FIELDS = (
    "batch_prefill_s",
    "tpot_s",
    "e2e_s",
    "output_tokens_per_s",
    "decode_time_fraction",
)


def _values(r: RequestResult) -> list:
    out = []
    for ph in (r.prefill, r.decode):
        out += [getattr(ph, f) for f in PHASE_FIELDS]
        for o in ph.ops:
            out += [o.op.name, *(getattr(o, f) for f in OP_FIELDS)]
    for t in (r.ideal, r.expected):
        out += [getattr(t, f) for f in TIMING_FIELDS]
    return out


@contextlib.contextmanager
def _general_path():
    """The per-op path: the point test answers no, as it does for arrays."""
    saved = optime.is_point
    optime.is_point = lambda ops, shape: False
    try:
        yield
    finally:
        optime.is_point = saved


def _general(*args, **kw) -> RequestResult:
    with _general_path():
        return request(*args, **kw)


def _fast(*args, **kw) -> RequestResult:
    """request on Python scalars, checking that both phases took the point path."""
    calls = []
    saved = optime.is_point

    def counted(*a, **k):
        calls.append(saved(*a, **k))
        return calls[-1]

    optime.is_point = counted
    try:
        r = request(*args, **kw)
    finally:
        optime.is_point = saved
    assert len(calls) >= 2 and all(calls)  # prefill and decode (one per distinct PP stage)
    return r


def _same(a, b) -> bool:
    a, b = np.asarray(a).item(), np.asarray(b).item()
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and type(a) is type(b)


def _close(a, b) -> bool:
    a, b = np.asarray(a).item(), np.asarray(b).item()
    if isinstance(a, str):
        return a == b
    return a == pytest.approx(b, rel=1e-12, nan_ok=True)


@settings(max_examples=120, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    hw=st.sampled_from(HARDWARE),
    tp=st.sampled_from([1, 2, 8]),
    weights=st.sampled_from(["bf16", "fp8", "int4", "int8"]),
    kv=st.sampled_from(["bf16", "fp8"]),
    batch=st.integers(1, 512),
    prompt=st.integers(0, 200_000),
    output=st.integers(1, 20_000),
    engine=st.sampled_from([None, "vllm", "sglang", "trtllm", "ideal"]),
)
def test_point_path_is_the_general_path(
    cat, model, hw, tp, weights, kv, batch, prompt, output, engine
):
    m, acc = cat.model(model), cat.accelerator(hw)
    dep = Deployment(weights=weight_format(weights), kv=kv_format(kv), layout=Layout(tp=tp))
    try:
        fast = _fast(m, acc, dep, batch, prompt, output, engine=engine)
    except Exception as e:  # a deployment the model refuses: both paths refuse it alike
        with pytest.raises(type(e)):
            _general(
                m, acc, dep, np.array(batch), np.array(prompt), np.array(output), engine=engine
            )
        return
    general = request(
        m, acc, dep, np.array(batch), np.array(prompt), np.array(output), engine=engine
    )
    array = request(
        m, acc, dep, np.array([batch]), np.array([prompt]), np.array([output]), engine=engine
    )
    got, want = _values(fast), _values(general)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _same(g, w), (g, w)
    arr = [np.asarray(x).reshape(-1)[0] if np.ndim(x) else x for x in _values(array)]
    for g, a in zip(got, arr, strict=True):
        assert _close(g, a), (g, a)


def test_point_path_with_pipeline_and_overrides(cat):
    """PP stages, an --eta override (scaled curves) and a family without kernel curves."""
    from dataclasses import replace

    m = cat.model("llama-3.1-70b")
    for hw in ("h100", "l40s", "mi300x"):
        acc = cat.accelerator(hw)
        eff = replace(acc.efficiency, compute=acc.efficiency.compute * 0.9)
        for dep in (
            Deployment(layout=Layout(tp=2, pp=2)),
            Deployment(weights=weight_format("fp8"), layout=Layout(tp=4)),
        ):
            for e in (None, eff):
                fast = _fast(m, acc, dep, 16, 3000, 500, eff=e)
                general = _general(m, acc, dep, np.array(16), np.array(3000), np.array(500), eff=e)
                for g, w in zip(_values(fast), _values(general), strict=True):
                    assert _same(g, w), (hw, dep, g, w)


def _kernel_sets(cat):
    return [e.kernels for _, e in sorted(cat.kernels.items())]


def _bitwise(got: float, want) -> bool:
    w = float(np.asarray(want))
    return (math.isnan(got) and math.isnan(w)) or got == w


SIZE = st.one_of(st.floats(1e-12, 1e8), st.just(math.inf), st.just(0.0))
AMOUNT = st.one_of(st.floats(0.0, 1e18), st.just(math.inf), st.just(math.nan))


@settings(max_examples=200, deadline=None)
@given(
    pick=st.data(),
    flops=AMOUNT,
    moved=AMOUNT,
    m=SIZE,
    n=SIZE,
    kernels=st.sampled_from([1.0, 2.0, 64.0]),
    groups=st.sampled_from([1.0, 3.0, math.inf]),
    kv_heads=st.sampled_from([None, 1.0, 2.0, 8.0]),
)
def test_point_kernels_are_the_array_functions(
    cat, pick, flops, moved, m, n, kernels, groups, kv_heads
):
    """The float twins of timing/gemm.py and timing/attention.py give, bit for bit, what the array
    functions beside them give on 0-d arrays, for every kernel set's GEMM and attention curves
    (NaN, inf and zero sizes too)."""
    from roofline.timing import attention as attn
    from roofline.timing import gemm as eff

    ks = pick.draw(st.sampled_from(_kernel_sets(cat)))
    curve = pick.draw(st.sampled_from(sorted(ks.gemm.values(), key=repr)))
    peak, bw = 989e12, 3.35e12
    a = np.array
    with np.errstate(all="ignore"):
        want = eff.gemm_time_s(a(flops), a(moved), a(m), a(n), peak, bw, curve, kernels, groups)
        u, w = eff.wave_quantisation(a(max(m, 1e-9)), a(max(n, 1e-9)), curve, groups)
    got = eff.gemm_time_one(flops, moved, m, n, peak, bw, curve, kernels, groups)
    assert _bitwise(got, want), (got, want)
    got_u, got_w = eff.wave_quantisation_one(max(m, 1e-9), max(n, 1e-9), curve, groups)
    assert _bitwise(got_u, u) and _bitwise(got_w, w)
    rows, streams = m, n  # reuse the sizes as the attention's shape
    if ks.decode_attention is not None:
        c = ks.decode_attention
        with np.errstate(all="ignore"):
            want = attn.attention_decode_time_s(
                a(flops), a(moved), peak, bw, c, 0.7, a(rows), a(streams), kernels, kv_heads
            )
        got = attn.attention_decode_time_one(
            flops, moved, peak, bw, c, 0.7, rows, streams, kernels, kv_heads
        )
        assert _bitwise(got, want), (got, want)
    if ks.prefill_attention is not None:
        c = ks.prefill_attention
        with np.errstate(all="ignore"):
            want = attn.prefill_attention_time_s(
                a(flops), a(moved), a(m), peak, bw, c, 0.8, kernels, a(rows)
            )
        got = attn.prefill_attention_time_one(flops, moved, m, peak, bw, c, 0.8, kernels, rows)
        assert _bitwise(got, want), (got, want)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["gpt-oss-120b", "qwen3-30b-a3b", "deepseek-v3", "gemma-3-27b"]),
    hw=st.sampled_from(["h100", "b200", "mi300x"]),
    layout=st.sampled_from([(8, 1, 1), (8, 8, 1), (8, 8, 8), (4, 1, 1)]),  # tp, ep, attention-DP
    batch=st.integers(1, 4096),
    prompt=st.integers(0, 131_072),
    output=st.integers(1, 32_768),
)
def test_point_path_under_expert_and_attention_parallelism(
    cat, model, hw, layout, batch, prompt, output
):
    """MoE and MLA models (and sliding windows) under TP, EP and attention-DP: the point path
    is the per-op path bit for bit."""
    tp, ep, adp = layout
    m, acc = cat.model(model), cat.accelerator(hw)
    try:
        dep = Deployment(layout=Layout(tp=tp, ep=ep, attention_dp=adp))
        fast = _fast(m, acc, dep, batch, prompt, output)
    except Exception as e:  # a layout the model refuses: both paths refuse it alike
        with pytest.raises(type(e)):
            dep = Deployment(layout=Layout(tp=tp, ep=ep, attention_dp=adp))
            _general(m, acc, dep, np.array(batch), np.array(prompt), np.array(output))
        return
    general = _general(m, acc, dep, np.array(batch), np.array(prompt), np.array(output))
    for g, w in zip(_values(fast), _values(general), strict=True):
        assert _same(g, w), (model, hw, layout, g, w)


@settings(max_examples=150, deadline=None)
@given(
    pick=st.data(),
    flops=AMOUNT,
    moved=AMOUNT,
    units=SIZE,
    blocks=SIZE,
    per_value=st.sampled_from([0.5, 1.0, 2.0]),
    layers=st.integers(1, 128),
    phase=st.sampled_from(["decode", "prefill"]),
)
def test_the_other_twins_are_their_array_functions(
    cat, pick, flops, moved, units, blocks, per_value, layers, phase
):
    """The roofline's, the GEMM rows', FA2's split rule's and the engine step's float twins give,
    bit for bit, what the array functions beside them give on arrays (NaN, inf and zero too)."""
    from roofline.step.optime import gemm_rows, gemm_rows_one
    from roofline.timing.attention import fa2_num_splits, fa2_num_splits_one
    from roofline.timing.host import step_time_one, step_time_s
    from roofline.timing.roofline import (
        arithmetic_intensity,
        intensity_one,
        op_time_one,
        op_time_s,
    )

    engines = sorted(cat.accelerator("h100").efficiency.engines.values(), key=lambda e: e.id)
    engine = pick.draw(st.sampled_from([None, *engines]))
    a = np.array
    with np.errstate(all="ignore"):  # the array forms on one-element arrays: no point fast path
        pairs = [
            (intensity_one(flops, moved), arithmetic_intensity(a([flops]), a([moved]))[0]),
            (
                op_time_one(flops, moved, 989e12, 3.35e12),
                op_time_s(a([flops]), a([moved]), 989e12, 3.35e12)[0],
            ),
            (gemm_rows_one(flops, moved, per_value), gemm_rows(a(flops), a(moved), per_value)),
            (fa2_num_splits_one(units, 264.0, blocks), fa2_num_splits(a(units), 264.0, a(blocks))),
            (
                step_time_one(moved, layers, engine, phase),
                step_time_s(a(moved), layers, engine, phase),
            ),
        ]
    for got, want in pairs:
        assert _bitwise(got, want), (got, want)

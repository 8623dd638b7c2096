"""The per-op efficiency model (roofline/timing/gemm.py) against measurements and physics.

Measured figures come from files the calibration script wrote from aiconfigurator-core 0.12.0
(validation/kernel_gemm_sample.csv, validation/kernel_prefill_gemms.csv) or from published
tables quoted here; none is a value the model printed."""

import csv
import functools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.hardware import Efficiency
from roofline.domain.layout import Layout
from roofline.domain.precision import weight_format
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill, request
from roofline.timing.collectives import measured_allreduce_time_s, measured_alltoall_time_s
from roofline.timing.gemm import GemmCurve, compute_efficiency, gemm_time_s
from roofline.timing.host import EngineProfile, step_time_s

ROOT = Path(__file__).resolve().parent.parent
CAT = load_catalog()
# bytes per weight / activation value in the GEMMs the calibration measured
WEIGHT_B = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5625}
ACT_B = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5}


def _rows(name: str):
    with (ROOT / "validation" / name).open() as f:
        return list(csv.DictReader(f))


@functools.cache
def _harness(group: str, dtype: str) -> tuple[float, float]:
    """(L2 bytes, L2/HBM ratio) of a curve fitted on rows the collector kept in L2 (else 0, 1)."""
    for g in yaml.safe_load((ROOT / "hardware/kernels.yaml").read_text())["kernels"]:
        c = g.get("gemm", {}).get(dtype, {}) if g["id"] == group else {}
        if "harness_l2_ratio" in c:
            return float(c["harness_l2_bytes"]), float(c["harness_l2_ratio"])
    return 0.0, 1.0


def _model_gemm_s(group: str, dtype: str, m: float, n: float, k: float) -> float:
    entry = CAT.kernels[group]
    hw = CAT.accelerator(entry.accelerators[0])  # the chip the group was measured on
    flops = 2.0 * m * n * k
    # aiconfigurator's vLLM collector times 6 weight copies on one bf16 input in a CUDA graph:
    # within L2 the weights stream from it (validation/calibrate_kernels.py harness_resident)
    l2_bytes, ratio = _harness(group, dtype)
    resident = 6 * n * k * WEIGHT_B[dtype] + m * k * 2.0 <= l2_bytes
    bytes_moved = (
        n * k * WEIGHT_B[dtype] / (ratio if resident else 1.0) + m * (n + k) * ACT_B[dtype]
    )
    return float(
        gemm_time_s(
            flops,
            bytes_moved,
            m,
            n,
            hw.peak_flops_per_s[dtype],
            hw.memory_bandwidth_bytes_per_s,
            entry.kernels.gemm[dtype],
        )
    )


def test_kernel_model_reproduces_the_measured_gemms_it_was_fitted_on():
    rows = _rows("kernel_gemm_sample.csv")
    errors: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        t = _model_gemm_s(r["group"], r["dtype"], float(r["m"]), float(r["n"]), float(r["k"]))
        errors.setdefault((r["group"], r["dtype"]), []).append(abs(t / float(r["measured_s"]) - 1))
    # every NVIDIA group has a sample (AMD's CDNA 3 rows: validation/kernel_cdna3_gemm.csv,
    # tests/test_amd_kernels.py)
    assert {g for g, _ in errors} == set(CAT.kernels) - {"amd-cdna3"}
    family = np.median([e for es in errors.values() for e in es])
    assert family <= 0.08  # the nvidia-datacenter family as a whole
    for (group, dtype), es in errors.items():
        # every curve within 12% median (the must-show is 10%, every curve meets it), and the
        # runtime formula reproduces the calibration's own figure on all rows (a formula that
        # differs between the two would show here)
        assert np.median(es) <= 0.12, (group, dtype)
        fitted = CAT.kernels[group].kernels.gemm[dtype].fit_median_error
        assert abs(np.median(es) - fitted) <= 0.03, (group, dtype)


def test_decode_attention_model_reproduces_its_measurements():
    # bf16 KV, one layer: KV bytes 2·b·K·d·2·L, F = 4·b·H·d·L; rows b·H, streams b·K
    from roofline.timing.attention import attention_decode_time_s

    errors: dict[str, list[float]] = {}
    for r in _rows("kernel_decode_attention_sample.csv"):
        entry = CAT.kernels[r["group"]]
        hw = CAT.accelerator(entry.accelerators[0])
        b, h, kv, d, L = (float(r[c]) for c in ("batch", "heads", "kv_heads", "head_dim", "kv_len"))
        t = attention_decode_time_s(
            4.0 * b * h * d * L,
            2.0 * b * kv * d * 2.0 * L,
            hw.peak_flops_per_s["bf16"],
            hw.memory_bandwidth_bytes_per_s,
            entry.kernels.decode_attention,
            entry.kernels.gemm["bf16"].eta_max,
            b * h,
            b * kv,
            kv_heads=kv,
        )
        errors.setdefault(r["group"], []).append(abs(float(t) / float(r["measured_s"]) - 1.0))
    assert set(errors) == set(CAT.kernels) - {"amd-cdna3"}  # CDNA 3: GEMMs only
    for group, es in errors.items():
        fitted = CAT.kernels[group].kernels.decode_attention.fit_median_error
        # the sample reproduces the fit's own median (the same formula on both sides)
        assert np.median(es) <= fitted + 0.03, group


def test_curves_transfer_to_siblings_by_their_own_datasheets():
    # held out of the fit: the same engine's GEMMs measured on H200, B300 and GB200, predicted
    # from the H100 / B200 curves against each sibling's own peaks and bandwidth
    errors: dict[str, list[float]] = {}
    for r in _rows("kernel_sibling_sample.csv"):
        hw = CAT.accelerator(r["hardware"])
        m, n, k, dt = float(r["m"]), float(r["n"]), float(r["k"]), r["dtype"]
        t = gemm_time_s(
            2 * m * n * k,
            n * k * WEIGHT_B[dt] + m * (n + k) * ACT_B[dt],
            m,
            n,
            hw.peak_flops_per_s[dt],
            hw.memory_bandwidth_bytes_per_s,
            CAT.kernels[r["group"]].kernels.gemm[dt],
        )
        errors.setdefault(r["hardware"], []).append(abs(float(t) / float(r["measured_s"]) - 1))
    assert set(errors) == {"nvidia-h200-sxm", "nvidia-b300-hgx", "nvidia-gb200"}
    for hw_id, es in errors.items():
        assert np.median(es) <= 0.15, hw_id


def test_fp8_decode_gemm_is_the_static_scale_one_engines_run():
    """A decode-sized FP8 GEMM on Hopper and Blackwell costs what vLLM's and SGLang's own FP8
    GEMMs measure, not TensorRT-LLM's collector run with a dynamic per-tensor scale (its
    compute-scale pass, ~7-8 us, taken out: validation/kernel_data.py static_scale_rows).
    Measured, aiconfigurator-core 0.12.0 gemm tables (M = 4, N = 8192, K = 1024): H100 vLLM
    0.24.0 8.3 us, SGLang 0.5.14 8.3 us, TensorRT-LLM 1.3.0rc20 fp8 14.8 us; B200 vLLM 5.9 us,
    SGLang 6.1 us, TensorRT-LLM 14.5 us. The curves were fitted on neither engine's table
    (the B200 curve lands 26% over them, 7.6 us: its fit is 7% median over all shapes)."""
    for group, own, dynamic in (
        ("nvidia-hopper", 8.3e-6, 14.8e-6),
        ("nvidia-blackwell", 6.0e-6, 14.5e-6),
    ):
        t = _model_gemm_s(group, "fp8", 4, 8192, 1024)
        assert abs(t / own - 1.0) <= 0.3, (group, t)
        assert t <= 0.7 * dynamic, (group, t)


def test_prefill_gemm_sums_within_15_percent_of_measured():
    # Σ of one GPT-style layer's four prefill GEMMs (qkv, o, up, down) at prompt-sized M (512,
    # 2048, 8192 tokens): the data-center generations within 15% everywhere; the clock-throttled
    # L40S (Ada) runs its largest GEMMs ~20% below its mid-size plateau (docs/ACCURACY.md)
    sums: dict[tuple[str, str, str], list[float]] = {}
    for r in _rows("kernel_prefill_gemms.csv"):
        key = (r["group"], r["dtype"], r["m"])
        t = _model_gemm_s(r["group"], r["dtype"], float(r["m"]), float(r["n"]), float(r["k"]))
        acc = sums.setdefault(key, [0.0, 0.0])
        acc[0] += t
        acc[1] += float(r["measured_s"])
    checked = {k: v for k, v in sums.items() if k[0] != "nvidia-ada"}
    assert len(checked) >= 21
    for key, (model, measured) in checked.items():
        assert abs(model / measured - 1.0) <= 0.15, key
    assert all(abs(a / b - 1.0) <= 0.25 for a, b in sums.values())  # Ada included


def test_weight_only_int4_goes_compute_bound_at_moderate_batch():
    # TensorRT-LLM 1.0 on A100 (aiconfigurator-core 0.12.0, a100_sxm/gemm/trtllm/1.0.0),
    # N = K = 8192: int4 weight-only 0.0788 ms vs bf16 0.0917 ms at M = 64 (ratio 0.86), and
    # 0.0379 vs 0.0880 ms at M = 1 (0.43). The ideal ratio is the byte ratio, ~0.26 at both.
    hw = CAT.accelerator("nvidia-a100-80gb-sxm")
    m70 = CAT.model("llama-2-70b")

    def step(weights: str, batch: int) -> float:
        dep = Deployment(weights=weight_format(weights), layout=Layout(tp=8))
        return float(decode(m70, hw, dep, batch, 512, engine="vllm").t_expected_s)

    # the whole decode step of a 70B on 8×A100 at batch 64: int4 no longer ~2× faster than bf16
    assert step("int4", 64) / step("bf16", 64) > 0.65
    assert step("int4", 1) / step("bf16", 1) < step("int4", 64) / step("bf16", 64)


def test_tp_scaling_of_a_7b_matches_gpt_fast():
    # pytorch-labs/gpt-fast README, Tensor Parallelism table (8×A100-80GB, batch 1, 5-token
    # prompt, ENABLE_INTRA_NODE_COMM=1): Llama-2-7B 104.9, 168.84, 254.02, 328.43 tok/s at TP 1-8
    published = {1: 104.9, 2: 168.84, 4: 254.02, 8: 328.43}
    hw, m = CAT.accelerator("nvidia-a100-80gb-sxm"), CAT.model("llama-2-7b")
    rate = {
        tp: 1.0
        / float(
            request(
                m, hw, Deployment(layout=Layout(tp=tp)), 1, 5, 200, engine="gptfast"
            ).expected.tpot_s
        )
        for tp in published
    }
    for tp in (2, 4, 8):
        ours, theirs = rate[tp] / rate[1], published[tp] / published[1]
        assert abs(ours / theirs - 1.0) <= 0.10, (tp, ours, theirs)


def test_curve_shape_saturates_in_m_and_n():
    c = GemmCurve(eta_max=0.8, eta_memory=0.9, m_half=100.0, n_half=50.0)
    m = np.array([1.0, 10.0, 100.0, 1e3, 1e5])
    eta = compute_efficiency(m, 1e9, c)
    assert np.all(np.diff(eta) > 0) and eta[-1] < 0.8
    assert eta[2] == pytest.approx(0.8 / (1 + 100 / 116), rel=1e-6)  # M = M½: 100 rows padded
    assert eta[0] == pytest.approx(0.8 / (1 + 100 / 17), rel=1e-6)  # a GEMV pads to 16 rows
    assert compute_efficiency(1e9, 50.0, c) == pytest.approx(0.4, rel=1e-6)  # N = N½


def test_gemm_time_by_hand():
    # 2·M·N·K = 2·64·8192·8192 FLOPs on 1e15 FLOP/s at η_max 0.5, M½ 80: twice the math time of
    # the plateau, (1 + 80/(64+16)) = 2 → 8.59e9 · 2 / 5e14 = 34.4 µs; plus t₀ = 5 µs
    c = GemmCurve(eta_max=0.5, eta_memory=1.0, m_half=80.0, latency_s=5e-6)
    f = 2.0 * 64 * 8192 * 8192
    t = gemm_time_s(f, 1.0, 64, np.inf, 1e15, 1e12, c)
    assert float(t) == pytest.approx(5e-6 + f * 2.0 / 5e14, rel=1e-9)
    # memory-bound: 134 MB at 2 TB/s × 0.5 = 134.2 µs, + t₀ for 2 kernels
    c2 = GemmCurve(eta_max=1.0, eta_memory=0.5, latency_s=5e-6)
    t2 = gemm_time_s(2.0, 134.2e6, 1, 8192, 1e15, 2e12, c2, kernels=2)
    assert float(t2) == pytest.approx(134.2e-6 + 10e-6, rel=1e-9)


def test_prefill_attention_by_hand():
    from roofline.timing.attention import PrefillAttentionCurve, prefill_attention_time_s

    c = PrefillAttentionCurve(eta_max=0.5, s_half=1000.0, latency_s=10e-6)
    # 1e12 FLOPs over a 1000-token prompt at 1e15 FLOP/s: (1 + 1000/1000) / 0.5 = 4 ms, + 2·10 µs
    t = prefill_attention_time_s(1e12, 1.0, 1000, 1e15, 1e12, c, 1.0, layers=2)
    assert float(t) == pytest.approx(4e-3 + 20e-6, rel=1e-9)
    # longer prompts reach more of the plateau: per FLOP, 8k tokens beat 1k
    long = prefill_attention_time_s(1e12, 1.0, 8000, 1e15, 1e12, c, 1.0)
    assert float(long) < float(prefill_attention_time_s(1e12, 1.0, 1000, 1e15, 1e12, c, 1.0))


def test_engine_step_overhead_by_hand():
    eng = EngineProfile("x", cpu_step_s=1e-3, launch_s=10e-6, gap_s=1e-6, kernels_per_layer=10)
    # decode under graphs: 5 ms GPU + 10·32 kernels × 1 µs gap + 1 ms CPU
    assert float(step_time_s(5e-3, 32, eng, "decode")) == pytest.approx(5e-3 + 320e-6 + 1e-3)
    # prefill without graphs, tiny GPU time: launch-bound, 320 × 10 µs + 1 ms
    assert float(step_time_s(1e-4, 32, eng, "prefill")) == pytest.approx(3.2e-3 + 1e-3)
    assert float(step_time_s(2e-3, 32, None, "decode")) == 2e-3


def test_engine_changes_the_expected_time_by_its_cpu_step():
    # both run decode under CUDA graphs with the same kernel count and gap, TP 1 (no all-reduce):
    # the step differs by exactly the two engines' CPU times (per step and per sequence)
    hw, m = CAT.accelerator("h100"), CAT.model("llama-3.1-8b")
    a = decode(m, hw, Deployment(), 8, 1024, engine="vllm")
    b = decode(m, hw, Deployment(), 8, 1024, engine="sglang")
    delta = CAT.engines["vllm"].cpu_step_s - CAT.engines["sglang"].cpu_step_s
    # and by their per-sequence host costs over the 8 sequences (roofline/timing/host.py)
    fam = hw.efficiency.family
    seq = [dict(CAT.engines[e].cpu_per_seq_s).get(fam, 0.0) for e in ("vllm", "sglang")]
    delta += (seq[0] - seq[1]) * 8
    assert float(a.t_expected_s - b.t_expected_s) == pytest.approx(delta, rel=1e-9)
    assert float(a.t_ideal_s) == float(b.t_ideal_s)
    # the default is the CLI's auto rule: vLLM on a discrete GPU, llama.cpp on unified memory
    assert decode(m, hw, Deployment(), 8, 1024).engine == "vllm"
    assert decode(m, CAT.accelerator("apple-m2-ultra"), Deployment(), 1, 64).engine == "llamacpp"


def test_measured_allreduce_by_hand():
    hw = CAT.accelerator("nvidia-h100-sxm")
    curve = CAT.kernels["nvidia-hopper"].kernels.allreduce
    alpha, share = curve.at(8)
    m = 16e6  # 16 MB: 2·7/8 · 16e6 / (share · 450 GB/s)
    t = measured_allreduce_time_s(hw.scale_up, curve, 8, m)
    assert float(t) == pytest.approx(alpha + 1.75 * m / (share * 450e9), rel=1e-9)
    # between measured counts the figures interpolate in log2(n): 6 GPUs lies between 4 and 8
    a4, a8 = curve.at(4)[0], curve.at(8)[0]
    assert min(a4, a8) <= curve.at(6)[0] <= max(a4, a8)


def test_measured_alltoall_by_hand_and_in_the_moe_step():
    hw = CAT.accelerator("nvidia-h200-sxm")
    curve = CAT.kernels["nvidia-hopper"].kernels.alltoall
    alpha, share = curve.at(8)
    t = measured_alltoall_time_s(hw.scale_up, curve, 8, 8e6)  # 7/8 · 8 MB / (share · 450 GB/s)
    assert float(t) == pytest.approx(alpha + 7e6 / (share * 450e9), rel=1e-9)
    m = CAT.model("deepseek-v3")
    # EP with attention-DP (DeepSeek's serving layout) dispatches and combines by all-to-all
    dep = Deployment(weights=weight_format("fp8"), layout=Layout(tp=8, ep=8, attention_dp=8))
    d = decode(m, hw, dep, 64, 2048)
    ops = [r for r in d.ops if r.op.kind == "alltoall"]
    assert ops
    op = ops[0]
    ep_curve = CAT.kernels["nvidia-hopper"].kernels.ep_alltoall or curve  # DeepEP's, else NCCL's
    per_call = float(measured_alltoall_time_s(hw.scale_up, ep_curve, 8, op.op.message_bytes))
    assert float(op.t_expected_s) == pytest.approx(
        max(per_call * op.op.layers, float(op.t_ideal_s))
    )


MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b"]
HARDWARE = ["nvidia-h100-sxm", "nvidia-a100-80gb-sxm", "nvidia-b200-hgx", "nvidia-l4"]
WEIGHTS = ["bf16", "fp8", "int4", "int8", "mxfp4"]


@settings(max_examples=30, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    hw_id=st.sampled_from(HARDWARE),
    weights=st.sampled_from(WEIGHTS),
    tp=st.sampled_from([1, 2, 4, 8]),
    batch=st.integers(1, 512),
    context=st.integers(1, 32768),
    engine=st.sampled_from(["vllm", "sglang", "trtllm"]),  # the engines' own MoE curves too
)
def test_curves_never_change_the_ideal_and_never_beat_it(
    model, hw_id, weights, tp, batch, context, engine
):
    m, hw = CAT.model(model), CAT.accelerator(hw_id)
    dep = Deployment(weights=weight_format(weights), layout=Layout(tp=tp))
    bare = replace(hw.efficiency, kernels=None, engines={})
    for phase in (
        lambda e: prefill(m, hw, dep, batch, min(context, 4096), e, engine=engine),
        lambda e: decode(m, hw, dep, batch, context, eff=e, engine=engine),
    ):
        cal, plain = phase(hw.efficiency), phase(Efficiency())
        assert float(cal.t_ideal_s) == float(plain.t_ideal_s)
        assert float(cal.t_ideal_s) == float(phase(bare).t_ideal_s)
        assert np.all(cal.t_expected_s >= cal.t_ideal_s * (1 - 1e-12))
        for op in cal.ops:
            if op.op.kind == "overlap":  # a credit: the time two streams hide (step/overlap.py)
                continue
            assert np.all(op.t_expected_s >= op.t_ideal_s * (1 - 1e-12)), op.op.name


def test_calibration_status_is_carried():
    m = CAT.model("llama-3.1-8b")
    own = decode(m, CAT.accelerator("nvidia-h100-sxm"), Deployment(), 1, 128).calibration
    assert (own.family, own.kernels, own.kernels_borrowed, own.engine) == (
        "nvidia-datacenter",
        "nvidia-hopper",
        False,
        "vllm",
    )
    assert own.cases > 0 and not own.borrowed
    assert own.error_band == CAT.families["nvidia-datacenter"].efficiency.error_band
    lo, hi = own.band(1.0)
    assert lo < 1.0 < hi
    l4 = decode(m, CAT.accelerator("nvidia-l4"), Deployment(), 1, 128).calibration
    assert l4.kernels == "nvidia-ada" and l4.kernels_borrowed and l4.borrowed
    # AMD's MI300X has CDNA 3 GEMM curves of its own (AITER and hipBLASLt timings) and its
    # family's cases;
    # Gaudi has neither and borrows
    amd = request(m, CAT.accelerator("amd-mi300x"), Deployment(), 1, 128, 16).calibration
    assert amd.kernels == "amd-cdna3" and amd.cases > 0 and not amd.borrowed
    gaudi = request(m, CAT.accelerator("intel-gaudi3"), Deployment(), 1, 128, 16).calibration
    assert gaudi.kernels == "" and gaudi.cases == 0 and gaudi.borrowed
    assert gaudi.error_band >= max(f.efficiency.error_band for f in CAT.families.values()) - 1e-12

"""trtllm-bench's own max_batch_size / max_num_tokens (roofline.engines.scheduler
trtllm_bench_limits), checked against the tool's rule worked by hand (tensorrt_llm/bench/
build/tuning.py calc_engine_setting and finetune_setting; bench/benchmark/utils/general.py
get_settings)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.errors import InputError
from roofline.engines.scheduler import trtllm_bench_limits

CAT = load_catalog()


def test_deepseek_r1_on_eight_h200():
    # The tool's KV "bytes per token" for DeepSeek-R1 (MLA read as 128 KV heads of 7,168 / 128 =
    # 56): 2 x 61 x 128 x 56 x 1 (FP8) = 874,496 B. Weights: the FP8 checkpoint's ~685e9
    # elements x 1 B = 638 GiB; 8 x 143,771 MiB (nvidia-smi) = 1,123.2 GiB.
    # Cache at 0.9: (1,123.2 - 638) x 0.9 = 436.7 GiB.
    # 1024/1024: 436.7 GiB / (874,496 B x 2,048) = 262 requests -> 128 x ceil(262 / 128) = 384;
    # tokens 262 x 2 = 524 -> 2,048, and at least 1,024 + 384: 2,048.
    # 1024/8192: 436.7 GiB / (874,496 B x 9,216) = 58 -> max(64, 32 x ceil(58 / 32)) = 64.
    m, hw = CAT.model("deepseek-r1"), CAT.accelerator("nvidia-h200-sxm")
    got = trtllm_bench_limits(m, hw, 8, 1, "fp8", "fp8", (1024, 1024, 1024), 0.9)
    assert got == (384, 2048)
    got = trtllm_bench_limits(m, hw, 8, 1, "fp8", "fp8", (1024, 8192, 1024), 0.9)
    assert got == (64, 2048)


def test_engine_built_from_the_dataset_keeps_its_token_budget():
    # Llama-3.1-70B FP8 at TP2 on H100, 5,000 in / 500 out, `trtllm-bench build --dataset`
    # (fraction 0.95, no floor at the longest prompt): KV 2 x 80 x 8 x 128 x 1 = 163,840 B a
    # token; weights ~70.6e9 B = 65.7 GiB; 2 x 81,559 MiB = 159.3 GiB; cache (159.3 - 65.7) x
    # 0.95 = 88.9 GiB; 88.9 GiB / (163,840 B x 5,500) = 106 requests -> 32 x ceil(106 / 32) =
    # 128; tokens 106 x (1 + 10) = 1,165 -> 2,048. The PyTorch path raises the budget to the
    # longest prompt + max_batch_size: 5,128 -> 5,128.
    m, hw = CAT.model("llama-3.1-70b"), CAT.accelerator("nvidia-h100-sxm")
    lengths = (5000, 500, 5000)
    build = trtllm_bench_limits(m, hw, 2, 1, "fp8", "fp8", lengths, 0.9, "trtllm-bench-build")
    assert build == (128, 2048)
    bench = trtllm_bench_limits(m, hw, 2, 1, "fp8", "fp8", lengths, 0.95)
    assert bench == (128, 5000 + 128)


def test_untuned_quantisation_keeps_build_config_defaults():
    # MXFP4 is outside TUNED_QUANTS: BuildConfig's 2,048 / 8,192, then the longest prompt +
    # 2,048 without chunked prefill: 32,768 + 2,048 = 34,816.
    m, hw = CAT.model("gpt-oss-120b"), CAT.accelerator("nvidia-h200-sxm")
    got = trtllm_bench_limits(m, hw, 1, 1, "mxfp4", "fp8", (32768, 1024, 32768), 0.9)
    assert got == (2048, 34816)


def test_bad_harness_and_no_room_are_input_errors():
    m, hw = CAT.model("deepseek-r1"), CAT.accelerator("nvidia-h200-sxm")
    with pytest.raises(InputError, match="harness"):
        trtllm_bench_limits(m, hw, 8, 1, "fp8", "fp8", (1024, 1024, 1024), 0.9, "genai-perf")
    with pytest.raises(InputError, match="no room"):  # 685e9 B of weights on one H200
        trtllm_bench_limits(m, hw, 1, 1, "fp8", "fp8", (1024, 1024, 1024), 0.9)


@settings(max_examples=30, deadline=None)
@given(
    isl=st.integers(16, 16384),
    osl=st.integers(16, 16384),
    more=st.integers(1, 4),
    frac=st.floats(0.5, 0.95),
)
def test_physics_more_room_never_fewer_requests(isl, osl, more, frac):
    """More KV room (a longer sequence shrinks it, a larger fraction grows it) never lowers
    max_batch_size; it is at least 64 (the tool's floor) and the PyTorch path's budget holds
    the longest prompt beside a full batch."""
    m, hw = CAT.model("llama-3.1-70b"), CAT.accelerator("nvidia-h200-sxm")
    bs, tok = trtllm_bench_limits(m, hw, 2, 1, "fp8", "fp8", (isl, osl, isl), frac)
    longer, _ = trtllm_bench_limits(m, hw, 2, 1, "fp8", "fp8", (isl * more, osl, isl), frac)
    roomier, _ = trtllm_bench_limits(m, hw, 2, 1, "fp8", "fp8", (isl, osl, isl), frac + 0.04)
    assert 64 <= longer <= bs <= roomier
    assert tok >= isl + bs


CASE = {
    "id": "t",
    "model": "deepseek-r1",
    "hardware": "nvidia-h200-sxm",
    "tp": 8,
    "ep": 8,
    "attention_dp": 8,
    "weights": "fp8",
    "kv": "fp8",
    "engine": "trtllm",
    "frontend": "none",
    "arrivals": "burst",
    "requests": 400,
    "prompt": 1024,
    "output": 1024,
    "metric": "output_tokens_per_s_per_gpu",
    "measured": 1000.0,
    "source": "test",
}


def test_a_case_run_by_the_harness_runs_at_its_caps():
    """`harness: trtllm-bench` serves the case as if its max_num_seqs / max_num_batched_tokens
    were the tool's (384 and 2,048 a rank, test_deepseek_r1_on_eight_h200); a name it does not
    know is an input error."""
    from roofline.cases.serving import run_serving_case

    by_rule = run_serving_case({**CASE, "harness": "trtllm-bench"}, CAT, expected_only=True)
    given = {**CASE, "max_num_seqs": 384, "max_num_batched_tokens": 2048}
    assert by_rule.expected == run_serving_case(given, CAT, expected_only=True).expected
    with pytest.raises(InputError, match="harness"):
        run_serving_case({**CASE, "harness": "locust"}, CAT, expected_only=True)


def test_nvfp4_checkpoint_element_count():
    # nvidia/DeepSeek-R1-0528-NVFP4-v2: 393.6B "parameters" as its safetensors headers count them
    # (packed uint8 weights, FP8 scales; llmrun.dev/model/nvidia-deepseek-r1-0528-nvfp4-v2,
    # from the Hugging Face listing); the FP8 checkpoint's 685B (its Hugging Face page, quoted in
    # models/deepseek-v3.yaml's notes), the MTP module included.
    from roofline.engines.scheduler import _checkpoint_elements

    m = CAT.model("deepseek-r1")
    assert _checkpoint_elements(m, "nvfp4") == pytest.approx(393.6e9, rel=0.02)
    assert _checkpoint_elements(m, "fp8") == pytest.approx(685e9, rel=0.01)

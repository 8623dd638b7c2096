"""TensorRT-LLM's KV pool starts from the CUDA runtime's total (torch.cuda.mem_get_info), not the
driver's (nvidia-smi): KvCacheCreator at NVIDIA/TensorRT-LLM@d8ae02ca sizes it as fraction x
(total - profiling peak), total from mem_get_info (roofline.step.memory engine_total_bytes)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import engine
from roofline.step.memory import plan_memory
from roofline.step.ops import Deployment

MIB = 2**20
DEP = Deployment(weights=WEIGHT_FORMATS["bf16"], kv=KV_FORMATS["bf16"], layout=Layout(tp=1))


def _budget(eng_name: str, hw) -> float:
    cat = load_catalog()
    return plan_memory(cat.model("qwen3-32b"), hw, DEP, engine(eng_name)).kv_budget_bytes


def test_a100_pool_is_sized_from_the_cuda_total():
    a100 = load_catalog().accelerator("nvidia-a100-80gb-sxm")
    # CUDA deviceQuery on an A100-SXM4-80GB: 81,251 MiB (PyTorch's OOM message on an A100 80GB
    # reads the same 79.35 GiB); nvidia-smi 81,920 MiB
    assert a100.cuda_total_bytes == 81_251 * MIB
    assert a100.usable_memory_bytes == 81_920 * MIB
    driver = replace(a100, cuda_total_bytes=None)
    # 0.9 x (81,920 - 81,251) MiB = 602.1 MiB less KV under TensorRT-LLM
    got = _budget("trtllm", driver) - _budget("trtllm", a100)
    assert got == pytest.approx(0.9 * 669 * MIB, rel=1e-6)
    # a Qwen3-32B KV token is 64 layers x 8 heads x 128 x 2 (K, V) x 2 B = 256 KiB: 2,408 fewer
    assert got / (64 * 8 * 128 * 2 * 2) == pytest.approx(2408.4, abs=0.5)
    # H100: 79.11 GiB in PyTorch's OOM message under vLLM V1 (vllm-project/vllm issue #27508)
    h100 = load_catalog().accelerator("nvidia-h100-sxm")
    assert h100.cuda_total_bytes == pytest.approx(79.11 * 2**30, abs=5 * MIB)
    # vLLM and SGLang keep the driver's total here (the docstring says why vLLM waits)
    for name in ("vllm", "sglang"):
        assert _budget(name, a100) == _budget(name, driver)


@given(share=st.floats(0.95, 1.0))
def test_a_smaller_cuda_total_never_grows_the_pool(share):
    h100 = replace(load_catalog().accelerator("nvidia-h100-sxm"), cuda_total_bytes=None)
    lower = replace(h100, cuda_total_bytes=h100.usable_memory_bytes * share)
    assert _budget("trtllm", lower) <= _budget("trtllm", h100)
    assert _budget("trtllm", lower) == pytest.approx(
        max(_budget("trtllm", h100) - 0.9 * h100.usable_memory_bytes * (1 - share), 0.0)
    )


def test_cuda_total_above_the_drivers_is_refused(tmp_path, run):
    (tmp_path / "gpu.yaml").write_text(
        "accelerators:\n- id: odd-gpu\n  name: Odd\n  vendor: test\n  family: nvidia-datacenter\n"
        "  memory: {capacity_gib: 16, usable_mib: 16000, cuda_total_mib: 16001,"
        " bandwidth_tb_s: 1}\n"
        "  dense_tflops: {bf16: 100}\n  sparsity_2_4: false\n  source: a test\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and "cuda_total_mib" in r.stderr

"""Catalog health and strict loading: every shipped entry is sourced; broken files are named."""

from pathlib import Path

import pytest

from roofline.catalog.load import Catalog, load_catalog, validate_dirs
from roofline.domain.errors import CatalogError, UnknownEntryError

REQUIRED_HARDWARE = """nvidia-a100-40gb-sxm nvidia-a100-80gb-sxm nvidia-a100-80gb-pcie
nvidia-h100-sxm nvidia-h100-pcie nvidia-h200-sxm nvidia-h800-sxm nvidia-b200-hgx nvidia-gb200
nvidia-l40s
nvidia-rtx-4090 amd-mi300x amd-mi325x intel-gaudi3 google-tpu-v5e google-tpu-v6e apple-m1-max
apple-m2-ultra apple-m3-max apple-m3-ultra apple-m4-max apple-m4-pro""".split()
REQUIRED_MODELS = """llama-2-7b llama-2-70b llama-3-8b llama-3-70b llama-3.1-8b llama-3.1-70b
llama-3.1-405b llama-3.3-70b deepseek-v3 deepseek-r1 deepseek-r1-distill-llama-8b
deepseek-r1-distill-llama-70b deepseek-r1-distill-qwen-32b qwq-32b qwen3-32b qwen3-30b-a3b
qwen3-235b-a22b mixtral-8x7b gpt-oss-120b gemma-3-27b""".split()
REQUIRED_TIERS = """pcie4-x16 pcie5-x16 pcie6-x16 cxl2-x8 cxl2-x16 micron-cz120 samsung-cmm-d
ddr5-socket-genoa nvme-gen4 nvme-gen5 nvlink-c2c infiniband-ndr""".split()

GOOD_ACCEL = """accelerators:
- id: test-gpu
  name: Test GPU
  vendor: test
  family: nvidia-datacenter
  memory: {capacity_gb: 10, bandwidth_tb_s: 1.0}
  dense_tflops: {bf16: 100}
  sparsity_2_4: false
  source: "a test"
"""


def test_required_entries_exist(cat):
    assert set(REQUIRED_HARDWARE) <= set(cat.accelerators)
    assert set(REQUIRED_MODELS) <= set(cat.models)
    assert set(REQUIRED_TIERS) <= set(cat.tiers)


def test_every_entry_has_a_source(cat):
    for table in (cat.accelerators, cat.tiers, cat.models):
        for entry in table.values():
            assert entry.source.strip(), entry.id


def test_shipped_catalog_validates():
    root = Path(__file__).resolve().parent.parent
    assert validate_dirs([root / "hardware", root / "models"]) == []


def test_aliases_and_did_you_mean(cat):
    assert cat.accelerator("h100").id == "nvidia-h100-sxm"
    assert cat.accelerator("H100").id == "nvidia-h100-sxm"
    with pytest.raises(UnknownEntryError) as e:
        cat.accelerator("nvidia-h100-sxn")
    assert "nvidia-h100-sxm" in e.value.hint


def _write(tmp_path: Path, text: str, name: str = "x.yaml") -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("vendor: test", "vendor: test\n  bandwith_tb_s: 3"),
            "unknown key 'bandwith_tb_s'",
        ),
        (lambda t: t.replace("bf16: 100", "bf16: 1e14"), "key 'bf16' must be a number"),
        (lambda t: t.replace('  source: "a test"\n', ""), "missing required key 'source'"),
        (lambda t: t.replace("capacity_gb: 10", "capacity_gb: -10"), "must not be negative"),
        (lambda t: t.replace("sparsity_2_4: false", "sparsity_2_4: 1"), "true or false"),
        (lambda t: t + "  notes: [unclosed\n", "not valid YAML"),
    ],
)
def test_broken_files_name_file_entry_and_key(tmp_path, edit, message):
    directory = _write(tmp_path, edit(GOOD_ACCEL))
    with pytest.raises(CatalogError) as e:
        Catalog().add_dir(directory)
    text = str(e.value)
    assert message in text and "x.yaml" in text
    if "YAML" not in message:
        assert "test-gpu" in text


def test_duplicate_ids_rejected(tmp_path):
    _write(tmp_path, GOOD_ACCEL, "a.yaml")
    _write(tmp_path, GOOD_ACCEL, "b.yaml")
    with pytest.raises(CatalogError, match="duplicate id"):
        Catalog().add_dir(tmp_path)


def test_user_catalog_adds_and_overrides(tmp_path, monkeypatch):
    override = GOOD_ACCEL.replace("id: test-gpu", "id: nvidia-h100-sxm").replace(
        "bandwidth_tb_s: 1.0", "bandwidth_tb_s: 9.0"
    )
    _write(tmp_path, GOOD_ACCEL, "a.yaml")
    _write(tmp_path, override, "b.yaml")
    cat = load_catalog([tmp_path])
    assert cat.accelerator("test-gpu").memory_bandwidth_bytes_per_s == 1e12
    assert cat.accelerator("nvidia-h100-sxm").memory_bandwidth_bytes_per_s == 9e12
    assert load_catalog().accelerator("nvidia-h100-sxm").memory_bandwidth_bytes_per_s == 3.35e12
    monkeypatch.setenv("ROOFLINE_CATALOG", str(tmp_path))
    assert load_catalog().accelerator("test-gpu").name == "Test GPU"


def test_yaml_is_loaded_safely(tmp_path):
    # a Python object tag must not be constructed (safe loading), only rejected
    (tmp_path / "evil.yaml").write_text("accelerators: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        Catalog().add_dir(tmp_path)


GOOD_KERNELS = """kernels:
- id: test-gen
  accelerators: [test-gpu]
  borrowed_by: []
  gemm:
    bf16: {eta_max: 0.8, eta_memory: 0.8, m_half: 100, n_half: 50, latency_us: 4}
  gemm_source: "a test"
"""
GOOD_ENGINE = """engines:
- id: test-engine
  name: Test
  cpu_step_us: 100
  launch_us: 5
  gap_us: 1
  kernels_per_layer: 10
  cuda_graphs_decode: true
  cuda_graphs_prefill: false
  allreduce_kernel: nccl
  source: "a test"
"""


@pytest.mark.parametrize(
    ("text", "edit", "entry", "message"),
    [
        (GOOD_KERNELS, ("eta_max: 0.8", "eta_max: 1.8"), "test-gen", "key 'eta_max' must be in"),
        (GOOD_KERNELS, ("m_half", "m_halff"), "test-gen", "unknown key 'm_halff'"),
        (GOOD_KERNELS, ("bf16:", "bf17:"), "test-gen", "unknown dtype 'bf17'"),
        (GOOD_KERNELS, ('  gemm_source: "a test"\n', ""), "test-gen", "'gemm_source'"),
        (
            GOOD_KERNELS,
            (
                "  gemm_source",
                "  allreduce: {'2': {latency_us: 5, bandwidth_share: 0.5}}\n  gemm_source",
            ),
            "test-gen",
            "key 'allreduce' needs 'allreduce_source'",
        ),
        (GOOD_ENGINE, ("gap_us: 1", "gap_us: -1"), "test-engine", "must not be negative"),
        (GOOD_ENGINE, ("cuda_graphs_decode: true", "cuda_graphs_decode: 1"), "test-engine", "true"),
        (GOOD_ENGINE, ('  source: "a test"\n', ""), "test-engine", "missing required key 'source'"),
    ],
)
def test_kernel_and_engine_files_are_strict(tmp_path, text, edit, entry, message):
    directory = _write(tmp_path, text.replace(*edit, 1))
    with pytest.raises(CatalogError) as e:
        Catalog().add_dir(directory)
    assert message in str(e.value) and "x.yaml" in str(e.value) and entry in str(e.value)


def test_kernel_curves_attach_to_their_accelerators(tmp_path):
    _write(tmp_path, GOOD_ACCEL + GOOD_KERNELS.replace("kernels:", "kernels:", 1), "a.yaml")
    cat = Catalog()
    cat.add_dir(tmp_path)
    ks = cat.accelerator("test-gpu").efficiency.kernels
    assert ks is not None and ks.id == "test-gen" and not ks.borrowed
    assert ks.gemm["bf16"].latency_s == pytest.approx(4e-6)  # latency_us converted to seconds

"""Memory and number formats as the chips have them: one memory convention, formats a chip lacks,
released checkpoint formats, MLX on Apple, Gaudi 2 and NVLink 5."""

import pytest

from roofline.catalog.load import load_catalog

GIB, MIB = 2**30, 2**20


def test_memory_is_binary_capacity_and_the_drivers_total(cat):
    # H100 SXM "80GB" = 80 GiB; nvidia-smi reports 81,559 MiB (NVIDIA/nccl issue #1264)
    h100 = cat.accelerator("h100")
    assert h100.memory_nominal_bytes == 80 * GIB
    assert h100.usable_memory_bytes == 81_559 * MIB
    # RTX 4090 "24 GB" = 24 GiB; nvidia-smi 24,564 MiB: the same convention side by side
    rtx = cat.accelerator("rtx-4090")
    assert rtx.memory_nominal_bytes == 24 * GIB and rtx.usable_memory_bytes == 24_564 * MIB
    # MI300X "192 GB" is 192 GiB = 206.2e9 B, not 192e9
    assert cat.accelerator("mi300x").memory_nominal_bytes == pytest.approx(206.16e9, rel=1e-4)
    # no published driver total: the capacity less the stated 0.5% reserve (Gaudi 2, 96 GiB)
    g2 = cat.accelerator("gaudi2")
    assert g2.memory_basis == "reserve" and g2.usable_memory_bytes == 96 * GIB * 0.995
    for hw in cat.accelerators.values():
        assert hw.memory_capacity_bytes <= hw.memory_nominal_bytes * 1.001, hw.id


def test_usable_above_capacity_is_refused(tmp_path, run):
    (tmp_path / "gpu.yaml").write_text(
        "accelerators:\n- id: odd-gpu\n  name: Odd\n  vendor: test\n  family: nvidia-datacenter\n"
        "  memory: {capacity_gib: 16, usable_mib: 20000, bandwidth_tb_s: 1}\n"
        "  dense_tflops: {bf16: 100}\n  sparsity_2_4: false\n  source: a test\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and "usable_mib" in r.stderr and "above the capacity" in r.stderr
    with pytest.raises(Exception, match="usable_mib"):
        load_catalog([tmp_path])


def test_hardware_show_says_which_memory_it_uses(run):
    doc = run("hardware", "show", "rtx-4090", "-f", "json").json()["hardware"]
    assert doc["memory_basis"] == "driver" and doc["memory_capacity_gib"] == 24
    mac = run("hardware", "show", "m1", "-f", "json").json()["hardware"]
    assert mac["memory_basis"] == "wired"
    assert mac["usable_memory_bytes"] / MIB == pytest.approx(10_922.67, abs=0.01)


ANALYZE = ("analyze", "llama-3.1-8b")


@pytest.mark.parametrize(
    ("chip", "weights", "lacks", "runs_in"),
    [
        ("a100", "fp8", "fp8", "bf16"),  # Ampere: no FP8 tensor cores (Marlin FP8 W8A16)
        ("a100", "nvfp4", "fp4", "bf16"),
        ("v100", "mxfp4", "fp4", "fp16"),  # Volta: no bf16 either
        ("m2-max", "w8a8", "int8", "fp16"),  # Apple GPUs: no int8 matrix path in the catalog
    ],
)
def test_a_weight_format_without_its_compute_runs_weight_only(run, chip, weights, lacks, runs_in):
    r = run(*ANALYZE, chip, "--weights", weights, "-f", "json")
    assert r.code == 0
    lines = [x for x in r.stderr.splitlines() if "weight-only" in x]
    assert len(lines) == 1 and f"no {lacks} compute" in lines[0] and runs_in in lines[0]
    assert r.json()["inputs"]["compute_dtype"] == runs_in


def test_fp8_weights_on_an_a100_cost_what_int8_weight_only_costs(run):
    # the same 8 bits per weight through the same weight-only (dequantizing) path
    fp8 = run(*ANALYZE, "a100", "--weights", "fp8", "-f", "json").json()["expected"]
    int8 = run(*ANALYZE, "a100", "--weights", "int8", "-f", "json").json()["expected"]
    assert fp8["tpot_s"] == pytest.approx(int8["tpot_s"])


@pytest.mark.parametrize("chip", ["a100", "t4"])
def test_a_compute_format_the_chip_lacks_is_refused(run, chip):
    r = run(*ANALYZE, chip, "--compute", "fp8")
    assert r.code == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "no fp8 compute" in r.stderr


def test_released_checkpoints_set_the_default_weights(run):
    # DeepSeek-R1 ships FP8 E4M3 with 128x128 block scales: 671B x 1 B ≈ 671 GB, not 1.34 TB
    doc = run("analyze", "deepseek-r1", "h200", "--tp", "8", "-f", "json").json()
    assert doc["inputs"]["weights"] == "fp8"
    bf16 = run(
        "analyze",
        "deepseek-r1",
        "h200",
        "--tp",
        "8",
        "--pp",
        "2",
        "--weights",
        "bf16",
        "-f",
        "json",
    ).json()
    assert bf16["inputs"]["weights"] == "bf16"


def test_gpt_oss_ships_mxfp4_experts_and_bf16_attention(cat):
    from roofline.cli import options as opt
    from roofline.step.memory import weight_bytes_total

    m = cat.model("gpt-oss-20b")
    # by hand: 24 layers x 32 experts x 3 x 2880^2 = 19.11e9 expert params at 4.25 bits (MXFP4,
    # 32 values per E8M0 scale) = 10.15 GB; attention 24 x (2 x 2880 x 4096 + 2 x 2880 x 512) =
    # 0.637e9 params at 2 B = 1.27 GB; embedding and untied head 2 x 201,088 x 2880 at 2 B =
    # 2.32 GB: 13.74 GB, the size of openai/gpt-oss-20b's safetensors (13.76 GB)
    auto = weight_bytes_total(m, opt.deployment("auto", model=m))
    assert auto == pytest.approx(13.74e9, rel=0.01)
    # --weights mxfp4 puts the attention in MXFP4 too, --weights bf16 everything in BF16
    assert weight_bytes_total(m, opt.deployment("mxfp4", model=m)) < auto
    assert weight_bytes_total(m, opt.deployment("bf16", model=m)) > 3 * auto


def test_mlx_is_an_engine_on_apple(run):
    doc = run("analyze", "llama-3.1-8b", "m4-max", "--engine", "mlx", "--weights", "mlx-4bit",
              "-f", "json").json()  # fmt: skip
    assert doc["inputs"]["engine"] == "mlx"
    edge = run("edge", "llama-3.1-8b", "m4-max", "--engine", "mlx", "--weights", "mlx-4bit",
               "-f", "json").json()  # fmt: skip
    assert edge["inputs"]["engine"] == "mlx" and edge["rows"][0]["decode_tokens_per_s"] > 0


def test_gaudi2_and_nvlink5_are_in_the_catalog(cat, run):
    g2 = cat.accelerator("gaudi2")  # Hot Chips 2024: 432 TFLOPS bf16, 96 GB HBM2e at 2.46 TB/s
    assert g2.peak_flops_per_s["bf16"] == 432e12 and g2.memory_bandwidth_bytes_per_s == 2.46e12
    link = cat.tier("nvlink5")  # 18 links x 100 GB/s = 1.8 TB/s both ways
    assert link.bandwidth_bytes_per_s == 900e9
    doc = run(
        "disagg", "llama-3.1-70b", "--prefill", "h100", "--decode", "b200", "--prefill-tp", "4",
        "--decode-tp", "4", "--link", "nvlink5", "-f", "json",
    ).json()  # fmt: skip
    assert doc["inputs"]["link"] == "nvlink5"

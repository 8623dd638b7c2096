"""Edge devices: the GPU-wired limit of unified memory, quantized embedding and head in GGUF and
MLX files, the new formats and catalog entries, and the edge command."""

import pytest

from roofline.cli import options as opt
from roofline.domain.hardware import default_wired_limit_bytes
from roofline.domain.precision import weight_format
from roofline.step.memory import weight_bytes_total, wired_status
from roofline.step.ops import Deployment

GiB = 2**30


def test_wired_limit_by_hand():
    # a 16 GB M1 reports recommendedMaxWorkingSetSize = 10922.67 MB = 2/3 of 16,384 MB
    assert default_wired_limit_bytes(16 * GiB) / 2**20 == pytest.approx(10922.67, abs=0.01)
    gib = 2**30
    assert default_wired_limit_bytes(36 * gib) == pytest.approx(24 * gib)  # 2/3 up to 36 GiB
    assert default_wired_limit_bytes(48 * gib) == pytest.approx(36 * gib)  # 3/4 above (M5 Pro)
    assert default_wired_limit_bytes(64 * gib) == pytest.approx(48 * gib)
    assert default_wired_limit_bytes(512 * gib) == pytest.approx(384 * gib)


def test_wired_warning_band():
    assert wired_status(80, 100) == "fits"
    assert wired_status(95, 100) == "near"  # within 10% of the limit
    assert wired_status(101, 100) == "over"


def test_capacity_follows_the_ram_size_and_the_raised_limit(cat):
    m1, m3u, h100 = cat.accelerator("m1"), cat.accelerator("m3-ultra"), cat.accelerator("h100")
    # RAM is sold in binary units: "16GB" is 16 GiB, and Metal wires 2/3 of it up to 36 GiB
    # (10,922.67 MiB on a 16 GB M1, llama-cpp-python issue #687), the catalog's figure too
    assert opt.capacity(m1, "16GB") == pytest.approx(16 * 2**30 * 2 / 3)
    assert opt.capacity(m1, None) == opt.capacity(m1, "16GB")
    assert opt.capacity(m1, "16GB") / 2**20 == pytest.approx(10922.67, abs=0.01)
    # 32 GiB M1 Pro: 2/3 (21.33 GiB), not the 3/4 above 36 GiB
    assert opt.capacity(cat.accelerator("m1-pro"), None) == pytest.approx(32 * 2**30 * 2 / 3)
    assert opt.capacity(m3u, None, "480GB") == 480 * 2**30  # iogpu.wired_limit_mb is MiB
    with pytest.raises(Exception, match="at most the RAM"):
        opt.capacity(m3u, None, "600GB")
    with pytest.raises(Exception, match="unified memory"):
        opt.capacity(h100, None, "60GB")


def test_gguf_and_mlx_quantize_embedding_and_head(cat):
    # llama.cpp Q4_K_M: token_embd Q4_K (4.5 bpw), output Q6_K (6.5625): mean 5.53125
    assert Deployment(weights=weight_format("q4_k_m")).other_bits == pytest.approx(5.53125)
    assert Deployment(weights=weight_format("bf16")).other_bits == 16.0
    # MLX 4-bit, group 64 with an fp16 scale and bias: 4.5 bits everywhere, so Llama-2-7B's
    # 6,738,415,616 parameters take 6,738,415,616·4.5/8 = 3,790,358,784 B
    m = cat.model("llama-2-7b")
    assert weight_bytes_total(m, Deployment(weights=weight_format("mlx-4bit"))) == pytest.approx(
        6_738_415_616 * 4.5 / 8, rel=1e-4
    )


def test_gguf_q4_0_file_size_of_llama_2_7b(cat):
    # llama.cpp llama_tensor_get_type: a Q4_0 file stores output.weight as Q6_K (6.5625 bpw) and
    # token_embd as Q4_0 (4.5 bpw). Llama-2-7B by hand: 32 layers x (4 x 4096^2 + 3 x 4096 x 11008)
    # = 6,476,005,376 linear weights x 4.5/8 = 3,642,753,024 B; embedding and head 2 x 32000 x 4096
    # = 262,144,000 at (4.5 + 6.5625)/2 bits = 181,248,000 B; total 3.824 GB.
    # TheBloke/Llama-2-7B-GGUF lists llama-2-7b.Q4_0.gguf at 3.83 GB (16-bit embedding and head
    # would give 4.17 GB).
    assert Deployment(weights=weight_format("q4_0")).other_bits == pytest.approx(5.53125)
    total = weight_bytes_total(cat.model("llama-2-7b"), Deployment(weights=weight_format("q4_0")))
    assert total == pytest.approx(3.83e9, rel=0.01)
    assert total == pytest.approx(3_642_753_024 + 181_248_000, rel=1e-3)


def test_new_formats_bits_from_the_llama_cpp_table():
    table = {"iq2_xxs": 2.06, "q2_k": 3.35, "q3_k_m": 3.91, "q5_k_m": 5.68, "q6_k": 6.56}
    for name, bits in table.items():
        assert weight_format(name).bits == bits
    assert weight_format("mlx-8bit").bits == 8.5 and weight_format("MLX4").name == "mlx-4bit"


def test_new_devices_are_in_the_catalog(cat):
    assert cat.accelerator("dgx-spark").memory_bandwidth_bytes_per_s == pytest.approx(273e9)
    assert cat.accelerator("rtx-pro-6000").memory_nominal_bytes == pytest.approx(96 * 2**30)
    assert cat.accelerator("rtx-5060-ti").memory_bandwidth_bytes_per_s == pytest.approx(448e9)
    assert cat.accelerator("gh200").host_link.bandwidth_bytes_per_s == pytest.approx(450e9)
    assert cat.accelerator("strix-halo").memory_bandwidth_bytes_per_s == pytest.approx(256e9)
    assert cat.accelerator("jetson-thor").memory_nominal_bytes == pytest.approx(128 * 2**30)
    assert cat.accelerator("jetson-orin").memory_bandwidth_bytes_per_s == pytest.approx(204.8e9)
    for cpu in ("epyc-9654", "xeon-8480", "9950x", "grace"):
        assert cat.accelerator(cpu).family == "cpu" and cat.accelerator(cpu).source


def test_cli_deepseek_r1_on_a_512gb_mac(run):
    args = ("edge", "deepseek-r1", "m3-ultra", "--weights", "q4_k_m", "--format", "json")
    # 671B·4.85/8 ≈ 407 GB (379 GiB) of weights against the 384 GiB macOS wires by default
    # (3/4 of 512 GiB): within 10% of the limit, no room for compute buffers, so people raise it
    default = run(*args).json()["rows"][0]
    assert default["fits"] == "near limit"
    assert default["needed_bytes"] < 384 * 2**30 == default["usable_bytes"]
    raised = run(*args, "--wired-limit", "480GB").json()["rows"][0]
    assert raised["fits"] == "yes"
    # people run it at about 20 tok/s after raising iogpu.wired_limit_mb (llama.cpp / MLX reports)
    assert 12 < raised["decode_tokens_per_s"] < 30


def test_cli_edge_side_by_side(run):
    doc = run(
        "edge",
        "llama-3.1-70b",
        "m4-max",
        "--weights",
        "q4_k_m",
        "--devices",
        "dgx-spark,rtx-4090",
        "--format",
        "json",
    ).json()
    mac, spark, rtx = doc["rows"]
    assert mac["fits"] == "yes" and spark["fits"] == "yes"
    assert rtx["fits"] == "split" and 0 < rtx["gpu_layers"] < 80
    # the split card spends most of its step on the host: slower than the unified machines
    assert rtx["decode_tokens_per_s"] < mac["decode_tokens_per_s"]
    bad = run("edge", "llama-3.1-8b", "h100", "--wired-limit", "10GB")
    assert bad.code == 2 and "unified" in bad.stderr


def test_raised_wired_limit_by_hand():
    # users raise iogpu.wired_limit_mb to the RAM less what macOS keeps (3 GiB: a 16 GB M2 Pro
    # running gpt-oss-20b's 12.1 GB of weights keeps "~3 GB for macOS and the KV-cache",
    # smeltcore recipe), never below the default: 16 GiB -> 13 GiB, 24 GiB -> 21 GiB,
    # 512 GiB -> 509 GiB; against the defaults 10.67, 16 and 384 GiB
    from roofline.domain.hardware import raised_wired_limit_bytes

    assert raised_wired_limit_bytes(16 * GiB) == pytest.approx(13 * GiB)
    assert raised_wired_limit_bytes(24 * GiB) == pytest.approx(21 * GiB)
    assert raised_wired_limit_bytes(512 * GiB) == pytest.approx(509 * GiB)
    assert raised_wired_limit_bytes(4 * GiB) == default_wired_limit_bytes(4 * GiB)


@pytest.mark.parametrize(
    ("model", "weights", "ram", "engine"),
    [
        # gpt-oss-20b: OpenAI's card says it runs "within 16GB of memory"; 12.8 GB of MXFP4
        # weights against the 10.67 GiB (11.5 GB) macOS wires by default on 16 GiB (2/3)
        ("gpt-oss-20b", "mxfp4", "16GB", "llamacpp"),
        # Qwen3-30B-A3B at 4 bits (Q4_K_M 18.6 GB; MLX 4-bit 17.2 GB) on a 24 GB Mac:
        # 2/3 of 24 GiB = 16 GiB (17.18 GB) by default, under the weights
        ("qwen3-30b-a3b", "q4_k_m", "24GB", "llamacpp"),
        ("qwen3-30b-a3b", "mlx-4bit", "24GB", "mlx"),
    ],
)
def test_small_macs_run_the_moe_models_they_are_known_to_run(run, model, weights, ram, engine):
    args = ("--memory", ram, "--weights", weights, "--engine", engine, "--format", "json")
    r = run("analyze", model, "m4-pro", *args)
    # not refused: planned at the limit users raise it to, said on stderr
    assert r.code == 0, r.stderr
    assert "default GPU-wired limit" in r.stderr and "iogpu.wired_limit_mb" in r.stderr
    row = run("edge", model, "m4-pro", *args).json()["rows"][0]
    assert row["fits"] in ("experts on CPU", "raise limit") and row["decode_tokens_per_s"] > 0


def test_a_model_past_the_ram_is_still_refused(run):
    # Qwen3-30B-A3B Q4_K_M (18.6 GB) does not fit a 16 GiB (17.2 GB) Mac however raised
    r = run("analyze", "qwen3-30b-a3b", "m4", "--memory", "16GB", "--weights", "q4_k_m")
    assert r.code == 2 and "error:" in r.stderr


def test_llamacpp_keeps_just_enough_experts_on_the_cpu(run):
    # gpt-oss-20b on 16 GiB: about 13.1 GB needed against the 11.45 GB (2/3 of 16 GiB) macOS
    # wires by default. One MoE layer holds 32 experts x (3 x 2880 x 2880 + 8,640 biases) =
    # 796.5M weights x 4.25 bits (MXFP4) = 423.2 MB, so the 1.6-1.7 GB over takes 4 layers'
    # experts (--n-cpu-moe 4). The CPU reads them at 243/409.6 = 0.59 of the bandwidth
    # (AnandTech, M1 Max), below the GPU's share: slower than all on the GPU at the raised limit,
    # but not by much (4 of 32 experts per token in 4 of 24 layers)
    args = ("gpt-oss-20b", "m4-pro", "--memory", "16GB", "--weights", "mxfp4", "--format", "json")
    split = run("edge", *args).json()["rows"][0]
    raised = run("edge", *args, "--wired-limit", "13GB").json()["rows"][0]
    assert split["fits"] == "experts on CPU" and raised["fits"] in ("yes", "near limit")
    per_layer = 32 * (3 * 2880 * 2880 + 8640) * 4.25 / 8
    assert per_layer == pytest.approx(423.2e6, rel=1e-3)
    assert split["cpu_moe_layers"] == 4
    over = raised["needed_bytes"] - split["usable_bytes"]
    assert 3 * per_layer < over <= 4 * per_layer
    assert split["needed_bytes"] <= split["usable_bytes"]
    assert 0.8 * raised["decode_tokens_per_s"] < split["decode_tokens_per_s"]
    assert split["decode_tokens_per_s"] < raised["decode_tokens_per_s"]


def test_apple_gguf_share_lies_within_the_4167_tables_spread(cat):
    # llama.cpp discussion 4167 summary (build 8e672ef): Llama 2 7B Q4_0 is 3.56 GiB, Q8_0
    # 6.67 GiB; tg128 t/s per chip. The share of the bandwidth each row implies, weights read
    # once per token (file bytes x t/s / GB/s, the CPU step ignored, so a lower bound):
    # Q4_0 M1 0.79, M2 0.84, M4 0.77, M3 Pro 0.78, M4 Pro 0.71, M4 Max 0.58, M2 Ultra 0.45;
    # Q8_0 M1 0.83, M2 0.87, M4 0.81, M3 Pro 0.84, M4 Pro 0.80, M4 Max 0.71, M2 Ultra 0.60
    rows = {  # chip: (GB/s, Q4_0 tg, Q8_0 tg)
        "m1": (68.25, 14.15, 7.91),
        "m2": (100, 21.91, 12.21),
        "m4": (120, 24.11, 13.54),
        "m3-pro": (150, 30.74, 17.53),
        "m4-pro": (273, 50.74, 30.69),
        "m4-max": (546, 83.06, 54.05),
        "m2-ultra": (800, 94.27, 66.64),
    }
    implied = [
        size * 2**30 * tg / (bw * 1e9)
        for bw, q4, q8 in rows.values()
        for size, tg in ((3.56, q4), (6.67, q8))
    ]
    assert min(implied) == pytest.approx(0.45, abs=0.01)
    assert max(implied) == pytest.approx(0.87, abs=0.01)
    eff = cat.accelerator("m4-max").efficiency
    assert min(implied) <= eff.memory_dequant <= max(implied)
    # MLX's affine groups are not llama.cpp's block kernels: its share is its own (not fitted
    # on the GGUF rows), and a GGUF format on Metal reads at the GGUF share
    assert eff.memory_affine == 0.68 < eff.memory_dequant


def test_plan_and_serve_lay_out_a_small_mac_past_its_default_limit(run):
    # Qwen3-30B-A3B Q4_K_M: 18.6 GB of weights against 2/3 x 24 GiB = 17.18 GB wired by default;
    # raised, 24 GiB less 3 GiB = 22.5 GB holds them. plan and serve had refused ("does not
    # fit", an empty layout table) where analyze and capacity planned at the raised limit
    args = ("qwen3-30b-a3b", "m4-pro", "--memory", "24GB", "--weights", "q4_k_m")
    args += ("--engine", "llamacpp", "--format", "json")
    p = run("plan", *args, "--gpus", "1")
    assert p.code == 0 and "default GPU-wired limit" in p.stderr
    assert p.json()["best"]["layout"].startswith("TP1")
    s = run("serve", *args, "--rate", "0.05", "--requests", "20")
    assert s.code == 0 and "default GPU-wired limit" in s.stderr
    # past the RAM itself (16 GiB) both still refuse
    small = ("qwen3-30b-a3b", "m4", "--memory", "16GB", "--weights", "q4_k_m")
    assert run("serve", *small, "--rate", "0.05", "--requests", "20").code == 2
    refused = run("plan", *small, "--gpus", "1", "--format", "json")
    assert refused.code == 2 and refused.stdout == "" and "fits no layout" in refused.stderr


def test_less_memory_is_never_faster(run):
    """A split (-ngl: some layers in host RAM) ran its GPU layers without llama.cpp's host costs
    a step, which the row that fits pays (analyze's step): 15 GB of an RTX 4090 decoded
    Llama-3.1-8B at 59.8 tokens/s against 52.6 with 16 GB. The split pays them too now, so less
    memory never reads faster."""
    speed = {}
    for mem in ("15GB", "16GB", "18GB"):
        r = run("edge", "llama-3.1-8b", "rtx-4090", "--memory", mem, "--format", "json")
        row = r.json()["rows"][0]
        speed[mem] = (row["fits"], row["decode_tokens_per_s"])
    assert speed["15GB"][0] == "split" and speed["18GB"][0] == "yes"
    assert speed["15GB"][1] < speed["16GB"][1] <= speed["18GB"][1]

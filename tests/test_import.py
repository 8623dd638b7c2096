"""Issue #6: importing Hugging Face config.json files gives the published parameter counts."""

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from roofline.catalog.hfconfig import SUPPORTED
from roofline.catalog.load import Catalog, model_from_config, read_hf_config
from roofline.domain.errors import CatalogError
from roofline.domain.model_types import LINEAR_ATTENTION, TYPE_ALIASES

HF = Path(__file__).resolve().parent / "data/hf"


@pytest.mark.parametrize(
    ("folder", "published_total", "published_active"),
    [
        ("Llama-3.1-8B", 8.03e9, None),  # HF model page
        ("Mixtral-8x7B-v0.1", 46.7e9, 12.9e9),  # Mistral blog
        ("Qwen3-30B-A3B", 30.5e9, 3.3e9),  # Qwen model card
        ("DeepSeek-V3", 671e9, 37e9),  # DeepSeek-V3 report
        ("gpt-oss-120b", 116.83e9, None),  # gpt-oss model card
        ("gemma-3-27b-it", 27.01e9, None),  # Gemma 3 report, text decoder
        ("QwQ-32B", 32.76e9, None),  # count of the Qwen2.5-32B shape
        ("Mistral-7B-v0.1", 7.24e9, None),  # Mistral 7B: "7.3B" rounded; 7.24B counted on HF
        ("Qwen3-32B", 32.8e9, None),  # Qwen model card
        ("DeepSeek-V2", 236e9, 21e9),  # DeepSeek-V2 report
        ("Llama-4-Maverick-17B-128E", 400e9, 17e9),  # Meta Llama 4 blog
    ],
)
def test_import_gives_published_counts(folder, published_total, published_active):
    m = model_from_config(HF / folder / "config.json")
    assert m.params_total == pytest.approx(published_total, rel=0.005)
    if published_active:
        assert m.params_active == pytest.approx(published_active, rel=0.03)


def test_gemma2_non_embedding_count_is_exact():
    # Gemma 2 report (arXiv 2408.00118), Table 2: Gemma 2 9B has 8,324,201,984 non-embedding
    # parameters; its embedding (256000 × 3584) is tied with the output head
    m = model_from_config(HF / "gemma-2-9b/config.json")
    p = m.param_breakdown()
    assert p["total"] - p["embedding"] == 8_324_201_984
    # local/global alternation starting with a local layer: 21 of each, window 4096
    assert {(g.count, g.window) for g in m.layer_groups} == {(21, 4096), (21, None)}


def test_import_matches_the_catalog_entry(cat):
    for folder, entry in (
        ("DeepSeek-V3", "deepseek-v3"),
        ("gpt-oss-120b", "gpt-oss-120b"),
        ("gemma-3-27b-it", "gemma-3-27b"),
    ):
        imported = model_from_config(HF / folder / "config.json")
        shipped = cat.model(entry)
        assert imported.param_breakdown() == shipped.param_breakdown(), folder
        assert [(g.count, g.window, g.moe) for g in imported.layer_groups] == [
            (g.count, g.window, g.moe) for g in shipped.layer_groups
        ]


def test_cli_import_writes_a_loadable_entry(run, tmp_path):
    out = tmp_path / "qwen3.yaml"
    r = run(
        "models", "import", str(HF / "Qwen3-30B-A3B/config.json"), "--id", "my-qwen", "-o", str(out)
    )
    assert r.code == 0 and "30.53B" in r.stderr
    cat = Catalog()
    cat.add_dir(tmp_path)
    assert cat.model("my-qwen").n_routed_experts == 128
    assert yaml.safe_load(out.read_text())["models"][0]["moe_intermediate_size"] == 768


def test_analyze_takes_a_config_path(run):
    doc = run("analyze", str(HF / "Llama-3.1-8B/config.json"), "h100", "--format", "json").json()
    assert doc["inputs"]["model"] == "llama-3.1-8b"
    assert 0.9 < doc["decode"]["arithmetic_intensity"] < 1.3


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            {"model_type": "bert", "architectures": ["BertModel"]},
            "model_type 'bert' (architectures BertModel) is not supported",
        ),
        ({"hidden_size": None}, "missing field 'hidden_size'"),
        ({"num_local_experts": None}, "missing field 'num_local_experts'"),
    ],
)
def test_import_errors_name_the_field(run, tmp_path, edit, needle):
    cfg = json.loads((HF / "Mixtral-8x7B-v0.1/config.json").read_text())
    cfg.update(edit)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("models", "import", str(path))
    assert r.code == 2 and needle in r.stderr and r.stdout == ""


# ---- issue 9: families people deploy, dispatch on `architectures`, quantization_config ----------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples/configs"


@pytest.mark.parametrize(
    ("folder", "model_type", "published_total", "published_active", "weights"),
    [
        # model_type kimi_k2, architectures DeepseekV3ForCausalLM. Model card: "1 trillion total
        # parameters, 32 billion activated"; the checkpoint's safetensors hold 1.03T (Hugging Face
        # model page), the card rounds to 1T
        ("Kimi-K2-Instruct", "deepseek_v3", 1.03e12, 32e9, "fp8"),
        # Qwen2 technical report (arXiv 2407.10671) Table 1: 57B total, 14B activated
        ("Qwen2-57B-A14B", "qwen2_moe", 57e9, 14e9, None),
        # Qwen1.5-MoE blog / model card: "14.3B parameters in total and 2.7B activated"
        ("Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4", "qwen2_moe", 14.3e9, 2.7e9, "int4"),
        # Phi-3 technical report (arXiv 2404.14219): phi-3-mini has 3.8B parameters
        ("Phi-3-mini-4k-instruct", "phi3", 3.8e9, None, None),
        # GLM-4.5 model card: GLM-4.5-Air has 106B total parameters (12B active, a count that
        # leaves out the embedding and output head, so not compared here)
        ("GLM-4.5-Air", "glm4_moe", 106e9, None, None),
        # OLMo 2 7B: 7.3B parameters (allenai/OLMo-2-1124-7B model page)
        ("OLMo-2-1124-7B-Instruct", "olmo2", 7.3e9, None, None),
        # Granite 3.0 report (IBM, 2024) Table 1: the 8B dense model has 8.1B parameters; 3.3 keeps
        # the shape (vocabulary 49155 -> 49159)
        ("granite-3.3-8b-instruct", "granite", 8.1e9, None, None),
        # gpt-oss model card (arXiv 2508.10925) Table 1: gpt-oss-20b has 20.91B parameters; its
        # experts ship in MXFP4
        ("gpt-oss-20b", "gpt_oss", 20.91e9, None, "mxfp4"),
    ],
)
def test_published_configs_import(folder, model_type, published_total, published_active, weights):
    m = model_from_config(EXAMPLES / folder / "config.json")
    assert m.model_type == model_type
    assert m.params_total == pytest.approx(published_total, rel=0.015)
    if published_active:
        assert m.params_active == pytest.approx(published_active, rel=0.03)
    assert m.native_weights == weights


def test_kimi_k2_count_matches_its_checkpoint_exactly():
    # A public dump of moonshotai/Kimi-K2-Instruct's safetensors lists 1,026,470,731,056 stored
    # values. Of those, 62,498,608 are not parameters: FP8 weight_scale_inv tensors (128x128
    # blocks; routed experts 60 layers x 384 x 3 x 896 = 61,931,520; shared experts 60 x 3 x 896
    # = 161,280; attention 61 x (280 + 512 + 3584 + 672 + 1152) = 378,200; the dense layer's
    # 3 x 8064 = 24,192) and rotary inv_freq buffers (61 x 56 = 3,416).
    m = model_from_config(EXAMPLES / "Kimi-K2-Instruct/config.json")
    assert m.params_total == 1_026_470_731_056 - 62_498_608


def test_qwen2_moe_layer_count_matches_torchinfo():
    # torchinfo summary of transformers' Qwen2MoeForCausalLM built from Qwen1.5-MoE-A2.7B's config
    # cut to 3 layers, 4 experts and a 1519-token vocabulary: 86,003,712 per decoder layer (q, k,
    # v with bias, o without; 4 experts and a 5632-wide shared expert; gate D x 4 and the
    # shared_expert_gate D x 1; two norms), 264,235,008 in all
    cfg = json.loads((EXAMPLES / "Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4/config.json").read_text())
    cfg.update(num_hidden_layers=3, num_experts=4, vocab_size=1519)
    cfg.pop("quantization_config")
    m = _arch(cfg)
    assert m.param_breakdown()["total"] - 2 * 1519 * 2048 - 2048 == 3 * 86_003_712
    assert m.params_total == 264_235_008


def _arch(cfg):
    """A ModelArch from a config dict, through the catalog's checks."""
    from roofline.catalog.hfconfig import entry_from_config
    from roofline.catalog.load import _model

    return _model("test", entry_from_config(cfg, "test"))


def test_olmo2_norms_cover_whole_projections():
    # OLMo 2 RMS-normalises the full q (N*H) and k (K*H) projections and has no pre-norms:
    # post_attention and post_feedforward (2 x D) per layer. At D = N*H = K*H = 4096 each layer
    # holds 4 x 4096^2 + 3 x 4096 x 11008 matrix weights plus 4 x 4096 norm weights.
    m = model_from_config(EXAMPLES / "OLMo-2-1124-7B-Instruct/config.json")
    per_layer = 4 * 4096**2 + 3 * 4096 * 11008 + 4 * 4096
    assert m.params_total == 32 * per_layer + 2 * 100352 * 4096 + 4096


def test_glm45_air_structure():
    m = model_from_config(EXAMPLES / "GLM-4.5-Air/config.json")
    # first_k_dense_replace 1: one dense layer, 45 MoE layers; q, k, v biases but no o bias; no
    # q/k norm (use_qk_norm false); the MTP layer is counted apart from the total
    assert [(g.count, g.moe) for g in m.layer_groups] == [(1, False), (45, True)]
    assert m.qkv_bias and not m.attention_bias and not m.use_qk_norm
    p = m.param_breakdown()
    assert m.num_nextn_predict_layers == 1 and p["mtp"] > 0
    # the model card's 12B active leaves out the embedding and output head
    assert p["active"] - p["embedding"] - p["lm_head"] == pytest.approx(12e9, rel=0.03)
    d, n, k, h = 4096, 96, 8, 128
    assert m.attn_linear_params == d * (n + 2 * k) * h + n * h * d + (n + 2 * k) * h


def test_unknown_model_type_dispatches_on_architectures(tmp_path):
    cfg = json.loads((HF / "Llama-3.1-8B/config.json").read_text())
    cfg["model_type"] = "my_finetune"  # architectures stays LlamaForCausalLM
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    m = model_from_config(path)
    assert m.model_type == "llama" and m.params_total == pytest.approx(8.03e9, rel=0.005)


def test_minimax_is_refused_with_the_reason(run, tmp_path):
    # MiniMax-M1's published config (abridged): 80 layers, attn_type_list 0 = lightning attention
    cfg = {
        "architectures": ["MiniMaxM1ForCausalLM"],
        "model_type": "minimax_m1",
        "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
        "hidden_size": 6144,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "num_local_experts": 32,
        "num_experts_per_tok": 2,
        "intermediate_size": 9216,
        "vocab_size": 200064,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("models", "import", str(path))
    assert r.code == 2 and r.stdout == ""
    assert "MiniMax-M1 is not supported" in r.stderr and "lightning (linear)" in r.stderr


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        # AutoAWQ default (w_bit 4, q_group_size 128, zero point) and GPTQ 4-bit g128: int4
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, "int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32}, "int4-g32"),
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8"),
        # DeepSeek-V3 / Kimi-K2 block FP8 and Meta's fbgemm FP8
        ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}, "fp8"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}, "mxfp4"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4"),
    ]
    # compressed-tensors (llm-compressor): Kimi-K2-Thinking's int4 group 32, NVFP4 (group 16,
    # float), FP8 (float 8) and W8A8 (int 8 weights and activations)
    + [
        (
            {
                "quant_method": "compressed-tensors",
                "format": "pack-quantized",
                "config_groups": {"group_0": {"weights": w, "input_activations": a}},
            },
            fmt,
        )
        for w, a, fmt in (
            ({"num_bits": 4, "type": "int", "group_size": 32, "symmetric": True}, None, "int4-g32"),
            ({"num_bits": 4, "type": "float", "group_size": 16}, {"num_bits": 4}, "nvfp4"),
            ({"num_bits": 8, "type": "float", "strategy": "channel"}, None, "fp8"),
            ({"num_bits": 8, "type": "int", "strategy": "channel"}, {"num_bits": 8}, "w8a8"),
        )
    ],
)
def test_quantization_config_sets_the_weight_format(tmp_path, quant, expected):
    cfg = json.loads((HF / "Llama-3.1-8B/config.json").read_text())
    cfg["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    entry = read_hf_config(path)
    assert entry["weights"] == expected and model_from_config(path).native_weights == expected


@pytest.mark.parametrize(
    ("quant", "needle"),
    [
        ({"quant_method": "hqq", "nbits": 4}, "quant_method 'hqq' is not supported"),
        ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "gptq with 3-bit weights"),
    ],
)
def test_unknown_quantization_is_an_input_error(run, tmp_path, quant, needle):
    cfg = json.loads((HF / "Llama-3.1-8B/config.json").read_text())
    cfg["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("models", "import", str(path))
    assert r.code == 2 and needle in r.stderr and r.stdout == ""


def test_imported_weights_round_trip_through_the_catalog(run, tmp_path):
    out = tmp_path / "oss.yaml"
    r = run("models", "import", str(EXAMPLES / "gpt-oss-20b/config.json"), "-o", str(out))
    assert r.code == 0
    assert yaml.safe_load(out.read_text())["models"][0]["weights"] == "mxfp4"
    cat = Catalog()
    cat.add_dir(tmp_path)
    assert cat.model("gpt-oss-20b").native_weights == "mxfp4"
    out.write_text(out.read_text().replace("weights: mxfp4", "weights: int3"))
    with pytest.raises(CatalogError, match="key 'weights'"):
        Catalog().add_dir(tmp_path)


def test_shipped_catalog_declares_the_released_formats(cat):
    # the models whose released checkpoint ships quantized carry its quantization_config:
    # DeepSeek-V3/R1 in FP8 E4M3 with 128x128 blocks (DeepSeek-V3 README_WEIGHTS.md: "we only
    # provide FP8 weights"); everything else ships 16-bit (or fp32)
    # gpt-oss quantizes its routed experts only (MXFP4), attention stays BF16
    native = {
        m.id: (m.native_weights, m.native_dense_weights)
        for m in cat.models.values()
        if m.native_weights
    }
    assert native == {
        "deepseek-v3": ("fp8", None),
        "deepseek-r1": ("fp8", None),
        "gpt-oss-120b": ("mxfp4", "bf16"),
        "gpt-oss-20b": ("mxfp4", "bf16"),
    }


def test_granitemoe_abridged_config_gives_the_published_total():
    # ibm-granite/granite-3.1-3b-a800m-instruct, the config.json fields the importer reads.
    # Granite 3.0 report Table 1: the 3B-A800M MoE has 3.3B parameters (40 experts, top 8,
    # expert width 512, tied embeddings)
    cfg = {
        "architectures": ["GraniteMoeForCausalLM"],
        "model_type": "granitemoe",
        "hidden_size": 1536,
        "intermediate_size": 512,
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 32,
        "num_local_experts": 40,
        "tie_word_embeddings": True,
        "vocab_size": 49155,
    }
    m = _arch(cfg)
    assert m.n_routed_experts == 40 and m.expert_width == 512
    assert m.params_total == pytest.approx(3.3e9, rel=0.015)


def test_glm4_dense_layer_count_by_hand():
    # transformers Glm4DecoderLayer: four RMSNorms (input, post_self_attn, post_attention,
    # post_mlp), q/k/v bias only (attention_bias), gate_up fused (2F x D) and down (D x F).
    # D=64, N=4, K=2, H=32, F=96, V=100, untied:
    #   attention 64*(4+2*2)*32 + 4*32*64 = 16384 + 8192, bias (4+4)*32 = 256
    #   mlp 3*64*96 = 18432; norms 4*64 = 256  -> 43520 per layer
    cfg = {
        "architectures": ["Glm4ForCausalLM"],
        "model_type": "glm4",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "attention_bias": True,
        "partial_rotary_factor": 0.5,
        "tie_word_embeddings": False,
        "vocab_size": 100,
    }
    assert _arch(cfg).params_total == 2 * 43520 + 2 * 100 * 64 + 64


_PLAIN = sorted(
    p
    for p in [*HF.glob("*/config.json"), *EXAMPLES.glob("*/config.json")]
    if "text_config" not in json.loads(p.read_text())
)


@settings(max_examples=30, deadline=None)
@given(
    path=st.sampled_from(_PLAIN),
    name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12),
)
def test_architectures_alone_give_the_same_model(path, name):
    # Property: a config whose model_type the importer does not know reads exactly as the
    # model_type its `architectures` class implements.
    assume(name not in SUPPORTED and name not in TYPE_ALIASES and name not in LINEAR_ATTENTION)
    cfg = json.loads(path.read_text())
    reference = _arch(cfg)
    renamed = _arch({**cfg, "model_type": name})
    assert renamed.param_breakdown() == reference.param_breakdown()
    assert renamed.layer_groups == reference.layer_groups


def test_glm_abridged_config_gives_the_published_total():
    # THUDM/glm-4-9b-chat-hf (model_type glm), the fields the importer reads; its model page
    # states 9.4B parameters. Two norms per layer, q/k/v bias, fused gate_up.
    cfg = {
        "architectures": ["GlmForCausalLM"],
        "model_type": "glm",
        "attention_bias": True,
        "head_dim": 128,
        "hidden_size": 4096,
        "intermediate_size": 13696,
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 2,
        "partial_rotary_factor": 0.5,
        "tie_word_embeddings": False,
        "vocab_size": 151552,
    }
    m = _arch(cfg)
    assert m.qkv_bias and not m.attention_bias
    assert m.params_total == pytest.approx(9.4e9, rel=0.015)


def test_import_takes_a_model_folder(run):
    r = run("models", "import", str(EXAMPLES / "GLM-4.5-Air"))
    assert r.code == 0
    entry = yaml.safe_load(r.stdout)["models"][0]
    assert entry["id"] == "glm-4.5-air" and entry["model_type"] == "glm4_moe"
    assert entry["qkv_bias"] is True and "attention_bias" not in entry

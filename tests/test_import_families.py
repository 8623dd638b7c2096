"""Issue 9: more Hugging Face families import with their published parameter counts, and the
models whose layers are not all softmax attention are refused with the reason.

The abridged configs below carry the fields of each model's Hub config.json that the importer
reads (the Hub file is named on each); the totals are the model cards' (source in each comment).
"""

import json
from pathlib import Path

import pytest

from roofline.catalog.hfconfig import entry_from_config
from roofline.catalog.load import _model, model_from_config

HF = Path(__file__).resolve().parent / "data/hf"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples/configs"


def _arch(cfg):
    return _model("test", entry_from_config(cfg, "test"))


# https://huggingface.co/CohereForAI/c4ai-command-r-v01/blob/main/config.json
COMMAND_R = {
    "architectures": ["CohereForCausalLM"],
    "model_type": "cohere",
    "hidden_size": 8192,
    "intermediate_size": 22528,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "num_hidden_layers": 40,
    "vocab_size": 256000,
    "use_qk_norm": False,
    "logit_scale": 0.0625,
}
# https://huggingface.co/CohereForAI/c4ai-command-r-plus/blob/main/config.json
COMMAND_R_PLUS = {
    **COMMAND_R,
    "hidden_size": 12288,
    "intermediate_size": 33792,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "num_hidden_layers": 64,
    "use_qk_norm": True,
    "logit_scale": 0.8333333333333334,
}
# https://huggingface.co/CohereLabs/c4ai-command-a-03-2025/blob/main/config.json
COMMAND_A = {
    "architectures": ["Cohere2ForCausalLM"],
    "model_type": "cohere2",
    "hidden_size": 12288,
    "intermediate_size": 36864,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "num_hidden_layers": 64,
    "vocab_size": 256000,
    "sliding_window": 4096,
    "sliding_window_pattern": 4,
}
# https://huggingface.co/allenai/OLMoE-1B-7B-0924/blob/main/config.json
OLMOE = {
    "architectures": ["OlmoeForCausalLM"],
    "model_type": "olmoe",
    "hidden_size": 2048,
    "intermediate_size": 1024,
    "num_hidden_layers": 16,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 50304,
    "tie_word_embeddings": False,
    "clip_qkv": None,
    "norm_topk_prob": False,
}
# https://huggingface.co/microsoft/Phi-3.5-MoE-instruct/blob/main/config.json
PHI35_MOE = {
    "architectures": ["PhiMoEForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_phimoe.PhiMoEConfig",
        "AutoModelForCausalLM": "modeling_phimoe.PhiMoEForCausalLM",
    },
    "input_jitter_noise": 0.01,
    "original_max_position_embeddings": 4096,
    "router_jitter_noise": 0.01,
    "model_type": "phimoe",
    "attention_bias": True,
    "hidden_size": 4096,
    "intermediate_size": 6400,
    "lm_head_bias": True,
    "max_position_embeddings": 131072,
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 16,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "vocab_size": 32064,
}
# https://huggingface.co/ByteDance-Seed/Seed-OSS-36B-Instruct/blob/main/config.json
SEED_OSS = {
    "architectures": ["SeedOssForCausalLM"],
    "model_type": "seed_oss",
    "attention_bias": True,
    "attention_out_bias": False,
    "head_dim": 128,
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "mlp_bias": False,
    "num_attention_heads": 80,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "vocab_size": 155136,
}
# https://huggingface.co/LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct/blob/main/config.json (own names)
EXAONE_35 = {
    "architectures": ["ExaoneForCausalLM"],
    "model_type": "exaone",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_layers": 32,
    "tie_word_embeddings": False,
    "vocab_size": 102400,
}
# https://huggingface.co/LGAI-EXAONE/EXAONE-4.0-32B/blob/main/config.json
EXAONE_4 = {
    "architectures": ["Exaone4ForCausalLM"],
    "model_type": "exaone4",
    "head_dim": 128,
    "hidden_size": 5120,
    "intermediate_size": 27392,
    "num_attention_heads": 40,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "sliding_window": 4096,
    "sliding_window_pattern": "LLLG",
    "tie_word_embeddings": False,
    "vocab_size": 102400,
}
# https://huggingface.co/MiniMaxAI/MiniMax-M2/blob/main/config.json, with the fields the importer
# passes over unread: rotary_dim and scoring_func (no weights), the MTP modules (use_mtp,
# num_mtp_modules: not in the published checkpoint's 230B), mlp_intermediate_size (no dense MLP
# in transformers MiniMaxM2DecoderLayer), and the FP8 quantization_config
MINIMAX_M2 = {
    "mlp_intermediate_size": 8192,
    "num_mtp_modules": 3,
    "mtp_transformer_layers": 1,
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "float8_e4m3fn",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
        "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"],
    },
    "rotary_dim": 64,
    "scoring_func": "sigmoid",
    "use_mtp": True,
    "use_routing_bias": True,
    "architectures": ["MiniMaxM2ForCausalLM"],
    "model_type": "minimax_m2",
    "attn_type_list": [1] * 62,
    "head_dim": 128,
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "num_attention_heads": 48,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 62,
    "num_key_value_heads": 8,
    "num_local_experts": 256,
    "qk_norm_type": "per_layer",
    "shared_intermediate_size": 0,
    "tie_word_embeddings": False,
    "use_qk_norm": True,
    "vocab_size": 200064,
}
# https://huggingface.co/baidu/ERNIE-4.5-0.3B-PT/blob/main/config.json
ERNIE_03B = {
    "architectures": ["Ernie4_5ForCausalLM"],
    "model_type": "ernie4_5",
    "head_dim": 128,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_attention_heads": 16,
    "num_hidden_layers": 18,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
    "use_bias": False,
    "vocab_size": 103424,
}
# https://huggingface.co/baidu/ERNIE-4.5-21B-A3B-PT/blob/main/config.json
ERNIE_21B = {
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "model_type": "ernie4_5_moe",
    "head_dim": 128,
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "moe_k": 6,
    "moe_layer_end_index": 27,
    "moe_layer_interval": 1,
    "moe_layer_start_index": 1,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "num_attention_heads": 20,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": True,
    "use_bias": False,
    "vocab_size": 103424,
}
# https://huggingface.co/baidu/ERNIE-4.5-300B-A47B-PT/blob/main/config.json
ERNIE_300B = {
    **ERNIE_21B,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "moe_intermediate_size": 3584,
    "moe_k": 8,
    "moe_layer_end_index": 53,
    "moe_layer_start_index": 3,
    "moe_num_shared_experts": 0,
    "num_attention_heads": 64,
    "num_hidden_layers": 54,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
}
# https://huggingface.co/tencent/Hunyuan-A13B-Instruct/blob/main/config.json (per-layer lists)
HUNYUAN_A13B = {
    "architectures": ["HunYuanMoEV1ForCausalLM"],
    "model_type": "hunyuan_v1_moe",
    "attention_head_dim": 128,
    "hidden_size": 4096,
    "intermediate_size": 3072,
    "moe_intermediate_size": [3072] * 32,
    "moe_layer_num_skipped": 0,
    "moe_topk": [8] * 32,
    "num_attention_heads": 32,
    "num_experts": 64,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_shared_expert": [1] * 32,
    "tie_word_embeddings": True,
    "use_cla": False,
    "use_mixed_mlp_moe": True,
    "use_qk_norm": True,
    "vocab_size": 128167,
}


@pytest.mark.parametrize(
    ("cfg", "model_type", "published_total", "published_active"),
    [
        # Command-R model card: "a 35 billion parameter" model
        (COMMAND_R, "cohere", 35e9, None),
        # Command-R+ model card: "a 104 billion parameter" model
        (COMMAND_R_PLUS, "cohere", 104e9, None),
        # Command A model card: "a 111 billion parameter" model
        (COMMAND_A, "cohere2", 111e9, None),
        # OLMoE paper (arXiv 2409.02060): 6.9B total, 1.3B active per token
        (OLMOE, "olmoe", 6.9e9, 1.3e9),
        # Phi-3.5-MoE model card: 41.9B total (Hub), "6.6B active parameters"
        (PHI35_MOE, "phimoe", 41.9e9, 6.6e9),
        # Seed-OSS-36B model card: 36B parameters
        (SEED_OSS, "llama", 36e9, None),
        # EXAONE 3.5 report (arXiv 2412.04862) Table 1: 7.8B
        (EXAONE_35, "llama", 7.8e9, None),
        # EXAONE 4.0 model card: 32B
        (EXAONE_4, "exaone4", 32e9, None),
        # MiniMax-M2 model card: "230 billion total parameters"
        (MINIMAX_M2, "minimax_m2", 230e9, None),
        # ERNIE 4.5 model card: ERNIE-4.5-0.3B has 0.36B parameters
        (ERNIE_03B, "llama", 0.36e9, None),
        # ERNIE 4.5 model card: ERNIE-4.5-300B-A47B, 300B total and 47B activated
        (ERNIE_300B, "ernie4_5_moe", 300e9, 47e9),
        # ERNIE-4.5-21B-A3B: 21.8B on its Hugging Face model page (the name rounds it to 21B)
        (ERNIE_21B, "ernie4_5_moe", 21.8e9, None),
        # Hunyuan-A13B model card: "80 billion total parameters and 13 billion active"
        (HUNYUAN_A13B, "hunyuan_v1_moe", 80e9, 13e9),
    ],
)
def test_families_give_published_counts(cfg, model_type, published_total, published_active):
    m = _arch(cfg)
    assert m.model_type == model_type
    assert m.params_total == pytest.approx(published_total, rel=0.015)
    if published_active:
        assert m.params_active == pytest.approx(published_active, rel=0.03)


def test_cohere_block_by_hand():
    # transformers CohereDecoderLayer: one input_layernorm (weight only) feeds attention and
    # the MLP in parallel; tied embeddings (CohereConfig default). Command-R: D=8192, N=K=64,
    # F=22528, V=256000: per layer 4*8192^2 + 3*8192*22528 + 8192 = 822,091,776
    m = _arch(COMMAND_R)
    assert m.tie_word_embeddings and m.layer_norm_params == 8192
    assert m.params_total == 40 * 822_091_776 + 256000 * 8192 + 8192
    # use_qk_norm (Command-R+): LayerNorm((N, H)) and ((K, H)): (96 + 8) * 128 weights
    assert _arch(COMMAND_R_PLUS).attn_norm_params == 104 * 128


def test_cohere2_and_exaone4_local_layers():
    # Cohere2: every 4th layer global; EXAONE 4 "LLLG": the same, spelled as a string
    for cfg in (COMMAND_A, EXAONE_4):
        m = _arch(cfg)
        assert [(g.count, g.window) for g in m.layer_groups] == [(48, 4096), (16, None)]
        assert m.layer_window(3) is None and m.layer_window(4) == 4096


def test_phimoe_by_hand():
    # transformers PhimoeDecoderLayer: q, k, v, o with bias; LayerNorm (weight and bias) twice
    # per layer and at the end; lm_head with a bias of V. D=4096, N=32, K=8, H=128, F=6400:
    #   attention 4096*48*128 + 32*128*4096 + 48*128 + 4096 = 41,953,280
    #   experts 16 * 3*4096*6400 = 1,258,291,200; router 4096*16; norms 4*4096
    per_layer = 41_953_280 + 1_258_291_200 + 65_536 + 16_384
    v = 32064
    assert _arch(PHI35_MOE).params_total == 32 * per_layer + 2 * v * 4096 + v + 2 * 4096


def test_olmoe_norms_cover_whole_projections():
    # OlmoeAttention: q_norm over hidden_size (N*H), k_norm over K*H; 2 pre-norms per layer
    m = _arch(OLMOE)
    assert m.attn_norm_params == 2048 + 2048 and m.layer_norm_params == 2 * 2048


def test_ernie45_moe_layers_and_shared_experts():
    # transformers Ernie4_5_MoeDecoderLayer: dense before moe_layer_start_index; the shared MLP
    # is moe_intermediate_size x moe_num_shared_experts wide; router gate plus
    # e_score_correction_bias (moe_statics)
    m = _arch(ERNIE_21B)
    assert [(g.count, g.moe) for g in m.layer_groups] == [(1, False), (27, True)]
    assert m.shared_expert_params == 2 * 3 * 2560 * 1536
    assert m.router_params == 2560 * 64 + 64
    with pytest.raises(Exception, match="moe_layer_interval"):
        _arch({**ERNIE_21B, "moe_layer_interval": 2})


def test_hunyuan_shared_mlp_and_qk_norm():
    # transformers HunYuanMoEV1: per-head query_layernorm / key_layernorm (2 x 128), one shared
    # MLP as wide as an expert, router gate.wg of D x E without bias
    m = _arch(HUNYUAN_A13B)
    assert m.attn_norm_params == 2 * 128 and m.n_shared_experts == 1
    assert m.router_params == 4096 * 64
    with pytest.raises(Exception, match="per-layer moe_topk"):
        _arch({**HUNYUAN_A13B, "moe_topk": [8] * 31 + [2]})
    with pytest.raises(Exception, match="use_cla"):
        _arch({**HUNYUAN_A13B, "use_cla": True})


def test_minimax_m2_active_without_embeddings():
    # the card's "10 billion active" leaves out the embedding and output head
    m = _arch(MINIMAX_M2)
    assert m.native_weights == "fp8"
    p = m.param_breakdown()
    assert p["active"] - p["embedding"] - p["lm_head"] == pytest.approx(10e9, rel=0.03)


def test_seed_oss_biases_on_qkv_only():
    m = _arch(SEED_OSS)
    assert m.qkv_bias and not m.attention_bias
    both = _arch({**SEED_OSS, "attention_out_bias": True})
    assert both.attention_bias and both.params_total - m.params_total == 64 * 5120


def test_deepseek_v32_adds_the_indexer():
    # deepseek-ai/DeepSeek-V3.2's config.json (examples/configs) is DeepSeek-V3's shape plus the
    # indexer (index_n_heads 64, index_head_dim 128, index_topk 2048). Indexer per layer
    # (DeepSeek-V3.2-Exp inference/model.py Indexer): wq_b 1536*64*128 + wk 7168*128 +
    # k_norm 2*128 + weights_proj 7168*64 = 13,959,424
    m = model_from_config(EXAMPLES / "DeepSeek-V3.2/config.json")
    base = model_from_config(HF / "DeepSeek-V3/config.json")
    assert m.model_type == "deepseek_v32" and m.native_weights == "fp8"
    assert m.params_total - base.params_total == 61 * 13_959_424
    # Hugging Face model page of DeepSeek-V3.2(-Exp): 685B stored = the main model plus the MTP
    # module (DeepSeek-V3's README: "671B of the main Model weights and 14B of the MTP Module")
    p = m.param_breakdown()
    assert p["total"] + p["mtp"] == pytest.approx(685e9, rel=0.015)
    cfg = json.loads((EXAMPLES / "DeepSeek-V3.2/config.json").read_text())
    with pytest.raises(Exception, match="DSA indexer of 32 heads"):
        _arch({**cfg, "index_n_heads": 32})


@pytest.mark.parametrize(
    ("model_type", "arch", "name"),
    [
        ("qwen3_next", "Qwen3NextForCausalLM", "Qwen3-Next"),
        ("falcon_h1", "FalconH1ForCausalLM", "Falcon-H1"),
        ("granitemoehybrid", "GraniteMoeHybridForCausalLM", "Granite 4.0 hybrid"),
        ("lfm2", "Lfm2ForCausalLM", "LFM2"),
        ("jamba", "JambaForCausalLM", "Jamba"),
        ("nemotron_h", "NemotronHForCausalLM", "Nemotron-H"),
        ("my_hybrid", "Qwen3NextForCausalLM", "Qwen3-Next"),  # read through architectures
    ],
)
def test_hybrid_models_are_refused_with_the_reason(run, tmp_path, model_type, arch, name):
    cfg = {**COMMAND_R, "model_type": model_type, "architectures": [arch]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("models", "import", str(path))
    assert r.code == 2 and r.stdout == ""
    assert f"{name} is not supported" in r.stderr and "does not grow with context" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # one line (and at most a hint)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ({**MINIMAX_M2, "attn_type_list": [0, 1] * 31}, "lightning (linear) attention"),
        ({**PHI35_MOE, "lm_head_bias": False}, "lm_head_bias"),
        ({**OLMOE, "mlp_bias": True}, "mlp_bias"),
        ({**ERNIE_03B, "use_bias": True}, "use_bias"),
        ({**SEED_OSS, "attention_bias": False, "attention_out_bias": True}, "o alone"),
    ],
)
def test_fields_that_would_change_the_count_are_refused(run, tmp_path, edit, needle):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(edit))
    r = run("models", "import", str(path))
    assert r.code == 2 and needle in r.stderr and r.stdout == ""

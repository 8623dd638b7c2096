"""Issue 9: Hugging Face configs of Llama-shaped families, multimodal wrappers and Granite 4.0
import with counts derived by hand (transformers modeling files) or published exactly."""

import json
from pathlib import Path

import pytest

from roofline.catalog.hfconfig import entry_from_config
from roofline.catalog.load import _model, model_from_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples/configs"


def _arch(cfg):
    return _model("test", entry_from_config(cfg, "test"))


def test_smollm3_is_a_llama_with_tied_embeddings():
    # HuggingFaceTB/SmolLM3-3B config.json fields; NoPE layers (no_rope_layers) hold no weights.
    # By hand: attention 2048*(16+8)*128 + 16*128*2048, MLP 3*2048*11008, norms 2*2048
    cfg = {
        "architectures": ["SmolLM3ForCausalLM"],
        "model_type": "smollm3",
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "num_attention_heads": 16,
        "num_hidden_layers": 36,
        "num_key_value_heads": 4,
        "no_rope_layer_interval": 4,
        "vocab_size": 128256,
    }
    per_layer = 2048 * 24 * 128 + 16 * 128 * 2048 + 3 * 2048 * 11008 + 2 * 2048
    m = _arch(cfg)
    assert m.model_type == "llama" and m.tie_word_embeddings
    assert m.params_total == 36 * per_layer + 128256 * 2048 + 2048


STARCODER2_TOY = {
    "architectures": ["Starcoder2ForCausalLM"],
    "model_type": "starcoder2",
    "hidden_size": 64,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "sliding_window": 4096,
    "use_bias": True,
    "vocab_size": 100,
}


def test_starcoder2_two_matrix_mlp_with_biases():
    # transformers Starcoder2MLP: c_fc (D->F) and c_proj (F->D) with biases; q, k, v, o with
    # biases; LayerNorm weight and bias. D=64, N=4, K=2, H=16, F=256, V=100, tied, 2 layers:
    #   attention 64*(4+4)*16 + 4*16*64 + (8*16 + 64) = 8192 + 4096 + 192
    #   mlp 2*64*256 + 256 + 64 = 33088; norms 2 * 2*64 = 256
    cfg = STARCODER2_TOY
    per_layer = 8192 + 4096 + 192 + 33088 + 256
    assert _arch(cfg).params_total == 2 * per_layer + 100 * 64 + 2 * 64


def test_mistral3_counts_the_text_decoder():
    # Mistral-Small-3.1/3.2-24B (Mistral3ForConditionalGeneration): text_config is a Mistral
    # decoder. By hand: D=5120, N=32, K=8, H=128, F=32768, V=131072, untied:
    #   per layer 5120*48*128 + 32*128*5120 + 3*5120*32768 + 2*5120 = 555,755,520
    # = 23.57B; the card's "24B" also holds the Pixtral vision encoder and projector (~0.44B),
    # which roofline does not count (the import notes say so)
    m = model_from_config(EXAMPLES / "Mistral-Small-3.1-24B-Instruct-2503/config.json")
    assert m.model_type == "mistral"
    assert m.params_total == 40 * 555_755_520 + 2 * 131072 * 5120 + 5120
    assert "vision encoder" in m.notes and "not counted" in m.notes


def test_qwen25_vl_flat_config_reads_as_qwen2():
    # Qwen2.5-VL keeps its text fields at the top level (model_type qwen2_5_vl); the decoder
    # is Qwen2's (transformers Qwen2_5_VLAttention: bias on q, k, v)
    text = {
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
        "vocab_size": 152064,
    }
    vl = _arch({**text, "model_type": "qwen2_5_vl", "vision_config": {"depth": 32}})
    plain = _arch({**text, "model_type": "qwen2"})
    assert vl.model_type == "qwen2" and vl.param_breakdown() == plain.param_breakdown()


def test_wrapper_tie_word_embeddings_applies_to_its_text_config():
    # Qwen3-VL states tie_word_embeddings beside text_config, not in it (Qwen/Qwen3-VL-4B-Instruct)
    text = {
        "model_type": "qwen3_vl_text",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_hidden_layers": 2,
        "vocab_size": 100,
    }
    tied = _arch({"model_type": "qwen3_vl", "tie_word_embeddings": True, "text_config": text})
    untied = _arch({"model_type": "qwen3_vl", "text_config": text})
    assert tied.model_type == "qwen3" and tied.tie_word_embeddings
    assert untied.params_total - tied.params_total == 100 * 64


def test_granite4_all_attention_reads_as_granite_and_hybrids_stay_refused():
    # ibm-granite/granite-4.0-micro: model_type granitemoehybrid, every layer "attention", no
    # experts; its shared_mlp is a gated FFN of shared_intermediate_size. By hand: D=2560,
    # N=40, K=8, H=64, F=8192, V=100352, tied: per layer 2560*56*64 + 40*64*2560 +
    # 3*2560*8192 + 2*2560 = 78,648,320
    cfg = {
        "architectures": ["GraniteMoeHybridForCausalLM"],
        "model_type": "granitemoehybrid",
        "hidden_size": 2560,
        "intermediate_size": 8192,
        "layer_types": ["attention"] * 40,
        "num_attention_heads": 40,
        "num_hidden_layers": 40,
        "num_key_value_heads": 8,
        "num_local_experts": 0,
        "shared_intermediate_size": 8192,
        "tie_word_embeddings": True,
        "vocab_size": 100352,
    }
    m = _arch(cfg)
    assert m.model_type == "granite"
    assert m.params_total == 40 * 78_648_320 + 100352 * 2560 + 2560
    hybrid = {**cfg, "layer_types": ["mamba"] * 36 + ["attention"] * 4}
    with pytest.raises(Exception, match=r"Granite 4\.0 hybrid is not supported"):
        _arch(hybrid)


def test_gemma_non_embedding_count_is_exact():
    # Gemma report (arXiv 2403.08295) Table 2: Gemma 7B has 786,432,000 embedding and
    # 7,751,248,896 non-embedding parameters (google/gemma-7b config.json fields; tied head)
    cfg = {
        "architectures": ["GemmaForCausalLM"],
        "model_type": "gemma",
        "head_dim": 256,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_attention_heads": 16,
        "num_hidden_layers": 28,
        "num_key_value_heads": 16,
        "vocab_size": 256000,
    }
    p = _arch(cfg).param_breakdown()
    assert p["embedding"] == 786_432_000 and p["lm_head"] == 0
    assert p["total"] - p["embedding"] == 7_751_248_896


def test_olmo3_windows_and_whole_projection_norms():
    # allenai/Olmo-3-1025-7B: OLMo 2's block (post-norms, q/k RMSNorm over N*H and K*H) with
    # sliding-window layers named in layer_types (3 local, then 1 global)
    types = (["sliding_attention"] * 3 + ["full_attention"]) * 8
    cfg = {
        "architectures": ["Olmo3ForCausalLM"],
        "model_type": "olmo3",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "layer_types": types,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "sliding_window": 4096,
        "vocab_size": 100278,
    }
    m = _arch(cfg)
    assert [(g.count, g.window) for g in m.layer_groups] == [(24, 4096), (8, None)]
    assert m.attn_norm_params == 2 * 4096
    with pytest.raises(Exception, match="layer_types"):
        _arch({k: v for k, v in cfg.items() if k != "layer_types"})


def test_glm45v_text_decoder_reads_as_glm45():
    # GLM-4.5V (Glm4vMoeForConditionalGeneration) wraps a GLM-4.5-Air-shaped text decoder
    # (model_type glm4v_moe_text); it counts exactly as the text-only GLM-4.5-Air
    air = json.loads((EXAMPLES / "GLM-4.5-Air/config.json").read_text())
    wrapped = {
        "architectures": ["Glm4vMoeForConditionalGeneration"],
        "model_type": "glm4v_moe",
        "text_config": {**air, "model_type": "glm4v_moe_text"},
        "vision_config": {"depth": 24, "hidden_size": 1536},
    }
    m = _arch(wrapped)
    assert m.model_type == "glm4_moe" and "not counted" in m.notes
    assert m.param_breakdown() == _arch(air).param_breakdown()


def test_a_hybrid_wrapper_is_refused_by_its_outer_name():
    # Qwen3.5 (Qwen3_5MoeForConditionalGeneration): Gated DeltaNet layers; the reason is given
    # even when the text_config carries no model_type of its own
    cfg = {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "model_type": "qwen3_5_moe",
        "text_config": {"hidden_size": 2048, "num_hidden_layers": 40},
    }
    with pytest.raises(Exception, match="Gated DeltaNet"):
        _arch(cfg)


def test_starcoder2_mlp_op_has_two_matrices(cat):
    # The toy StarCoder 2 above (D=64, F=256). roofline sizes the FFN as one linear layer with
    # input width D and the matrices' output widths stacked: 2·F for c_fc + c_proj (3·F when
    # gated). Activation bytes per token (64 + 2*256) * 2 B = 1152, per layer; GEMM N = 512
    from roofline.step.ops import Deployment, decode_ops

    cfg = {k: v for k, v in STARCODER2_TOY.items() if k != "sliding_window"}
    hw = cat.accelerator("h100")
    mlp = next(op for op in decode_ops(_arch(cfg), hw, Deployment(), 1, 16) if op.name == "mlp")
    assert float(mlp.act_bytes) == pytest.approx(2 * 1152)  # two layers
    assert float(mlp.gemm_n) == pytest.approx(512)


def test_deepseek_v32_sparse_attention_reads_top_k_latents(cat):
    # DeepSeek-V3.2 (examples/configs): MLA latent 512 + rope 64, index_topk 2048, indexer 64
    # heads x 128 with an fp8 key + fp32 scale cache (128 + 4 = 132 B per token per layer).
    # One decode step, batch 1, TP 1, bf16 KV, KV length T = 10,000, per layer by hand:
    #   KV bytes/token/layer = 576 * 2 + 132 = 1,284
    #   attention reads 2,048 latents + 10,000 indexer keys: 2048*1152 + 10000*132 = 3,679,296 B
    #   FLOPs 128 heads * (2*576 + 2*512) * 2048 + 2*64*128 * 10000 = 734,265,344
    from roofline.step.ops import Deployment, decode_ops, kv_bytes_per_token_layer

    m = model_from_config(EXAMPLES / "DeepSeek-V3.2/config.json")
    assert m.index_topk == 2048
    assert kv_bytes_per_token_layer(m, 16) == 1284
    hw = cat.accelerator("h100")
    attn = next(op for op in decode_ops(m, hw, Deployment(), 1, 10_000) if op.name == "attn.core")
    assert float(attn.kv_bytes) / attn.layers == pytest.approx(3_679_296)
    assert float(attn.flops) / attn.layers == pytest.approx(734_265_344)
    # below the top-k every cached latent is attended: dense MLA plus the indexer
    short = next(op for op in decode_ops(m, hw, Deployment(), 1, 1000) if op.name == "attn.core")
    assert float(short.kv_bytes) / short.layers == pytest.approx(1000 * 1284)


def test_deepseek_v32_prefill_attends_top_k_pairs(cat):
    # Prefill of one 4,096-token prompt, TP 1, per layer by hand: causal pairs 4096*4097/2 =
    # 8,390,656 scored by the indexer; attended pairs Σ min(i, 2048) = 2048*2049/2 + 2048*2048
    # = 6,292,480, each 128 heads * (2*(128+64) + 2*128) = 81,920 FLOPs; the indexer 2*64*128:
    #   6,292,480 * 81,920 + 8,390,656 * 16,384 = 652,952,469,504 FLOPs
    from roofline.step.ops import Deployment, prefill_ops

    m = model_from_config(EXAMPLES / "DeepSeek-V3.2/config.json")
    ops = prefill_ops(m, cat.accelerator("h100"), Deployment(), 1, 4096)
    attn = next(op for op in ops if op.name == "attn.core")
    assert float(attn.flops) / attn.layers == pytest.approx(652_952_469_504)

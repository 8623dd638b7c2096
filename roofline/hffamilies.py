"""Which Hugging Face model classes and model_types the config importer reads, as what (data only).

Used by roofline.hfconfig: `architectures` classes it knows, model_types that are another
family's decoder (aliases), the text model_type of multimodal wrappers, and the models it refuses
because some of their layers are not softmax attention.
"""

from __future__ import annotations

# transformers model classes (config.json `architectures`) -> the model_type they implement
ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForCausalLM": "llama4_text",
    "Phi3ForCausalLM": "phi3",
    "GlmForCausalLM": "glm",
    "Glm4ForCausalLM": "glm4",
    "Glm4MoeForCausalLM": "glm4_moe",
    "Olmo2ForCausalLM": "olmo2",
    "GraniteForCausalLM": "granite",
    "GraniteMoeForCausalLM": "granitemoe",
}
ARCHITECTURES.update(
    {
        "CohereForCausalLM": "cohere",
        "Cohere2ForCausalLM": "cohere2",
        "OlmoeForCausalLM": "olmoe",
        "PhimoeForCausalLM": "phimoe",
        "PhiMoEForCausalLM": "phimoe",  # the Hub config of Phi-3.5-MoE-instruct (remote code)
        "Starcoder2ForCausalLM": "starcoder2",
        "Exaone4ForCausalLM": "exaone4",
        "MiniMaxM2ForCausalLM": "minimax_m2",
        "DeepseekV32ForCausalLM": "deepseek_v32",
        "Ernie4_5_MoeForCausalLM": "ernie4_5_moe",
        "Olmo3ForCausalLM": "olmo3",
        "GemmaForCausalLM": "llama",  # Gemma 1: a Llama shape with tied embeddings, GeGLU
        "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe",
        "HunYuanDenseV1ForCausalLM": "llama",  # with use_qk_norm (per-head q/k RMSNorm)
        # Llama-shaped decoders (transformers SmolLM3Model: NoPE layers carry no weights;
        # Ernie4_5Model without use_bias; SeedOssAttention: biases read in _attention_biases)
        "SmolLM3ForCausalLM": "llama",
        "Ernie4_5ForCausalLM": "llama",
        "SeedOssForCausalLM": "llama",
        "ExaoneForCausalLM": "llama",
    }
)
# model_types that are an architecture the importer knows under another name: Kimi-K2 (see
# above); decoders whose weights are a Llama's (SmolLM3, ERNIE 4.5 dense, Seed-OSS, EXAONE 3.5
# after renaming num_layers); the text decoders of multimodal wrappers (Qwen2-VL / Qwen2.5-VL
# are Qwen2 decoders with q/k/v bias, Qwen3-VL a Qwen3 / Qwen3-MoE one, Ministral 3 a Mistral;
# transformers Qwen2_5_VLTextModel, Qwen3VLTextModel, Qwen3VLMoeTextModel, Ministral3Model)
TYPE_ALIASES = {
    "kimi_k2": "deepseek_v3",
    "smollm3": "llama",
    "ernie4_5": "llama",
    "seed_oss": "llama",
    "exaone": "llama",
    "hunyuan_v1_dense": "llama",
    "gemma": "llama",
    "qwen2_vl": "qwen2",
    "qwen2_vl_text": "qwen2",
    "qwen2_5_vl": "qwen2",
    "qwen2_5_vl_text": "qwen2",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
    "ministral3": "mistral",
    # GLM-4.1V / GLM-4.5V text decoders: GLM-4's (four norms) and GLM-4.5's (transformers
    # Glm4vTextDecoderLayer, Glm4vMoeTextDecoderLayer)
    "glm4v_text": "glm4",
    "glm4v_moe_text": "glm4_moe",
}
# multimodal wrappers whose text_config may lack a model_type: the text model_type to read
TEXT_TYPES = {
    "gemma3": "gemma3_text",
    "llama4": "llama4_text",
    "mistral3": "mistral",
    "qwen2_5_vl": "qwen2",
    "qwen2_vl": "qwen2",
    "qwen3_vl": "qwen3",
    "qwen3_vl_moe": "qwen3_moe",
}
_MINIMAX = "7 of every 8 of its layers use lightning (linear) attention"
_MAMBA = "most of its layers are Mamba (state-space) layers"
# models with linear-attention or state-space layers: refused, because those layers keep a
# fixed-size state instead of a KV cache that grows with context, which roofline cannot express
LINEAR_ATTENTION: dict[str, tuple[str, str]] = {
    "minimax": ("MiniMax-Text-01", _MINIMAX),
    "minimax_text_01": ("MiniMax-Text-01", _MINIMAX),
    "minimax_m1": ("MiniMax-M1", _MINIMAX),
    "MiniMaxText01ForCausalLM": ("MiniMax-Text-01", _MINIMAX),
    "MiniMaxM1ForCausalLM": ("MiniMax-M1", _MINIMAX),
    "MiniMaxForCausalLM": ("MiniMax-Text-01", _MINIMAX),
    "qwen3_next": (
        "Qwen3-Next",
        "3 of every 4 of its layers use Gated DeltaNet (linear) attention",
    ),
    "Qwen3NextForCausalLM": ("Qwen3-Next", "3 of every 4 of its layers use Gated DeltaNet"),
    "qwen3_5": ("Qwen3.5", "most of its layers use Gated DeltaNet (linear) attention"),
    "qwen3_5_text": ("Qwen3.5", "most of its layers use Gated DeltaNet (linear) attention"),
    "qwen3_5_moe": ("Qwen3.5-MoE", "most of its layers use Gated DeltaNet (linear) attention"),
    "qwen3_5_moe_text": ("Qwen3.5-MoE", "most of its layers use Gated DeltaNet (linear) attention"),
    "kimi_linear": ("Kimi Linear", "3 of every 4 of its layers use Kimi Delta (linear) attention"),
    "falcon_h1": ("Falcon-H1", "every layer runs Mamba-2 (state-space) heads beside attention"),
    "FalconH1ForCausalLM": ("Falcon-H1", "every layer runs Mamba-2 heads beside attention"),
    "granitemoehybrid": ("Granite 4.0 hybrid", _MAMBA),
    "GraniteMoeHybridForCausalLM": ("Granite 4.0 hybrid", _MAMBA),
    "jamba": ("Jamba", _MAMBA),
    "JambaForCausalLM": ("Jamba", _MAMBA),
    "nemotron_h": ("Nemotron-H", _MAMBA),
    "NemotronHForCausalLM": ("Nemotron-H", _MAMBA),
    "bamba": ("Bamba", _MAMBA),
    "zamba": ("Zamba", _MAMBA),
    "zamba2": ("Zamba2", _MAMBA),
    "plamo2": ("PLaMo 2", _MAMBA),
    "mamba": ("Mamba", "all of its layers are Mamba (state-space) layers"),
    "mamba2": ("Mamba-2", "all of its layers are Mamba-2 (state-space) layers"),
    "falcon_mamba": ("Falcon Mamba", "all of its layers are Mamba (state-space) layers"),
    "rwkv": ("RWKV", "all of its layers are RWKV (linear recurrent) layers"),
    "recurrent_gemma": ("RecurrentGemma", "2 of every 3 of its layers are RG-LRU recurrences"),
    "lfm2": ("LFM2", "most of its layers are gated short convolutions"),
    "lfm2_moe": ("LFM2-MoE", "most of its layers are gated short convolutions"),
    "Lfm2ForCausalLM": ("LFM2", "most of its layers are gated short convolutions"),
    "Lfm2MoeForCausalLM": ("LFM2-MoE", "most of its layers are gated short convolutions"),
}

"""The Hugging Face model types roofline knows, one record each (data only).

A record holds the model_type, the transformers classes (config.json `architectures`) that
implement it, what the config importer reads it as, and the traits the parameter count needs.
roofline.catalog.hfconfig reads configs with it; roofline.domain.model counts parameters with its
traits.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelType:
    """One model_type. Sources of the traits: the transformers modelling code named per field."""

    model_type: str
    classes: tuple[str, ...] = ()  # config.json `architectures` classes that implement it
    reads_as: str | None = None  # read as this family's decoder (an alias); None: as itself
    text_type: str | None = None  # a multimodal wrapper: its text_config's model_type if unnamed
    decoder: bool = True  # False: only a wrapper (its text_config is read, never itself)
    # tie_word_embeddings defaults to True in its config class (transformers Gemma2Config,
    # Gemma3TextConfig, CohereConfig, Cohere2Config, SmolLM3Config, Ernie4_5Config,
    # Starcoder2Config); the others default to False, as ModelArch does
    tied: bool = False
    experts: str | None = None  # a MoE: the config key of its routed-expert count
    experts_ffn_wide: bool = False  # experts as wide as intermediate_size (no moe_ key)
    # reads sliding_window: every layer local unless layer_types or a pattern says otherwise
    # (transformers Phi3Attention passes config.sliding_window to every layer too)
    windowed: bool = False
    # norms per decoder layer: 4 pre/post attention and FFN (transformers Gemma2/Gemma3 and
    # Glm4DecoderLayer post_self_attn_layernorm, post_mlp_layernorm); 1 where attention and the
    # MLP run in parallel on one input_layernorm (CohereDecoderLayer, Cohere2; CohereLayerNorm
    # has no bias)
    norms: int = 2
    # q/k norms: "head", a per-head RMSNorm on q and k (size H each); "whole", over the whole q
    # and k projections (N·H and K·H weights: transformers Olmo2Attention, Olmo3Attention,
    # OlmoeAttention, MiniMaxM2Attention with qk_norm_type "per_layer")
    qk_norm: str | None = None
    # LayerNorms with a bias as well as a weight (2·D each): transformers PhimoeDecoderLayer and
    # Starcoder2DecoderLayer use nn.LayerNorm, final norm included
    norm_bias: bool = False
    # FFN of two matrices with biases, not gated: StarCoder 2 (c_fc, c_proj) and OPT (fc1, fc2;
    # transformers Starcoder2MLP, OPTDecoderLayer)
    two_matrix_ffn: bool = False
    # q, k, v biases the config does not state (transformers Qwen2Attention and
    # Qwen2MoeAttention hard-code bias=True on q, k, v only)
    qkv_bias: bool = False
    # a per-expert router bias (DeepSeek-V3/V3.2, GLM-4.5 and MiniMax-M2
    # e_score_correction_bias, gpt-oss router bias, ERNIE 4.5's
    # moe_statics.e_score_correction_bias: transformers Ernie4_5_MoeStatics)
    router_bias: bool = False
    # (name, why) of a model with linear-attention or state-space layers: refused, because those
    # layers keep a fixed-size state instead of a KV cache that grows with context, which
    # roofline cannot express
    refused: tuple[str, str] | None = None


_MINIMAX = "7 of every 8 of its layers use lightning (linear) attention"
_MAMBA = "most of its layers are Mamba (state-space) layers"
# fmt: off
RECORDS = (
    ModelType("llama", ("LlamaForCausalLM",)),
    ModelType("mistral", ("MistralForCausalLM",), windowed=True),
    ModelType(
        "mixtral", ("MixtralForCausalLM",), experts="num_local_experts", experts_ffn_wide=True
    ),
    ModelType("qwen2", ("Qwen2ForCausalLM",), qkv_bias=True),
    ModelType("qwen3", ("Qwen3ForCausalLM",), qk_norm="head"),
    ModelType("qwen3_moe", ("Qwen3MoeForCausalLM",), experts="num_experts", qk_norm="head"),
    ModelType("deepseek_v2", ("DeepseekV2ForCausalLM",), experts="n_routed_experts"),
    ModelType(
        "deepseek_v3", ("DeepseekV3ForCausalLM",), experts="n_routed_experts", router_bias=True
    ),
    ModelType("gemma2", ("Gemma2ForCausalLM",), tied=True, windowed=True, norms=4),
    ModelType("gemma3", text_type="gemma3_text", tied=True, windowed=True, norms=4, qk_norm="head"),
    ModelType("gemma3_text", ("Gemma3ForCausalLM",),
        tied=True, windowed=True, norms=4, qk_norm="head"),
    ModelType("gpt_oss", ("GptOssForCausalLM",),
        experts="num_local_experts", experts_ffn_wide=True, windowed=True, router_bias=True),
    ModelType("llama4_text", ("Llama4ForCausalLM",), experts="num_local_experts"),
    ModelType("qwen2_moe", ("Qwen2MoeForCausalLM",), experts="num_experts", qkv_bias=True),
    ModelType("phi3", ("Phi3ForCausalLM",), windowed=True),
    ModelType("glm", ("GlmForCausalLM",)),
    ModelType("glm4", ("Glm4ForCausalLM",), norms=4),
    ModelType("glm4_moe", ("Glm4MoeForCausalLM",), experts="n_routed_experts", router_bias=True),
    ModelType("olmo2", ("Olmo2ForCausalLM",), qk_norm="whole"),
    ModelType("granite", ("GraniteForCausalLM",)),
    ModelType("granitemoe", ("GraniteMoeForCausalLM",),
        experts="num_local_experts", experts_ffn_wide=True),
    ModelType("cohere", ("CohereForCausalLM",), tied=True, norms=1),
    ModelType("cohere2", ("Cohere2ForCausalLM",), tied=True, windowed=True, norms=1),
    ModelType("olmoe", ("OlmoeForCausalLM",),
        experts="num_experts", experts_ffn_wide=True, qk_norm="whole"),
    # PhiMoEForCausalLM: the Hub config of Phi-3.5-MoE-instruct (remote code)
    ModelType("phimoe", ("PhimoeForCausalLM", "PhiMoEForCausalLM"),
        experts="num_local_experts", experts_ffn_wide=True, windowed=True, norm_bias=True),
    ModelType("starcoder2", ("Starcoder2ForCausalLM",),
        tied=True, windowed=True, norm_bias=True, two_matrix_ffn=True),
    # catalog only (the importer reads no OPT config)
    ModelType("opt", norm_bias=True, two_matrix_ffn=True),
    ModelType("exaone4", ("Exaone4ForCausalLM",), windowed=True, qk_norm="head"),
    ModelType("minimax_m2", ("MiniMaxM2ForCausalLM",),
        experts="num_local_experts", experts_ffn_wide=True, qk_norm="whole", router_bias=True),
    ModelType("deepseek_v32", ("DeepseekV32ForCausalLM",),
        experts="n_routed_experts", router_bias=True),
    ModelType("ernie4_5_moe", ("Ernie4_5_MoeForCausalLM",),
        tied=True, experts="moe_num_experts", router_bias=True),
    ModelType("hunyuan_v1_moe", ("HunYuanMoEV1ForCausalLM",), experts="num_experts"),
    ModelType("olmo3", ("Olmo3ForCausalLM",), windowed=True, qk_norm="whole"),
    # model_types that are a family the importer knows under another name: Kimi-K2 ships model_type
    # kimi_k2 with DeepseekV3ForCausalLM (Moonshot's deployment guide: "Kimi-K2 reuses the
    # DeepseekV3CausalLM architecture"); decoders whose weights are a Llama's (transformers SmolLM3
    # (NoPE layers carry no weights), Ernie4_5Model without use_bias, SeedOssAttention (biases read
    # in hfconfig), EXAONE 3.5 after renaming num_layers, HunYuanDense with use_qk_norm (per-head
    # q/k RMSNorm), Gemma 1 (a Llama shape with tied embeddings, GeGLU))
    ModelType("kimi_k2", reads_as="deepseek_v3"),
    ModelType("smollm3", ("SmolLM3ForCausalLM",), reads_as="llama", tied=True),
    ModelType("ernie4_5", ("Ernie4_5ForCausalLM",), reads_as="llama", tied=True),
    ModelType("seed_oss", ("SeedOssForCausalLM",), reads_as="llama"),
    ModelType("exaone", ("ExaoneForCausalLM",), reads_as="llama"),
    ModelType("hunyuan_v1_dense", ("HunYuanDenseV1ForCausalLM",), reads_as="llama"),
    ModelType("gemma", ("GemmaForCausalLM",), reads_as="llama", tied=True),
    # the text decoders of multimodal wrappers: Qwen2-VL / Qwen2.5-VL are Qwen2 decoders with q/k/v
    # bias, Qwen3-VL a Qwen3 / Qwen3-MoE one, Ministral 3 a Mistral, GLM-4.1V / GLM-4.5V GLM-4's
    # (four norms) and GLM-4.5's (transformers Qwen2_5_VLTextModel, Qwen3VLTextModel,
    # Qwen3VLMoeTextModel, Ministral3Model, Glm4vTextDecoderLayer, Glm4vMoeTextDecoderLayer)
    ModelType("qwen2_vl", reads_as="qwen2", text_type="qwen2"),
    ModelType("qwen2_vl_text", reads_as="qwen2"),
    ModelType("qwen2_5_vl", reads_as="qwen2", text_type="qwen2"),
    ModelType("qwen2_5_vl_text", reads_as="qwen2"),
    ModelType("qwen3_vl_text", reads_as="qwen3"),
    ModelType("qwen3_vl_moe_text", reads_as="qwen3_moe"),
    ModelType("ministral3", reads_as="mistral"),
    ModelType("glm4v_text", reads_as="glm4"),
    ModelType("glm4v_moe_text", reads_as="glm4_moe"),
    # multimodal wrappers whose text_config may lack a model_type
    ModelType("llama4", text_type="llama4_text", decoder=False),
    ModelType("mistral3", text_type="mistral", decoder=False),
    ModelType("qwen3_vl", text_type="qwen3", decoder=False),
    ModelType("qwen3_vl_moe", text_type="qwen3_moe", decoder=False),
    # linear attention or state-space layers: refused (Family.refused)
    ModelType("minimax", ("MiniMaxText01ForCausalLM", "MiniMaxForCausalLM"),
        refused=("MiniMax-Text-01", _MINIMAX)),
    ModelType("minimax_text_01", refused=("MiniMax-Text-01", _MINIMAX)),
    ModelType("minimax_m1", ("MiniMaxM1ForCausalLM",), refused=("MiniMax-M1", _MINIMAX)),
    ModelType("qwen3_next", ("Qwen3NextForCausalLM",),
        refused=("Qwen3-Next", "3 of every 4 of its layers use Gated DeltaNet (linear) attention")),
    ModelType("qwen3_5",
        refused=("Qwen3.5", "most of its layers use Gated DeltaNet (linear) attention")),
    ModelType("qwen3_5_text",
        refused=("Qwen3.5", "most of its layers use Gated DeltaNet (linear) attention")),
    ModelType("qwen3_5_moe",
        refused=("Qwen3.5-MoE", "most of its layers use Gated DeltaNet (linear) attention")),
    ModelType("qwen3_5_moe_text",
        refused=("Qwen3.5-MoE", "most of its layers use Gated DeltaNet (linear) attention")),
    ModelType("kimi_linear",
        refused=("Kimi Linear", "3 of every 4 of its layers use Kimi Delta (linear) attention")),
    ModelType("falcon_h1", ("FalconH1ForCausalLM",),
        refused=("Falcon-H1", "every layer runs Mamba-2 (state-space) heads beside attention")),
    ModelType("granitemoehybrid", ("GraniteMoeHybridForCausalLM",),
        refused=("Granite 4.0 hybrid", _MAMBA)),
    ModelType("jamba", ("JambaForCausalLM",), refused=("Jamba", _MAMBA)),
    ModelType("nemotron_h", ("NemotronHForCausalLM",), refused=("Nemotron-H", _MAMBA)),
    ModelType("bamba", refused=("Bamba", _MAMBA)),
    ModelType("zamba", refused=("Zamba", _MAMBA)),
    ModelType("zamba2", refused=("Zamba2", _MAMBA)),
    ModelType("plamo2", refused=("PLaMo 2", _MAMBA)),
    ModelType("mamba", refused=("Mamba", "all of its layers are Mamba (state-space) layers")),
    ModelType("mamba2", refused=("Mamba-2", "all of its layers are Mamba-2 (state-space) layers")),
    ModelType("falcon_mamba",
        refused=("Falcon Mamba", "all of its layers are Mamba (state-space) layers")),
    ModelType("rwkv", refused=("RWKV", "all of its layers are RWKV (linear recurrent) layers")),
    ModelType("recurrent_gemma",
        refused=("RecurrentGemma", "2 of every 3 of its layers are RG-LRU recurrences")),
    ModelType("lfm2", ("Lfm2ForCausalLM",),
        refused=("LFM2", "most of its layers are gated short convolutions")),
    ModelType("lfm2_moe", ("Lfm2MoeForCausalLM",),
        refused=("LFM2-MoE", "most of its layers are gated short convolutions")),
)
# fmt: on
BY_TYPE = {f.model_type: f for f in RECORDS}
# the model_types the catalog and the config importer count, in the table's order
MODEL_TYPES = tuple(f.model_type for f in RECORDS if f.decoder and not (f.reads_as or f.refused))
# transformers classes -> the model_type they are read as
ARCHITECTURES = {c: f.reads_as or f.model_type for f in RECORDS if not f.refused for c in f.classes}
TYPE_ALIASES = {f.model_type: f.reads_as for f in RECORDS if f.reads_as}
TEXT_TYPES = {f.model_type: f.text_type for f in RECORDS if f.text_type}
LINEAR_ATTENTION = {n: f.refused for f in RECORDS if f.refused for n in (f.model_type, *f.classes)}


def traits(model_type: str) -> ModelType:
    """The family's record (a model_type outside the table has the default traits)."""
    return BY_TYPE.get(model_type) or ModelType(model_type)

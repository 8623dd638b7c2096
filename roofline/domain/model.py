"""Model architectures: the Hugging Face config.json fields we need, and parameter counting.

Symbols (scaling book, "How to Scale Your Model"): L layers, D hidden size, N query heads,
K KV heads, H head dim, F FFN width, V vocabulary, E routed experts, k experts per token.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from roofline.domain.model_types import ModelType, traits

# DeepSeek-V3.2's lightning indexer per layer (DeepSeek-V3.2-Exp inference/model.py Indexer):
# wq_b q_lora_rank -> n_heads·head_dim, wk D -> head_dim, k_norm LayerNorm(head_dim) weight and
# bias, weights_proj D -> n_heads; V3.2-Exp's config: index_n_heads 64, index_head_dim 128
# (hfconfig refuses other values, which the catalog cannot carry)
DSA_INDEX_HEADS, DSA_INDEX_HEAD_DIM = 64, 128
# Its key cache per token per layer: head_dim fp8 keys plus one fp32 scale per 128-wide block
# (Indexer k_cache float8_e4m3fn and k_scale_cache float32, block_size 128), whatever the KV dtype
DSA_INDEX_KEY_BYTES = DSA_INDEX_HEAD_DIM * 1 + 4


@dataclass(frozen=True)
class LayerGroup:
    """Layers that cost the same: same attention window and same FFN kind."""

    count: int
    window: int | None  # sliding-window length in tokens; None = full attention
    moe: bool


@dataclass(frozen=True)
class Checkpoint:
    """A published Hugging Face repository a launch line can name (models/*.yaml `checkpoints`
    and `drafters`, each with its source): the weights it ships in (a pre-quantized one is
    loaded as published, never quantized again) or, for a drafter's weights, its kind."""

    repo: str
    weights: str = ""  # a checkpoint's format (bf16, fp8, ...)
    drafter: str = ""  # a drafter's kind (eagle, eagle3, ...)
    source: str = ""


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer, described with Hugging Face config.json names."""

    id: str
    model_type: str
    hidden_size: int  # D
    num_hidden_layers: int  # L
    num_attention_heads: int  # N
    vocab_size: int  # V
    intermediate_size: int  # F (dense FFN)
    num_key_value_heads: int | None = None  # K (None: = N)
    head_dim: int | None = None  # H (None: D / N)
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # bias on q, k, v and o (gpt-oss)
    qkv_bias: bool = False  # bias on q, k and v only (GLM-4 / GLM-4.5 attention_bias)
    use_qk_norm: bool = False  # per-head RMSNorm on q and k (GLM-4.5 use_qk_norm)
    # mixture of experts
    n_routed_experts: int = 0  # E
    num_experts_per_tok: int = 0  # k
    moe_intermediate_size: int | None = None
    n_shared_experts: int = 0
    first_k_dense_replace: int = 0
    interleave_moe_layer_step: int = 1  # Llama 4: every step-th layer is MoE
    intermediate_size_mlp: int | None = None  # Llama 4: width of the dense (non-MoE) FFN
    # multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # local attention
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None  # every p-th layer is global (Gemma 3: 6)
    layer_types: tuple[str, ...] | None = None  # "sliding_attention" | "full_attention"
    num_nextn_predict_layers: int = 0  # DeepSeek-V3 multi-token-prediction module
    index_topk: int | None = None  # DeepSeek Sparse Attention: cached entries a query attends
    name: str = ""
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    published_params_total: float | None = None
    published_params_active: float | None = None
    native_weights: str | None = None  # the weight format the checkpoint ships in (imported)
    native_dense_weights: str | None = None  # its non-expert layers' when only experts are
    # FP8 with fine-grained block scales (quantization_config weight_block_size, DeepSeek-V3's
    # 128x128): engines run its linears through block-scaled GEMMs, not per-tensor FP8 ones
    block_scaled_fp8: bool = False
    checkpoints: tuple[Checkpoint, ...] = ()  # the served (instruct, pre-quantized) repos
    drafter_heads: tuple[Checkpoint, ...] = ()  # published drafter weights for this model

    # ---- derived shape -------------------------------------------------------------------------
    @property
    def n_kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    @property
    def expert_width(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        k, n = self.n_kv_heads, self.num_attention_heads
        return "MHA" if k == n else ("MQA" if k == 1 else "GQA")

    def layer_window(self, i: int) -> int | None:
        """Sliding window of layer i, or None for full attention."""
        if self.sliding_window is None:
            return None
        if self.layer_types is not None:
            return self.sliding_window if self.layer_types[i] == "sliding_attention" else None
        if self.sliding_window_pattern:
            is_global = (i + 1) % self.sliding_window_pattern == 0
            return None if is_global else self.sliding_window
        return self.sliding_window  # every layer local (Mistral 7B v0.1)

    def layer_is_moe(self, i: int) -> bool:
        """MoE from layer first_k_dense_replace on (DeepSeek), on every step-th layer (Llama 4's
        interleave_moe_layer_step: layers step−1, 2·step−1, ...)."""
        step = self.interleave_moe_layer_step
        return self.is_moe and i >= self.first_k_dense_replace and (i + 1) % step == 0

    @property
    def dense_ffn_width(self) -> int:
        return self.intermediate_size_mlp or self.intermediate_size

    @property
    def layer_groups(self) -> tuple[LayerGroup, ...]:
        """Layers grouped by (window, moe), in order of first appearance."""
        keys = [(self.layer_window(i), self.layer_is_moe(i)) for i in range(self.num_hidden_layers)]
        counts = Counter(keys)
        return tuple(LayerGroup(counts[k], k[0], k[1]) for k in dict.fromkeys(keys))

    # ---- per-layer parameter counts (weights of the linear layers, biases, norms) ---------------
    @property
    def attn_linear_params(self) -> int:
        """Projection weights of one attention layer (+ biases). GQA: D·(N+2K)·H + N·H·D.
        MLA (DeepSeek-V2 §2.1): [D·q_lora + q_lora·N·(nope+rope)] or D·N·(nope+rope) for q,
        D·(kv_lora+rope) + kv_lora·N·(nope+v) for kv, N·v·D for o."""
        d, n, k, h = self.hidden_size, self.num_attention_heads, self.n_kv_heads, self.d_head
        if self.is_mla:
            qk = (self.qk_nope_head_dim or 0) + (self.qk_rope_head_dim or 0)
            kv_lora, rope = self.kv_lora_rank or 0, self.qk_rope_head_dim or 0
            q = d * self.q_lora_rank + self.q_lora_rank * n * qk if self.q_lora_rank else d * n * qk
            kv = d * (kv_lora + rope) + kv_lora * n * ((self.qk_nope_head_dim or 0) + self.v_dim)
            return q + kv + n * self.v_dim * d
        params = d * (n + 2 * k) * h + n * h * d
        if self.attention_bias:
            params += (n + 2 * k) * h + d
        elif self.qkv_bias or self.type_traits.qkv_bias:
            params += (n + 2 * k) * h
        return params

    @property
    def type_traits(self) -> ModelType:
        """The traits of its Hugging Face model_type (roofline.domain.model_types)."""
        return traits(self.model_type)

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.d_head

    @property
    def attn_norm_params(self) -> int:
        """Norm weights inside attention: MLA's q/kv latent norms (+ DeepSeek-V3.2's indexer),
        q/k norms, gpt-oss sinks. Per-head q/k norms are H each; OLMo 2/3, OLMoE, MiniMax-M2
        normalise the whole q and k projections (N·H + K·H, Family.qk_norm "whole"), as many
        weights as Cohere's per-head-weighted LayerNorms when use_qk_norm is set."""
        if self.is_mla:
            latent = (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)
            return latent + (self.indexer_params if self.model_type == "deepseek_v32" else 0)
        fam = self.type_traits
        per_head = fam.qk_norm == "head" or (self.use_qk_norm and fam.norms != 1)
        extra = 2 * self.d_head if per_head else 0
        if fam.qk_norm == "whole" or (fam.norms == 1 and self.use_qk_norm):
            extra = (self.num_attention_heads + self.n_kv_heads) * self.d_head
        if self.model_type == "gpt_oss":
            extra += self.num_attention_heads  # learned attention-sink logit per head
        return extra

    @property
    def indexer_params(self) -> int:
        """DeepSeek-V3.2 lightning indexer of one layer (see DSA_INDEX_HEADS): q_lora·n·h + D·h
        + 2·h + D·n. Kept with the attention's small replicated parts (attn_norm_params)."""
        d, n, h = self.hidden_size, DSA_INDEX_HEADS, DSA_INDEX_HEAD_DIM
        return (self.q_lora_rank or 0) * n * h + d * h + 2 * h + d * n

    @property
    def indexer_key_bytes(self) -> int:
        """Bytes the DSA lightning indexer caches per token per layer (DSA_INDEX_KEY_BYTES); 0
        without DeepSeek Sparse Attention."""
        return DSA_INDEX_KEY_BYTES if self.model_type == "deepseek_v32" else 0

    @property
    def norm_width(self) -> int:
        """Weights of one norm over D: 2·D for a LayerNorm with bias (Family.norm_bias)."""
        return (2 if self.type_traits.norm_bias else 1) * self.hidden_size

    @property
    def layer_norm_params(self) -> int:
        return self.type_traits.norms * self.norm_width

    @property
    def ffn_matrices(self) -> int:
        """Weight matrices of one dense FFN: gate, up and down (3) when gated; two for
        Family.two_matrix_ffn."""
        return 2 if self.type_traits.two_matrix_ffn else 3

    @property
    def dense_mlp_params(self) -> int:
        """Gated FFN (SwiGLU/GeGLU): gate, up and down = 3·D·F. StarCoder 2's and OPT's are not
        gated: two matrices with biases, 2·D·F + F + D (transformers Starcoder2MLP, use_bias;
        OPTDecoderLayer fc1, fc2)."""
        d, f = self.hidden_size, self.dense_ffn_width
        if self.type_traits.two_matrix_ffn:
            return 2 * d * f + f + d
        return 3 * d * f

    @property
    def expert_params(self) -> int:
        """One routed expert: 3·D·F_moe (+ biases on gpt-oss)."""
        d, f = self.hidden_size, self.expert_width
        return 3 * d * f + ((2 * f + d) if self.model_type == "gpt_oss" else 0)

    @property
    def shared_expert_params(self) -> int:
        """Shared experts of one MoE layer (DeepSeek: n_shared × 3·D·F_moe)."""
        return self.n_shared_experts * 3 * self.hidden_size * self.expert_width

    @property
    def router_params(self) -> int:
        """Gate D·E, plus a bias per expert (DeepSeek-V3 and GLM-4.5 e_score_correction_bias,
        gpt-oss), plus Qwen2-MoE's sigmoid shared_expert_gate (D×1, transformers
        Qwen2MoeSparseMoeBlock)."""
        e = self.n_routed_experts
        bias = e if self.type_traits.router_bias else 0
        shared_gate = self.hidden_size if self.model_type == "qwen2_moe" else 0
        return self.hidden_size * e + bias + shared_gate

    def _layer_params(self, moe: bool) -> int:
        ffn = (
            self.n_routed_experts * self.expert_params
            + self.shared_expert_params
            + self.router_params
            if moe
            else self.dense_mlp_params
        )
        return self.attn_linear_params + self.attn_norm_params + self.layer_norm_params + ffn

    def param_breakdown(self) -> dict[str, int]:
        """Ordered parameter counts by component (nanoGPT transformer_sizing style).

        Keys: embedding, attention, mlp, experts_routed, experts_shared, router, norms, lm_head,
        total, active (total minus the routed experts a token does not use), mtp (DeepSeek-V3's
        multi-token-prediction module, stored in the checkpoint but not part of the 671B).
        """
        d, v, layers = self.hidden_size, self.vocab_size, self.num_hidden_layers
        n_moe = sum(self.layer_is_moe(i) for i in range(layers))
        n_dense = layers - n_moe
        out = {
            # OPT adds learned positions: max_position_embeddings + 2 rows (OPT's offset)
            "embedding": v * d
            + ((self.max_position_embeddings or 0) + 2) * d * (self.model_type == "opt"),
            "attention": layers * (self.attn_linear_params + self.attn_norm_params),
            "mlp": n_dense * self.dense_mlp_params,
            "experts_routed": n_moe * self.n_routed_experts * self.expert_params,
            "experts_shared": n_moe * self.shared_expert_params,
            "router": n_moe * self.router_params,
            "norms": layers * self.layer_norm_params + self.norm_width,
            # Phi-3.5-MoE's output head has a bias (transformers PhimoeForCausalLM lm_head_bias)
            "lm_head": (0 if self.tie_word_embeddings else v * d)
            + (v if self.model_type == "phimoe" else 0),
        }
        out["total"] = sum(out.values())
        inactive = n_moe * (self.n_routed_experts - self.num_experts_per_tok) * self.expert_params
        out["active"] = out["total"] - inactive
        # MTP (DeepSeek-V3 README_WEIGHTS): per module one MoE decoder layer, eh_proj (2D×D),
        # enorm + hnorm, a shared-head norm, and its own copy of embedding and output head.
        mtp_module = self._layer_params(self.is_moe) + 2 * d * d + 3 * d + 2 * v * d
        out["mtp"] = self.num_nextn_predict_layers * mtp_module
        return out

    @property
    def params_total(self) -> int:
        return self.param_breakdown()["total"]

    @property
    def params_active(self) -> int:
        return self.param_breakdown()["active"]


def past_positions(model: ModelArch, context: float) -> str | None:
    """The one rule for a context past the model's max_position_embeddings, in every command: the
    figures are computed as asked (a deployment may stretch positions with RoPE scaling), and
    this says the model was not trained that long; None within its positions."""
    limit = model.max_position_embeddings
    if not limit or context <= limit:
        return None
    return (
        f"{int(context):,} tokens exceed {model.id}'s max_position_embeddings ({limit:,}): the "
        "model was not trained that long (the figures assume it runs there)"
    )

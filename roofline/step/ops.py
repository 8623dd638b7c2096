"""Per-operator FLOPs and bytes for one forward step, per GPU, for prefill and decode.

Every quantity broadcasts: batch, prompt and context may be numpy arrays. Counts follow
"How to Scale Your Model" (scaling book), chapters "Transformer math" and "Inference":
- a matmul over t tokens with P parameters costs 2·P·t FLOPs and reads P·b_w weight bytes;
- attention with a KV length of T costs 4·N·H·T FLOPs per new token (QK^T and AV);
- causal prefill of S tokens costs 2·N·H·S·(S+1) (each query i attends to i keys), not 4·N·H·S²;
- under a fused (flash) attention kernel the S×S score matrix never reaches memory: attention
  moves Q, K, V, the output and the KV-cache write, and decode reads the whole KV cache;
- MLA decode runs absorbed in the latent space (DeepSeek-V2 §2.1.3; FlashMLA): per head and cached
  token 2·(d_c + d_rope) FLOPs for scores and 2·d_c for the values, one shared latent read;
- MoE weight reads use the expected number of distinct experts the step's t tokens touch,
  E·(1 − (1 − k/E)^t), under uniform routing.
Per GPU: matmuls, heads and experts split over tensor parallelism; KV heads split too but are
replicated when TP > K; the MLA latent is replicated on every TP rank. Under attention-DP a GPU
runs attention for its own B / attention-DP sequences over the attention TP group; under EP the
busiest expert rank sets the MoE time (layout.expert_load_imbalance). Under PP the ops are one
stage's (its layers; the embedding on the first stage, the head on the last, a send between).
Weight bytes read by an op are exactly the bytes `stage_weight_bytes` says the GPU stores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.deployment import Deployment
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import (
    Stage,
    check_shape,
    expert_load_imbalance,
    expert_slots,
    stages,
)
from roofline.domain.model import DSA_INDEX_HEAD_DIM, DSA_INDEX_HEADS, LayerGroup, ModelArch
from roofline.step.closedform import as_float, expected_experts, sum_capped
from roofline.step.memo import cached_by_identity
from roofline.timing.gemm import moe_tiles
from roofline.timing.roofline import FloatArray, FloatOrArray


@dataclass(frozen=True)
class Op:
    """One operator repeated over `layers` layers: totals per GPU for one forward step."""

    name: str
    kind: str  # "matmul" | "attention" | "gather" | "allreduce" | "alltoall" | "p2p" | "overlap"
    layers: int
    flops: FloatArray
    weight_bytes: FloatArray
    kv_bytes: FloatArray
    act_bytes: FloatArray
    sparse: bool = False  # runs on 2:4 sparse tensor cores
    quantized: bool = False  # its weights are stored in the deployment's weight format
    message_bytes: FloatArray | float = 0.0  # collectives: bytes per rank per call
    ranks: int = 1
    link: Tier | None = None  # collectives: the link they run over (None: the GPU's scale-up)
    gemm_n: float = 0.0  # matmuls: output columns per GPU (N after the TP shard; 0 = unknown)
    routed: tuple | None = None  # routed experts: (rows of the step T, top-k, experts E)
    compute: str | None = None  # the dtype it prefers when not the deployment's (dense_weights)
    block_scaled: bool = False  # FP8 weights in fine-grained blocks (ModelArch.block_scaled_fp8)
    # routed experts per rank: (local experts E/EP, one layer's tiles of the touched ones)
    moe_grid: tuple | None = None
    # MLA's absorbed decode: the query heads on one latent stream, q·H per attention-TP rank
    # (its kernel's tiles pad them, timing/attention.py mla_tile_padding); 0: not MLA decode
    latent_group: FloatArray | float = 0.0

    @property
    def bytes(self) -> FloatArray:
        return self.weight_bytes + self.kv_bytes + self.act_bytes

    @property
    def is_collective(self) -> bool:
        # not on the roofline (an "overlap" row: time hidden by two streams, step/overlap.py)
        return self.kind in ("allreduce", "alltoall", "p2p", "bubble", "overlap")


# DeepEP (deepseek-ai/DeepEP README: low-latency dispatch "FP8 ... with per-128-channel scales",
# combine in BF16; TensorRT-LLM's MoE all-to-all the same): fp8 values plus one fp32 scale per
# 128 channels when the experts run in fp8 / fp4 math, else the activations' own format
FP8_DISPATCH_BYTES = 1.0 + 4.0 / 128.0
COMBINE_BYTES = 2.0  # bf16


def ep_alltoall_bytes_per_value(dep: Deployment) -> float:
    """Bytes per hidden value of one EP all-to-all call, averaged over the dispatch and the
    combine (the op stands for both): (b_dispatch + b_combine) / 2, with b_dispatch = 1 + 4/128
    (fp8 + a fp32 scale per 128 channels) for fp8/fp4-class expert math and the activation width
    otherwise, and b_combine = 2 (bf16; DeepEP README, low-latency and normal kernels). Every
    top-k copy is counted (the low-latency kernels send one per selected expert)."""
    fp8_class = dep.weights.compute in ("fp8", "fp4") and not dep.weights.weight_only
    dispatch = FP8_DISPATCH_BYTES if fp8_class else dep.activations.bytes_per_value
    return (dispatch + COMBINE_BYTES) / 2.0


def kv_heads_per_gpu(model: ModelArch, tp: int) -> float:
    """KV heads each TP rank stores: K / TP, but at least one (replicated when TP > K)."""
    return max(model.n_kv_heads / tp, 1.0)


def kv_bytes_per_token_layer(model: ModelArch, kv_bits: float, tp: int = 1) -> float:
    """KV-cache bytes per token per layer per GPU.
    MHA/GQA/MQA: 2·K·H·b_kv (K split over TP, replicated past TP = K).
    MLA: (kv_lora_rank + qk_rope_head_dim)·b_kv, replicated on every TP rank
    (DeepSeek-V2 §2.1.3), plus DeepSeek-V3.2's indexer keys (model.indexer_key_bytes)."""
    b = kv_bits / 8.0
    if model.is_mla:
        latent = ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * b
        return latent + model.indexer_key_bytes
    return 2.0 * kv_heads_per_gpu(model, tp) * model.d_head * b


def attention_matmuls(model: ModelArch, tp: int) -> list[tuple[str, float, float, float]]:
    """(name, parameters per GPU, input width, output width per GPU) of one attention layer's
    projections split over `tp` GPUs (Megatron-LM column/row parallel). MLA's down-projections
    (q_a, kv_a) are replicated on every rank (vLLM ReplicatedLinear); GQA's K/V projections are
    split by KV head and replicated past TP = K (vLLM QKVParallelLinear)."""
    m = model
    d, n, h = m.hidden_size, m.num_attention_heads, m.d_head
    if m.is_mla:
        qk = (m.qk_nope_head_dim or 0) + (m.qk_rope_head_dim or 0)
        latent = (m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0)
        out: list[tuple[str, float, float, float]] = []
        if m.q_lora_rank:
            r = m.q_lora_rank
            out += [("attn.q_a", d * r, d, r), ("attn.q_b", r * n * qk / tp, r, n * qk / tp)]
        else:
            out.append(("attn.q", d * n * qk / tp, d, n * qk / tp))
        out.append(("attn.kv_a", d * latent, d, latent))
        kv_up = (m.qk_nope_head_dim or 0) + m.v_dim
        c = m.kv_lora_rank or 0
        out.append(("attn.kv_b", c * n * kv_up / tp, c, n * kv_up / tp))
        out.append(("attn.o", n * m.v_dim * d / tp, n * m.v_dim / tp, d))
        return out
    k = m.n_kv_heads
    kvh = kv_heads_per_gpu(m, tp)
    bias_o = d if m.attention_bias else 0
    qkv = m.attn_linear_params - n * h * d - bias_o
    kv_part = qkv * 2 * k / (n + 2 * k)
    per_gpu = (qkv - kv_part) / tp + kv_part * kvh / k
    return [
        ("attn.qkv", per_gpu, d, (n / tp + 2 * kvh) * h),
        ("attn.o", (n * h * d + bias_o) / tp, n * h / tp, d),
    ]


def stage_weight_bytes(model: ModelArch, dep: Deployment, stage: Stage) -> float:
    """Weight bytes one GPU of a stage stores, the single accounting the memory plan and the
    step time share: attention and dense FFN over the attention TP group (replicated parts
    whole), routed experts E/EP per rank each over TP/EP (= E·P/TP; E the expert slots, with
    redundant ones where EP does not divide the experts: layout.expert_slots), shared experts
    over the attention TP group, router and norms replicated, embedding (first stage) and head
    (last stage) vocab-parallel over TP; a tied embedding is stored on both end stages under
    PP."""
    m, atp, tp = model, dep.attention_tp, dep.tp
    b_w, b_o, b_d = dep.linear_bits / 8.0, dep.other_bits / 8.0, dep.dense_bits / 8.0
    attn = sum(p for _, p, _, _ in attention_matmuls(m, atp)) * b_d
    norms = (m.attn_norm_params + m.layer_norm_params) * b_o
    total = 0.0
    for g in stage.groups:
        if g.moe:
            ffn = (
                expert_slots(m.n_routed_experts, dep.ep) * m.expert_params / tp * b_w
                + m.shared_expert_params / atp * b_d
            )
            ffn += m.router_params * b_o
        else:
            ffn = m.dense_mlp_params * b_d / atp
        total += g.count * (attn + norms + ffn)
    table = m.vocab_size * m.hidden_size * b_o / tp
    if stage.first:
        total += table
    if stage.last:
        total += m.hidden_size * b_o + (0.0 if m.tie_word_embeddings and stage.first else table)
    return total


_LAYOUTS: dict[tuple, tuple[tuple, tuple[Stage, list]]] = {}


def _layout(model: ModelArch, dep: Deployment, stage: Stage | None) -> tuple[Stage, list]:
    """The stage (default the first) and the attention projections a builder works from, once
    the model's shape rules pass (no fractional heads); cached by identity in _Builder."""
    check_shape(model, dep.layout)
    return stage or stages(model, dep.pp)[0], attention_matmuls(model, dep.attention_tp)


class _Builder:
    """Builds the op list of one step of one pipeline stage, per GPU; a helper object so the
    formulas read in one place."""

    def __init__(
        self, model: ModelArch, dep: Deployment, hw: Accelerator, stage: Stage | None = None
    ) -> None:
        self.m, self.dep, self.hw = model, dep, hw
        self.stage, self.attention = cached_by_identity(
            _LAYOUTS, (model, dep, stage), (), lambda: _layout(model, dep, stage)
        )
        self.b_w = dep.linear_bits / 8.0
        self.b_d = dep.dense_bits / 8.0  # non-expert linear layers (dense_weights)
        self.b_o = dep.other_bits / 8.0
        self.b_a = dep.activations.bytes_per_value
        # the checkpoint's own block-scaled FP8 served as published (its GEMMs are block-scaled)
        self.block = model.block_scaled_fp8 and dep.weights.name == "fp8"
        self.tp, self.atp, self.adp = dep.tp, dep.attention_tp, dep.attention_dp
        self.ops: list[Op] = []
        default = hw.scale_up or hw.host_link
        if default is None and (dep.tp > 1 or dep.pp > 1):
            raise InputError(f"{hw.id} has no scale-up or host link for --tp/--pp > 1")
        links = dep.links
        self.link_tp = links.tp if links else default
        self.link_ep = links.ep if links else default
        self.link_pp = links.pp if links else default

    def add(self, name: str, kind: str, layers: int, flops, weight=0.0, kv=0.0, act=0.0, **kw):
        """An op of `layers` layers from its per-layer numbers (floats, or arrays of a sweep)."""
        f, w, k, a = flops * layers, weight * layers, kv * layers, act * layers
        self.ops.append(Op(name, kind, layers, f, w, k, a, **kw))  # totals

    def rank_batch(self, batch) -> FloatOrArray:
        """Sequences on the busiest attention-DP rank: B / attention-DP, at least one."""
        b = as_float(batch)
        return np.maximum(b / self.adp, np.minimum(b, 1.0)) if self.adp > 1 else b

    def matmul(self, name: str, layers: int, params: float, d_in: float, d_out: float, tokens):
        """A (non-expert) linear layer holding `params` parameters on this GPU: 2·P·t FLOPs,
        P·b weight bytes, and its input and output activations (widths per GPU); b is the
        weight format's, or dense_weights' where the checkpoint quantizes the experts only."""
        t = as_float(tokens)
        dense = self.dep.dense_weights
        self.add(
            name,
            "matmul",
            layers,
            flops=2.0 * params * t,
            weight=params * self.b_d,
            act=t * (d_in + d_out) * self.b_a,
            sparse=self.dep.sparse_2_4,
            quantized=dense is None,
            gemm_n=float(d_out),
            compute=None if dense is None else dense.compute,
            block_scaled=self.block and dense is None,
        )

    def allreduce(self, name: str, layers: int, tokens) -> None:
        """One all-reduce of t·D activations per layer over the attention TP group."""
        if self.atp <= 1:
            return
        message = as_float(tokens) * self.m.hidden_size * self.b_a
        self.add(
            name, "allreduce", layers, 0.0, message_bytes=message, ranks=self.atp, link=self.link_tp
        )

    # ---- attention -------------------------------------------------------------------------
    def attention_projections(self, layers: int, tokens) -> None:
        for name, params, d_in, d_out in self.attention:
            self.matmul(name, layers, params, d_in, d_out, tokens)

    def attention_decode(
        self, g: LayerGroup, batch, mean_context, queries=1.0, attended=None
    ) -> None:
        """Decode attention for a batch at an (effective, window-capped) KV length T, with
        `queries` new tokens per sequence (1 for decode, γ+1 to verify speculative drafts): the
        cache is read once for all of them (flash-decoding), the math scales with the queries.
        DeepSeek Sparse Attention (V3.2, `attended` = mean min(T, index_topk)): the lightning
        indexer scores all T cached keys (64 heads × 128, its own fp8 key cache), then MLA reads
        and attends only the top-k latents (DeepSeek-V3.2-Exp report §2.1)."""
        m, b, t_kv = self.m, self.rank_batch(batch), as_float(mean_context)
        q = as_float(queries)
        heads = m.num_attention_heads / self.atp
        kv_tok = kv_bytes_per_token_layer(m, self.dep.kv.bits, self.atp)
        if m.is_mla:
            t_att = t_kv if attended is None else as_float(attended)
            d_c, d_r = (m.kv_lora_rank or 0), (m.qk_rope_head_dim or 0)
            flops = b * q * heads * (2.0 * (d_c + d_r) + 2.0 * d_c) * t_att
            flops = flops + b * q * self._indexer_flops_per_pair() * t_kv
            act = b * q * heads * ((d_c + d_r) + d_c) * self.b_a
            idx = m.indexer_key_bytes
            kv = b * (t_att * (kv_tok - idx) + t_kv * idx)
            group = q * heads
        else:
            flops = b * q * 4.0 * heads * m.d_head * t_kv
            act = b * q * 2.0 * heads * m.d_head * self.b_a
            kv = b * t_kv * kv_tok  # the whole cache of T tokens (T−1 read + the new one written)
            group = 0.0
        name = attention_op_name(g)
        self.add(name, "attention", g.count, flops, kv=kv, act=act, latent_group=group)

    def _indexer_flops_per_pair(self) -> float:
        """DSA lightning indexer: one query-key score over its heads (split over the attention
        TP group, Indexer n_local_heads) of head_dim, 2·n·h FLOPs; 0 without DSA."""
        if not self.m.index_topk:
            return 0.0
        return 2.0 * DSA_INDEX_HEADS / self.atp * DSA_INDEX_HEAD_DIM

    def attention_prefill(self, g: LayerGroup, batch, prompt) -> None:
        """Causal prefill attention under a fused kernel: Σ_i min(i, w) query-key pairs."""
        m, b, s = self.m, self.rank_batch(batch), as_float(prompt)
        heads = m.num_attention_heads / self.atp
        pairs = b * sum_capped(1.0, s, g.window)
        tokens = b * s
        kv_tok = kv_bytes_per_token_layer(m, self.dep.kv.bits, self.atp)
        if m.is_mla:  # prefill runs un-absorbed: per head qk = nope + rope, v = v_head_dim
            qk = (m.qk_nope_head_dim or 0) + (m.qk_rope_head_dim or 0)
            attended = pairs
            if m.index_topk:  # DSA: each query attends its top-k keys, the indexer scores all
                cap = min(c for c in (g.window, m.index_topk) if c is not None)
                attended = b * sum_capped(1.0, s, cap)
            flops = attended * heads * (2.0 * qk + 2.0 * m.v_dim)
            flops = flops + pairs * self._indexer_flops_per_pair()
            act = tokens * heads * (2.0 * qk + 2.0 * m.v_dim) * self.b_a
        else:
            kvh = kv_heads_per_gpu(m, self.atp)
            flops = pairs * heads * 4.0 * m.d_head
            act = tokens * (2.0 * heads + 2.0 * kvh) * m.d_head * self.b_a
        self.add(attention_op_name(g), "attention", g.count, flops, kv=tokens * kv_tok, act=act)

    # ---- feed-forward ----------------------------------------------------------------------
    def ffn(self, g: LayerGroup, tokens, rank_tokens) -> None:
        """Dense FFN over the attention TP group; MoE: router, routed experts on the busiest
        expert rank (expected top-k load imbalance), shared experts, and the collectives: one
        all-reduce over TP without attention-DP (every rank holds every token, vLLM's EP), an
        all-to-all dispatch and combine over EP with it (DeepEP), plus the shared experts'
        all-reduce when the attention TP group is wider than one GPU."""
        m, tp, atp, t, tr = self.m, self.tp, self.atp, as_float(tokens), as_float(rank_tokens)
        d = m.hidden_size
        if not g.moe:
            f = m.dense_ffn_width
            self.matmul("mlp", g.count, m.dense_mlp_params / atp, d, m.ffn_matrices * f / atp, tr)
            self.allreduce("tp.allreduce(mlp)", g.count, tr)
            return
        # routing over the expert slots (redundant copies share their expert's tokens: EPLB)
        e, k, ep = expert_slots(m.n_routed_experts, self.dep.ep), m.num_experts_per_tok, self.dep.ep
        self.add(
            "moe.router",
            "matmul",
            g.count,
            flops=2.0 * m.router_params * tr,
            weight=m.router_params * self.b_o,
            act=tr * (d + e) * self.b_a,
        )
        f = m.expert_width
        imbalance = expert_load_imbalance(t, k, e, ep) if ep > 1 else 1.0
        # routed activations per rank: an expert sharded over etp = tp/ep ranks sees every row
        # routed to it at the full hidden width d in and out (the all-reduce after the layer
        # sums the partial outputs), only its 3f-wide intermediate split etp ways: T·k/ep rows
        # of (2d + 3f/etp) values (TensorRT-LLM / vLLM fused MoE with moe_tp_size > 1; the
        # shapes validation/kernel_comm.py moe_shapes fits the MoE curve on)
        etp = tp / self.dep.ep
        self.add(
            "moe.experts",
            "matmul",
            g.count,
            flops=2.0 * m.expert_params * k * t * imbalance / tp,
            weight=expected_experts(e, k, t) * m.expert_params * self.b_w / tp,
            act=t * k * (2 * d + 3 * f / etp) * self.b_a * imbalance / self.dep.ep,
            sparse=self.dep.sparse_2_4,
            quantized=True,
            gemm_n=2.0 * f / etp,
            routed=(t, k, e),
            block_scaled=self.block,
            moe_grid=(e / ep, moe_tiles(expected_experts(e, k, t) / ep, 2.0 * f / etp, d)),
        )
        if m.shared_expert_params:
            f_s = m.n_shared_experts * f
            self.matmul("moe.shared", g.count, m.shared_expert_params / atp, d, 3 * f_s / atp, tr)
        if self.adp > 1:
            message = t * k * d * ep_alltoall_bytes_per_value(self.dep) / ep
            self.add(
                "ep.alltoall",
                "alltoall",
                g.count * 2,
                0.0,
                message_bytes=message,
                ranks=ep,
                link=self.link_ep,
            )
            if m.shared_expert_params:
                self.allreduce("tp.allreduce(shared)", g.count, tr)
        else:
            self.allreduce("tp.allreduce(moe)", g.count, tr)

    # ---- embedding, head, stage boundary ---------------------------------------------------
    def embed(self, tokens) -> None:
        t = as_float(tokens)
        d = self.m.hidden_size
        self.add(
            "embed", "gather", 1, 0.0, weight=t * d * self.b_o / self.atp, act=t * d * self.b_a
        )

    def lm_head(self, logit_tokens) -> None:
        m, t = self.m, as_float(logit_tokens)
        params = m.vocab_size * m.hidden_size
        self.add(
            "lm_head",
            "matmul",
            1,
            flops=2.0 * params * t / self.tp,
            weight=params * self.b_o / self.tp,
            act=t * (m.hidden_size + m.vocab_size / self.tp) * self.b_a,
            gemm_n=m.vocab_size / self.tp,
        )

    def send(self, tokens) -> None:
        """The stage's output activations (t·D values per GPU) sent to the next stage."""
        message = as_float(tokens) * self.m.hidden_size * self.b_a
        self.add("pp.send", "p2p", 1, 0.0, message_bytes=message, ranks=2, link=self.link_pp)


def cached_tokens_cap(window: int | None, dep: Deployment) -> int | None:
    """Most tokens a layer keeps in its KV cache: its sliding window and/or the eviction budget."""
    caps = [c for c in (window, dep.kv_token_budget) if c is not None]
    return min(caps) if caps else None


def attention_op_name(g: LayerGroup) -> str:
    """The name of a layer group's attention-core op: attn.core, or attn.core[window w]."""
    return f"attn.core[window {g.window}]" if g.window is not None else "attn.core"


def _layer_ops(b: _Builder, tokens, rank_tokens, attention) -> list[Op]:
    """The stage's embedding (first stage), then per layer group: projections, attention core,
    all-reduce, FFN; then the send to the next stage (all but the last). The head is added by
    the caller (its token count differs by phase)."""
    st = b.stage
    if st.first:
        b.embed(rank_tokens)
    for g in st.groups:
        b.attention_projections(g.count, rank_tokens)
        attention(g)
        b.allreduce("tp.allreduce(attn)", g.count, rank_tokens)
        b.ffn(g, tokens, rank_tokens)
    if not st.last:
        b.send(rank_tokens)
    return b.ops


def prefill_ops(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    prompt: ArrayLike,
    stage: Stage | None = None,
) -> list[Op]:
    """Ops of one prefill of `batch` prompts of `prompt` tokens (causal) on one GPU of `stage`
    (default the first); logits for the last token of each sequence only."""
    b = _Builder(model, dep, hw, stage)
    s = as_float(prompt)
    _layer_ops(
        b, as_float(batch) * s, b.rank_batch(batch) * s, lambda g: b.attention_prefill(g, batch, s)
    )
    if b.stage.last:
        b.lm_head(batch)
    return b.ops


def decode_ops(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    steps: ArrayLike = 1,
    new_tokens: ArrayLike = 1,
    stage: Stage | None = None,
) -> list[Op]:
    """Ops of the mean decode step over `steps` consecutive steps, the first at KV length
    `context` (tokens attended, including the new one), on one GPU of `stage` (default the
    first). Everything but attention is the same every step; attention is affine in the KV
    length, so the mean step uses the mean window-capped length Σ min(t, w) / steps, exact in
    closed form. `new_tokens` > 1 makes it a verification step of speculative decoding: every
    sequence feeds that many tokens at once."""
    b = _Builder(model, dep, hw, stage)
    n = np.maximum(as_float(steps), 1.0)
    first = as_float(context)
    q = as_float(new_tokens)

    def attention(g: LayerGroup) -> None:
        cap = cached_tokens_cap(g.window, dep)
        mean_t = sum_capped(first, first + n - 1.0, cap) / n
        attended = None
        if model.index_topk:  # DSA: mean of min(T, top-k) over the steps
            top = min(c for c in (cap, model.index_topk) if c is not None)
            attended = sum_capped(first, first + n - 1.0, top) / n
        b.attention_decode(g, batch, mean_t, q, attended)

    tokens = as_float(batch) * q
    _layer_ops(b, tokens, b.rank_batch(batch) * q, attention)
    if b.stage.last:
        b.lm_head(tokens)
    return b.ops

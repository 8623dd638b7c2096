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
replicated when TP > K; the MLA latent is replicated on every TP rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from roofline.errors import InputError
from roofline.hardware import Accelerator
from roofline.model import LayerGroup, ModelArch
from roofline.precision import (
    ACTIVATION_FORMATS,
    KV_FORMATS,
    WEIGHT_FORMATS,
    Format,
    sparse_2_4_bits,
)
from roofline.roofline import FloatArray


@dataclass(frozen=True)
class Deployment:
    """How a model runs: number formats, parallelism, sparsity."""

    weights: Format = field(default_factory=lambda: WEIGHT_FORMATS["bf16"])
    kv: Format = field(default_factory=lambda: KV_FORMATS["bf16"])
    activations: Format = field(default_factory=lambda: ACTIVATION_FORMATS["bf16"])
    tp: int = 1
    pp: int = 1
    ep: int = 1
    sparse_2_4: bool = False
    compute_dtype: str | None = None  # override the dtype matmuls run in
    kv_token_budget: int | None = None  # KV eviction (H2O, SnapKV, StreamingLLM): tokens kept

    def __post_init__(self) -> None:
        if self.kv_token_budget is not None and not 1 <= self.kv_token_budget <= 1e9:
            raise InputError(
                f"--kv-budget must be from 1 to 1e9 tokens, got {self.kv_token_budget}"
            )
        for name in ("tp", "pp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= 4096:
                raise InputError(f"--{name} must be a whole number from 1 to 4096, got {value}")
        if self.tp % self.ep:
            raise InputError(
                f"--ep {self.ep} must divide --tp {self.tp}: experts are spread over the "
                "tensor-parallel group"
            )

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def linear_bits(self) -> float:
        """Bits per weight of the linear layers, with 2:4 sparsity's values + index if enabled."""
        return sparse_2_4_bits(self.weights.bits) if self.sparse_2_4 else self.weights.bits

    @property
    def other_bits(self) -> float:
        """Embedding, output head, router and norms stay in 16 bit (32 for an fp32 model)."""
        return 32.0 if self.weights.name == "fp32" else 16.0

    def compute(self, hw: Accelerator) -> str:
        return hw.resolve_compute(self.compute_dtype or self.weights.compute)


@dataclass(frozen=True)
class Op:
    """One operator repeated over `layers` layers: totals per GPU for one forward step."""

    name: str
    kind: str  # "matmul" | "attention" | "gather" | "allreduce" | "alltoall" | "p2p"
    layers: int
    flops: FloatArray
    weight_bytes: FloatArray
    kv_bytes: FloatArray
    act_bytes: FloatArray
    sparse: bool = False  # runs on 2:4 sparse tensor cores
    quantized: bool = False  # its weights are stored in the deployment's weight format
    message_bytes: FloatArray | float = 0.0  # collectives: bytes per rank per call
    ranks: int = 1
    gemm_n: float = 0.0  # matmuls: output columns per GPU (N after the TP shard; 0 = unknown)

    @property
    def bytes(self) -> FloatArray:
        return self.weight_bytes + self.kv_bytes + self.act_bytes

    @property
    def is_collective(self) -> bool:
        return self.kind in ("allreduce", "alltoall", "p2p")


def _arr(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def sum_capped(first: ArrayLike, last: ArrayLike, window: int | None) -> FloatArray:
    """Σ_{t=first}^{last} min(t, w) in closed form (w = None: no cap). Zero when last < first.

    Used for causal prefill (pairs attended by queries 1..S under a sliding window) and for the
    total KV read over a request's decode steps."""
    a, b = _arr(first), _arr(last)
    n = np.maximum(b - a + 1, 0.0)
    if window is None:
        return n * (a + b) / 2.0
    m = np.clip(window, a - 1, np.maximum(b, a - 1))  # last t that is still below the cap
    below = (m * (m + 1) - (a - 1) * a) / 2.0
    return np.where(n > 0, below + (np.maximum(b, a - 1) - m) * window, 0.0)


def expected_experts(n_experts: int, top_k: int, tokens: ArrayLike) -> FloatArray:
    """Expected distinct experts touched by t tokens with uniform top-k routing:
    E·(1 − (1 − k/E)^t) (k at t = 1, → E as t grows)."""
    t = _arr(tokens)
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** t)


def kv_heads_per_gpu(model: ModelArch, tp: int) -> float:
    """KV heads each TP rank stores: K / TP, but at least one (replicated when TP > K)."""
    return max(model.n_kv_heads / tp, 1.0)


def kv_bytes_per_token_layer(model: ModelArch, kv_bits: float, tp: int = 1) -> float:
    """KV-cache bytes per token per layer per GPU.
    MHA/GQA/MQA: 2·K·H·b_kv (K split over TP, replicated past TP = K).
    MLA: (kv_lora_rank + qk_rope_head_dim)·b_kv, replicated on every TP rank
    (DeepSeek-V2 §2.1.3)."""
    b = kv_bits / 8.0
    if model.is_mla:
        return ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * b
    return 2.0 * kv_heads_per_gpu(model, tp) * model.d_head * b


class _Builder:
    """Builds the op list of one step; a helper object so the formulas read in one place."""

    def __init__(self, model: ModelArch, dep: Deployment, hw: Accelerator) -> None:
        self.m, self.dep, self.hw = model, dep, hw
        self.b_w = dep.linear_bits / 8.0
        self.b_o = dep.other_bits / 8.0
        self.b_a = dep.activations.bytes_per_value
        self.tp = dep.tp
        self.ops: list[Op] = []
        if hw.scale_up is None and hw.host_link is None and (dep.tp > 1 or dep.pp > 1):
            raise InputError(f"{hw.id} has no scale-up or host link for --tp/--pp > 1")

    def add(self, name: str, kind: str, layers: int, flops, weight=0.0, kv=0.0, act=0.0, **kw):
        flops, weight, kv, act = (_arr(x) * layers for x in (flops, weight, kv, act))
        self.ops.append(Op(name, kind, layers, flops, weight, kv, act, **kw))  # totals

    def matmul(
        self,
        name: str,
        layers: int,
        params: float,
        d_in: float,
        d_out: float,
        tokens,
        sharded: bool = True,
    ):
        """A linear layer: 2·P·t FLOPs and P·b_w weight bytes, divided over TP when `sharded`
        (replicated layers, like MLA's latent down-projections in vLLM, run whole on every
        rank), plus its input and output activations."""
        t = _arr(tokens)
        split = self.tp if sharded else 1
        self.add(
            name,
            "matmul",
            layers,
            flops=2.0 * params * t / split,
            weight=params * self.b_w / split,
            act=t * (d_in + d_out) * self.b_a,
            sparse=self.dep.sparse_2_4,
            quantized=True,
            gemm_n=float(d_out),
        )

    def allreduce(self, name: str, layers: int, tokens) -> None:
        """One all-reduce of the layer's activations (t·D values) per layer under TP."""
        if self.tp <= 1:
            return
        message = _arr(tokens) * self.m.hidden_size * self.b_a
        self.add(name, "allreduce", layers, flops=0.0, message_bytes=message, ranks=self.tp)

    # ---- attention -------------------------------------------------------------------------
    def attention_projections(self, layers: int, tokens) -> None:
        m, tp = self.m, self.tp
        d, n, h = m.hidden_size, m.num_attention_heads, m.d_head
        if m.is_mla:
            qk = (m.qk_nope_head_dim or 0) + (m.qk_rope_head_dim or 0)
            latent = (m.kv_lora_rank or 0) + (m.qk_rope_head_dim or 0)
            if m.q_lora_rank:  # the down-projections are replicated on every TP rank
                self.matmul(
                    "attn.q_a", layers, d * m.q_lora_rank, d, m.q_lora_rank, tokens, sharded=False
                )
                self.matmul(
                    "attn.q_b", layers, m.q_lora_rank * n * qk, m.q_lora_rank, n * qk / tp, tokens
                )
            else:
                self.matmul("attn.q", layers, d * n * qk, d, n * qk / tp, tokens)
            self.matmul("attn.kv_a", layers, d * latent, d, latent, tokens, sharded=False)
            kv_up = (m.qk_nope_head_dim or 0) + m.v_dim
            kv_b = (m.kv_lora_rank or 0) * n * kv_up
            self.matmul("attn.kv_b", layers, kv_b, m.kv_lora_rank or 0, n * kv_up / tp, tokens)
            self.matmul("attn.o", layers, n * m.v_dim * d, n * m.v_dim / tp, d, tokens)
            return
        k = m.n_kv_heads
        qkv = m.attn_linear_params - n * h * d - (d if m.attention_bias else 0)
        self.matmul("attn.qkv", layers, qkv, d, (n + 2 * k) * h / tp, tokens)
        self.matmul(
            "attn.o", layers, n * h * d + (d if m.attention_bias else 0), n * h / tp, d, tokens
        )

    def attention_decode(self, g: LayerGroup, batch, mean_context, queries=1.0) -> None:
        """Decode attention for a batch at an (effective, window-capped) KV length T, with
        `queries` new tokens per sequence (1 for decode, γ+1 to verify speculative drafts): the
        cache is read once for all of them (flash-decoding), the math scales with the queries."""
        m, tp, b, t_kv = self.m, self.tp, _arr(batch), _arr(mean_context)
        q = _arr(queries)
        heads = m.num_attention_heads / tp
        kv_tok = kv_bytes_per_token_layer(m, self.dep.kv.bits, tp)
        if m.is_mla:
            d_c, d_r = (m.kv_lora_rank or 0), (m.qk_rope_head_dim or 0)
            flops = b * q * heads * (2.0 * (d_c + d_r) + 2.0 * d_c) * t_kv
            act = b * q * heads * ((d_c + d_r) + d_c) * self.b_a
        else:
            flops = b * q * 4.0 * heads * m.d_head * t_kv
            act = b * q * 2.0 * heads * m.d_head * self.b_a
        kv = b * t_kv * kv_tok  # the whole cache of T tokens (T−1 read + the new entry written)
        self.add(attention_op_name(g), "attention", g.count, flops, kv=kv, act=act)

    def attention_prefill(self, g: LayerGroup, batch, prompt) -> None:
        """Causal prefill attention under a fused kernel: Σ_i min(i, w) query-key pairs."""
        m, tp, b, s = self.m, self.tp, _arr(batch), _arr(prompt)
        heads = m.num_attention_heads / tp
        pairs = b * sum_capped(1.0, s, g.window)
        tokens = b * s
        kv_tok = kv_bytes_per_token_layer(m, self.dep.kv.bits, tp)
        if m.is_mla:  # prefill runs un-absorbed: per head qk = nope + rope, v = v_head_dim
            qk = (m.qk_nope_head_dim or 0) + (m.qk_rope_head_dim or 0)
            flops = pairs * heads * (2.0 * qk + 2.0 * m.v_dim)
            act = tokens * heads * (2.0 * qk + 2.0 * m.v_dim) * self.b_a
        else:
            kvh = kv_heads_per_gpu(m, tp)
            flops = pairs * heads * 4.0 * m.d_head
            act = tokens * (2.0 * heads + 2.0 * kvh) * m.d_head * self.b_a
        self.add(attention_op_name(g), "attention", g.count, flops, kv=tokens * kv_tok, act=act)

    # ---- feed-forward ----------------------------------------------------------------------
    def ffn(self, g: LayerGroup, tokens) -> None:
        m, tp, t = self.m, self.tp, _arr(tokens)
        d = m.hidden_size
        if not g.moe:
            f = m.dense_ffn_width
            self.matmul("mlp", g.count, m.dense_mlp_params, d, 3 * f / tp, t)
            self.allreduce("tp.allreduce(mlp)", g.count, t)
            return
        e, k = m.n_routed_experts, m.num_experts_per_tok
        self.add(
            "moe.router",
            "matmul",
            g.count,
            flops=2.0 * m.router_params * t,
            weight=m.router_params * self.b_o,
            act=t * (d + e) * self.b_a,
        )
        f = m.expert_width
        distinct = expected_experts(e, k, t)
        self.add(
            "moe.experts",
            "matmul",
            g.count,
            flops=2.0 * m.expert_params * k * t / tp,
            weight=distinct * m.expert_params * self.b_w / tp,
            act=t * k * (2 * d + 3 * f) * self.b_a / tp,
            sparse=self.dep.sparse_2_4,
            quantized=True,
            gemm_n=2.0 * f / (tp / self.dep.ep),
        )
        if m.shared_expert_params:
            f_s = m.n_shared_experts * f
            self.matmul("moe.shared", g.count, m.shared_expert_params, d, 3 * f_s / tp, t)
        if self.dep.ep > 1:
            message = t * k * d * self.b_a / self.dep.ep
            self.add(
                "ep.alltoall",
                "alltoall",
                g.count * 2,
                flops=0.0,
                message_bytes=message,
                ranks=self.dep.ep,
            )
        else:
            self.allreduce("tp.allreduce(moe)", g.count, t)

    # ---- embedding and head ----------------------------------------------------------------
    def embed(self, tokens) -> None:
        t = _arr(tokens)
        self.add(
            "embed",
            "gather",
            1,
            0.0,
            weight=t * self.m.hidden_size * self.b_o / self.tp,
            act=t * self.m.hidden_size * self.b_a,
        )

    def lm_head(self, logit_tokens) -> None:
        m, t = self.m, _arr(logit_tokens)
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

    def pipeline(self, tokens) -> None:
        if self.dep.pp > 1:
            message = _arr(tokens) * self.m.hidden_size * self.b_a
            self.add("pp.send", "p2p", self.dep.pp - 1, 0.0, message_bytes=message, ranks=2)


def cached_tokens_cap(window: int | None, dep: Deployment) -> int | None:
    """Most tokens a layer keeps in its KV cache: its sliding window and/or the eviction budget."""
    caps = [c for c in (window, dep.kv_token_budget) if c is not None]
    return min(caps) if caps else None


def attention_op_name(g: LayerGroup) -> str:
    """The name of a layer group's attention-core op: attn.core, or attn.core[window w]."""
    return f"attn.core[window {g.window}]" if g.window is not None else "attn.core"


def _layer_ops(b: _Builder, tokens, attention) -> list[Op]:
    """Embedding, then per layer group: projections, attention core, all-reduce, FFN; then pipeline
    transfers. The head is added by the caller (its token count differs by phase)."""
    b.embed(tokens)
    for g in b.m.layer_groups:
        b.attention_projections(g.count, tokens)
        attention(g)
        b.allreduce("tp.allreduce(attn)", g.count, tokens)
        b.ffn(g, tokens)
    b.pipeline(tokens)
    return b.ops


def prefill_ops(
    model: ModelArch, hw: Accelerator, dep: Deployment, batch: ArrayLike, prompt: ArrayLike
) -> list[Op]:
    """Ops of one prefill of `batch` prompts of `prompt` tokens (causal); logits for the last
    token of each sequence only."""
    b = _Builder(model, dep, hw)
    tokens = _arr(batch) * _arr(prompt)
    _layer_ops(b, tokens, lambda g: b.attention_prefill(g, batch, prompt))
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
) -> list[Op]:
    """Ops of the mean decode step over `steps` consecutive steps, the first at KV length
    `context` (tokens attended, including the new one). Everything but attention is the same
    every step; attention is affine in the KV length, so the mean step uses the mean
    window-capped length Σ min(t, w) / steps, exact in closed form. `new_tokens` > 1 makes it a
    verification step of speculative decoding: every sequence feeds that many tokens at once."""
    b = _Builder(model, dep, hw)
    n = np.maximum(_arr(steps), 1.0)
    first = _arr(context)
    q = _arr(new_tokens)

    def attention(g: LayerGroup) -> None:
        mean_t = sum_capped(first, first + n - 1.0, cached_tokens_cap(g.window, dep)) / n
        b.attention_decode(g, batch, mean_t, q)

    tokens = _arr(batch) * q
    _layer_ops(b, tokens, attention)
    b.lm_head(tokens)
    return b.ops

"""LoRA adapters' bytes: one adapter whole, and the GPU adapter slots an engine holds on each GPU
of a replica under its layout (Deployment.lora_slots, lora_rank; plan_memory takes them from the
KV budget).

One adapter: rank x sum over the adapted projections of (in + out) x layers x bytes per value
(LoRA: W + B A with A in R^{r x in}, B in R^{out x r}; Hu et al. 2021, arXiv 2106.09685,
section 4). Projections: q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o) and, for a dense FFN, gate,
up, down ("all-linear"), at bf16 (2 bytes), the adapters' usual dtype. A MoE base's experts are
not adapted here (the attention projections only, plus a dense FFN where the model has one in
every layer).

GPU adapter slots (vLLM --max-loras, --max-lora-rank): vLLM allocates, at load and so before the
KV cache is sized from what is left, max_loras x max_lora_rank x (in + out) per adapted linear
layer, each stack shaped as the base layer it wraps is sharded (vllm-project/vllm, default
fully_sharded_loras=False; vllm/lora/layers/base_linear.py @01235a49 create_lora_weights:
lora_a_stacked (max_loras, 1, max_lora_rank, input_size), lora_b_stacked (max_loras, 1,
output_size, max_lora_rank)):
- column-parallel layers (q, k, v: QKVParallelLinear; gate, up: MergedColumnParallelLinear;
  MLA's q_b, kv_b) keep A whole and shard B: output_size is the base layer's
  output_size_per_partition (column_parallel_linear.py @0163de2b: "LoRA B is sliced for tensor
  parallelism"; k and v: num_kv_heads per partition x head size, at least one head, replicated
  where TP exceeds the KV heads);
- row-parallel layers (o, down) shard A and keep B whole: input_size is the base layer's
  input_size_per_partition (row_parallel_linear.py @7626577c, RowParallelLinearWithLoRA);
- MLA's q_a and kv_a (fused_qkv_a_proj, built with TP disabled) stay whole on every GPU.
The split is over the attention's TP group (Deployment.attention_tp, which also splits a dense
FFN), and a GPU holds the layers of its pipeline stage (the most loaded stage, as vLLM splits
them: roofline.domain.layout.stage_layer_counts)."""

from __future__ import annotations

import math

from roofline.domain.deployment import Deployment
from roofline.domain.layout import stage_layer_counts
from roofline.domain.model import ModelArch

LORA_BYTES_PER_VALUE = 2  # bf16 adapters


def adapted_dims(model: ModelArch) -> list[tuple[str, int, int, str]]:
    """(projection, in, out, how vLLM shards it: "column", "row" or "whole") of one layer's
    adapted projections (module docstring)."""
    d, hd, n = model.hidden_size, model.d_head, model.num_attention_heads
    out: list[tuple[str, int, int, str]]
    if model.is_mla:  # DeepSeek's MLA: the low-rank q and kv projections as the model has them
        nope, rope = model.qk_nope_head_dim or 0, model.qk_rope_head_dim or 0
        v, kvr = model.v_head_dim or hd, model.kv_lora_rank or 0
        qr = model.q_lora_rank
        out = (
            [("q_a", d, qr, "whole"), ("q_b", qr, n * (nope + rope), "column")]
            if qr
            else [("q", d, n * (nope + rope), "column")]
        )
        out += [
            ("kv_a", d, kvr + rope, "whole"),
            ("kv_b", kvr, n * (nope + v), "column"),
            ("o", n * v, d, "row"),
        ]
    else:
        q, kv = n * hd, model.n_kv_heads * hd
        out = [("q", d, q, "column"), ("k", d, kv, "kv"), ("v", d, kv, "kv"), ("o", q, d, "row")]
    if model.n_routed_experts == 0:
        f = model.intermediate_size
        out += [("gate", d, f, "column"), ("up", d, f, "column"), ("down", f, d, "row")]
    return out


def _per_gpu(model: ModelArch, name: str, i: int, o: int, how: str, tp: int) -> float:
    """in + out of one projection's A and B as one GPU of a TP group of `tp` holds them."""
    if how == "column":
        return i + o / tp
    if how == "row":
        return i / tp + o
    if how == "kv":  # KV heads per partition, at least one (vLLM QKVParallelLinear)
        return i + max(1, math.ceil(model.n_kv_heads / tp)) * model.d_head
    return i + o


def adapter_bytes_per_gpu(model: ModelArch, rank: int, dep: Deployment | None = None) -> float:
    """One adapter at `rank` as one GPU of `dep`'s replica holds it (module docstring); with no
    deployment (or TP 1, PP 1): the whole adapter."""
    tp = dep.attention_tp if dep is not None else 1
    layers = max(stage_layer_counts(model.num_hidden_layers, dep.pp if dep is not None else 1))
    per_layer = sum(_per_gpu(model, *x, tp) for x in adapted_dims(model))
    return float(rank * per_layer * layers * LORA_BYTES_PER_VALUE)


def lora_slot_bytes_per_gpu(model: ModelArch, dep: Deployment) -> float:
    """The GPU adapter slots' bytes on each GPU of `dep`'s replica: dep.lora_slots adapters at
    dep.lora_rank (vLLM's max_loras x max_lora_rank), sharded as the module docstring says."""
    if dep.lora_slots <= 0 or dep.lora_rank <= 0:
        return 0.0
    return dep.lora_slots * adapter_bytes_per_gpu(model, dep.lora_rank, dep)

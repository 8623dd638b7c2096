"""Memory footprint per GPU: weights, KV cache, activations, the engine's KV budget, max batch.

KV budget rules (engine documentation):
- vLLM: gpu_memory_utilization (default 0.9) × capacity − (weights + activation peak + non-torch);
  the activation peak is profiled with a forward pass of max_num_batched_tokens tokens, and from
  V1 (0.8) also with the dummy sampler run over max_num_seqs rows of the full vocabulary
  (profile_peak_bytes; vllm-project/vllm PR #13594).
- SGLang: mem_fraction_static × capacity − weights (activations live outside the static pool);
  the fraction its server derives per device and layout from 0.5.5 on, from the TP size before
  0.4.6 (roofline.engines.scheduler.sglang_static_fraction), else 0.88.
- TensorRT-LLM: kv_cache_free_gpu_mem_fraction (default 0.9) × (capacity − weights − activations
  − runtime).
- ideal: every byte that is not a weight holds KV.
The capacity vLLM and TensorRT-LLM start from is the CUDA runtime's total, torch.cuda.mem_get_info
(vLLM: vllm/utils/mem_utils.py MemorySnapshot.measure, requested memory = total ×
gpu_memory_utilization; TensorRT-LLM: tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator at
NVIDIA/TensorRT-LLM@d8ae02ca, `end, total_gpu_memory = torch.cuda.mem_get_info()`), which is
below the driver's total (nvidia-smi) by what the driver keeps for itself: 81,251 MiB on an
A100-SXM4-80GB against 81,920, 81,009 on an H100 against 81,559 (hardware/*.yaml
memory.cuda_total_mib, where published). Applied to
TensorRT-LLM only so far [uncertain for vLLM: the same read, but its profiled activation peak here
is 8,192 tokens for every version, where V0 with chunked prefill profiled 512, so the pool would
come out too small: Lambda's Llama-3.1-70B FP8 on one A100 under vLLM 0.5.4 would not fit].
Paged KV (vLLM, Kwon et al. SOSP'23) allocates whole blocks of `block_tokens` (16 by default), so a
sequence of T tokens holds ceil(T / block)·block token slots per layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import check_shape, distinct_stages, stage_layer_counts
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.engines.scheduler import batch_defaults, sglang_static_fraction
from roofline.step.lora import lora_slot_bytes_per_gpu
from roofline.step.ops import (
    Deployment,
    cached_tokens_cap,
    kv_bytes_per_token_layer,
    stage_weight_bytes,
)
from roofline.timing.roofline import FloatArray


def weight_bytes_total(model: ModelArch, dep: Deployment) -> float:
    """Stored weight bytes of the whole model: linear layers (attention projections, dense FFN,
    experts) in the weight format (the non-expert ones in dense_weights where a checkpoint
    quantizes the experts only); embedding, head, router and norms in 16 bit."""
    p = model.param_breakdown()
    dense = p["attention"] + p["mlp"] + p["experts_shared"]
    other = p["total"] - dense - p["experts_routed"]
    bits = p["experts_routed"] * dep.linear_bits + dense * dep.dense_bits + other * dep.other_bits
    return bits / 8.0


def weight_bytes_per_gpu(model: ModelArch, dep: Deployment) -> float:
    """Weights on the most loaded GPU: the stage accounting the step time reads from
    (ops.stage_weight_bytes: replicated MLA down-projections and K/V heads whole, experts over
    EP, embedding and head on the end stages), maximised over the PP stages."""
    return max(stage_weight_bytes(model, dep, st) for st in distinct_stages(model, dep.pp))


def kv_bytes_per_token(model: ModelArch, kv_bits: float, tp: int = 1, pp: int = 1) -> float:
    """KV bytes per token summed over the layers of the largest PP stage (ceil(L / PP) under
    vLLM's split), all layers at full attention; `tp` is the attention TP group."""
    layers = max(stage_layer_counts(model.num_hidden_layers, pp))
    return kv_bytes_per_token_layer(model, kv_bits, tp) * layers


def kv_bytes_per_sequence(
    model: ModelArch, dep: Deployment, context: ArrayLike, block_tokens: int = 1
) -> FloatArray:
    """KV bytes one sequence of `context` tokens holds on a GPU that serves it (the most loaded
    PP stage; under attention-DP only the GPUs of its attention-DP group hold it): sliding-window
    layers keep at most their window, an eviction budget caps every layer; each layer's slots
    round up to whole blocks."""
    t = np.asarray(context, dtype=float)
    per_layer = kv_bytes_per_token_layer(model, dep.kv.bits, dep.attention_tp)

    def slots(st) -> FloatArray:
        caps = [(g.count, cached_tokens_cap(g.window, dep)) for g in st.groups]
        return sum(
            count * np.ceil((t if cap is None else np.minimum(t, cap)) / block_tokens)
            for count, cap in caps
        )

    most = np.maximum.reduce([np.asarray(slots(st)) for st in distinct_stages(model, dep.pp)])
    return most * block_tokens * per_layer


def activation_peak_bytes(
    model: ModelArch, dep: Deployment, tokens: ArrayLike, sampled_rows: int = 256
) -> FloatArray:
    """Peak activation memory of a forward pass over `tokens` tokens (fused attention, so no S×S
    scores): the residual stream and one layer's widest intermediate alive at once —
    t·(2·D + max(3·F_ffn, (N+2K)·H)/TP)·b_a — plus fp32 logits for up to `sampled_rows` rows."""
    m, t = model, np.asarray(tokens, dtype=float)
    has_dense = any(not g.moe for g in m.layer_groups)  # a pure MoE's intermediate_size is unused
    f = max(
        m.dense_ffn_width if has_dense else 0,
        m.num_experts_per_tok * m.expert_width + m.n_shared_experts * m.expert_width,
    )
    widest = max(3 * f, (m.num_attention_heads + 2 * m.n_kv_heads) * m.d_head)
    logits = np.minimum(t, sampled_rows) * m.vocab_size * 4 / dep.tp
    return t * (2 * m.hidden_size + widest / dep.tp) * dep.activations.bytes_per_value + logits


def vllm_sampler_peak_bytes(model: ModelArch, seqs: int) -> float:
    """vLLM V1's dummy sampler run in its memory profile (vllm/v1/worker/gpu_model_runner.py
    profile_run -> _dummy_sampler_run): logits for max_num_seqs rows over the full vocabulary
    (gathered on every TP rank), in the model's 16 bits and the float32 copy the sampler makes
    (vllm/v1/sample/sampler.py `logits = logits.to(torch.float32)`), both alive at once: rows ×
    V × (2 + 4) B. The fp32 copy is the allocation an H100 fails on at 1,024 rows of gpt-oss's
    201,088-token vocabulary ('Tried to allocate 786.00 MiB' = 1,024 × 201,088 × 4 B,
    vllm-project/vllm issue #27508). The sort top-k/top-p may add is not counted [a lower
    bound]."""
    return seqs * model.vocab_size * (2 + 4)


def profile_peak_bytes(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    limits: tuple[int, int] | None = None,
) -> float:
    """The activation peak an engine's memory profile reserves: a forward of its profile tokens
    (activation_peak_bytes); under vLLM V1 (the engine's own profile, 0.8 and later; V0's
    version profile keeps the forward) the forward of max_num_batched_tokens and then the dummy
    sampler run of max_num_seqs rows (GPUModelRunner.profile_run: `_dummy_run(max_num_tokens)`,
    then `_dummy_sampler_run` on one hidden state per dummy request, min(max_num_tokens,
    max_num_seqs) of them; added by vllm-project/vllm PR #13594, Feb 2025, for issue #13507,
    before 0.8.0), at the defaults it picks on the device (roofline.engines.scheduler
    batch_defaults: 1,024 and 8,192 on an H100, H200 or MI300X, 256 and 2,048 on an A100) or
    at the run's own `limits` (max_num_seqs, max_num_batched_tokens: the profile runs at what
    the scheduler is configured with), so the larger of the two: the forward's intermediates are
    freed before the sampler runs [approximation: the forward's last hidden states, alive beside
    the sampler, are not added]."""
    if not eng.profile_tokens:
        return 0.0
    if eng.name != "vllm" or eng.profile_id != "vllm":
        return float(activation_peak_bytes(model, dep, eng.profile_tokens))
    seqs, tokens = limits if limits is not None else batch_defaults("vllm", hw)
    forward = float(activation_peak_bytes(model, dep, tokens, sampled_rows=0))
    return max(forward, vllm_sampler_peak_bytes(model, seqs))


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory breakdown and the KV budget under an engine's rule."""

    capacity_bytes: float
    weights_bytes: float
    activation_bytes: float
    runtime_overhead_bytes: float
    kv_budget_bytes: float
    engine: Engine

    @property
    def weights_fit(self) -> bool:
        return self.kv_budget_bytes > 0


# engines whose KV budget starts from the CUDA runtime's total (module docstring)
CUDA_TOTAL_ENGINES = frozenset({"trtllm"})


def engine_total_bytes(hw: Accelerator, eng: Engine) -> float:
    """The device memory an engine's KV rule starts from: the CUDA runtime's total
    (cudaMemGetInfo) for the engines that read it, where the catalog has it; else the usable
    memory (the driver's total)."""
    if eng.name in CUDA_TOTAL_ENGINES and hw.cuda_total_bytes is not None:
        return hw.cuda_total_bytes
    return hw.usable_memory_bytes


def plan_memory(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    capacity_bytes: float | None = None,
    limits: tuple[int, int] | None = None,
) -> MemoryPlan:
    """Apply the engine's KV-budget rule on one GPU (capacity = usable device memory); the
    runtime overhead is the engine's plus the LoRA adapter slots the deployment holds on each
    GPU (roofline.step.lora: vLLM allocates them at load, before the KV cache). `limits`: the
    run's (max sequences, token budget per step) where it sets them, which vLLM V1 profiles
    (profile_peak_bytes)."""
    check_shape(model, dep.layout)
    cap = engine_total_bytes(hw, eng) if capacity_bytes is None else capacity_bytes
    if cap <= 0:
        raise InputError(f"memory capacity must be positive, got {cap}")
    weights = weight_bytes_per_gpu(model, dep)
    act = profile_peak_bytes(model, hw, dep, eng, limits)
    runtime = eng.runtime_overhead_bytes + lora_slot_bytes_per_gpu(model, dep)
    fraction = eng.memory_fraction
    if eng.name == "sglang" and not eng.fraction_given:  # its default per device and layout
        lay = dep.layout
        derived = sglang_static_fraction(
            eng.version, hw.memory_capacity_bytes, lay.tp, lay.pp, lay.attention_dp
        )
        fraction = derived if derived is not None else fraction
    if eng.rule == "fraction_of_capacity":
        budget = cap * fraction - weights - act - runtime
    elif eng.rule == "fraction_of_free":
        budget = (cap - weights - act - runtime) * eng.memory_fraction
    else:
        budget = cap - weights
    return MemoryPlan(cap, weights, act, runtime, max(budget, 0.0), eng)


def max_batch(
    plan: MemoryPlan, model: ModelArch, dep: Deployment, context: ArrayLike
) -> FloatArray:
    """Largest number of sequences of `context` tokens whose KV fits in the budget:
    floor(KV budget / (kv per token × ceil(T / block)·block)) (window-capped per layer), times
    the attention-DP groups (each holds its own sequences)."""
    per_seq = kv_bytes_per_sequence(model, dep, context, plan.engine.block_tokens)
    return np.floor(plan.kv_budget_bytes / np.maximum(per_seq, 1e-30)) * dep.attention_dp


CONTEXT_GRID_TOKENS = (1024, 4096, 8192, 32768, 131072)


def max_batch_by_context(
    plan: MemoryPlan, model: ModelArch, dep: Deployment, context: int
) -> tuple[list[int], FloatArray]:
    """max_batch at a grid of contexts (1k, 4k, 8k, 32k, 128k, the model's longest and
    `context`), up to the model's max_position_embeddings (131,072 when unknown)."""
    limit = model.max_position_embeddings or 131072
    grid = sorted({c for c in (*CONTEXT_GRID_TOKENS, limit) if c <= limit} | {context})
    return grid, max_batch(plan, model, dep, np.array(grid, dtype=float))


# ---- the GPU-wired limit of unified memory (Apple silicon): roofline.domain.hardware
# ---------------
WIRED_WARN_BAND = 0.10


def wired_status(needed_bytes: float, limit_bytes: float) -> str:
    """'fits', 'near' (within WIRED_WARN_BAND of the limit: little room for compute buffers and
    the OS; MLX pages past recommendedMaxWorkingSetSize instead of failing, osaurus PR #1958) or
    'over'."""
    if needed_bytes > limit_bytes:
        return "over"
    return "near" if needed_bytes > (1.0 - WIRED_WARN_BAND) * limit_bytes else "fits"

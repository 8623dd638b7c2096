"""Sharing GPUs in a fleet: LoRA adapters on one base, engine sleep/wake, and small models
sharing one replica's GPUs. Each figure is a formula with its source; what is applied to the
placement and what is only listed is said per item (roofline.cli.fleet_sharing prints it).

LoRA adapters (applied: the adapters' memory comes out of the KV budget, and the capacity of
a LoRA model's replica is derated by its kernels):
- adapter bytes = rank x sum over the adapted projections of (in + out) x layers x bytes per
  value (LoRA: W + B A with A in R^{r x in}, B in R^{out x r}; Hu et al. 2021, arXiv 2106.09685,
  section 4). Projections: q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o) and, for a dense FFN,
  gate, up, down ("all-linear"), at
  bf16 (2 bytes), the adapters' usual dtype. A MoE base's experts are not adapted here (the
  attention projections only, plus a dense FFN where the model has one in every layer).
- GPU adapter slots (vLLM --max-loras, --max-lora-rank): vLLM allocates, at load and so before
  the KV cache is sized from what is left, max_loras x max_lora_rank x (in + out) per adapted
  linear layer (vllm/lora/layers create_lora_weights: lora_a_stacked (max_loras, 1,
  max_lora_rank, in), lora_b_stacked (max_loras, 1, out, max_lora_rank), on the device). The
  fleet gives `lora.slots` slots (default: one per adapter) at the adapters' rank, and takes
  slots x adapter bytes from every GPU's KV budget (added to the engine's runtime overhead,
  roofline.step.memory.plan_memory) before `size` searches. Under tensor parallelism vLLM
  shards half of each pair (column-parallel: B; row-parallel: A), so the unsharded figure taken
  on every GPU is an upper bound there (exact at TP 1).
- adapter load from host: one adapter's bytes / the chip's host link (PCIe) bandwidth
  (hardware/*.yaml host_link), the time a request for an adapter not in a slot waits.
- throughput: Punica (Chen et al., MLSys 2024, arXiv 2310.18547, abstract) measures its batched
  LoRA kernel (SGMV) adding 2 ms per decoded token over the base model for a batch of distinct
  adapters (Llama-2 7B on A100). A replica's decode step of TPOT t then takes t + 2 ms, so its
  capacity is kept at t / (t + 2 ms), t = `size`'s mean TPOT at the peak rate. The published
  figure is for a dense base; a MoE base borrows it (said in the output).

Sleep/wake (applied: roofline.fleet.day): vLLM sleep mode level 1 keeps the engine alive with
its weights in CPU RAM and its KV cache freed; waking copies the weights back (vLLM docs "Sleep
Mode"; vLLM blog 2025-10-26, "Zero-Reload Model Switching with vLLM Sleep Mode", which measures
level-1 wakes of 0.1 s to 6 s from 0.6B to 235B models on A4000 to A100, 18-200x faster than a
reload). Level 2 discards the weights too (no host RAM held) and reloads them on waking: its wake
is the cold start's weight load without the engine start (weights / load bandwidth), listed.
Wake time (level 1) = weight bytes per GPU / the host link bandwidth (the copy; the engine's
graphs and allocator are kept). The rule: a model whose engine has a sleep mode (vLLM, CUDA and
ROCm per its docs; SGLang's release/resume memory occupation has no published wake time, so its
models do not sleep) and that does not say `sleep: false` sleeps in every hour its rate is 0:
its min_replicas are not held there (its GPUs are free for other models: the sleeping process
keeps only its CUDA context), and a replica woken on an owned pool it slept on (the owned
replicas of its last busy hour) starts in the wake time instead of the cold start. Predictive
scaling orders the wake that long before the hour (owned: no marginal cost); reactive scaling
charges the requests of the wake to the SLO of the hour it wakes in. A rented replica is
released while idle, so it wakes by a cold start.

Co-location (applied: roofline.fleet.placement): two models may share one replica's GPUs, two
engines each given half of the engine's memory fraction (vLLM --gpu-memory-utilization: "a
per-instance limit ... if you have two vLLM instances running on the same GPU, you can set the
GPU memory utilization to 0.5 for each instance", vLLM engine arguments). A model is small on a
chip when one 1-GPU replica there holds its peak rate and `size` finds a layout of one GPU with
its KV budget cut so (its weights and a KV cache fit the half: the engine's memory fraction
halved, roofline.fleet.sizing); only vLLM models that do not say `share: false` are. Two small
models on a chip make a pair. The shared replica's time is the sum of both engines' (their
steps interleave on the GPU): model a served at u_a takes u_a / kappa'_a of it, b takes
u_b / kappa'_b, and u_a / kappa'_a + u_b / kappa'_b <= 1 per shared replica, kappa' each
model's capacity within its SLOs alone on its half (headroom spent). The latency one engine's
tokens lose waiting for the other's steps is covered only in the mean (the capacity shares),
not per token."""

from __future__ import annotations

from dataclasses import replace

from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine

LORA_BYTES_PER_VALUE = 2  # bf16 adapters
PUNICA_S_PER_TOKEN = 2e-3  # Punica abstract: "only adding 2ms latency per token"
LORA_SOURCE = (
    "Punica (Chen et al., MLSys 2024, arXiv 2310.18547): batched LoRA kernels add 2 ms per"
    " decoded token (Llama-2 7B, A100)"
)
COLOCATE_SOURCE = (
    "vLLM engine arguments, --gpu-memory-utilization: a per-instance limit; two instances on one"
    " GPU at 0.5 each (docs.vllm.ai configuration/engine_args)"
)
LORA_SLOTS_SOURCE = (
    "vLLM lora/layers create_lora_weights: max_loras x max_lora_rank x (in + out) per adapted"
    " layer, allocated at load before the KV cache is sized"
)
SLEEP_ENGINES = ("vllm",)  # sleep mode with a measured wake: vLLM's (docs: CUDA and ROCm)
SHARE_ENGINES = ("vllm",)  # a per-instance memory share: vLLM's gpu_memory_utilization
WAKE_SOURCE = (
    "vLLM sleep mode level 1 (docs.vllm.ai features/sleep_mode; blog.vllm.ai 2025-10-26:"
    " wakes of 0.1-6 s measured, 0.6B-235B, A4000-A100): weights per GPU / host link"
)


def adapted_dims(model: ModelArch) -> list[tuple[str, int, int]]:
    """(projection, in, out) of one layer's adapted projections (module docstring)."""
    d, hd, n = model.hidden_size, model.d_head, model.num_attention_heads
    if model.is_mla:  # DeepSeek's MLA: the low-rank q and kv projections as the model has them
        nope, rope = model.qk_nope_head_dim or 0, model.qk_rope_head_dim or 0
        v, kvr = model.v_head_dim or hd, model.kv_lora_rank or 0
        qr = model.q_lora_rank
        out = [("q_a", d, qr), ("q_b", qr, n * (nope + rope))] if qr else []
        out = out or [("q", d, n * (nope + rope))]
        out += [("kv_a", d, kvr + rope), ("kv_b", kvr, n * (nope + v)), ("o", n * v, d)]
    else:
        q, kv = n * hd, model.n_kv_heads * hd
        out = [("q", d, q), ("k", d, kv), ("v", d, kv), ("o", q, d)]
    if model.n_routed_experts == 0:
        f = model.intermediate_size
        out += [("gate", d, f), ("up", d, f), ("down", f, d)]
    return out


def adapter_bytes(model: ModelArch, rank: int) -> float:
    """One LoRA adapter's bytes: rank x sum(in + out) x layers x 2 (module docstring)."""
    per_layer = sum(i + o for _, i, o in adapted_dims(model))
    return float(rank * per_layer * model.num_hidden_layers * LORA_BYTES_PER_VALUE)


def lora_slot_bytes(model: ModelArch, slots: int, rank: int) -> float:
    """The GPU adapter slots' bytes on each GPU of a replica: slots x one adapter at `rank`
    (vLLM's max_loras x max_lora_rank; module docstring, unsharded: exact at TP 1)."""
    return slots * adapter_bytes(model, rank)


def with_lora_slots(eng: Engine, slot_bytes: float) -> Engine:
    """The engine with the adapter slots taken from its KV budget: added to the runtime overhead
    that plan_memory subtracts before the KV cache (module docstring)."""
    return replace(eng, runtime_overhead_bytes=eng.runtime_overhead_bytes + slot_bytes)


def half_memory(eng: Engine) -> Engine:
    """One of two engines sharing a GPU: half the engine's memory fraction (module docstring:
    vLLM --gpu-memory-utilization, a per-instance share)."""
    return replace(eng, memory_fraction=eng.memory_fraction / 2, fraction_given=True)


def lora_capacity_factor(tpot_s: float) -> float:
    """Share of a replica's capacity left with batched LoRA kernels: t / (t + 2 ms) (Punica)."""
    return tpot_s / (tpot_s + PUNICA_S_PER_TOKEN) if tpot_s > 0 else 1.0


def transfer_s(n_bytes: float, host_bytes_per_s: float | None) -> float | None:
    """Bytes over the host link (PCIe): adapter load, or a level-1 wake."""
    if not host_bytes_per_s or host_bytes_per_s <= 0:
        return None
    return n_bytes / host_bytes_per_s

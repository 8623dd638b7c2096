"""Sharing GPUs in a fleet: LoRA adapters on one base, engine sleep/wake, and small models
sharing one replica's GPUs. Each figure is a formula with its source; what is applied to the
placement and what is only listed is said per item (roofline.cli.fleet_sharing prints it).

LoRA adapters (applied: the adapters' memory comes out of the KV budget, and the capacity of
a LoRA model's replica is derated by its kernels):
- adapter bytes and the GPU adapter slots (vLLM --max-loras, --max-lora-rank) held on each GPU
  of a replica: roofline.step.lora (Hu et al. 2021; vLLM's lora/layers, sharded as the base
  layer each adapter wraps: column-parallel layers split B, row-parallel ones split A, over
  the attention's TP group; the layers of one pipeline stage). The fleet gives `lora.slots`
  slots (default: one per adapter) at the adapters' rank in the model's deployment
  (Deployment.lora_slots, lora_rank), so plan_memory takes them from every GPU's KV budget, at
  each layout `size` searches.
- adapter load from host: one adapter's bytes on a GPU (its shard) / the chip's host link (PCIe)
  bandwidth (hardware/*.yaml host_link), the time a request for an adapter not in a slot waits.
  With fewer slots than adapters, the share of requests whose adapter is in a slot is at most
  that of the `slots` most requested adapters (a static top-k; vLLM's LRU slot cache,
  LRUCacheWorkerLoRAManager, hits no more often): slots / adapters under uniform popularity,
  H(slots) / H(adapters) under Zipf's law with exponent 1 (request share of the i-th adapter
  proportional to 1 / i; H(n) = 1 + 1/2 + ... + 1/n). Listed, with the mean wait it adds to a
  request's TTFT (misses x load time), not charged to the SLO count.
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
ROCm per its docs; SGLang's release/resume_memory_occupation has no published resume time for
serving, searched in its docs, its PRs #7099 and #10873 and the RL frameworks that use it, so
its models do not sleep and the output says why: NO_SLEEP) and that does not say
`sleep: false` sleeps in every hour its rate is 0:
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

from roofline.engines.engine import Engine

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
    " layer, allocated at load before the KV cache is sized; B split over TP in column-parallel"
    " layers, A in row-parallel ones"
)
SLEEP_ENGINES = ("vllm",)  # sleep mode with a measured wake: vLLM's (docs: CUDA and ROCm)
SHARE_ENGINES = ("vllm",)  # a per-instance memory share: vLLM's gpu_memory_utilization
# why an engine's models do not sleep (printed per model in the fleet's sleep table)
NO_SLEEP = {
    "sglang": "not slept: SGLang's release/resume_memory_occupation (--enable-memory-saver;"
    " weights kept on the host only with --enable-weights-cpu-backup, sglang PR #10873) has no"
    " published resume time for serving (its measured uses are RL rollouts, which refit the"
    " weights after resuming)",
}


def no_sleep_reason(engine_id: str) -> str:
    """Why a model on `engine_id` does not sleep ("" where its engine sleeps)."""
    if engine_id in SLEEP_ENGINES:
        return ""
    return NO_SLEEP.get(engine_id, f"not slept: no sleep mode known for {engine_id}")


WAKE_SOURCE = (
    "vLLM sleep mode level 1 (docs.vllm.ai features/sleep_mode; blog.vllm.ai 2025-10-26:"
    " wakes of 0.1-6 s measured, 0.6B-235B, A4000-A100): weights per GPU / host link"
)


def half_memory(eng: Engine) -> Engine:
    """One of two engines sharing a GPU: half the engine's memory fraction (module docstring:
    vLLM --gpu-memory-utilization, a per-instance share)."""
    return replace(eng, memory_fraction=eng.memory_fraction / 2, fraction_given=True)


def lora_capacity_factor(tpot_s: float) -> float:
    """Share of a replica's capacity left with batched LoRA kernels: t / (t + 2 ms) (Punica)."""
    return tpot_s / (tpot_s + PUNICA_S_PER_TOKEN) if tpot_s > 0 else 1.0


def slot_hit_share(adapters: int, slots: int, popularity: str) -> float:
    """Share of requests whose adapter is in one of `slots` GPU slots, at most (the slots
    holding the most requested adapters; module docstring): uniform slots / adapters, Zipf
    H(slots) / H(adapters)."""
    k = min(slots, adapters)
    if k >= adapters:
        return 1.0
    if popularity == "zipf":
        return sum(1.0 / i for i in range(1, k + 1)) / sum(1.0 / i for i in range(1, adapters + 1))
    return k / adapters


def transfer_s(n_bytes: float, host_bytes_per_s: float | None) -> float | None:
    """Bytes over the host link (PCIe): adapter load, or a level-1 wake."""
    if not host_bytes_per_s or host_bytes_per_s <= 0:
        return None
    return n_bytes / host_bytes_per_s

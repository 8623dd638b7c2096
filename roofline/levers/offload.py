"""Weights split between GPU memory and host memory: llama.cpp's partial offload and FlexGen-style
streaming, with the serial and overlapped bounds of a decode step.

Placement (llama.cpp `-ngl N`, llama-model.cpp): the last N of the L repeating layers live on the
GPU, the first L − N in host RAM; the output head goes to the GPU only when N > L (`-ngl 99`
offloads everything); the token embedding stays in host RAM (a gather of B·D values).

Two ways to run a host-resident layer:
- cpu (llama.cpp): the CPU computes it from host RAM, at the CPU's own roofline
  max(F / (P_cpu·η_c), Q / (W_cpu·η_m)); activations (B·D values) cross the host link at each
  GPU↔CPU boundary.
- stream (FlexGen, Sheng et al. ICML 2023; HF accelerate / vLLM cpu_offload_gb): its weights are
  copied over the host link every step and the GPU computes it; t_copy = W_layer / B_eff.
  FlexGen's block schedule runs `block` batches through a layer per copy, so a batch pays
  t_copy / block.

Bounds of one decode step (the two-bound band of FlexGen §4 / GenZ-style tier models):
- serial: the sum over tiers, nothing hidden: t_gpu_layers + t_host_layers (+ copies);
- overlapped: the slowest link per layer: streamed layers take max(t_compute, t_copy / block)
  (prefetch of the next layer behind this one's compute); with CPU compute, GPU and CPU work on
  different micro-batches at once (pipeline), max(t_gpu_part, t_cpu_part). A single sequence
  cannot overlap in cpu mode: the serial bound is its time.

KV in host RAM (FlexGen's --cpu, stream mode with kv_host): the CPU computes attention over the
cache (its roofline from host RAM) while the GPU runs the rest of each layer; one DRAM serves
the weight copies and the CPU's KV reads, so a streamed layer takes at least
(W/block + KV) / (B_host·η_m).
Prefill under streaming (offload_prefill) copies each streamed layer once per block of batches;
FlexGen's generation throughput counts it: n·o / (t_prefill + (o − 1)·block·t_step).

Effective link bandwidth: B_eff = min(B_link·η_link, B_tier / sharing), with η_link of a DMA
transfer of s bytes = η_protocol·s / (s + B_link·t_setup) (each copy pays a fixed set-up time),
and `sharing` GPUs drawing on one host memory at once (eight GPUs on one DDR5 socket each get an
eighth of it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.step.memory import activation_peak_bytes, kv_bytes_per_sequence, weight_bytes_total
from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult, decode, prefill

# PCIe protocol efficiency (TLP/DLLP headers on 256-byte payloads, flow control): pinned
# host-to-device copies reach about 26 GB/s of 32 on Gen4 x16 and about 53 of 64 on Gen5 x16
# (NVIDIA bandwidthTest / nvbandwidth figures reported for A100 PCIe and H100 PCIe) [uncertain].
LINK_PROTOCOL_EFFICIENCY = 0.83
# Fixed set-up cost per DMA copy (cudaMemcpyAsync launch and descriptor set-up, ~10 µs)
# [uncertain]; it makes small copies (a 16-token KV block of one layer) far slower than big ones.
DMA_SETUP_S = 10e-6


def cpu_attention_traffic(kv_bytes_per_value: float) -> float:
    """DRAM bytes moved per KV-cache byte by FlexGen's CPU attention (FMInference/FlexGen
    flexgen/pytorch_backend.py, mha_gen, the branch for a cache on the CPU): `k.permute(1, 2, 0)
    .reshape(...)` copies the cache (read b + write b per value), `k.float()` makes an fp32 copy
    (read b + write 4) and torch.bmm reads that copy (4): (3·b + 8) / b, 7x for an fp16 cache.
    Expected figures only; the ideal reads the cache once."""
    return (3.0 * kv_bytes_per_value + 8.0) / kv_bytes_per_value


def link_efficiency(
    block_bytes: ArrayLike,
    link_bandwidth_bytes_per_s: float,
    protocol: float = LINK_PROTOCOL_EFFICIENCY,
    setup_s: float = DMA_SETUP_S,
) -> np.ndarray:
    """η_link = η_protocol · s / (s + B·t_setup) for copies of s bytes over a link of B bytes/s."""
    s = np.asarray(block_bytes, dtype=float)
    return protocol * s / (s + link_bandwidth_bytes_per_s * setup_s)


def shared_bandwidth(
    tier_bandwidth_bytes_per_s: float,
    link_bandwidth_bytes_per_s: float | None,
    sharing: int = 1,
    link_eff: ArrayLike = 1.0,
) -> np.ndarray:
    """What one GPU draws from a host tier: min(B_link·η_link, B_tier / sharing)."""
    if sharing < 1:
        raise InputError(f"--sharing must be at least 1 GPU, got {sharing}")
    tier = tier_bandwidth_bytes_per_s / sharing
    if link_bandwidth_bytes_per_s is None:
        return np.asarray(tier, dtype=float)
    return np.minimum(link_bandwidth_bytes_per_s * np.asarray(link_eff, dtype=float), tier)


def layer_weight_bytes(model: ModelArch, dep: Deployment) -> float:
    """Mean weight bytes of one repeating layer per GPU (everything but embedding and head)."""
    p = model.param_breakdown()
    other = (p["embedding"] + p["lm_head"]) * dep.other_bits / 8.0
    return (weight_bytes_total(model, dep) - other) / model.num_hidden_layers / dep.tp


def head_weight_bytes(model: ModelArch, dep: Deployment) -> float:
    """The output head's bytes per GPU (the embedding's when tied)."""
    return model.vocab_size * model.hidden_size * dep.other_bits / 8.0 / dep.tp


@dataclass(frozen=True)
class Split:
    """A decode step's time split into its layers, head and fixed parts on one device."""

    per_layer_s: np.ndarray
    head_s: np.ndarray
    embed_s: np.ndarray
    overhead_s: float | np.ndarray  # a step's fixed costs: eff's, or with an engine its host's


def split_step(
    step: PhaseResult, layers: int, eff: Efficiency, ideal: bool, exclude: tuple[str, ...] = ()
) -> Split:
    """Per-layer mean time (all ops but embedding, head and `exclude`, over L layers), head,
    embedding."""
    pick = (lambda r: r.t_ideal_s) if ideal else (lambda r: r.t_expected_s)
    zero = np.zeros(())
    head = sum((pick(r) for r in step.ops if r.op.name == "lm_head"), zero)
    embed = sum((pick(r) for r in step.ops if r.op.name == "embed"), zero)
    skip = ("lm_head", "embed", *exclude)
    body = sum((pick(r) for r in step.ops if r.op.name not in skip), zero)
    return Split(body / layers, head, embed, 0.0 if ideal else eff.step_overhead_s)


def op_time(step: PhaseResult, name: str, layers: int, ideal: bool) -> np.ndarray:
    """Per-layer mean time of the ops called `name` (e.g. attn.core) in a step."""
    pick = (lambda r: r.t_ideal_s) if ideal else (lambda r: r.t_expected_s)
    return sum((pick(r) for r in step.ops if r.op.name == name), np.zeros(())) / layers


@dataclass(frozen=True)
class Offload:
    """One decode step with `gpu_layers` of L layers on the GPU (per sequence in the batch)."""

    mode: str
    layers: int
    gpu_layers: int
    head_on_gpu: bool
    gpu_weights_bytes: float
    host_weights_bytes: float
    gpu_kv_bytes: float
    host_kv_bytes: float
    host_bandwidth_bytes_per_s: float  # CPU's memory (cpu mode) or the effective link (stream)
    t_gpu_s: np.ndarray  # GPU-resident layers (+ head when on the GPU) and the step overhead
    t_host_s: np.ndarray  # host layers: CPU compute, or GPU compute of streamed layers
    t_copy_s: np.ndarray  # weight copies per batch (stream mode), after block amortisation
    t_transfer_s: np.ndarray  # activations across the link at GPU↔CPU boundaries
    tpot_serial_s: np.ndarray
    tpot_overlap_s: np.ndarray


def placement(model: ModelArch, gpu_layers: int) -> tuple[int, bool]:
    """(layers on the GPU, head on the GPU) for llama.cpp's -ngl N."""
    if gpu_layers < 0:
        raise InputError(f"--gpu-layers must be at least 0, got {gpu_layers}")
    n = model.num_hidden_layers
    return min(gpu_layers, n), gpu_layers > n


def offload(
    model: ModelArch,
    gpu: Accelerator,
    host: Accelerator,
    dep: Deployment,
    gpu_layers: int,
    batch: ArrayLike,
    context: ArrayLike,
    mode: str = "cpu",
    block: int = 1,
    sharing: int = 1,
    link_eff: float | None = None,
    ideal: bool = False,
    kv_host: bool = False,
    engine: str | None = None,
) -> Offload:
    """A decode step of `batch` sequences at `context` tokens with the last `gpu_layers` layers
    on `gpu` and the others in `host` RAM, run by the host's CPU (mode cpu) or streamed to the
    GPU (mode stream; `kv_host`: the KV cache in host RAM and attention run by the CPU, FlexGen's
    --cpu). `engine`: the engine running the GPU's layers, whose host costs a step (roofline.step
    .phases: t_overhead_s) the expected step pays as analyze's does, so that every layer on the
    GPU is analyze's step; None: the family's fixed step overhead alone. Returns both bounds."""
    if mode not in ("cpu", "stream"):
        raise InputError(f"--mode must be cpu or stream, got {mode}")
    if kv_host and mode != "stream":
        raise InputError(
            "--kv-host keeps the KV cache in host RAM while streaming: use --mode stream"
        )
    if block < 1:
        raise InputError(f"--block-batches must be at least 1, got {block}")
    n_gpu, head_gpu = placement(model, gpu_layers)
    L = model.num_hidden_layers
    n_host = L - n_gpu
    b = np.asarray(batch, dtype=float)
    g_eff = gpu.efficiency
    g_step = decode(model, gpu, dep, b, context, eff=g_eff, engine=engine)
    g_split = split_step(g_step, L, g_eff, ideal)
    if engine is not None and not ideal:  # the named engine's host costs a step, as analyze
        g_split = replace(g_split, overhead_s=g_step.t_overhead_s)
    layer_w = layer_weight_bytes(model, dep)
    link = gpu.host_link
    link_bw = None if link is None else link.bandwidth_bytes_per_s
    zero = np.zeros_like(b)
    t_gpu = n_gpu * g_split.per_layer_s + g_split.overhead_s
    if mode == "cpu":
        h_eff = host.efficiency
        h_dep = dep.with_layout(tp=1, pp=1, ep=1)
        h_split = split_step(decode(model, host, h_dep, b, context, eff=h_eff), L, h_eff, ideal)
        # the CPU's share: its layers at its per-layer time (TP does not split host layers)
        t_host = n_host * h_split.per_layer_s * 1.0
        t_head = g_split.head_s if head_gpu else h_split.head_s
        t_gpu = t_gpu + (t_head if head_gpu else 0.0)
        t_host = t_host + (0.0 if head_gpu else h_split.head_s) + h_split.embed_s
        # device order: embedding (host), host layers, GPU layers, head; count the changes
        order = [
            "h",
            *(["h"] if n_host else []),
            *(["g"] if n_gpu else []),
            "g" if head_gpu else "h",
        ]
        boundaries = sum(a != c for a, c in pairwise(order))
        act = b * model.hidden_size * dep.activations.bytes_per_value
        lat = 0.0 if link is None or link.latency_s is None else link.latency_s
        t_transfer = boundaries * (act / (link_bw or np.inf) + lat) + zero
        t_copy = zero
        host_bw = host.memory_bandwidth_bytes_per_s
        serial = t_gpu + t_host + t_transfer
        overlap = np.maximum(t_gpu, t_host) + t_transfer
    else:
        if link_bw is None:
            raise InputError(f"{gpu.id} has no host link to stream weights over")
        eta = float(link_efficiency(layer_w, link_bw)) if link_eff is None else link_eff
        host_bw = float(
            shared_bandwidth(
                host.memory_bandwidth_bytes_per_s, link_bw, sharing, 1.0 if ideal else eta
            )
        )
        t_layer_copy = layer_w / host_bw / block
        t_copy = n_host * t_layer_copy + zero
        if kv_host:
            parts = _kv_host_parts(model, gpu, host, dep, b, context, ideal, layer_w / block)
            g_layer, cpu_core, dram_s, dram_g, t_act = parts
            t_gpu = n_gpu * g_layer + g_split.overhead_s + g_split.head_s + g_split.embed_s
            t_host = n_host * g_layer + L * cpu_core
            t_transfer = L * t_act + zero
            serial = t_gpu + t_host + t_copy + t_transfer
            stream_layer = np.maximum(
                np.maximum(g_layer, t_layer_copy), np.maximum(cpu_core, dram_s)
            )
            gpu_layer = np.maximum(np.maximum(g_layer, cpu_core), dram_g)
            overlap = (
                g_split.overhead_s
                + g_split.head_s
                + g_split.embed_s
                + n_host * stream_layer
                + n_gpu * gpu_layer
                + t_transfer
            )
        else:
            t_gpu = t_gpu + g_split.head_s + g_split.embed_s
            t_host = n_host * g_split.per_layer_s
            t_transfer = zero
            serial = t_gpu + t_host + t_copy
            overlap = t_gpu + n_host * np.maximum(g_split.per_layer_s, t_layer_copy)
    gpu_weights, host_weights, gpu_kv, host_kv = placement_bytes(
        model, dep, n_gpu, head_gpu, b, context, mode, kv_host
    )
    return Offload(
        mode,
        L,
        n_gpu,
        head_gpu,
        gpu_weights,
        host_weights,
        gpu_kv,
        host_kv,
        host_bw,
        t_gpu + zero,
        t_host + zero,
        t_copy,
        t_transfer,
        serial,
        overlap,
    )


def _kv_host_parts(
    model: ModelArch,
    gpu: Accelerator,
    host: Accelerator,
    dep: Deployment,
    b: np.ndarray,
    context: ArrayLike,
    ideal: bool,
    copy_bytes: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per layer with the KV cache in host RAM (FlexGen's --cpu): the GPU's ops but attention
    over the cache, the CPU's attention over it (its roofline from host RAM), the host memory's
    time for a streamed layer (its weight copy of `copy_bytes` and the KV the CPU reads share
    one DRAM: (W + KV) / (B_host·η_m)) and for a resident one (KV only), and the activations
    crossing the link (q and the new K, V to the CPU, the attention output back)."""
    L = model.num_hidden_layers
    g_eff, h_eff = gpu.efficiency, host.efficiency
    g = decode(model, gpu, dep, b, context, eff=g_eff)
    g_layer = split_step(g, L, g_eff, ideal, exclude=("attn.core",)).per_layer_s
    h = decode(model, host, dep.with_layout(tp=1, pp=1, ep=1), b, context, eff=h_eff)
    cpu_core = op_time(h, "attn.core", L, ideal)
    kv_layer = np.asarray(kv_bytes_per_sequence(model, dep, context), dtype=float) / L * b
    dram = host.memory_bandwidth_bytes_per_s * (1.0 if ideal else h_eff.memory)
    if not ideal:  # FlexGen's CPU attention copies the cache twice before reading it
        kv_layer = kv_layer * cpu_attention_traffic(dep.kv.bytes_per_value)
        cpu_core = np.maximum(cpu_core, kv_layer / dram)
    link = gpu.host_link
    link_bw = np.inf if link is None else link.bandwidth_bytes_per_s
    lat = 0.0 if link is None or link.latency_s is None else link.latency_s
    kv_dim = model.n_kv_heads * model.d_head
    act = b * (
        2 * model.hidden_size * dep.activations.bytes_per_value
        + 2 * kv_dim * dep.kv.bytes_per_value
    )
    return (
        g_layer,
        cpu_core,
        (copy_bytes + kv_layer) / dram,
        kv_layer / dram,
        act / link_bw + 2 * lat,
    )


def offload_prefill(
    model: ModelArch,
    gpu: Accelerator,
    host: Accelerator,
    dep: Deployment,
    gpu_layers: int,
    batch: int,
    prompt: int,
    block: int = 1,
    kv_host: bool = False,
    ideal: bool = False,
) -> tuple[float, float]:
    """(serial, overlapped) seconds to prefill `block` batches of `batch` prompts with the weights
    of the host layers streamed to the GPU once per block (FlexGen's zig-zag block schedule,
    Sheng et al. ICML 2023 §4.1): per layer the GPU computes the block, the streamed layer's
    weights cross the host link once, and with `kv_host` the new KV goes back to host RAM
    (device to host, its own copy engine). Serial: the sum; overlapped: per layer the slowest."""
    del host
    if block < 1:
        raise InputError(f"--block-batches must be at least 1, got {block}")
    n_gpu, _ = placement(model, gpu_layers)
    L = model.num_hidden_layers
    n_host = L - n_gpu
    link = gpu.host_link
    if link is None and (n_host or kv_host):
        raise InputError(f"{gpu.id} has no host link to stream weights over")
    g_eff = gpu.efficiency
    p = split_step(prefill(model, gpu, dep, batch, prompt, eff=g_eff), L, g_eff, ideal)
    layer_w = layer_weight_bytes(model, dep)
    link_bw = np.inf if link is None else link.bandwidth_bytes_per_s
    eta = 1.0 if ideal else float(link_efficiency(layer_w, link_bw))
    t_copy = layer_w / (link_bw * eta)
    kv_out = 0.0
    if kv_host:
        kv_seq = float(np.max(kv_bytes_per_sequence(model, dep, prompt)))
        kv_out = block * batch * kv_seq / L / (link_bw * eta)
    compute = block * float(p.per_layer_s)
    fixed = block * float(p.head_s + p.embed_s + p.overhead_s)
    serial = fixed + L * compute + n_host * t_copy + L * kv_out
    overlap = fixed + n_gpu * max(compute, kv_out) + n_host * max(compute, t_copy, kv_out)
    return serial, overlap


def generation_throughput(
    prefill_s: float, tpot_s: float, batch: int, block: int, output: int
) -> float:
    """FlexGen's generation throughput (token/s): the block's batch·block sequences each make
    `output` tokens, the first with the prefill, the rest one decode step of the whole block
    (block × the per-batch step) at a time: n·o / (t_prefill + (o − 1)·block·t_step)."""
    return batch * block * output / (prefill_s + (output - 1) * block * tpot_s)


def placement_bytes(
    model: ModelArch,
    dep: Deployment,
    n_gpu: int,
    head_gpu: bool,
    batch: ArrayLike,
    context: ArrayLike,
    mode: str = "cpu",
    kv_host: bool = False,
) -> tuple[float, float, float, float]:
    """(GPU weights, host weights, GPU KV, host KV) per GPU: repeating layers where they run,
    the embedding in host RAM, the head on the GPU when placed there (always when streaming);
    streaming double-buffers two layers on the GPU and keeps every layer's KV there, or in host
    RAM with `kv_host`."""
    L = model.num_hidden_layers
    n_host = L - n_gpu
    layer_w = layer_weight_bytes(model, dep)
    head_w = head_weight_bytes(model, dep)
    embed_w = model.vocab_size * model.hidden_size * dep.other_bits / 8.0
    kv_seq = float(np.max(kv_bytes_per_sequence(model, dep, context)))
    kv_layer = kv_seq / L * float(np.max(np.asarray(batch, dtype=float)))
    on_gpu_head = head_gpu or mode == "stream"
    gpu_w = n_gpu * layer_w + (head_w if on_gpu_head else 0.0)
    host_w = n_host * layer_w + embed_w + (0.0 if on_gpu_head else head_w)
    if mode == "stream":
        gpu_w += 2 * layer_w if n_host else 0.0  # double buffer for the copies
        return (gpu_w, host_w, 0.0, L * kv_layer) if kv_host else (gpu_w, host_w, L * kv_layer, 0.0)
    return gpu_w, host_w, n_gpu * kv_layer, n_host * kv_layer


def gpu_memory_needed(o: Offload, model: ModelArch, dep: Deployment, ubatch: int = 512) -> float:
    """GPU bytes a placement needs: its weights, its KV and llama.cpp's compute buffer for one
    micro-batch of `ubatch` tokens (memory.activation_peak_bytes)."""
    act = float(activation_peak_bytes(model, dep, ubatch))
    return o.gpu_weights_bytes + o.gpu_kv_bytes + act


def most_gpu_layers(
    model: ModelArch,
    gpu: Accelerator,
    host: Accelerator,
    dep: Deployment,
    capacity_bytes: float,
    batch: int,
    context: int,
    mode: str = "cpu",
    kv_host: bool = False,
) -> int:
    """The largest -ngl (0 .. L+1) whose GPU share fits in `capacity_bytes` (bytes only: no step
    is timed)."""
    del gpu, host
    act = float(activation_peak_bytes(model, dep, 512))
    best = 0
    for n in range(model.num_hidden_layers + 2):
        n_gpu, head_gpu = placement(model, n)
        gw, _, gkv, _ = placement_bytes(model, dep, n_gpu, head_gpu, batch, context, mode, kv_host)
        if gw + gkv + act <= capacity_bytes:
            best = n
    return best

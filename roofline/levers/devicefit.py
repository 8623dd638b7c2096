"""A model on one device, whole or split with host RAM: `edge`'s row per device and `offload`'s
sweep over GPU layers.

A device holds the model when weights + KV + the activation peak of the engine's profiling pass
(memory.activation_peak_bytes) fit its usable memory: on unified memory the GPU-wired limit
(memory.wired_status: 'near' within 10%, MLX pages past recommendedMaxWorkingSetSize); a
discrete GPU that does not hold it runs llama.cpp's partial offload (-ngl,
roofline/levers/offload.py), whose first token also pays the host-resident weights' copy over the
host link at offload.LINK_PROTOCOL_EFFICIENCY of its bandwidth."""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline.domain.hardware import (
    APPLE_CPU_BANDWIDTH_SHARE,
    Accelerator,
    raised_wired_limit_bytes,
)
from roofline.domain.model import ModelArch
from roofline.engines.engine import ENGINES
from roofline.levers.offload import (
    LINK_PROTOCOL_EFFICIENCY,
    Offload,
    gpu_memory_needed,
    most_gpu_layers,
)
from roofline.levers.offload import offload as offload_core
from roofline.step.memory import (
    activation_peak_bytes,
    kv_bytes_per_sequence,
    weight_bytes_per_gpu,
    wired_status,
)
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill


def default_host(hw_id: str, family: str) -> str:
    """The usual host: Grace for GH200, a desktop for GeForce, else a Genoa socket."""
    if hw_id == "nvidia-gh200":
        return "nvidia-grace"
    return "amd-ryzen-9-9950x" if family == "nvidia-geforce" else "amd-epyc-9654"


@dataclass
class EdgeFit:
    """One device's fit and speed; fits: yes | near limit | no | raise limit | raise --memory |
    split (GPU + host RAM at gpu_layers) | experts on CPU (a Mac past its GPU-wired limit:
    llama.cpp keeps the routed experts of cpu_moe_layers layers in CPU buffers)."""

    hardware: str
    placement: str
    usable_bytes: float
    needed_bytes: float
    fits: str
    gpu_layers: int | None = None
    decode_tokens_per_s: float | None = None
    ttft_s: float | None = None
    cpu_moe_layers: int | None = None


def edge_fit(
    m: ModelArch,
    hw: Accelerator,
    h: Accelerator | None,
    dep: Deployment,
    b: int,
    s: int,
    o: int,
    ctx: int,
    cap: float,
    ram: float,
    at: int | None = None,
    engine_name: str = "llamacpp",
) -> EdgeFit:
    """One device: all in (unified or discrete) memory, else GPU + host RAM (llama.cpp -ngl)."""
    eng = ENGINES[engine_name]
    kv = float(kv_bytes_per_sequence(m, dep, ctx)) * b
    act = float(activation_peak_bytes(m, dep, eng.profile_tokens))
    need = weight_bytes_per_gpu(m, dep) + kv + act
    status = wired_status(need, cap)
    placement = "unified" if hw.unified_memory else ("CPU" if hw.family == "cpu" else "GPU")
    fits = {"fits": "yes", "near": "near limit", "over": "no"}[status]
    row = EdgeFit(hw.id, placement, cap, need, fits)
    apple = hw.unified_memory and hw.vendor == "apple"
    if (
        status == "over"
        and hw.unified_memory
        and need <= (raised_wired_limit_bytes(ram) if apple else ram)
    ):
        row.fits = "raise limit" if apple else "raise --memory"
    cpu_layers = experts_on_cpu_layers(m, dep, need - cap) if apple and status == "over" else None
    if row.fits == "raise limit" and engine_name == "llamacpp" and cpu_layers is not None:
        return _experts_on_cpu(row, m, hw, dep, b, s, o, at, cpu_layers)
    if status != "over" or row.fits != "no":
        # --context: every step attends over ctx tokens; else the mean over the answer
        e = engine_name
        if at:
            step = decode(m, hw, dep, b, at, 1, engine=e)
        else:
            step = decode(m, hw, dep, b, s + 1, max(o - 1, 1), engine=e)
        row.decode_tokens_per_s = b / float(step.t_expected_s)
        row.ttft_s = float(prefill(m, hw, dep, 1, max(s, 1), engine=e).t_expected_s)
        return row
    if hw.host_link is None or h is None or engine_name != "llamacpp":  # -ngl is llama.cpp's
        return row
    n = most_gpu_layers(m, hw, h, dep, cap, b, ctx)
    x = offload_core(m, hw, h, dep, n, b, ctx, engine=engine_name)
    if x.host_weights_bytes + x.host_kv_bytes > h.memory_capacity_bytes:
        return row
    link = hw.host_link.bandwidth_bytes_per_s * LINK_PROTOCOL_EFFICIENCY
    ttft = float(prefill(m, hw, dep, 1, max(s, 1)).t_expected_s) + x.host_weights_bytes / link
    row.placement = f"GPU + {h.id}"
    row.needed_bytes = gpu_memory_needed(x, m, dep)
    row.fits = "split"
    row.gpu_layers = n
    row.decode_tokens_per_s = float(b / x.tpot_serial_s)
    row.ttft_s = ttft
    return row


def gpu_layer_sweep(
    m: ModelArch,
    hw: Accelerator,
    h: Accelerator,
    dep: Deployment,
    b: int,
    ctx: int,
    cap: float,
    fit_max: int,
    **kw,
) -> list[tuple[int, Offload, bool]]:
    """(GPU layers, the offload, whether the GPU holds it) at every eighth of the layers, all
    of them with the head (L + 1) and the most that fit; kw: offload.offload's options."""
    L = m.num_hidden_layers
    out = []
    for k in sorted({*range(0, L + 2, max(L // 8, 1)), L + 1, fit_max}):
        p = offload_core(m, hw, h, dep, k, b, ctx, **kw)
        out.append((k, p, gpu_memory_needed(p, m, dep) <= cap))
    return out


def experts_on_cpu_layers(m: ModelArch, dep: Deployment, over_bytes: float) -> int | None:
    """MoE layers whose routed experts llama.cpp must keep in CPU buffers (--n-cpu-moe N, the
    first N layers) for the rest to fit the GPU's limit: over / one layer's experts, rounded up;
    None for a dense model or when moving every layer's experts is not enough."""
    if not m.is_moe or over_bytes <= 0:
        return None
    moe_layers = sum(m.layer_is_moe(i) for i in range(m.num_hidden_layers))
    per_layer = m.n_routed_experts * m.expert_params * dep.weights.bits / 8.0
    n = math.ceil(over_bytes / per_layer)
    return n if n <= moe_layers else None


def _experts_on_cpu(
    row: EdgeFit,
    m: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    b: int,
    s: int,
    o: int,
    at: int | None,
    n: int,
) -> EdgeFit:
    """llama.cpp on a Mac past the GPU-wired limit with a MoE model: the routed experts of `n`
    layers stay in CPU buffers (--n-cpu-moe n; its automatic fit does the same) and the CPU
    computes them, reading the same unified RAM at hardware.APPLE_CPU_BANDWIDTH_SHARE of its
    bandwidth, after the GPU (llama.cpp runs the graph's splits in turn). Decode: the GPU step
    less those experts' bytes at the family's bandwidth share, plus the same bytes on the CPU:
    t = t_gpu - X / (W eta) + X / (W c), X the distinct experts b sequences route to in the
    n layers (E (1 - (1 - k/E)^b) per layer). Prefill: llama.cpp copies host-buffer weights to
    the GPU for large batches (its op offload), all n layers' experts at the CPU's share
    [uncertain: the copy rate]."""
    e, k = m.n_routed_experts, m.num_experts_per_tok
    per_expert = m.expert_params * dep.weights.bits / 8.0
    touched = e * (1.0 - (1.0 - k / e) ** b)
    x_bytes = n * touched * per_expert
    w = hw.memory_bandwidth_bytes_per_s
    eff = hw.efficiency
    eta = eff.memory_dequant if dep.weights.weight_only else eff.memory
    if at:
        step = decode(m, hw, dep, b, at, 1, engine="llamacpp")
    else:
        step = decode(m, hw, dep, b, s + 1, max(o - 1, 1), engine="llamacpp")
    t = float(step.t_expected_s) - x_bytes / (w * eta) + x_bytes / (w * APPLE_CPU_BANDWIDTH_SHARE)
    ttft = float(prefill(m, hw, dep, 1, max(s, 1), engine="llamacpp").t_expected_s)
    row.fits = "experts on CPU"
    row.cpu_moe_layers = n
    row.needed_bytes -= n * e * per_expert
    row.decode_tokens_per_s = b / t
    row.ttft_s = ttft + n * e * per_expert / (w * APPLE_CPU_BANDWIDTH_SHARE)
    return row

"""A model on one device, whole or split with host RAM: `edge`'s row per device and `offload`'s
sweep over GPU layers.

A device holds the model when weights + KV + the activation peak of the engine's profiling pass
(memory.activation_peak_bytes) fit its usable memory: on unified memory the GPU-wired limit
(memory.wired_status: 'near' within 10%, MLX pages past recommendedMaxWorkingSetSize); a
discrete GPU that does not hold it runs llama.cpp's partial offload (-ngl,
roofline/levers/offload.py), whose first token also pays the host-resident weights' copy over the
host link at offload.LINK_PROTOCOL_EFFICIENCY of its bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.domain.hardware import Accelerator
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
    split (GPU + host RAM at gpu_layers)."""

    hardware: str
    placement: str
    usable_bytes: float
    needed_bytes: float
    fits: str
    gpu_layers: int | None = None
    decode_tokens_per_s: float | None = None
    ttft_s: float | None = None


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
    if status == "over" and hw.unified_memory and need <= ram:
        row.fits = "raise limit" if hw.vendor == "apple" else "raise --memory"
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
    x = offload_core(m, hw, h, dep, n, b, ctx)
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

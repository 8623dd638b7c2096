"""Prefill/decode disaggregation against colocated serving, in closed form (steady state).

Colocated (one pool, continuous batching): B sequences decode together and every request's
prefill (t_p for one prompt) stalls the batch once, so a cycle of B requests takes
B·t_p + (O − 1)·t_d(B) and the effective time per output token is that over (O − 1).
Disaggregated (DistServe, Zhong et al. OSDI'24; Splitwise, Patel et al. ISCA'24): prefill replicas
run prompts one at a time on compute-rich hardware, ship the prompt's KV cache over a link
(t_x = KV bytes per GPU / link bandwidth per direction) to decode replicas that only decode. TTFT =
t_p + t_x, TPOT = t_d(B). The pools are sized so prefill keeps up with decode: prefill replicas
per decode replica = B·t_p / ((O − 1)·t_d(B)).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.hardware import Accelerator, Tier
from roofline.memory import kv_bytes_per_token
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import decode, prefill


@dataclass(frozen=True)
class Serving:
    """One way of serving: latencies and output tokens per second per GPU."""

    ttft_s: float
    tpot_s: float
    output_tokens_per_s_per_gpu: float
    gpus: float  # GPUs per unit of capacity (a decode replica and its share of prefill)


@dataclass(frozen=True)
class Disaggregation:
    colocated: Serving
    disaggregated: Serving
    prefill_s: float  # one prompt on the prefill pool
    decode_step_s: float  # one step of the decode batch
    kv_transfer_s: float
    kv_bytes_per_request: float
    prefill_replicas_per_decode_replica: float


def disaggregate(
    model: ModelArch,
    prefill_hw: Accelerator,
    decode_hw: Accelerator,
    prefill_dep: Deployment,
    decode_dep: Deployment,
    link: Tier,
    batch: int,
    prompt: int,
    output: int,
    ideal: bool = False,
) -> Disaggregation:
    """Colocated serving on `decode_hw` against prefill on `prefill_hw` plus decode on
    `decode_hw`, for requests of `prompt` tokens in and `output` out, `batch` decoding at once."""

    def t(r) -> float:
        return float(r.t_ideal_s if ideal else r.t_expected_s)

    steps = max(output - 1, 1)
    t_d = t(decode(model, decode_hw, decode_dep, batch, prompt + 1, steps))
    # colocated: prompts prefill on the decode hardware and stall the decode batch
    t_p_colo = t(prefill(model, decode_hw, decode_dep, 1, max(prompt, 1)))
    cycle = batch * t_p_colo + steps * t_d
    colo = Serving(
        ttft_s=t_p_colo,
        tpot_s=cycle / steps,
        output_tokens_per_s_per_gpu=batch * output / cycle / decode_dep.gpus_per_replica,
        gpus=decode_dep.gpus_per_replica,
    )
    # disaggregated: each GPU of the prefill replica sends its share of the prompt's KV cache
    t_p = t(prefill(model, prefill_hw, prefill_dep, 1, max(prompt, 1)))
    kv_total = kv_bytes_per_token(model, decode_dep.kv.bits) * prompt
    per_gpu = kv_bytes_per_token(model, decode_dep.kv.bits, prefill_dep.tp, prefill_dep.pp) * prompt
    t_x = per_gpu / link.bandwidth_bytes_per_s + (link.latency_s or 0.0)
    ratio = batch * t_p / (steps * t_d)
    gpus = decode_dep.gpus_per_replica + ratio * prefill_dep.gpus_per_replica
    dis = Serving(
        ttft_s=t_p + t_x,
        tpot_s=t_d,
        output_tokens_per_s_per_gpu=batch * output / (steps * t_d) / gpus,
        gpus=gpus,
    )
    return Disaggregation(colo, dis, t_p, t_d, t_x, kv_total, ratio)

"""Physical upper bounds on the request rate one replica can serve, from the op count alone.

- Compute: every request runs its prefill (the prompt, causal attention, the LM head once) and
  O − 1 decode steps at KV lengths S + 1 … S + O − 1; no schedule does that faster than at peak
  FLOP/s on every GPU of the replica, so rate ≤ GPUs / Σ_op (FLOPs_op / peak_op) per request,
  i.e. peak × GPUs ÷ FLOPs per request when every op runs in one dtype (Williams et al., CACM
  2009, the roofline's compute roof; FLOPs from roofline.step.ops, never 2·P·tokens: the embedding
  is a lookup and the LM head runs once per prefill). With a prefix cache the prefill computes
  only the tokens it did not find cached: prefill(S) − prefill(H) for H cached tokens (the
  causal attention of tokens H+1 … S over their whole prefix, every other op per token), with
  the LM head once.
- Bandwidth: a decode step reads the weights once for the whole batch and every sequence's KV;
  with the largest batch B the KV budget and max-seqs allow, a request's O − 1 steps move at
  least (O − 1) × bytes(step at B) / B, so rate ≤ GPUs × bandwidth ÷ that (the roofline's
  memory roof). Prefill traffic is left out, which only loosens the bound.

Both are counted on one GPU holding the whole model (TP = PP = EP = 1): sharding splits the same
work over the replica's GPUs and adds collectives, so the per-GPU share is never smaller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline.domain.hardware import Accelerator
from roofline.domain.layout import Layout
from roofline.domain.model import ModelArch
from roofline.step.ops import Deployment, decode_ops, prefill_ops


@dataclass(frozen=True)
class RateBounds:
    """Upper bounds on one replica's request rate, and what they were computed from."""

    compute_requests_per_s: float
    bandwidth_requests_per_s: float
    flops_per_request: float
    compute_s_per_request: float  # Σ FLOPs / peak on one GPU: the request's work at peak
    batch: int  # the largest batch the KV budget and max-seqs allow
    gpus: int
    decode_compute_s_per_request: float = 0.0  # the decode steps' share of compute_s_per_request

    @property
    def requests_per_s(self) -> float:
        return min(self.compute_requests_per_s, self.bandwidth_requests_per_s)


def _peak_s(ops, hw: Accelerator, dep: Deployment) -> float:
    """Σ FLOPs / peak over the ops (attention in the activations' dtype, the rest in the
    deployment's compute dtype; 2:4 sparse ops at the sparse peak)."""
    dtype = dep.compute(hw)
    attn = hw.resolve_compute(dep.activations.compute)
    return sum(
        float(op.flops) / hw.peak(attn if op.kind == "attention" else dtype, sparse=op.sparse)
        for op in ops
        if not op.is_collective
    )


def rate_bounds(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    gpus: int,
    prompt_tokens: float,
    output_tokens: float,
    batch: int,
    cached_tokens: float = 0.0,
) -> RateBounds:
    """The compute and bandwidth bounds (module docstring) for requests of `prompt_tokens` in and
    `output_tokens` out (means: attention's FLOPs grow with the square of the length and KV
    bytes with the output's square, so the mean request underestimates the work and the bound
    stays an upper bound) on a replica of `gpus` GPUs holding at most `batch` sequences;
    `cached_tokens` of each prompt found in a prefix cache (a mean at most what is found: the
    bound stays a bound)."""
    one = replace(dep, layout=Layout(), links=None)
    s = max(float(prompt_tokens), 1.0)
    steps = max(float(output_tokens) - 1.0, 0.0)
    pre = prefill_ops(model, hw, one, 1, s)
    flops = sum(float(op.flops) for op in pre)
    t_compute = _peak_s(pre, hw, one)
    h = min(float(cached_tokens), s - 1.0)
    if h >= 1.0:  # the cached tokens' ops, but the LM head, are not run again
        hit = [op for op in prefill_ops(model, hw, one, 1, h) if op.name != "lm_head"]
        flops -= sum(float(op.flops) for op in hit)
        t_compute -= _peak_s(hit, hw, one)
    bw_rate, t_decode = math.inf, 0.0
    if steps > 0:
        dec1 = decode_ops(model, hw, one, 1, s + 1.0, steps)
        flops += steps * sum(float(op.flops) for op in dec1)
        t_decode = steps * _peak_s(dec1, hw, one)
        t_compute += t_decode
        b = max(int(batch), 1)
        dec = decode_ops(model, hw, one, b, s + 1.0, steps)
        step_bytes = sum(float(op.bytes) for op in dec if not op.is_collective)
        bw_rate = gpus * hw.memory_bandwidth_bytes_per_s * b / (steps * step_bytes)
    return RateBounds(gpus / t_compute, bw_rate, flops, t_compute, int(batch), gpus, t_decode)

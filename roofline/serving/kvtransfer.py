"""The KV cache's trip from a prefill replica to a decode replica (disaggregated serving): the
link model, and the bytes each GPU sends and receives when the two pools have different
layouts.

The link model is one for every command that moves bytes between devices: η_protocol of the
link's kind at bulk transfer sizes, plus a fixed cost per transfer. RDMA over InfiniBand/RoCE:
Mooncake's Transfer Engine moves 40 GB at 87 GB/s over 4 × 200 Gb/s RoCE (100 GB/s), η = 0.87
(github.com/kvcache-ai/Mooncake README, "Transfer Engine ... Performance") [uncertain: the same
README reports 190 GB/s of 400 on 8 × 400 Gb/s]; PCIe and other links: the protocol share of
roofline.levers.offload (0.83).

Pools of different attention-TP (vLLM's NixlConnector, vllm/distributed/kv_transfer/
kv_connector/v1/nixl_connector.py, add_remote_agent: "Number of D TP workers reading from a
single P TP worker", tp_ratio = decode TP / prefill TP; each decode worker reads its own
local_kv_heads of the prefill worker's block, and with MLA or replicated KV heads the whole
block): a prompt's KV lives on the p GPUs of the prefill replica's attention-TP group (under
attention-DP one group holds a prompt) and must reach the d GPUs of the decode replica's.
Each decode GPU receives its shard, R = the KV bytes per token one rank of attention-TP d holds
(memory.kv_bytes_per_token: KV heads / d, or every head once d exceeds them; the whole MLA
latent on every rank) × prompt tokens; the d shards, d·R bytes, leave the p prefill GPUs
evenly, d·R / p each. Every GPU has its own port of the link (a NIC per GPU in HGX nodes), so
the transfer lasts max(d·R / p, R) / (bandwidth × η): the senders bind when the decode group
is wider (MLA: each prefill GPU sends the latent d / p times), the receivers otherwise. With
p = d each GPU sends its own shard (R). PP splits the layers: the largest stage's share on
each side (memory.kv_bytes_per_token's `pp`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Tier
from roofline.domain.model import ModelArch
from roofline.levers.offload import LINK_PROTOCOL_EFFICIENCY
from roofline.step.memory import kv_bytes_per_token
from roofline.step.ops import Deployment

# RDMA over InfiniBand / RoCE at bulk sizes: Mooncake Transfer Engine, 87 GB/s of 100 GB/s
# (4 × 200 Gb/s RoCE, 40 GB moved; github.com/kvcache-ai/Mooncake README) [uncertain]
RDMA_PROTOCOL_EFFICIENCY = 0.87


def default_link_efficiency(tier: Tier) -> float:
    """η_protocol of a KV transfer over `tier`: RDMA's for networks, PCIe's for other links."""
    return RDMA_PROTOCOL_EFFICIENCY if tier.kind == "network" else LINK_PROTOCOL_EFFICIENCY


@dataclass(frozen=True)
class KvLink:
    """How the prompt's KV cache travels from a prefill replica to a decode replica: each GPU of
    the prefill replica that holds the prompt's KV (its attention-TP group) sends over its own
    port of `tier`, each GPU of the decode group receives over its own (module docstring), at
    `efficiency` × the link's bandwidth (default: the tier kind's protocol share,
    `default_link_efficiency`), plus the link's start latency and a fixed cost per transfer
    (connection set-up, block-table exchange). `layerwise`: layers are sent as soon as they are
    computed (DistServe §4.3, Mooncake), so only the part that outlasts the prefill, or at least
    the last layer's share, is exposed."""

    tier: Tier
    efficiency: float | None = None
    fixed_s: float = 0.0
    layerwise: bool = False

    def __post_init__(self) -> None:
        if self.efficiency is not None and not 0 < self.efficiency <= 1:
            raise InputError(f"link efficiency must be in (0, 1], got {self.efficiency}")
        if not (math.isfinite(self.fixed_s) and self.fixed_s >= 0):
            raise InputError(f"the fixed cost per transfer must be >= 0 s, got {self.fixed_s}")

    @property
    def eta(self) -> float:
        """The share of the nominal bandwidth a transfer reaches."""
        return default_link_efficiency(self.tier) if self.efficiency is None else self.efficiency


@dataclass(frozen=True)
class KvShares:
    """Bytes per prompt token on one GPU of each side of a transfer (module docstring)."""

    sent_per_gpu: float  # d·R / p: a prefill GPU's share of the d decode shards
    received_per_gpu: float  # R: one decode GPU's shard
    senders: int  # p: the prefill replica's attention-TP group (× its PP stages)
    receivers: int  # d: the decode replica's (× its PP stages)

    @property
    def port_bytes(self) -> float:
        """The bytes per token the busiest port carries: the transfer's time is this over the
        link's rate."""
        return max(self.sent_per_gpu, self.received_per_gpu)


def kv_shares(model: ModelArch, p_dep: Deployment, d_dep: Deployment, kv_bits: float) -> KvShares:
    """Per-token bytes on each side of the prefill-to-decode transfer (module docstring): the
    decode group's d = attention-TP ranks each receive R = kv_bytes_per_token(d, decode PP);
    the p prefill ranks send d·R / p each, over their own largest PP stage's layers."""
    p, d = p_dep.attention_tp, d_dep.attention_tp
    received = kv_bytes_per_token(model, kv_bits, d, d_dep.pp)
    sent = kv_bytes_per_token(model, kv_bits, d, p_dep.pp) * d / p
    return KvShares(sent, received, p * p_dep.pp, d * d_dep.pp)


def kv_transfer_s(
    model: ModelArch,
    p_dep: Deployment,
    kv_bits: float,
    link: KvLink,
    prompts: np.ndarray,
    prefill_s: np.ndarray | float = 0.0,
    d_dep: Deployment | None = None,
) -> np.ndarray:
    """Exposed transfer time per request: the busiest port's bytes (kv_shares; `d_dep` the
    decode replica's layout, the prefill's when None) / (bandwidth × η) + start latency + fixed
    cost; with layer-wise overlap, max(t / L, t − prefill time)."""
    shares = kv_shares(model, p_dep, p_dep if d_dep is None else d_dep, kv_bits)
    per_gpu = shares.port_bytes * np.asarray(prompts, float)
    t = np.asarray(per_gpu / (link.tier.bandwidth_bytes_per_s * link.eta), float)
    t = t + (link.tier.latency_s or 0.0) + link.fixed_s
    if link.layerwise:
        t = np.maximum(t / model.num_hidden_layers, t - np.asarray(prefill_s, dtype=float))
    return t

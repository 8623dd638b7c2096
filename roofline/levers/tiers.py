"""KV cache spilled to a slower memory tier (host DDR5, CXL expanders, NVMe) behind HBM.

The GPU reaches the tier through its host link, so the tier's effective bandwidth is
min(tier bandwidth, host-link bandwidth). With `batch` sequences of `context` tokens, KV beyond
the HBM budget lives in the tier and each decode step reads it over that path. Two bounds
bracket the step (the two-bound band of GenZ / LLMServingSim-style tier models):
- overlap: max(t_hbm, t_tier), the tier read fully hidden behind the HBM work;
- serial: t_hbm + t_tier, nothing hidden,
where t_hbm is the step with only the HBM-resident bytes and t_tier = spilled KV / tier bandwidth.

The tier bandwidth one GPU gets is shared and below nominal (roofline.levers.offload):
min(B_link·η_link, B_tier / sharing), with `sharing` GPUs reading the same tier at once (eight GPUs
on one 307 GB/s DDR5 socket get 38 GB/s each, not 512) and η_link the DMA efficiency of the copy
size.

KV reload of a cached prefix (a returning chat turn; LMCache, vLLM's CPU KV offload, SGLang
HiCache): the prefix's KV comes back from the tier in copies of `dma_tokens` tokens per layer while
the new tokens prefill; TTFT lies between max(t_reload, t_prefill_new) (layer-by-layer overlap) and
t_reload + t_prefill_new (serial), against recomputing the whole prompt. The new tokens' prefill
attends to the prefix: t_prefill_new ≈ max(t_prefill(P + S) − t_prefill(P), t_prefill(S)), the
increment of a causal prefill, never below a standalone prefill of S (which reads the weights once).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.domain.hardware import Accelerator, Efficiency, Tier
from roofline.domain.model import ModelArch
from roofline.levers.offload import LINK_PROTOCOL_EFFICIENCY, link_efficiency, shared_bandwidth
from roofline.step.memory import MemoryPlan, kv_bytes_per_sequence, max_batch
from roofline.step.ops import Deployment, kv_bytes_per_token_layer
from roofline.step.phases import decode, prefill


@dataclass(frozen=True)
class TierResult:
    batch: int
    kv_bytes: float  # the batch's KV per GPU
    spilled_bytes: float  # of which beyond the HBM budget, in the tier
    tier_bandwidth_bytes_per_s: float
    t_step_hbm_s: float
    t_tier_s: float

    @property
    def t_step_overlap_s(self) -> float:
        return max(self.t_step_hbm_s, self.t_tier_s)

    @property
    def t_step_serial_s(self) -> float:
        return self.t_step_hbm_s + self.t_tier_s


def tier_bandwidth(hw: Accelerator, tier: Tier, sharing: int = 1, link_eff: float = 1.0) -> float:
    """What one GPU can read from a tier: min(host link · η_link, tier bandwidth / sharing)."""
    link = None if hw.host_link is None else hw.host_link.bandwidth_bytes_per_s
    return float(shared_bandwidth(tier.bandwidth_bytes_per_s, link, sharing, link_eff))


def max_batch_with_tier(
    plan: MemoryPlan, model: ModelArch, dep: Deployment, context: int, tier_capacity_bytes: float
) -> int:
    """Sequences of `context` tokens that fit in the HBM budget plus the tier's capacity."""
    extended = MemoryPlan(
        plan.capacity_bytes,
        plan.weights_bytes,
        plan.activation_bytes,
        plan.runtime_overhead_bytes,
        plan.kv_budget_bytes + tier_capacity_bytes,
        plan.engine,
    )
    return int(max_batch(extended, model, dep, context))


def spill(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    plan: MemoryPlan,
    tier: Tier,
    batch: int,
    context: int,
    ideal: bool = False,
    eff: Efficiency | None = None,
    sharing: int = 1,
    link_eff: float | None = None,
) -> TierResult:
    """One decode step of `batch` sequences at `context` tokens with KV beyond HBM in `tier`."""
    per_seq = float(kv_bytes_per_sequence(model, dep, context, plan.engine.block_tokens))
    kv = per_seq * batch
    spilled = max(kv - plan.kv_budget_bytes, 0.0)
    step = decode(model, hw, dep, batch, context, eff=eff)
    t_all = float(step.t_ideal_s if ideal else step.t_expected_s)
    # the spilled bytes are not read from HBM: take their HBM time back out of the step
    e = eff or hw.efficiency
    eta = 1.0 if ideal else e.memory
    t_hbm = max(t_all - spilled / (hw.memory_bandwidth_bytes_per_s * eta), 0.0)
    eta = (1.0 if ideal else LINK_PROTOCOL_EFFICIENCY) if link_eff is None else link_eff
    bw = tier_bandwidth(hw, tier, sharing, eta)
    return TierResult(batch, kv, spilled, bw, t_hbm, spilled / bw)


@dataclass(frozen=True)
class Reload:
    """TTFT of a returning turn: a prefix's KV reloaded from a tier, new tokens prefilled."""

    prefix_tokens: int
    new_tokens: int
    kv_bytes: float  # the prefix's KV per GPU
    bandwidth_bytes_per_s: float  # effective, after sharing and DMA efficiency
    link_efficiency: float
    t_reload_s: float
    t_prefill_new_s: float
    t_recompute_s: float  # prefill of the whole prompt instead

    @property
    def ttft_overlap_s(self) -> float:
        return max(self.t_reload_s, self.t_prefill_new_s)

    @property
    def ttft_serial_s(self) -> float:
        return self.t_reload_s + self.t_prefill_new_s


def reload_prefix(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    tier: Tier,
    prefix: int,
    new: int,
    dma_tokens: int = 256,
    sharing: int = 1,
    link_eff: float | None = None,
    ideal: bool = False,
    eff: Efficiency | None = None,
) -> Reload:
    """Reload `prefix` tokens of KV from `tier` in copies of `dma_tokens` tokens per layer, then
    (or while) prefilling `new` tokens; and the recompute alternative."""
    kv = float(kv_bytes_per_sequence(model, dep, prefix))
    block = dma_tokens * kv_bytes_per_token_layer(model, dep.kv.bits, dep.tp)
    if link_eff is not None:
        eta = link_eff
    elif ideal or hw.host_link is None:
        eta = 1.0
    else:
        eta = float(link_efficiency(block, hw.host_link.bandwidth_bytes_per_s))
    bw = tier_bandwidth(hw, tier, sharing, eta)

    def t(tokens: int) -> float:
        if tokens <= 0:
            return 0.0
        p = prefill(model, hw, dep, 1, tokens, eff)
        return float(p.t_ideal_s if ideal else p.t_expected_s)

    whole = t(prefix + new)
    new_s = max(whole - t(prefix), t(new))
    return Reload(prefix, new, kv, bw, eta, kv / bw, new_s, whole)

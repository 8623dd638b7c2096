"""KV cache spilled to a slower memory tier (host DDR5, CXL expanders, NVMe) behind HBM.

The GPU reaches the tier through its host link, so the tier's effective bandwidth is
min(tier bandwidth, host-link bandwidth). With `batch` sequences of `context` tokens, KV beyond
the HBM budget lives in the tier and each decode step reads it over that path. Two bounds
bracket the step (the two-bound band of GenZ / LLMServingSim-style tier models):
- overlap: max(t_hbm, t_tier), the tier read fully hidden behind the HBM work;
- serial: t_hbm + t_tier, nothing hidden,
where t_hbm is the step with only the HBM-resident bytes and t_tier = spilled KV / tier bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.memory import MemoryPlan, kv_bytes_per_sequence, max_batch
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import decode


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


def tier_bandwidth(hw: Accelerator, tier: Tier) -> float:
    """What a GPU can read from a tier: the tier's bandwidth, capped by the host link's."""
    if hw.host_link is None:
        return tier.bandwidth_bytes_per_s
    return min(tier.bandwidth_bytes_per_s, hw.host_link.bandwidth_bytes_per_s)


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
    bw = tier_bandwidth(hw, tier)
    return TierResult(batch, kv, spilled, bw, t_hbm, spilled / bw)

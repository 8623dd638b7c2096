"""Whether a drafter fits beside its target: the drafter's weights per GPU (a draft model's
own weights, or a fused head's: speculative.drafter_weight_bytes) plus the KV caches of the
target and of a draft model for `batch` sequences of `context` tokens, against the KV budget the
memory plan leaves (memory.plan_memory). A draft model keeps its own cache (vLLM allocates the
draft's KV blocks from the same pool, vLLM docs "Speculative decoding"); fused heads (EAGLE, MTP,
Medusa) and n-gram lookup keep none beyond the target's."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.domain.model import ModelArch
from roofline.levers.speculative import drafter_weight_bytes
from roofline.step.memory import kv_bytes_per_sequence, weight_bytes_per_gpu
from roofline.step.ops import Deployment


@dataclass(frozen=True)
class DrafterFit:
    """Bytes per GPU: the drafter's weights, the KV caches of target and draft for `batch`
    sequences, the budget."""

    drafter_weights_bytes: float
    kv_bytes: float
    kv_budget_bytes: float
    batch: int = 1

    @property
    def fits(self) -> bool:
        return self.drafter_weights_bytes + self.kv_bytes <= self.kv_budget_bytes

    @property
    def max_batch(self) -> int:
        """The most sequences whose two KV caches fit beside the drafter's weights (KV grows
        linearly with the batch)."""
        room = self.kv_budget_bytes - self.drafter_weights_bytes
        per_sequence = self.kv_bytes / self.batch
        return max(int(room // per_sequence), 0) if per_sequence > 0 else 10**9


def drafter_fit(
    target: ModelArch,
    draft: ModelArch | None,
    kind: str,
    dep: Deployment,
    draft_dep: Deployment,
    gamma_max: int,
    draft_vocab: int | None,
    context_tokens: int,
    batch: int,
    block_tokens: int,
    kv_budget_bytes: float,
) -> DrafterFit:
    """The drafter's weights and both KV caches for `batch` sequences against the KV budget."""
    if draft is not None:
        drafter_bytes = weight_bytes_per_gpu(draft, draft_dep)
        kv = float(kv_bytes_per_sequence(draft, draft_dep, context_tokens, block_tokens)) * batch
    else:
        drafter_bytes = drafter_weight_bytes(target, kind, dep, gamma_max, draft_vocab)
        kv = 0.0
    kv += float(kv_bytes_per_sequence(target, dep, context_tokens, block_tokens)) * batch
    return DrafterFit(drafter_bytes, kv, kv_budget_bytes, batch)

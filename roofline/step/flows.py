"""Where the bytes go: weight, KV and activation traffic of a prefill and a decode step, how the
KV/weight split moves with batch and context, and where KV reads overtake weight reads.

The seed essay ("Where the bytes actually go"): a decode step reads every weight once for the
whole batch but each sequence's KV cache separately, so KV traffic grows as batch x context and
overtakes the weights at batch x context = weight bytes / KV bytes per cached token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.step.memory import activation_peak_bytes
from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult, decode, prefill
from roofline.timing.roofline import FloatArray

SPLIT_BATCHES = (1, 8, 32, 128, 512)
SPLIT_CONTEXTS = (1024, 8192, 32768, 131072)


@dataclass(frozen=True)
class ByteTraffic:
    prefill: PhaseResult  # `batch` prompts of `prompt` tokens
    decode: PhaseResult  # one step of `batch` sequences at `context` cached tokens
    prefill_activation_peak_bytes: float
    split_batches: tuple[int, ...]
    split_contexts: tuple[int, ...]
    kv_over_weight: FloatArray  # decode KV bytes / weight bytes, [batch, context]
    crossover_context_at_batch: float | None  # None where windows or eviction cap the KV
    crossover_batch_at_context: float | None

    @staticmethod
    def shares(phase: PhaseResult) -> dict[str, float]:
        """Each kind of traffic's share of the phase's bytes."""
        total = float(phase.bytes)
        return {
            "weight_share": float(phase.weight_bytes) / total,
            "kv_share": float(phase.kv_bytes) / total,
            "activation_share": float(phase.activation_bytes) / total,
        }


def byte_traffic(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: int,
    prompt: int,
    context: int,
    eff: Efficiency | None = None,
    engine: str | None = None,
) -> ByteTraffic:
    """The byte split of one prefill and one decode step, the KV/weight ratio over a grid of
    batches and contexts, and the crossover where KV reads equal weight reads (KV per cached token
    read per step x batch x context = weight bytes)."""
    p = prefill(model, hw, dep, batch, prompt, eff, engine)
    d = decode(model, hw, dep, batch, context, eff=eff, engine=engine)
    batches = np.array(SPLIT_BATCHES, dtype=float)
    contexts = np.array(SPLIT_CONTEXTS, dtype=float)
    grid = decode(model, hw, dep, batches[:, None], contexts[None, :], eff=eff, engine=engine)
    weight_read = float(d.weight_bytes)
    kv_per_token = float(d.kv_bytes) / (batch * context)  # per cached token read per step
    capped = dep.kv_token_budget is not None or any(g.window for g in model.layer_groups)
    return ByteTraffic(
        p,
        d,
        float(activation_peak_bytes(model, dep, batch * prompt)),
        SPLIT_BATCHES,
        SPLIT_CONTEXTS,
        np.asarray(grid.kv_bytes / grid.weight_bytes),
        None if capped or kv_per_token <= 0 else weight_read / (batch * kv_per_token),
        weight_read / (context * kv_per_token) if kv_per_token > 0 else None,
    )

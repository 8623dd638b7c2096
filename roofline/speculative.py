"""Speculative decoding in closed form (Leviathan, Kalman & Matias, "Fast Inference from
Transformers via Speculative Decoding", ICML 2023; Chen et al., "Accelerating LLM Decoding with
Speculative Sampling", 2023).

A draft model proposes γ tokens one at a time; the target verifies all of them in one forward pass
of γ + 1 tokens per sequence. With a per-token acceptance rate α (i.i.d.), the expected tokens a
round yields are E = (1 − α^(γ+1)) / (1 − α) (γ + 1 when α = 1). A round costs
γ · T_draft + T_verify(γ + 1), so the time per output token is (γ · T_draft + T_verify) / E.
The verify pass reads the target's weights and KV cache once for γ + 1 tokens: its arithmetic
intensity is about γ + 1 times that of a decode step, which moves decode towards the ridge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.hardware import Accelerator, Efficiency
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import PhaseResult, decode
from roofline.roofline import FloatArray


def expected_tokens_per_round(gamma: ArrayLike, acceptance: float) -> FloatArray:
    """E = (1 − α^(γ+1)) / (1 − α): tokens a round yields, the bonus token included."""
    g = np.asarray(gamma, dtype=float)
    if acceptance >= 1.0:
        return g + 1.0
    return (1.0 - acceptance ** (g + 1.0)) / (1.0 - acceptance)


@dataclass(frozen=True)
class Speculation:
    gamma: FloatArray
    tokens_per_round: FloatArray
    baseline: PhaseResult  # one plain decode step of the target
    draft: PhaseResult  # one decode step of the draft
    verify: PhaseResult  # the target's pass over γ + 1 tokens per sequence
    tpot_ideal_s: FloatArray
    tpot_expected_s: FloatArray

    @property
    def speedup_ideal(self) -> FloatArray:
        return self.baseline.t_ideal_s / self.tpot_ideal_s

    @property
    def speedup_expected(self) -> FloatArray:
        return self.baseline.t_expected_s / self.tpot_expected_s


def speculate(
    target: ModelArch,
    draft: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    draft_dep: Deployment,
    batch: ArrayLike,
    context: ArrayLike,
    gamma: ArrayLike,
    acceptance: float,
    eff: Efficiency | None = None,
) -> Speculation:
    """Time per output token with speculation, for each γ (broadcasts over γ, batch, context)."""
    g = np.asarray(gamma, dtype=float)
    e = expected_tokens_per_round(g, acceptance)
    base = decode(target, hw, dep, batch, context, eff=eff)
    d = decode(draft, hw, draft_dep, batch, context, eff=eff)
    v = decode(target, hw, dep, batch, context, eff=eff, new_tokens=g + 1.0)
    ideal = (g * d.t_ideal_s + v.t_ideal_s) / e
    expected = (g * d.t_expected_s + v.t_expected_s) / e
    return Speculation(g, e, base, d, v, ideal, expected)

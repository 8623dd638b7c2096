"""Speculative decoding under load: the serving simulator's decode step with a drafter.

An engine is started with one speculative configuration (vLLM `--speculative-config`: method,
num_speculative_tokens; SGLang `--speculative-num-steps`, `--speculative-eagle-topk`,
`--speculative-num-draft-tokens`) and runs it at every batch the traffic makes. The round is
chosen as `speculate` chooses it for one sequence (roofline.levers.speculative.choose_round at batch
1: the chain or tree with the lowest TPOT), unless γ and the tree are given, and then kept.

A round of a batch of B sequences takes t_round(B, T) = γ draft steps + the verify pass over
B·T_v tokens + rejection sampling + the engine's speculative host time, and yields E tokens per
sequence on average (roofline.levers.speculative.speculate, roofline.levers.acceptance). The
simulator's decode step is the time per token, so its clock advances one token per sequence per step
as without speculation: step(B, T) = plain step(B, T) + [t_round(B, T)/E − t_plain(B, T)], the
difference taken from `speculate` at each batch (so the plain step's pipeline and window rules
stay), with the per-token attention slope changed by the same difference between T = 1 and T = 1025
(taken at batch 1, added to the plain step's slope at every batch, which is the batch's own). At
light load the step is the plain one divided by about `speculate`'s batch-1 speed-up; as the
batch grows the verify pass of B·T_v tokens crosses the ridge and the gain shrinks, below 1×
once it costs more than the E plain steps it replaces (EAGLE-3 paper §4.3; SGLang's and vLLM's
speculative benchmarks at high concurrency).

Simplifications: tokens are spread evenly over a round (an engine streams a round's accepted
tokens together, so measured ITL is burstier than the simulated one; TPOT and E2E are not
affected); a chunked prefill shares the token budget with one token per decoding sequence, not
T_v; the drafter's own prefill over the prompt (an EAGLE head runs one layer) is left out.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.levers.speculative import choose_round, round_candidates, speculate
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment

FAR_TOKENS = 1025.0  # the second context of the attention slope (as StepModel's)


@dataclass(frozen=True)
class DraftConfig:
    """The drafter options of `speculate`: drafter kind, its model (a separate draft) and
    layout, the chain lengths to choose from, the tree (None: choose at batch 1; 0: a chain;
    T: a tree of T tokens), acceptance per draft token (one α or per position), decay, draft
    vocabulary and tree top-k."""

    drafter: str
    draft: ModelArch | None
    draft_dep: Deployment | None
    gammas: tuple[int, ...]
    tree_tokens: int | None
    acceptance: float | tuple[float, ...]
    decay: float = 1.0
    draft_vocab: int | None = None
    topk: int = 8

    def kw(self) -> dict:
        return {
            "drafter": self.drafter,
            "decay": self.decay,
            "draft_vocab": self.draft_vocab,
            "topk": self.topk,
        }

    def acc(self) -> float | Sequence[float]:
        return self.acceptance if isinstance(self.acceptance, float) else list(self.acceptance)


@dataclass(frozen=True)
class DraftRound:
    """The round an engine runs: γ, tokens verified per sequence, tokens per round, and the
    speed-up `speculate` gives it at batch 1 (expected step times) at the context it was
    chosen at."""

    gamma: int
    tree_tokens: int | None
    tokens_per_round: float
    batch1_speedup: float

    @property
    def verify_factor(self) -> float:
        """The target's decode work per output token over plain decoding's: a round verifies
        γ + 1 tokens (or the tree's) and keeps tokens_per_round of them; the energy's compute
        share (serve._steady) [lower bound: the drafter's own FLOPs not counted]."""
        return (self.tree_tokens or self.gamma + 1) / self.tokens_per_round


def choose(
    model: ModelArch, hw: Accelerator, dep: Deployment, cfg: DraftConfig, context: float,
    engine: str | None,
) -> DraftRound:  # fmt: skip
    """The round to run: the lowest expected TPOT at batch 1 and `context` over the configured
    chains (and trees, when not fixed), as `speculate` chooses it."""
    args = (model, cfg.draft, hw, dep, cfg.draft_dep)
    if cfg.tree_tokens is None:
        cands = round_candidates(cfg.gammas, cfg.drafter)
    else:
        cands = [(g, cfg.tree_tokens or None) for g in cfg.gammas]
    s, _ = choose_round(*args, 1.0, context, cands, cfg.acc(), engine=engine, **cfg.kw())
    g, t_v = int(s.gamma), int(s.verify_tokens)
    tree = None if t_v == g + 1 and cfg.tree_tokens in (None, 0) else t_v
    return DraftRound(g, tree, float(s.tokens_per_round), float(s.speedup_expected))


def speculative_steps(
    steps: StepModel,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    cfg: DraftConfig,
    rnd: DraftRound,
    ideal: bool,
    engine: str | None,
) -> StepModel:
    """A copy of `steps` whose decode step is the time per token of the speculative round `rnd`
    (module docstring); prefill steps unchanged."""
    out = copy.copy(steps)
    b = np.arange(1, len(steps.base_s) + 1, dtype=float)
    args = (model, cfg.draft, hw, dep, cfg.draft_dep)
    kw = {"tree_tokens": rnd.tree_tokens, "engine": engine, **cfg.kw()}

    def delta(batch, context) -> np.ndarray:
        s = speculate(*args, batch, context, float(rnd.gamma), cfg.acc(), **kw)
        drafted, plain = (
            (s.tpot_ideal_s, s.tpot_baseline_ideal_s)
            if ideal
            else (s.tpot_expected_s, s.tpot_baseline_expected_s)
        )
        return np.asarray(drafted - plain, dtype=float)

    out.base_s = steps.base_s + delta(b, 1.0)
    d_slope = float((delta(1.0, FAR_TOKENS) - delta(1.0, 1.0)) / (FAR_TOKENS - 1.0))
    total = np.asarray(sum(k for k, _ in steps.groups), dtype=float)
    scale = np.where(total > 0, (total + d_slope) / np.where(total > 0, total, 1.0), 1.0)
    out.groups = [(k * scale, cap) for k, cap in steps.groups]
    out.__dict__.pop("_fast", None)  # span_s's cached lookups of the plain step
    return out

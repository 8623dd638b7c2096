"""Speculative decoding in closed form, with a cost model per drafter kind.

Sources:
- Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding" (ICML
  2023) and Chen et al., "Accelerating LLM Decoding with Speculative Sampling" (2023): a drafter
  proposes γ tokens, the target verifies them in one pass of γ + 1 tokens per sequence; with an
  i.i.d. per-token acceptance α a round yields E = (1 − α^(γ+1)) / (1 − α) tokens, the bonus
  token included.
- Per-position acceptance (acceptance falls with depth: Spec-Bench, Xia et al. 2024; "Speculative
  Decoding: Performance or Illusion?", arXiv 2601.11580): with p_i the chance that draft token i is
  accepted given tokens 1..i−1 were, E = 1 + Σ_{i=1..γ} Π_{j≤i} p_j; a geometric decay sets
  p_i = α·d^(i−1), d = 1 gives the i.i.d. formula.
- τ, the mean accepted length per round that EAGLE and Medusa papers report (bonus token
  included), is E at the γ it was measured with; α follows by inverting E(α), which is increasing.

Drafter kinds and their cost per round (γ draft steps, then one verify pass):
- draft: a separate small model (Leviathan et al.): γ forward passes of its own, each an engine
  step with its full per-step overhead, its own weights and KV cache.
- eagle / eagle3: a head inside the target's graph (Li et al., EAGLE ICML 2024; EAGLE-3, arXiv
  2503.01840): per draft step one decoder layer of the target's shape plus the target's LM head
  (EAGLE-3: a reduced draft vocabulary, 32,000 tokens in the released heads); no engine step
  overhead of its own; a 2D → D fc fuses the token embedding with the target's feature.
- mtp: DeepSeek-V3's multi-token-prediction module (DeepSeek-V3 report §2.2): per draft token one
  transformer block of the target's (MoE) shape, the 2D×D projection and the shared output head.
- medusa: γ parallel heads (Cai et al., Medusa ICML 2024 §2.1.1), each a residual block of D×D and
  its own D×V output layer, evaluated in one pass for all positions.
- ngram: prompt lookup (Saxena 2023; vLLM's ngram proposer): no model; matching runs on the CPU.
Tree verification (SpecInfer, EAGLE-2): the verify pass carries `tree_tokens` tokens per sequence
instead of γ + 1; the draft steps then propose (tree_tokens − 1) / γ tokens per depth.

The verify pass is the target's decode step with that many tokens per sequence (phases.decode with
`new_tokens`): its matmuls are small-M GEMMs and its attention runs γ + 1 queries over the cache,
timed by the same per-op model as any step. Sampling and rejection are not free either: the sampler
reads the fp32 probability rows of the target (softmax and sample: two passes over B·T_v·V·4
bytes) and the draft's rows (B·γ·V·4 bytes) once (vLLM's rejection sampler takes target_probs and
draft_probs of shape [B, γ(+1), V]); plain decode pays two passes over B·V·4 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.errors import InputError
from roofline.hardware import Accelerator, Efficiency
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import PhaseResult, decode
from roofline.roofline import FloatArray, op_time_s

DRAFTERS = ("draft", "eagle", "eagle3", "mtp", "medusa", "ngram")
IN_GRAPH = ("eagle", "eagle3", "mtp", "medusa")
EAGLE3_DRAFT_VOCAB = 32_000  # EAGLE-3 released heads (draft_vocab_size in their config.json)
SAMPLING_BYTES_PER_VALUE = 4.0  # fp32 probabilities
SAMPLING_PASSES = 2.0  # softmax, then sampling / rejection


# ---- acceptance -------------------------------------------------------------------------------
def position_acceptance(
    positions: int,
    acceptance: float | Sequence[float],
    decay: float = 1.0,
) -> FloatArray:
    """p_1 .. p_n: the chance draft token i is accepted once 1..i−1 were. A number α gives
    p_i = α·d^(i−1); a list gives p_i directly (its last value repeats past its end)."""
    if isinstance(acceptance, (int, float, np.floating)):
        p = float(acceptance) * decay ** np.arange(positions, dtype=float)
    else:
        given = np.asarray(list(acceptance), dtype=float)
        if given.size == 0:
            raise InputError("per-position acceptance needs at least one value")
        p = np.concatenate([given, np.full(max(positions - given.size, 0), given[-1])])[:positions]
    if np.any(p < 0) or np.any(p > 1):
        raise InputError("acceptance rates must be in [0, 1]")
    return p


def expected_tokens_per_round(
    gamma: ArrayLike, acceptance: float | Sequence[float], decay: float = 1.0
) -> FloatArray:
    """E(γ) = 1 + Σ_{i=1..γ} Π_{j≤i} p_j: tokens a round yields, the bonus token included.
    With one α and no decay this is (1 − α^(γ+1)) / (1 − α) (γ + 1 at α = 1)."""
    g = np.asarray(gamma, dtype=float)
    n = int(np.max(g)) if g.size else 0
    p = position_acceptance(max(n, 1), acceptance, decay)
    cum = np.concatenate([[1.0], 1.0 + np.cumsum(np.cumprod(p))])
    return cum[np.rint(g).astype(int)]


def alpha_from_tau(tau: float, gamma: int, decay: float = 1.0) -> float:
    """The α (with p_i = α·d^(i−1)) at which E(γ) equals the measured mean accepted length τ.
    E is increasing in α, so bisection finds it; τ must lie in [1, E(γ) at α = 1]."""
    top = float(expected_tokens_per_round(gamma, 1.0, decay))
    if not 1.0 <= tau <= top + 1e-12:
        raise InputError(
            f"--tau {tau:g} is out of reach at γ = {gamma}: it must be from 1 to {top:.4g} "
            "(every draft accepted, plus the bonus token)"
        )
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if float(expected_tokens_per_round(gamma, mid, decay)) < tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# ---- drafter cost -----------------------------------------------------------------------------
def head_model(target: ModelArch, kind: str, draft_vocab: int | None = None) -> ModelArch:
    """The one-layer model a fused drafter runs per draft step: a dense decoder layer of the
    target's width (EAGLE), or one block of the target's own kind, MoE included (MTP)."""
    one = {
        "num_hidden_layers": 1,
        "sliding_window": None,
        "sliding_window_pattern": None,
        "layer_types": None,
        "first_k_dense_replace": 0,
        "interleave_moe_layer_step": 1,
        "num_nextn_predict_layers": 0,
    }
    if kind != "mtp":  # EAGLE: a dense Llama-style layer; MTP keeps the target's block
        one.update(
            n_routed_experts=0,
            num_experts_per_tok=0,
            n_shared_experts=0,
            intermediate_size=target.dense_ffn_width,
            intermediate_size_mlp=None,
        )
    vocab = draft_vocab or (EAGLE3_DRAFT_VOCAB if kind == "eagle3" else target.vocab_size)
    return replace(target, id=f"{target.id}/{kind}-head", vocab_size=min(vocab, 10**7), **one)


def sampling_time_s(
    hw: Accelerator, vocab: int, rows: ArrayLike, eff: Efficiency, passes: float = SAMPLING_PASSES
) -> FloatArray:
    """Sampling reads `rows` fp32 probability rows of V values `passes` times:
    rows·V·4·passes / (W·η_m)."""
    q = np.asarray(rows, dtype=float) * vocab * SAMPLING_BYTES_PER_VALUE * passes
    return q / (hw.memory_bandwidth_bytes_per_s * eff.memory)


def medusa_heads_time_s(
    target: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    heads: ArrayLike,
    eff: Efficiency,
    ideal: bool,
) -> FloatArray:
    """γ Medusa heads in one pass: P = γ·(D² + D·V) parameters (a residual block and an output
    layer each), 2·P·B FLOPs and P·b_w bytes, split over TP."""
    d, v = target.hidden_size, target.vocab_size
    params = np.asarray(heads, dtype=float) * (d * d + d * v) / dep.tp
    flops = 2.0 * params * np.asarray(batch, dtype=float)
    q = params * dep.other_bits / 8.0
    peak = hw.peak(dep.compute(hw))
    w = hw.memory_bandwidth_bytes_per_s
    return (
        op_time_s(flops, q, peak, w)
        if ideal
        else op_time_s(flops, q, peak, w, eff.compute, eff.memory)
    )


def fusion_projection_time_s(
    target: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    tokens: ArrayLike,
    eff: Efficiency,
    ideal: bool,
) -> FloatArray:
    """The fused drafters' input projection, [embedding; hidden] (2D) → D: MTP's eh_proj
    (DeepSeek-V3 §2.2), EAGLE's fc (Li et al. 2024 §4.1); 2·2D²·t FLOPs, 2D²·b_w bytes per GPU."""
    params = 2.0 * target.hidden_size**2 / dep.tp
    flops = 2.0 * params * np.asarray(tokens, dtype=float)
    q = params * dep.linear_bits / 8.0
    peak = hw.peak(dep.compute(hw))
    w = hw.memory_bandwidth_bytes_per_s
    return (
        op_time_s(flops, q, peak, w)
        if ideal
        else op_time_s(flops, q, peak, w, eff.compute, eff.memory)
    )


@dataclass(frozen=True)
class Speculation:
    """Per round and per token, for every (γ, batch) the inputs broadcast to."""

    drafter: str
    gamma: FloatArray
    tokens_per_round: FloatArray
    verify_tokens: FloatArray  # tokens per sequence in the verify pass (γ + 1, or the tree's)
    baseline: PhaseResult  # one plain decode step of the target
    draft: PhaseResult | None  # one draft step (None: n-gram, Medusa)
    verify: PhaseResult  # the target's pass over the verify tokens
    t_draft_round_ideal_s: FloatArray
    t_draft_round_expected_s: FloatArray
    t_sample_baseline_s: FloatArray
    t_sample_round_s: FloatArray
    tpot_baseline_ideal_s: FloatArray
    tpot_baseline_expected_s: FloatArray
    tpot_ideal_s: FloatArray
    tpot_expected_s: FloatArray

    @property
    def speedup_ideal(self) -> FloatArray:
        return self.tpot_baseline_ideal_s / self.tpot_ideal_s

    @property
    def speedup_expected(self) -> FloatArray:
        return self.tpot_baseline_expected_s / self.tpot_expected_s


def speculate(
    target: ModelArch,
    draft: ModelArch | None,
    hw: Accelerator,
    dep: Deployment,
    draft_dep: Deployment | None,
    batch: ArrayLike,
    context: ArrayLike,
    gamma: ArrayLike,
    acceptance: float | Sequence[float],
    eff: Efficiency | None = None,
    drafter: str = "draft",
    decay: float = 1.0,
    tree_tokens: ArrayLike | None = None,
    draft_vocab: int | None = None,
) -> Speculation:
    """Time per output token with speculation, for each γ (broadcasts over γ, batch, context).

    A round takes t_draft(γ) + t_verify(T_v) + t_sample and yields E(γ) tokens:
    TPOT = round / E. The baseline is a plain decode step plus its sampling."""
    if drafter not in DRAFTERS:
        raise InputError(
            f"unknown drafter '{drafter}'", hint=f"choose one of {', '.join(DRAFTERS)}"
        )
    if drafter == "draft" and draft is None:
        raise InputError("the draft-model drafter needs a draft model (--draft)")
    e = eff or hw.efficiency
    g = np.asarray(gamma, dtype=float)
    tokens = expected_tokens_per_round(g, acceptance, decay)
    t_v = g + 1.0 if tree_tokens is None else np.asarray(tree_tokens, dtype=float) + 0.0 * g
    if np.any(t_v < g + 1.0):
        raise InputError("tree verification needs at least γ + 1 tokens per sequence")
    width = (t_v - 1.0) / g  # draft tokens proposed per depth (1 for a chain)
    b = np.asarray(batch, dtype=float)
    base = decode(target, hw, dep, b, context, eff=e)
    verify = decode(target, hw, dep, b, context, eff=e, new_tokens=t_v)
    # a drafter inside the target's graph pays no engine step of its own (no scheduling, no
    # launches beyond the target's): no engine profile, no fixed overhead
    in_graph = replace(e, step_overhead_s=0.0, engines={})
    d_step: PhaseResult | None = None
    zero = np.zeros(np.broadcast_shapes(g.shape, b.shape))
    if drafter == "draft":
        assert draft is not None
        d_step = decode(draft, hw, draft_dep or dep, b, context, eff=e, new_tokens=width)
        d_ideal, d_exp = g * d_step.t_ideal_s, g * d_step.t_expected_s
    elif drafter in ("eagle", "eagle3", "mtp"):
        head = head_model(target, drafter, draft_vocab)
        h_dep = replace(dep, pp=1)
        d_step = decode(head, hw, h_dep, b, context, eff=in_graph, new_tokens=width)
        proj_ideal = fusion_projection_time_s(target, hw, dep, b * width, e, True)
        proj_exp = fusion_projection_time_s(target, hw, dep, b * width, e, False)
        d_ideal = g * (d_step.t_ideal_s + proj_ideal)
        d_exp = g * (d_step.t_expected_s + proj_exp)
    elif drafter == "medusa":
        d_ideal = medusa_heads_time_s(target, hw, dep, b, g, e, True) + zero
        d_exp = medusa_heads_time_s(target, hw, dep, b, g, e, False) + zero
    else:  # n-gram lookup: no model on the accelerator
        d_ideal, d_exp = zero, zero
    vocab = target.vocab_size
    s_base = sampling_time_s(hw, vocab, b, e)
    draft_rows = b * g * width if drafter != "ngram" else zero
    s_round = sampling_time_s(hw, vocab, b * t_v, e) + sampling_time_s(
        hw, vocab, draft_rows, e, passes=1.0
    )
    base_ideal = base.t_ideal_s + s_base
    base_exp = base.t_expected_s + s_base
    ideal = (d_ideal + verify.t_ideal_s + s_round) / tokens
    expected = (d_exp + verify.t_expected_s + s_round) / tokens
    return Speculation(
        drafter,
        g,
        tokens,
        t_v,
        base,
        d_step,
        verify,
        d_ideal,
        d_exp,
        s_base,
        s_round,
        base_ideal,
        base_exp,
        ideal,
        expected,
    )


def crossover_batch(batches: Sequence[float], speedup: ArrayLike) -> float | None:
    """The batch where the speed-up falls to 1: interpolated in log(batch) between the last
    sweep point above 1 and the first below; the first batch if it never pays; None if it pays
    over the whole sweep."""
    s = np.asarray(speedup, dtype=float)
    below = np.nonzero(s < 1.0)[0]
    if below.size == 0:
        return None
    i = int(below[0])
    if i == 0:
        return float(batches[0])
    x0, x1 = np.log(batches[i - 1]), np.log(batches[i])
    y0, y1 = s[i - 1], s[i]
    return float(np.exp(x0 + (1.0 - y0) * (x1 - x0) / (y1 - y0)))


def drafter_weight_bytes(
    target: ModelArch, kind: str, dep: Deployment, gamma: int, draft_vocab: int | None = None
) -> float:
    """Weights a fused drafter adds per GPU: the head layer and, for EAGLE-3, its draft LM head
    (EAGLE shares the target's); MTP: one module; Medusa: γ·(D² + D·V)."""
    d, v = target.hidden_size, target.vocab_size
    if kind == "medusa":
        return gamma * (d * d + d * v) * dep.other_bits / 8.0 / dep.tp
    if kind not in ("eagle", "eagle3", "mtp"):
        return 0.0
    head = head_model(target, kind, draft_vocab)
    p = head.param_breakdown()
    layer = (p["total"] - p["embedding"] - p["lm_head"]) * dep.linear_bits / 8.0
    own_head = p["embedding"] * dep.other_bits / 8.0 if kind == "eagle3" else 0.0
    extra = 2 * d * d * dep.linear_bits / 8.0  # the 2D → D fusion projection
    return (layer + own_head + extra) / dep.tp

"""Speculative decoding in closed form, with a cost model per drafter kind.

How many tokens a round yields (chain or tree, τ ↔ α, per-position acceptance) is
roofline/levers/acceptance.py; this module times the round.

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
Tree verification carries `tree_tokens` T tokens per sequence in the verify pass instead of γ + 1
(its yield: roofline/levers/acceptance.py). Choosing the size (`choose_round`): an engine, or a
planner, picks per batch the chain length or tree size that minimises TPOT; EAGLE-2's tree of 60
tokens pays at batch 1 and not at batch 64, where the verify pass of B·T tokens has crossed the
ridge (EAGLE-3 paper §4.3, SGLang batches).

The verify pass is the target's decode step with that many tokens per sequence (phases.decode with
`new_tokens`): its matmuls are small-M GEMMs and its attention runs γ + 1 queries over the cache,
timed by the same per-op model as any step. Sampling and rejection are not free either: the sampler
reads the fp32 probability rows of the target (softmax and sample: two passes over B·T_v·V·4
bytes) and the draft's rows (B·γ·V·4 bytes) once (vLLM's rejection sampler takes target_probs and
draft_probs of shape [B, γ(+1), V]); plain decode pays two passes over B·V·4 bytes. Measured in
vLLM, rejection sampling stays under 1.7% of a round (SpecDecode-Bench, "Where does the time go?").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.levers.acceptance import TREE_TOPK, expected_tokens_per_round, tree_tokens_per_round
from roofline.step.memo import cached_by_identity
from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult, decode
from roofline.timing.host import EngineProfile
from roofline.timing.roofline import FloatArray, FloatOrArray, op_time_s

DRAFTERS = ("draft", "eagle", "eagle3", "mtp", "medusa", "ngram")
SEQUENTIAL_HEADS = ("eagle", "eagle3", "mtp")
EAGLE3_DRAFT_VOCAB = 32_000  # EAGLE-3 released heads (draft_vocab_size in their config.json)
SAMPLING_BYTES_PER_VALUE = 4.0  # fp32 probabilities
SAMPLING_PASSES = 2.0  # softmax, then sampling / rejection
TREE_SIZES = (8, 16, 32, 64)  # trees a planner tries (EAGLE-2's default tree: 60 tokens)
# SGLang turns its overlap scheduler off under EAGLE / EAGLE-3 / standalone speculation
# (python/sglang/srt/server_args.py: "Overlap scheduler is disabled because of using eagle
# speculative decoding"), so a speculative round pays the scheduler step the overlap hides in
# plain decode; taken as vLLM's profile, a Python scheduler without overlap [uncertain]. The
# host time per running sequence stays the engine's own (verify_efficiency)
NO_OVERLAP_ENGINE = {"sglang": "vllm"}
_VERIFY_EFFS: dict[tuple, tuple[tuple, Any]] = {}


def verify_efficiency(e: Efficiency, engine: str | None) -> tuple[Efficiency, str | None]:
    """The efficiency and engine name a speculative round's verify pass runs under.

    An engine of NO_OVERLAP_ENGINE (SGLang) runs the round without its overlap scheduler, so the
    verify pass pays the non-overlapped step of the stand-in profile (vLLM's cpu_step, launches,
    kernels), but the host time per running sequence (cpu_per_seq) stays the engine's own: that
    work (building each request's batch entry, its sampling info, processing each request's
    output) is SGLang's own Python code whether the step overlaps or not (SGLang
    python/sglang/srt/managers/scheduler.py: event_loop_normal and event_loop_overlap run the
    same get_next_batch_to_run / run_batch / process_batch_result per step; overlap only moves
    the GPU wait). Other engines: unchanged."""
    name = (engine or "").lower()
    other = NO_OVERLAP_ENGINE.get(name)
    if other is None:
        return e, engine
    if not e.engines or name not in e.engines or other not in e.engines:
        return e, other

    def build() -> Efficiency:
        own, stand_in = e.engines[name], e.engines[other]
        mixed = replace(stand_in, cpu_per_seq_s=own.cpu_per_seq_s)
        return replace(e, engines={**e.engines, other: mixed})

    return cached_by_identity(_VERIFY_EFFS, (e,), (name,), build), other


# ---- drafter cost -----------------------------------------------------------------------------
def head_model(target: ModelArch, kind: str, draft_vocab: int | None = None) -> ModelArch:
    """The one-layer model a fused drafter runs per draft step: a dense decoder layer of the
    target's width (EAGLE), or one block of the target's own kind, MoE included (MTP)."""
    one: dict[str, Any] = {
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


def _matmul_time_s(
    flops: FloatOrArray, q: FloatOrArray, hw: Accelerator, dep: Deployment, eff: Efficiency,
    ideal: bool,
) -> FloatOrArray:  # fmt: skip
    """A drafter's dense matmul on the roofline (timing.roofline.op_time_s) at the deployment's
    compute dtype: the peak when ideal, else the expected peak and efficiencies."""
    dtype, w = dep.compute(hw), hw.memory_bandwidth_bytes_per_s
    if ideal:
        return op_time_s(flops, q, hw.peak(dtype), w)
    return op_time_s(flops, q, hw.expected_peak(dtype), w, eff.compute, eff.memory)


def medusa_heads_time_s(
    target: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    batch: ArrayLike,
    heads: ArrayLike,
    eff: Efficiency,
    ideal: bool,
) -> FloatOrArray:
    """γ Medusa heads in one pass: P = γ·(D² + D·V) parameters (a residual block and an output
    layer each), 2·P·B FLOPs and P·b_w bytes, split over TP."""
    d, v = target.hidden_size, target.vocab_size
    params = np.asarray(heads, dtype=float) * (d * d + d * v) / dep.tp
    flops = 2.0 * params * np.asarray(batch, dtype=float)
    q = params * dep.other_bits / 8.0
    return _matmul_time_s(flops, q, hw, dep, eff, ideal)


def fusion_projection_time_s(
    target: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    tokens: ArrayLike,
    eff: Efficiency,
    ideal: bool,
) -> FloatOrArray:
    """The fused drafters' input projection, [embedding; hidden] (2D) → D: MTP's eh_proj
    (DeepSeek-V3 §2.2), EAGLE's fc (Li et al. 2024 §4.1); 2·2D²·t FLOPs, 2D²·b_w bytes per GPU."""
    params = 2.0 * target.hidden_size**2 / dep.tp
    flops = 2.0 * params * np.asarray(tokens, dtype=float)
    q = params * dep.linear_bits / 8.0
    return _matmul_time_s(flops, q, hw, dep, eff, ideal)


def host_draft_steps(drafter: str, gamma: ArrayLike) -> FloatArray:
    """Draft steps a round runs inside the target's engine step, each with its own launches and
    bookkeeping: γ for the sequential fused heads (EAGLE, EAGLE-3, MTP); none for Medusa (one
    pass), n-gram lookup (no model) and a separate draft model (its steps are engine steps of
    their own, already charged the engine's per-step cost)."""
    g = np.asarray(gamma, dtype=float)
    return g if drafter in SEQUENTIAL_HEADS else 0.0 * g


def draft_host_time_s(profile: EngineProfile | None, drafter: str, gamma: ArrayLike) -> FloatArray:
    """The engine's host time a speculative round adds to the plain step's:
    spec_round_cpu + n_draft·spec_draft_step_cpu (hardware/engines.yaml; n_draft from
    host_draft_steps). Zero without an engine profile; never part of the ideal."""
    steps = host_draft_steps(drafter, gamma)
    if profile is None:
        return 0.0 * steps
    return profile.draft_round_cpu_s + steps * profile.draft_step_cpu_s


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
    t_draft_host_s: FloatArray  # the engine's speculative host cost per round (in expected only)

    @property
    def speedup_ideal(self) -> FloatArray:
        return self.tpot_baseline_ideal_s / self.tpot_ideal_s

    @property
    def speedup_expected(self) -> FloatArray:
        return self.tpot_baseline_expected_s / self.tpot_expected_s


def same_vocabulary(target: ModelArch, draft: ModelArch) -> None:
    """A draft model proposes token ids the target verifies one for one, so it must share the
    target's vocabulary (vLLM's draft-model worker asserts equal vocab_size; the same tokenizer
    padded to another size does not pass). Another vocabulary is refused, not timed as if shared
    (a later issue may model a mapped vocabulary)."""
    if draft.vocab_size != target.vocab_size:
        raise InputError(
            f"draft model {draft.id} has a vocabulary of {draft.vocab_size:,} tokens, "
            f"{target.id} one of {target.vocab_size:,}: a draft model must share the target's "
            "vocabulary (pick one of its family, or --drafter eagle/mtp/ngram)"
        )


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
    topk: ArrayLike = TREE_TOPK,
    engine: str | None = None,
) -> Speculation:
    """Time per output token with speculation, for each γ (broadcasts over γ, batch, context and
    tree_tokens; None: a chain of γ).

    A round takes t_draft(γ) + t_verify(T_v) + t_sample and yields E: the chain's E(γ), or the
    best tree's of T_v tokens (tree_tokens_per_round). TPOT = round / E. The baseline is a plain
    decode step plus its sampling; both run under `engine`'s per-step host costs."""
    if drafter not in DRAFTERS:
        raise InputError(
            f"unknown drafter '{drafter}'", hint=f"choose one of {', '.join(DRAFTERS)}"
        )
    if drafter == "draft" and draft is None:
        raise InputError("the draft-model drafter needs a draft model (--draft)")
    if drafter == "draft" and draft is not None:
        same_vocabulary(target, draft)
    e = eff or hw.efficiency
    g = np.asarray(gamma, dtype=float)
    if tree_tokens is None:
        t_v = g + 1.0
        tokens = expected_tokens_per_round(g, acceptance, decay)
        width = np.ones_like(g)
    else:
        t_v = np.asarray(tree_tokens, dtype=float) + 0.0 * g
        if np.any(t_v < g + 1.0):
            raise InputError("tree verification needs at least γ + 1 tokens per sequence")
        tokens = tree_tokens_per_round(t_v, g + 0.0 * t_v, acceptance, decay, topk)
        # draft tokens proposed per depth: the tree's nodes spread over its γ levels, at most
        # topk per level (SGLang's draft steps run topk tokens per sequence)
        width = np.minimum((t_v - 1.0) / g, np.maximum(np.asarray(topk, dtype=float), 1.0))
    b = np.asarray(batch, dtype=float)
    base = decode(target, hw, dep, b, context, eff=e, engine=engine)
    spec_engine = NO_OVERLAP_ENGINE.get((engine or "").lower(), engine)
    v_eff, v_engine = verify_efficiency(e, engine)
    verify = decode(target, hw, dep, b, context, eff=v_eff, new_tokens=t_v, engine=v_engine)
    # a drafter inside the target's graph pays no engine step of its own (no scheduling, no
    # launches beyond the target's): no engine profile, no fixed overhead
    in_graph = replace(e, step_overhead_s=0.0, engines={})
    d_step: PhaseResult | None = None
    zero = np.zeros(np.broadcast_shapes(g.shape, b.shape))
    if drafter == "draft":
        assert draft is not None
        d_dep = draft_dep or dep
        d_step = decode(draft, hw, d_dep, b, context, eff=e, new_tokens=width, engine=spec_engine)
        d_ideal, d_exp = g * d_step.t_ideal_s, g * d_step.t_expected_s
    elif drafter in ("eagle", "eagle3", "mtp"):
        head = head_model(target, drafter, draft_vocab)
        h_dep = dep.with_layout(pp=1)
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
    profile = e.engines.get(base.engine) if e.engines else None
    host = draft_host_time_s(profile, drafter, g) + zero
    ideal = (d_ideal + verify.t_ideal_s + s_round) / tokens
    expected = (d_exp + verify.t_expected_s + s_round + host) / tokens
    return Speculation(
        drafter, g, tokens, t_v, base, d_step, verify, d_ideal, d_exp, s_base, s_round,
        base_ideal, base_exp, ideal, expected, host,
    )  # fmt: skip


_PHASE_ARRAYS = ("flops", "weight_bytes", "kv_bytes", "activation_bytes", "link_bytes",
                 "t_ideal_s", "t_expected_s", "t_overhead_s")  # fmt: skip


def _pick(values: Sequence[object], index: np.ndarray) -> FloatArray:
    """values[index[e]] at each element e (each value broadcast to index's shape)."""
    stack = np.stack([np.broadcast_to(np.asarray(v, dtype=float), index.shape) for v in values])
    return np.take_along_axis(stack, index[None, ...], axis=0)[0]


def round_candidates(
    gammas: Sequence[int], drafter: str, max_tree_tokens: int | None = None
) -> list[tuple[int, int | None]]:
    """(γ, T or None for a chain) pairs a planner tries: for each γ a chain and, except for
    n-gram lookup (chains only), trees of depth γ with TREE_SIZES tokens above γ + 1 (up to
    max_tree_tokens, itself tried when given)."""
    top = max(TREE_SIZES) if max_tree_tokens is None else max_tree_tokens
    out: list[tuple[int, int | None]] = []
    for g in sorted({int(x) for x in gammas}):
        out.append((g, None))
        if drafter != "ngram":
            out += [(g, t) for t in sorted({*TREE_SIZES, top}) if g + 1 < t <= top]
    return out


def choose_round(
    target: ModelArch,
    draft: ModelArch | None,
    hw: Accelerator,
    dep: Deployment,
    draft_dep: Deployment | None,
    batch: ArrayLike,
    context: ArrayLike,
    candidates: Sequence[tuple[int, int | None]],
    acceptance: float | Sequence[float],
    eff: Efficiency | None = None,
    drafter: str = "draft",
    decay: float = 1.0,
    **kw,
) -> tuple[Speculation, float]:
    """The round a planner would run at each batch: of the (γ, T) candidates (round_candidates),
    the one with the lowest expected TPOT, the highest throughput at that batch. Returns the
    chosen round's Speculation, its arrays taken element-wise, and the most tokens any candidate
    round yields (an upper bound on the speed-up that calibration cannot move)."""
    cands = list(candidates)
    runs = [
        speculate(
            target, draft, hw, dep, draft_dep, batch, context, float(g), acceptance, eff,
            drafter, decay, t, **kw,
        )
        for g, t in cands
    ]  # fmt: skip
    shape = np.broadcast_shapes(*(np.shape(r.speedup_expected) for r in runs))
    index = np.argmax(np.stack([np.broadcast_to(r.speedup_expected, shape) for r in runs]), 0)
    picked: dict[str, object] = {"drafter": runs[0].drafter, "baseline": runs[0].baseline}
    for f in fields(Speculation):
        if f.name in ("verify", "draft"):
            parts = [getattr(r, f.name) for r in runs]
            picked[f.name] = (
                None
                if any(x is None for x in parts)
                else replace(
                    parts[0], ops=(), **{n: _pick([getattr(x, n) for x in parts], index)
                                          for n in _PHASE_ARRAYS}
                )
            )  # fmt: skip
        elif f.name not in picked:
            picked[f.name] = _pick([getattr(r, f.name) for r in runs], index)
    top = max(float(np.max(r.tokens_per_round)) for r in runs)
    return Speculation(**picked), np.float64(top)  # type: ignore[arg-type]


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

"""Published measurements of the levers (validation/levers_cases.yaml): speculative-decoding
speed-ups and decode rates with weights offloaded to host RAM, as `roofline validate` cases.

- speculative (metric `speedup`): the case's drafter, γ and τ (or α) at its batch, context
  prompt + output / 2 (the mean decode position), under the engine its source names. τ was
  measured on a chain of `tau_gamma` drafts (default γ), or on a tree of `tau_tree_tokens`.
  `tree_tokens`: the tree verified per sequence; `auto`: the run's engine or authors sized it
  per batch, so the planner's choice (speculative.choose_round: chains of 1..γ, trees up to
  64 tokens, the lowest TPOT) stands in for it. `draft_model` (drafter `draft`): the separate
  draft model's catalog id. Ideal is the round's expected tokens E (for `auto`, the most any
  candidate round yields), an upper bound: the verify pass never costs less than a plain
  step, so no speed-up exceeds E. Expected is roofline.levers.speculative's calibrated speed-up.
- offload (metric decode_tokens_per_s_per_user): the case's -ngl and host. Ideal is the
  overlapped bound at η = 1 (nothing is faster); expected is the serial bound with calibrated
  efficiencies (a single sequence cannot overlap GPU and CPU layers), or the overlapped one when
  the case says `overlap: true` (FlexGen's block schedule overlaps copies with compute).
  Metric output_tokens_per_s is FlexGen's generation throughput: batch·block sequences, prefill
  included (roofline.levers.offload.generation_throughput); `kv_host: true` keeps the KV cache in
  host RAM with the CPU computing attention.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from roofline.cases.case import Case, case_engine
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.domain.precision import weight_format
from roofline.levers.acceptance import (
    TREE_TOPK,
    alpha_from_tau,
)
from roofline.levers.offload import generation_throughput, offload, offload_prefill
from roofline.levers.speculative import Speculation, round_candidates, speculate
from roofline.step.ops import Deployment


def evaluate_lever(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    host: Accelerator | None,
    catalog: Any,
) -> tuple[str, int, float, float]:
    """(regime, batch, ideal, expected) of a lever case's metric (`catalog`: its draft model)."""
    where = f"case '{case.id}'"
    if case.batch is None:
        raise InputError(f"{where}: lever cases need a batch")
    b = case.batch
    ctx = case.prompt + max(case.output // 2, 1)
    if case.speculative is not None:
        if case.metric != "speedup":
            raise InputError(f"{where}: a speculative case measures 'speedup'")
        ideal, expected = _speedup(speculative_rounds(case, model, hw, dep, eff, ctx, catalog))
        return "speculative", b, ideal, expected
    metrics = ("decode_tokens_per_s_per_user", "output_tokens_per_s")
    if case.metric not in metrics or host is None:
        raise InputError(f"{where}: an offload case measures {' or '.join(metrics)}")
    o = case.offload or {}
    n, block, kv_host = o["gpu_layers"], o.get("block_batches", 1), bool(o.get("kv_host", False))
    kw = {"mode": o.get("mode", "cpu"), "block": block, "kv_host": kv_host}
    o_ideal = offload(model, hw, host, dep, n, b, ctx, ideal=True, **kw)
    o_exp = offload(model, hw, host, dep, n, b, ctx, **kw)
    t_exp = o_exp.tpot_overlap_s if o.get("overlap", False) else o_exp.tpot_serial_s
    if case.metric == "decode_tokens_per_s_per_user":
        return "decode", b, float(1.0 / o_ideal.tpot_overlap_s), float(1.0 / t_exp)
    pre_kw = {"block": block, "kv_host": kv_host}
    p_ideal = offload_prefill(model, hw, host, dep, n, b, case.prompt, ideal=True, **pre_kw)[1]
    p_exp = offload_prefill(model, hw, host, dep, n, b, case.prompt, **pre_kw)
    p_exp_s = p_exp[1] if o.get("overlap", False) else p_exp[0]
    out = case.output
    best = generation_throughput(p_ideal, float(o_ideal.tpot_overlap_s), b, block, out)
    return (
        "throughput",
        b * block,
        best,
        generation_throughput(p_exp_s, float(t_exp), b, block, out),
    )


def speculative_rounds(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    ctx: int,
    catalog: Any,
) -> list[Speculation]:
    """Every round a speculative case may run: its one chain or tree, or, for `tree_tokens:
    auto`, each candidate of speculative.round_candidates (chains of 1..γ, trees up to 64)."""
    where = f"case '{case.id}'"
    sp = case.speculative or {}
    gamma, decay = int(sp["gamma"]), float(sp.get("decay", 1.0))
    acc = (
        alpha_from_tau(
            sp["tau"],
            int(sp.get("tau_gamma", gamma)),
            decay,
            sp.get("tau_tree_tokens"),
            int(sp.get("topk", TREE_TOPK)),
        )
        if "tau" in sp
        else float(sp["acceptance"])
    )
    draft, d_dep = None, None
    if sp["drafter"] == "draft":
        if "draft_model" not in sp:
            raise InputError(f"{where}: drafter 'draft' needs a draft_model")
        draft = catalog.model(sp["draft_model"])
        d_weights = weight_format(sp.get("draft_weights", case.weights))
        d_dep = replace(dep, weights=d_weights).with_layout(ep=1, pp=1)
    tree = sp.get("tree_tokens")
    engine = case_engine(case)
    kw = {
        "drafter": sp["drafter"],
        "decay": decay,
        "draft_vocab": sp.get("draft_vocab"),
        "topk": int(sp.get("topk", TREE_TOPK)),
        "engine": None if engine == "auto" else engine,
    }
    if tree == "auto":
        cands = round_candidates(range(1, gamma + 1), sp["drafter"])
    elif isinstance(tree, str):
        raise InputError(f"{where}: tree_tokens is a number or 'auto', got {tree!r}")
    else:
        cands = [(gamma, tree)]
    args = (model, draft, hw, dep, d_dep, case.batch, ctx)
    return [speculate(*args, float(g), acc, eff, tree_tokens=t, **kw) for g, t in cands]  # type: ignore[arg-type]


def _speedup(runs: list[Speculation]) -> tuple[float, float]:
    """(ideal, expected) speed-up of a speculative case (module docstring): of its candidate
    rounds (speculative_rounds), the one with the highest expected speed-up
    (speculative.choose_round's rule); the ideal is the most tokens any candidate yields."""
    top = max(float(np.max(r.tokens_per_round)) for r in runs)
    return top, max(float(np.max(r.speedup_expected)) for r in runs)

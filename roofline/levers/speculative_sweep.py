"""Speculation over γ and batch as `speculate` reports it: one row per γ at one batch, and per
batch of a sweep the best round. With tree_tokens "auto" each γ takes the best of its chain and
trees and each batch the best of every candidate (speculative.choose_round, the planner's rule:
the lowest expected TPOT); otherwise every γ runs a chain (or a tree of T tokens) and each batch
takes the γ with the highest expected speed-up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.levers.speculative import Speculation, choose_round, round_candidates, speculate
from roofline.step.ops import Deployment


def _best_over_gamma(full: Speculation) -> Speculation:
    """Per batch, the γ with the highest speed-up, of a run over (γ, batch)."""
    j = np.argmax(full.speedup_expected, axis=0)
    cols = np.arange(j.size)

    def col(x):
        a = np.broadcast_to(np.asarray(x, dtype=float), full.speedup_expected.shape)
        return a[j, cols]

    out = {
        name: (col(v) if name not in ("drafter", "baseline", "draft", "verify") else v)
        for name, v in vars(full).items()
    }
    out["verify"] = replace(
        full.verify, ops=(), t_expected_s=col(full.verify.t_expected_s),
        flops=col(full.verify.flops), weight_bytes=col(full.verify.weight_bytes),
        kv_bytes=col(full.verify.kv_bytes), activation_bytes=col(full.verify.activation_bytes),
        t_ideal_s=col(full.verify.t_ideal_s),
    )  # fmt: skip
    return Speculation(**out)


def _stack(runs: list[Speculation]) -> Speculation:
    """Rows per γ from one chosen round per γ (each over a scalar batch)."""
    out = {}
    for name, v in vars(runs[0]).items():
        if name in ("drafter", "baseline", "draft") or "baseline" in name:
            out[name] = v  # the same plain decode step for every γ
        elif name == "verify":
            parts = [r.verify for r in runs]
            out[name] = replace(
                v, ops=(), **{n: np.array([np.asarray(getattr(p, n), float).reshape(())
                                           for p in parts])
                              for n in ("flops", "weight_bytes", "kv_bytes", "activation_bytes",
                                        "link_bytes", "t_ideal_s", "t_expected_s")}
            )  # fmt: skip
        else:
            out[name] = np.array([np.asarray(getattr(r, name), float).reshape(()) for r in runs])
    return Speculation(**out)


def speculate_sweep(
    target: ModelArch,
    draft: ModelArch | None,
    hw: Accelerator,
    dep: Deployment,
    draft_dep: Deployment,
    batch: int,
    batches: Sequence[int],
    context_tokens: int,
    gammas: Sequence[int],
    tree: int | str,
    acceptance: float | Sequence[float],
    **kw,
) -> tuple[Speculation, Speculation]:
    """(rows per γ at `batch`, the best round per batch of `batches`); tree is "auto", "chain"
    or a tree size T; kw: drafter, decay, draft_vocab, topk, engine (speculative.speculate)."""
    args = (target, draft, hw, dep, draft_dep)
    kind = kw["drafter"]
    bs = np.array(batches, float)
    if tree == "auto":  # per γ the best of its chain and trees; per batch the best of all
        per_g = [
            choose_round(*args, batch, context_tokens, round_candidates([gv], kind),
                         acceptance, **kw)[0]
            for gv in gammas
        ]  # fmt: skip
        rows = _stack(per_g)
        cands = round_candidates(gammas, kind)
        best = choose_round(*args, bs, context_tokens, cands, acceptance, **kw)[0]
        return rows, best
    t = None if tree == "chain" else tree
    g = np.array(gammas, dtype=float)
    rows = speculate(*args, batch, context_tokens, g, acceptance, tree_tokens=t, **kw)
    full = speculate(
        *args, bs[None, :], context_tokens, g[:, None], acceptance, tree_tokens=t, **kw
    )
    return rows, _best_over_gamma(full)

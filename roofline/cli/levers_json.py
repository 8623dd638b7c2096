"""The JSON documents of `speculate` (rows per γ, the best round per batch, the drafter's memory)
and `tiers` (KV spilled to a slower tier, a returning turn's prefix reload)."""

import numpy as np

from roofline import render
from roofline.cli import convert
from roofline.levers.drafter import DrafterFit
from roofline.levers.speculative import Speculation, crossover_batch

_NOTE = (
    "acceptance p_i per draft position; a tree of T tokens yields 1 + the T − 1 "
    "likeliest draft paths (Sequoia, EAGLE-2); a fused drafter (EAGLE, MTP, Medusa) runs "
    "in the target's step, paying the engine's speculative host time per round and per "
    "draft step (engines.yaml); sampling reads fp32 rows"
)


def _rows(s: Speculation, gammas: list[int]) -> list[dict]:
    return [
        {
            "gamma": int(gv),
            "tokens_per_round": s.tokens_per_round[i],
            "verify_tokens_per_sequence": int(s.verify_tokens[i]),
            "draft_round_s": s.t_draft_round_expected_s[i],
            "verify_step_s": np.asarray(s.verify.t_expected_s)[i],
            "sampling_s": s.t_sample_round_s[i],
            "host_round_s": s.t_draft_host_s[i],  # the engine's speculative host time a round
            "verify_arithmetic_intensity": np.asarray(s.verify.arithmetic_intensity)[i],
            "verify_bound": s.verify.bound[i],
            "tpot_ideal_s": s.tpot_ideal_s[i],
            "tpot_expected_s": s.tpot_expected_s[i],
            "speedup_ideal": s.speedup_ideal[i],
            "speedup_expected": s.speedup_expected[i],
        }
        for i, gv in enumerate(gammas)
    ]


def _by_batch(sw: Speculation, sweep: list[int], most: int) -> list[dict]:
    """The best round per batch; `fits`: target and draft KV for the batch fit (`most`: the
    largest batch that does)."""
    return [
        {
            "batch": bv,
            "best_gamma": int(sw.gamma[j]),
            "tree_tokens": int(sw.verify_tokens[j]),
            "tokens_per_round": sw.tokens_per_round[j],
            "tpot_baseline_s": sw.tpot_baseline_expected_s[j],
            "tpot_expected_s": sw.tpot_expected_s[j],
            "speedup_expected": sw.speedup_expected[j],
            "speedup_ideal": sw.speedup_ideal[j],
            "verify_bound": sw.verify.bound[j],
            "output_tokens_per_s": bv / sw.tpot_expected_s[j],
            "fits": bv <= most,
        }
        for j, bv in enumerate(sweep)
    ]


def speculate_doc(
    m, hw, kind, d_m, dep, d_dep, eng, *, batch: int, sweep: list[int], ctx: int, acc,
    decay: float, tau, tau_gamma, gammas: list[int], tree, topk: int,
    s: Speculation, sw: Speculation, fit: DrafterFit,
) -> dict:  # fmt: skip
    """The `speculate` document from the rows per γ (s), the best round per batch (sw) and the
    drafter's memory fit."""
    rows = _rows(s, gammas)
    best = max(rows, key=lambda r: r["speedup_expected"])
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "drafter": kind,
        "draft": d_m.id if d_m else None,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        "weights": dep.weights.name,
        "draft_weights": d_dep.weights.name if d_m else None,
        "kv_dtype": dep.kv.name,
        "batch": batch,
        "batches": sweep,
        "context_tokens": ctx,
        "engine": eng.name,
        "acceptance": acc,
        "decay": decay,
        "tau": tau,
        "tau_gamma": (tau_gamma or max(gammas)) if tau is not None else None,
        "tree_tokens": str(tree),
        "topk": topk,
        "efficiency": convert.efficiency_json(hw.efficiency),
        "note": _NOTE,
    }
    return render.document(
        "speculate",
        inputs,
        baseline={
            "tpot_ideal_s": s.tpot_baseline_ideal_s,
            "tpot_expected_s": s.tpot_baseline_expected_s,
            "arithmetic_intensity": s.baseline.arithmetic_intensity,
            "ridge_flops_per_byte": s.baseline.ridge_flops_per_byte,
            "bound": s.baseline.bound,
        },
        best_gamma=best["gamma"],
        memory={
            "drafter_weights_bytes_per_gpu": fit.drafter_weights_bytes,
            "kv_bytes_target_and_draft": fit.kv_bytes,
            "kv_budget_bytes": fit.kv_budget_bytes,
            "fits": fit.fits,
            "max_batch": fit.max_batch,
        },
        rows=rows,
        by_batch=_by_batch(sw, sweep, fit.max_batch),
        crossover_batch=crossover_batch(sweep, sw.speedup_expected),
    )


def _spill_row(name: str, x) -> dict:
    return {
        "placement": name,
        "batch": x.batch,
        "kv_bytes_per_gpu": x.kv_bytes,
        "spilled_bytes_per_gpu": x.spilled_bytes,
        "t_tier_s": x.t_tier_s,
        "tpot_overlap_s": x.t_step_overlap_s,
        "tpot_serial_s": x.t_step_serial_s,
        "output_tokens_per_s_overlap": x.batch / x.t_step_overlap_s,
        "output_tokens_per_s_serial": x.batch / x.t_step_serial_s,
    }


def reload_json(x, dma_tokens: int) -> dict:
    """A returning turn's cached prefix reloaded from the tier (tiers.reload_prefix)."""
    return {
        "prefix_tokens": x.prefix_tokens,
        "new_tokens": x.new_tokens,
        "kv_bytes_per_gpu": x.kv_bytes,
        "dma_tokens": dma_tokens,
        "link_efficiency": x.link_efficiency,
        "bandwidth_bytes_per_s": x.bandwidth_bytes_per_s,
        "t_reload_s": x.t_reload_s,
        "t_prefill_new_s": x.t_prefill_new_s,
        "ttft_overlap_s": x.ttft_overlap_s,
        "ttft_serial_s": x.ttft_serial_s,
        "ttft_recompute_s": x.t_recompute_s,
    }


def tiers_doc(
    m, hw, t, dep, plan, *, ctx: int, cap: float, share: int, link_efficiency, ideal: bool,
    hbm_only: int, with_tier: int, base, r, reload,
) -> dict:  # fmt: skip
    """The `tiers` document: HBM only against HBM + tier (tiers.spill), and the reload."""
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "tier": t.id,
        "tp": dep.tp,
        **convert.formats_json(dep),
        "context_tokens": ctx,
        "tier_capacity_bytes": cap,
        "tier_bandwidth_bytes_per_s": r.tier_bandwidth_bytes_per_s,
        "tier_nominal_bandwidth_bytes_per_s": t.bandwidth_bytes_per_s,
        "hbm_bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
        "sharing": share,
        "link_efficiency": link_efficiency,
        "step_times": "ideal" if ideal else "expected",
    }
    return render.document(
        "tiers",
        inputs,
        max_batch_hbm=hbm_only,
        max_batch_with_tier=with_tier,
        kv_budget_bytes=plan.kv_budget_bytes,
        rows=[_spill_row("HBM only", base), _spill_row(f"with {t.id}", r)],
        reload=reload,
    )

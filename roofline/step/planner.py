"""Parallel layouts of N GPUs for one model, searched and ranked with the same memory and
step-time model as `analyze`: every TP x PP x DP = N, and for MoE models every EP degree and
attention-DP split the layout rules allow (roofline.domain.layout.validate), PP micro-batches from
the engine default (PP, vLLM's virtual engines) to twice that.

Each layout is measured twice:
- throughput: the largest batch per replica whose KV fits (no other cap) and whose TPOT meets
  the limit, as a static batch cycle t_prefill(B) + (O − 1)·TPOT(B) (phases.request), all replicas;
- latency: one request alone (batch 1): TTFT and TPOT.
Both expected (calibrated) and ideal (speed of light). The decode step of the chosen batch is
split into what it spends its time on (weight reads, KV reads, compute, communication, pipeline
bubble, fixed overhead) so the winner can be explained by its dominant term.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import Layout, candidate_layouts, links
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.step.memory import max_batch, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult, request

TERMS = ("weights", "kv", "activations", "compute", "communication", "pipeline bubble", "overhead")


@dataclass(frozen=True)
class Plan:
    layout: Layout
    fits: bool
    weights_bytes_per_gpu: float
    kv_budget_bytes: float
    max_batch: int  # sequences per replica the KV budget holds at prompt + output
    batch: int  # sequences per replica chosen (largest meeting the TPOT limit)
    concurrency: int  # sequences in flight on all GPUs
    meets_slo: bool
    batch_prefill_s: float  # the batch's prefill (static batch)
    tpot_s: float
    output_tokens_per_s: float  # all replicas
    output_tokens_per_s_ideal: float
    latency_ttft_s: float  # one request alone
    latency_tpot_s: float
    latency_tpot_ideal_s: float
    decode_terms_s: dict[str, float]  # the chosen batch's decode step by where time goes

    @property
    def dominant(self) -> str:
        if not self.decode_terms_s:
            return ""
        return max(self.decode_terms_s, key=self.decode_terms_s.__getitem__)


def decode_terms(phase: PhaseResult, index: int | tuple = ()) -> dict[str, float]:
    """Where a decode step's expected time goes: memory-bound ops split by their weight, KV and
    activation bytes; compute-bound ops as compute; collectives as communication; the pipeline
    bubble; and what is left (the fixed per-step overhead)."""
    terms = dict.fromkeys(TERMS, 0.0)
    for r in phase.ops:
        t = (
            float(np.asarray(r.t_expected_s)[index])
            if np.ndim(r.t_expected_s)
            else float(r.t_expected_s)
        )
        if r.op.kind == "bubble":
            terms["pipeline bubble"] += t
        elif r.op.is_collective:
            terms["communication"] += t
        elif str(np.asarray(r.bound)[index] if np.ndim(r.bound) else r.bound) == "compute":
            terms["compute"] += t
        else:
            parts = [np.asarray(x, dtype=float) for x in (r.op.weight_bytes, r.op.kv_bytes)]
            w, kv = (float(p[index]) if p.ndim else float(p) for p in parts)
            a = np.asarray(r.op.act_bytes, dtype=float)
            act = float(a[index]) if a.ndim else float(a)
            total = max(w + kv + act, 1e-30)
            terms["weights"] += t * w / total
            terms["kv"] += t * kv / total
            terms["activations"] += t * act / total
    t_step = np.asarray(phase.t_expected_s)
    step = float(t_step[index]) if t_step.ndim else float(t_step)
    terms["overhead"] = max(step - sum(terms.values()), 0.0)
    return terms


def _batch_grid(most: int, points: int = 96) -> np.ndarray:
    """Batch 1 (latency), the memory limit, and a geometric grid between them (steps of
    (most)^(1/96): under 10% apart up to 10,000 sequences), evaluated in one broadcast call."""
    grid = np.unique(np.round(np.geomspace(1, most, points)))
    return np.unique(np.concatenate([[1.0], grid, [float(most)]]))


def evaluate(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    lay: Layout,
    prompt: int,
    output: int,
    max_tpot_s: float | None = None,
    capacity_bytes: float | None = None,
) -> Plan:
    """One layout: memory, the largest batch meeting the TPOT limit, and batch-1 latency."""
    dep = replace(base, layout=lay.replica(), links=links(lay, hw))
    mem = plan_memory(model, hw, dep, eng, capacity_bytes)
    most = int(max_batch(mem, model, dep, prompt + output)) if mem.weights_fit else 0
    if most < 1:
        nan = float("nan")
        return Plan(lay, False, mem.weights_bytes, mem.kv_budget_bytes, 0, 0, 0, False,
                    nan, nan, 0.0, 0.0, nan, nan, nan, {})  # fmt: skip
    grid = _batch_grid(most)
    r = request(model, hw, dep, grid, prompt, output, lay.dp, engine=eng.name)
    tpot = np.asarray(r.expected.tpot_s)
    ok = tpot <= max_tpot_s if max_tpot_s is not None else np.ones_like(tpot, dtype=bool)
    meets = bool(ok.any())
    i = int(np.nonzero(ok)[0].max()) if meets else 0
    if max_tpot_s is not None and meets and i + 1 < len(grid) and grid[i + 1] - grid[i] > 1:
        # the limit falls between two grid points: every batch between them, so the batch is
        # the largest that meets it, as `check` finds (one more broadcast call)
        grid = np.unique(np.concatenate([grid, np.arange(grid[i] + 1, grid[i + 1])]))
        r = request(model, hw, dep, grid, prompt, output, lay.dp, engine=eng.name)
        ok = np.asarray(r.expected.tpot_s) <= max_tpot_s
        i = int(np.nonzero(ok)[0].max())
    b = int(grid[i])

    def at(x, j=i) -> float:
        return float(np.asarray(x)[j]) if np.ndim(x) else float(x)

    l_ttft, l_tpot, l_ideal = at(r.expected.batch_prefill_s, 0), at(tpot, 0), at(r.ideal.tpot_s, 0)
    return Plan(
        lay,
        True,
        mem.weights_bytes,
        mem.kv_budget_bytes,
        most,
        b,
        b * lay.dp,
        meets,
        at(r.expected.batch_prefill_s),
        at(r.expected.tpot_s),
        at(r.expected.output_tokens_per_s),
        at(r.ideal.output_tokens_per_s),
        l_ttft,
        l_tpot,
        l_ideal,
        decode_terms(r.decode, (i,) if np.ndim(r.decode.t_expected_s) else ()),
    )


def plans(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    gpus: int,
    prompt: int,
    output: int,
    max_tpot_s: float | None = None,
    capacity_bytes: float | None = None,
    scale_out: Tier | None = None,
    nodes: int | None = None,
    cross_node_tp: bool = False,
    max_tp: int | None = None,
) -> list[Plan]:
    """Every valid layout of `gpus` GPUs, best first: those meeting the TPOT limit by
    throughput, then the rest."""
    found = [
        evaluate(model, hw, base, eng, lay, prompt, output, max_tpot_s, capacity_bytes)
        for lay in candidate_layouts(model, hw, gpus, scale_out, nodes, cross_node_tp, max_tp)
    ]
    if not found:
        raise InputError(
            f"no layout of {gpus} GPUs suits {model.id} on {hw.id}: check the heads, layers and "
            "node size (or pass --cross-node-tp)"
        )
    return sorted(found, key=lambda p: (not (p.fits and p.meets_slo), -p.output_tokens_per_s))


def explain(best: Plan, runner_up: Plan | None) -> str:
    """One sentence on why the best layout wins: its dominant decode term, and its lead."""
    lay = best.layout
    terms = best.decode_terms_s
    step = sum(terms.values()) or 1.0
    share = terms[best.dominant] / step
    text = (
        f"{lay.describe()} wins: {best.output_tokens_per_s:,.0f} tok/s at batch {best.batch} per "
        f"replica; its decode step is {share:.0%} {best.dominant}"
    )
    second = sorted(((v, k) for k, v in terms.items() if k != best.dominant), reverse=True)[0]
    if second[0] > 0:
        text += f" and {second[0] / step:.0%} {second[1]}"
    if runner_up is not None and runner_up.fits and runner_up.output_tokens_per_s > 0:
        lead = best.output_tokens_per_s / runner_up.output_tokens_per_s - 1
        text += f"; {lead:.1%} ahead of {runner_up.layout.describe()}"
    return text

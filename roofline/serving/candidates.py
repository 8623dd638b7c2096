"""The replica layouts `size` simulates for one accelerator, and how they are chosen.

Every layout of one replica (DP = 1) from the enumerator `plan` searches too
(layout.candidate_layouts with every EP and attention-DP degree: TP, PP, EP below or equal to
TP, EP across nodes over the scale-out link with attention-DP, redundant expert slots where EP
does not divide the experts), over replicas of 1, 2, 4 and 8 GPUs and of 1 to MAX_NODES whole
nodes (a dense model spans nodes only when one node does not hold its weights: its extra GPUs
would add only pipeline stages or network all-reduces, which give no more tokens/s per GPU than
more one-node replicas). Each layout whose weights fit is scored by `plan`'s static estimate
(planner.evaluate: the largest batch whose KV fits and whose TPOT meets the SLO, its output
tokens/s, batch-1 TPOT), which costs milliseconds where a simulated SLO search costs seconds:
- a layout whose batch-1 TPOT misses the TPOT SLO cannot meet it under load (batching only
  lengthens the step) and is dropped;
- the estimate is capped by the rate the prompts leave room for (prefill_bound);
- the rest are ranked by the GPUs the rate would need at the estimate (GPUs per replica x
  ceil(rate / (estimated requests/s x (1 − headroom)))), then by tokens/s per GPU; a layout is
  dominated when another needs no more GPUs, gives no fewer tokens/s per GPU and no slower
  batch-1 TPOT; the best undominated one of each kind (with attention-DP or without, per
  replica size) in that order, the first KEEP of them, go to the simulator.
The static estimate is optimistic (no queueing, no prefill interference), more so for some
layouts than others, which is why several go on, not one.

Disaggregated pools (`pool_candidates`) take their layouts from the same enumerator, each pool on
its own: a decode pool as above without the prefill bound (its replicas never prefill); a
prefill pool scored by the input tokens/s per GPU of one prefill step at the pool's token budget
(PREFILL_TOKENS per step, whole prompts, as its replicas run), its batch-1 prefill within the
TTFT SLO, ranked by the GPUs the rate's prompts need; the best of each kind, KEEP_POOL per pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import Layout, candidate_layouts, links, node_gpus
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.serving.workers import parallel_map
from roofline.step.memory import kv_bytes_per_sequence, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import prefill
from roofline.step.planner import Plan, evaluate

MAX_NODES = 4  # whole nodes one replica may span
MAX_REPLICA_GPUS = 288  # e.g. 4 NVL72 racks; 4 HGX nodes are 32
KEEP = 3  # layouts per accelerator that go on to the simulated SLO search
PREFILL_TOKENS = 8192  # a prefill replica's token budget per step (whole prompts)


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    dep: Deployment
    est_gpus: int  # GPUs the rate needs at one replica's static estimate (plan's)
    tokens_per_s_per_gpu: float
    latency_tpot_s: float
    rate_bound: float = float("inf")  # prefill_bound: no replica of it serves more (req/s)
    latency_ttft_s: float = 0.0  # plan's batch-1 TTFT (t_pf of prefill_bound)


def deployment(base: Deployment, lay: Layout, hw: Accelerator) -> Deployment:
    """`base` (formats) in layout `lay`, with the link of each collective; base's attention-DP
    scheduler (attention_dp_balance) kept."""
    one = replace(lay.replica(), attention_dp_balance=base.layout.attention_dp_balance)
    return replace(base, layout=one, links=links(lay, hw))


def prefill_bound(p: Plan, tpot_s: float | None) -> float:
    """Requests/s a colocated replica can take before its prompts leave the decodes too little
    time: a chunked-prefill engine runs each prompt inside the decode steps, so over a request's
    life a share λ·t_pf of the time goes to prefills (t_pf: one prompt's prefill, plan's
    batch-1 TTFT; under attention-DP on one rank, roofline.serving.attention_dp) and
    TPOT ≥ t_dec / (1 − λ·t_pf), t_dec at least the batch-1 TPOT. So λ < (1 − t_dec/SLO) / t_pf,
    and λ < 1 / t_pf without a TPOT SLO: an upper bound, never a cut of a rate that could be
    served."""
    t_pf = max(p.latency_ttft_s, 1e-12)
    if tpot_s is None:
        return 1.0 / t_pf
    return max(1.0 - p.latency_tpot_s / tpot_s, 0.0) / t_pf


def _dominates(a: Candidate, b: Candidate) -> bool:
    """`a` needs no more GPUs, gives no fewer tokens/s per GPU and no slower batch-1 TPOT."""
    return (
        a.est_gpus <= b.est_gpus
        and a.tokens_per_s_per_gpu >= b.tokens_per_s_per_gpu
        and a.latency_tpot_s <= b.latency_tpot_s
    )


def replica_sizes(hw: Accelerator) -> tuple[list[int], list[int]]:
    """GPUs per replica to try: 1, 2, 4, 8 within the node (1 only without a scale-up link),
    then 2 to MAX_NODES whole nodes (module docstring says when)."""
    if hw.scale_up is None:
        return [1], []
    node = node_gpus(hw)
    inside = sorted({g for g in (1, 2, 4, 8) if g <= node} | {node})
    spanning = [k * node for k in range(2, MAX_NODES + 1) if k * node <= MAX_REPLICA_GPUS]
    return inside, spanning


def candidates(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    prompt: int,
    output: int,
    rate: float,
    tpot_s: float | None,
    headroom: float,
    scale_out: Tier | None,
    keep: int = KEEP,
    decode_only: bool = False,
) -> tuple[list[Candidate], int]:
    """The layouts to simulate (module docstring), best estimate first, and how many layouts
    whose weights fit were scored. `decode_only`: a decode pool's replicas, which take no
    prompts, so no prefill bound."""
    scored: list[Candidate] = []
    for g, lay, p in _plans(model, hw, base, eng, prompt, output, tpot_s, scale_out):
        bound = float("inf") if decode_only else prefill_bound(p, tpot_s)
        req = min(p.output_tokens_per_s / max(output, 1), bound)
        reps = math.ceil(rate / max(req * (1.0 - headroom), 1e-12))
        scored.append(
            Candidate(
                lay,
                deployment(base, lay, hw),
                g * reps,
                p.output_tokens_per_s / g,
                p.latency_tpot_s,
                bound,
                p.latency_ttft_s,
            )
        )
    return _keep(scored, keep), len(scored)


_PLANS: dict[tuple, tuple[Accelerator, list[tuple[int, Layout, Plan]]]] = {}
_PLANS_KEPT = 128  # the last scorings (a chip each): size's colocated and decode pools share one


def _keep_plans(key: tuple, hw: Accelerator, plans: list[tuple[int, Layout, Plan]]) -> None:
    while len(_PLANS) >= _PLANS_KEPT:
        _PLANS.pop(next(iter(_PLANS)))
    _PLANS[key] = (hw, plans)


def _kept(key: tuple, hw: Accelerator) -> list[tuple[int, Layout, Plan]] | None:
    """The scoring kept under `key` (its first item the chip's id), if it is `hw`'s: an id is
    reused once its object is gone, so the chip itself is kept beside it and compared."""
    got = _PLANS.get(key)
    return got[1] if got is not None and got[0] is hw else None


def score_chips(
    model: ModelArch,
    accelerators: list[Accelerator],
    base: Deployment,
    eng: Engine,
    prompt: int,
    output: int,
    tpot_s: float | None,
    scale_out: Tier | None,
) -> None:
    """Each chip's layouts scored (_plans) over forked workers, a chip each, and kept here for
    candidates() to read: the same figures, the chips' scorings side by side."""
    args = (base, eng, prompt, output, tpot_s, scale_out)
    todo = [hw for hw in accelerators if _kept((model, id(hw), *args), hw) is None]
    if len(todo) < 2:  # one chip: scored where it is asked for
        return
    got = parallel_map(lambda hw: _plans(model, hw, *args), todo)
    for hw, plans in zip(todo, got, strict=True):
        _keep_plans((model, id(hw), *args), hw, plans)


def _plans(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    prompt: int,
    output: int,
    tpot_s: float | None,
    scale_out: Tier | None,
) -> list[tuple[int, Layout, Plan]]:
    """(GPUs, layout, plan's static estimate) of every layout whose weights fit and whose
    estimate fits and meets the TPOT SLO at batch 1, in the enumerator's order (module
    docstring); the same figures for the same arguments, so the last few are kept."""
    key = (model, id(hw), base, eng, prompt, output, tpot_s, scale_out)
    got = _kept(key, hw)
    if got is not None:
        return got
    out: list[tuple[int, Layout, Plan]] = []
    inside, spanning = replica_sizes(hw)
    for g in inside + spanning:
        if g in spanning and not model.is_moe and out:
            break  # a dense model one node holds does not span nodes
        for lay in candidate_layouts(
            model, hw, g, scale_out, microbatch_factors=(1,), every_degree=True, dp=1
        ):
            if not plan_memory(model, hw, deployment(base, lay, hw), eng).weights_fit:
                continue
            p = evaluate(model, hw, base, eng, lay, max(prompt, 1), max(output, 1), tpot_s)
            if not p.fits:
                continue
            if tpot_s is not None and p.latency_tpot_s > tpot_s:
                continue
            out.append((g, lay, p))
    _keep_plans(key, hw, out)
    return out


def _keep(scored: list[Candidate], keep: int) -> list[Candidate]:
    """The best undominated candidate of each kind, best first, at most `keep`."""
    scored.sort(key=lambda c: (c.est_gpus, -c.tokens_per_s_per_gpu, c.latency_tpot_s))
    kept: list[Candidate] = []
    kinds: set[tuple[bool, int]] = set()
    for c in scored:  # the best of each kind (attention-DP or not, GPUs per replica) first
        kind = (c.layout.attention_dp > 1, c.layout.gpus)
        if kind in kinds or any(_dominates(k, c) for k in kept):
            continue
        kinds.add(kind)
        kept.append(c)
    return sorted(kept, key=scored.index)[:keep]


def prefill_candidates(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    prompt: int,
    rate: float,
    ttft_s: float | None,
    scale_out: Tier | None,
    keep: int = 2,
) -> list[Candidate]:
    """A prefill pool's layouts (module docstring), best first: each scored on one step of
    max(1, PREFILL_TOKENS // prompt) prompts (split over its attention-DP ranks, whose KV must
    fit), `tokens_per_s_per_gpu` the input tokens, `latency_tpot_s` the batch-1 prefill."""
    s = max(prompt, 1)
    batch = max(1, PREFILL_TOKENS // s)
    scored: list[Candidate] = []
    inside, spanning = replica_sizes(hw)
    for g in inside + spanning:
        if g in spanning and not model.is_moe and scored:
            break
        for lay in candidate_layouts(
            model, hw, g, scale_out, microbatch_factors=(1,), every_degree=True, dp=1
        ):
            dep = deployment(base, lay, hw)
            mem = plan_memory(model, hw, dep, eng)
            per_rank = -(-batch // lay.attention_dp)
            if per_rank * float(kv_bytes_per_sequence(model, dep, s)) > mem.kv_budget_bytes:
                continue
            t1 = float(prefill(model, hw, dep, 1, s, engine=eng.name).t_expected_s)
            if ttft_s is not None and t1 > ttft_s:
                continue
            t = float(prefill(model, hw, dep, batch, s, engine=eng.name).t_expected_s)
            req = batch / t
            reps = math.ceil(rate / max(req, 1e-12))
            scored.append(Candidate(lay, dep, g * reps, batch * s / t / g, t1))
    return _keep(scored, keep)

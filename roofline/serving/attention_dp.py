"""Prefill under colocated attention data parallelism: why prompts stall every rank.

With attention-DP (DeepSeek-style serving: attention and the dense layers replicated per rank,
each rank holding its own sequences; the routed experts split by EP), every forward step is
synchronous across the ranks because the experts' all-to-all joins them. A colocated engine
schedules each rank's new prompts as they arrive, so in steady state one rank runs a prompt's
context phase while the others only decode, and the step lasts as long as the busiest rank
(TensorRT-LLM tech blog 10, "ADP Balance Strategy", baseline round-robin: contexts are processed
sequentially across ranks, total time time(ctx) × N for N ranks; SGLang's large-scale EP blog,
lmsys.org 2025-05-05, "DP Attention Imbalance"). The rank-local part of the prefill (everything
but the routed experts and their all-to-all) is therefore paid once per rank instead of once in
parallel:

    t_prefill(colocated, ADP) = t_prefill(B, S) + (dp − 1) · t_rank_local(B, S)

where t_prefill(B, S) is the batched prefill with the prompts spread evenly over the dp ranks
(B/dp each) and t_rank_local its rank-local ops. A disaggregated prefill pool, whose ranks all
run prompts at once, does not pay the term: this is the interference disaggregation removes.
Only the expected figure carries it (a balancing scheduler can avoid it; the speed of light
assumes one).
"""

from __future__ import annotations

from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult

# ops shared by all ranks of an attention-DP group: the routed experts and their exchange
SHARED_OPS = ("moe.experts",)
SHARED_KINDS = ("alltoall",)


def rank_local_s(p: PhaseResult, ideal: bool = False) -> float:
    """Time of the prefill's rank-local ops (attention, dense layers, shared experts, router,
    embedding and head): all ops but the routed experts and collectives of kind all-to-all."""
    return float(
        sum(
            float(o.t_ideal_s if ideal else o.t_expected_s)
            for o in p.ops
            if o.op.name not in SHARED_OPS and o.op.kind not in SHARED_KINDS
        )
    )


def colocated_prefill_s(p: PhaseResult, dep: Deployment, ideal: bool = False) -> float:
    """Prefill time of a colocated attention-DP replica whose ranks take their prompts at
    different steps: the batched prefill plus (dp − 1) more rank-local parts (module docstring).
    Without attention-DP this is the batched prefill itself."""
    t = float(p.t_ideal_s if ideal else p.t_expected_s)
    if dep.attention_dp <= 1:
        return t
    return t + (dep.attention_dp - 1) * rank_local_s(p, ideal)

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

Which scheduler an engine runs (`attention_dp_balance`, roofline.domain.layout.ADP_BALANCES),
settled from the engines' own sources:

- "serialised", the default of all three: TensorRT-LLM's attention_dp_config.enable_balance
  is off unless set (AttentionDpConfig in tensorrt_llm/llmapi/llm_args.py: enable_balance
  False, timeout_iters 50, batching_wait_iters 10), its tech blog 10 calling that the
  baseline whose contexts run one rank after another (docs/source/blogs/tech_blog/
  blog10_ADP_Balance_Strategy.md at NVIDIA/TensorRT-LLM@011cfc2cc18a24a95603f91dc53f8fc60bc80189);
  SGLang's DP controller only spreads requests over the ranks (round_robin by default, or
  shortest_queue / minimum_tokens: python/sglang/srt/managers/data_parallel_controller.py at
  sgl-project/sglang@000a3db1c0c42140f14ddab7b4c6dda86de1fa4b) and each rank's scheduler
  prefills its own queue at its own step, the cross-rank PrefillDelayer being opt-in
  (ServerArgs.enable_prefill_delayer False in python/sglang/srt/server_args.py;
  python/sglang/srt/managers/prefill_delayer.py at
  sgl-project/sglang@1f77e43a1c06fcfb8caa4c2a2cde25e2e18457ff); vLLM's DP coordinator
  publishes the engines' waiting and running counts for the front end's choice of rank and
  keeps their request waves in step, but each DP engine core schedules its own prompts
  (vllm/v1/engine/coordinator.py at vllm-project/vllm@0090ad1226adbe545f59dfabedc67ccd174def01).
- "balanced": TensorRT-LLM with attention_dp_config {enable_balance: true} (its DeepSeek-R1
  perf-overview runs set it: docs/source/developer-guide/perf-overview.md at
  NVIDIA/TensorRT-LLM@03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d), SGLang with
  --enable-prefill-delayer: a rank with a prompt waits (up to timeout_iters / max_delay_passes
  steps) until every rank has one, so the ranks' contexts run in the same step and the
  rank-local part is paid once ("ADP Balance Strategy": time(gen)·(N−1) + time(ctx) instead
  of time(ctx)·N), at the price of the wait in TTFT. The colocated prefill is then the
  batched prefill itself. Not modelled: that wait (a lone prompt held up to timeout_iters = 50
  steps, 60 in the perf-overview runs, when the other ranks have none): the simulator admits
  balanced prompts at once, so its TTFT at light load is a lower bound [uncertain].
"""

from __future__ import annotations

from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult

SERIALISED, BALANCED = "serialised", "balanced"
# each engine's default scheduler (module docstring); an engine not named runs serialised
ENGINE_DEFAULT_BALANCE = {"trtllm": SERIALISED, "sglang": SERIALISED, "vllm": SERIALISED}


def default_balance(engine: str | None) -> str:
    """The attention-DP scheduler `engine` runs unless told otherwise (module docstring)."""
    return ENGINE_DEFAULT_BALANCE.get((engine or "").split("-")[0], SERIALISED)


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
    Without attention-DP, or under a balancing scheduler (dep's attention_dp_balance
    "balanced"), this is the batched prefill itself."""
    t = float(p.t_ideal_s if ideal else p.t_expected_s)
    if dep.attention_dp <= 1 or dep.layout.attention_dp_balance == BALANCED:
        return t
    return t + (dep.attention_dp - 1) * rank_local_s(p, ideal)

"""Parallelism plans for N GPUs: every (TP, PP, DP) with TP·PP·DP = N, evaluated with the same
memory and step-time model, so the trade-offs the seed essay describes show as numbers:
data parallelism replicates the weights and strands KV capacity; tensor parallelism pools memory
and bandwidth (more KV room, a later cliff) at the cost of all-reduces; pipeline parallelism splits
layers with only point-to-point traffic. Each replica runs the largest batch its KV budget holds
at prompt + output tokens (capped by `batch_cap`), in steady state as in `validate`; under
pipeline parallelism those sequences travel in PP micro-batches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.hardware import Accelerator
from roofline.memory import Engine, max_batch, plan_memory
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import decode, prefill


@dataclass(frozen=True)
class Plan:
    tp: int
    pp: int
    dp: int
    fits: bool
    weights_bytes_per_gpu: float
    kv_budget_bytes: float
    batch: int  # sequences per replica
    concurrency: int  # sequences in flight on all GPUs
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float  # all replicas, steady state


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plans(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    gpus: int,
    prompt: int,
    output: int,
    max_tp: int = 8,
    batch_cap: int = 1024,
    capacity_bytes: float | None = None,
) -> list[Plan]:
    """Every TP·PP·DP = gpus with TP ≤ max_tp (one scale-up domain) and PP ≤ the layers (split as
    evenly as they go; memory uses the average stage). Expert parallelism stays at base.ep, so
    only TP degrees it divides are tried."""
    out = []
    for tp in (d for d in divisors(gpus) if d <= max_tp and d % base.ep == 0):
        for pp in (d for d in divisors(gpus // tp) if d <= model.num_hidden_layers):
            dp = gpus // (tp * pp)
            dep = replace(base, tp=tp, pp=pp)
            plan = plan_memory(model, hw, dep, eng, capacity_bytes)
            b = min(int(max_batch(plan, model, dep, prompt + output)), batch_cap)
            if not plan.weights_fit or b < 1:
                out.append(
                    Plan(
                        tp,
                        pp,
                        dp,
                        False,
                        plan.weights_bytes,
                        plan.kv_budget_bytes,
                        0,
                        0,
                        float("nan"),
                        float("nan"),
                        0.0,
                    )
                )
                continue
            # b sequences per replica (each stage holds the KV of its layers for all of them),
            # in pp micro-batches of m: every sequence advances one token per round, and a
            # round is one full-model step of m sequences (pp stages of 1/pp of the layers each)
            steps = max(output - 1, 1)
            m = max(b / pp, 1.0)
            ttft = float(prefill(model, hw, dep, m, max(prompt, 1)).t_expected_s)
            t_fill = float(prefill(model, hw, dep, b, max(prompt, 1)).t_expected_s) / pp
            t_d = float(decode(model, hw, dep, m, prompt + 1, steps).t_expected_s)
            tokens_per_s = dp * b * output / (t_fill + steps * t_d)
            fields = (plan.weights_bytes, plan.kv_budget_bytes, b, dp * b, ttft, t_d)
            out.append(Plan(tp, pp, dp, True, *fields, tokens_per_s))
    return out

"""What-if table: each lever on weight, KV and step cost, applied alone and all together.

Levers (the seed essay, "Where the bytes actually go"): weight quantisation (fp8, int4, nvfp4),
2:4 structured sparsity, KV quantisation (fp8, int4), KV eviction to a token budget, and paged
instead of contiguous KV allocation. The baseline is bf16 weights and KV in contiguous
allocation, each request reserving `max_len` tokens (what servers did before PagedAttention).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import Engine
from roofline.step.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    plan_memory,
    weight_bytes_per_gpu,
)
from roofline.step.ops import Deployment
from roofline.step.phases import decode


@dataclass(frozen=True)
class Lever:
    name: str
    deployment: Deployment
    paged: bool


@dataclass(frozen=True)
class LeverResult:
    lever: Lever
    bits_per_weight: float
    weight_bytes_per_gpu: float
    kv_bytes_per_token: float
    kv_bytes_per_sequence: float
    t_step_ideal_s: float
    t_step_expected_s: float
    max_batch: int


def levers(base: Deployment, kv_budget: int) -> list[Lever]:
    """The baseline (bf16 weights and KV, contiguous), each lever alone, and all together (int4
    weights with 2:4 sparsity, int4 KV, eviction, paged)."""
    b = replace(
        base,
        weights=WEIGHT_FORMATS["bf16"],
        kv=KV_FORMATS["bf16"],
        sparse_2_4=False,
        kv_token_budget=None,
    )
    rows = [
        Lever("baseline", b, False),
        Lever("fp8 weights", replace(b, weights=WEIGHT_FORMATS["fp8"]), False),
        Lever("int4 weights", replace(b, weights=WEIGHT_FORMATS["int4"]), False),
        Lever("nvfp4 weights", replace(b, weights=WEIGHT_FORMATS["nvfp4"]), False),
        Lever("2:4 sparsity", replace(b, sparse_2_4=True), False),
        Lever("fp8 KV", replace(b, kv=KV_FORMATS["fp8"]), False),
        Lever("int4 KV", replace(b, kv=KV_FORMATS["int4"]), False),
        Lever(f"evict to {kv_budget:,}", replace(b, kv_token_budget=kv_budget), False),
        Lever("paged KV", b, True),
    ]
    all_levers = replace(
        b,
        weights=WEIGHT_FORMATS["int4"],
        sparse_2_4=True,
        kv=KV_FORMATS["int4"],
        kv_token_budget=kv_budget,
    )
    rows.append(Lever("all levers", all_levers, True))
    return rows


def evaluate_levers(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    batch: int,
    context: int,
    max_len: int,
    kv_budget: int,
    eff: Efficiency | None = None,
    capacity_bytes: float | None = None,
) -> list[LeverResult]:
    """Each lever's weight bytes, KV bytes, decode step time at (batch, context) and max batch
    at `context` (contiguous: every request reserves max_len tokens)."""
    out = []
    for lever in levers(base, kv_budget):
        dep = lever.deployment
        d = decode(model, hw, dep, batch, context, eff=eff, engine=eng.profile_id)
        plan = plan_memory(model, hw, dep, eng, capacity_bytes)
        reserved = (
            kv_bytes_per_sequence(model, dep, context, eng.block_tokens)
            if lever.paged
            else kv_bytes_per_sequence(model, dep, max(max_len, context), 1)
        )
        out.append(
            LeverResult(
                lever,
                dep.linear_bits,
                weight_bytes_per_gpu(model, dep),
                kv_bytes_per_token(model, dep.kv.bits, dep.tp, dep.pp),
                float(kv_bytes_per_sequence(model, dep, context)),
                float(d.t_ideal_s),
                float(d.t_expected_s),
                int(np.floor(plan.kv_budget_bytes / float(reserved))),
            )
        )
    return out

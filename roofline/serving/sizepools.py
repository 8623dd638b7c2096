"""Sizing disaggregated deployments, and size's whole search.

A disaggregated unit is P prefill replicas and D decode replicas, each pool in its own layout:
the prefill pool's from roofline.serving.candidates.prefill_candidates (input tokens/s per GPU
with the batch-1 prefill inside the TTFT SLO), the decode pool's from candidates(decode_only)
(output tokens/s per GPU within the TPOT SLO), the best KEEP_POOL of each paired on the same
accelerator (DeepSeek serves R1 this way: prefill EP32 over 4 nodes, decode EP144 over 18, from
its "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview", 2025-03-01; here within
candidates.MAX_NODES nodes). Each pair's split (P, D) is the one with the most capacity per GPU
(roofline.serving.disagg.best_pools), or the given one; units = ceil(rate / a unit's highest rate
within the SLOs). What binds is named per pool: the SLO nearest its limit when a unit's SLO
capacity is below its saturation (TTFT: queue + prefill + transfer, the prefill pool's; TPOT, the
decode pool's), else the pool whose saturation (rate per replica × replicas) is the lesser, and
each pool's own saturation binding (roofline.serving.search.BINDINGS).
"""

from __future__ import annotations

import numpy as np

from roofline.catalog.engine_flags import engine_flags
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.engines.launch import pools_refusal
from roofline.serving.candidates import (
    PREFILL_TOKENS,
    candidates,
    prefill_candidates,
    score_chips,
)
from roofline.serving.confidence import Edges
from roofline.serving.cost import (
    Price,
    cost_per_hour,
    cost_per_million_output_tokens,
    joules_per_output_token,
)
from roofline.serving.disagg import TrafficMode, best_pools, disaggregate, fleet_at_rate
from roofline.serving.kvtransfer import KvLink
from roofline.serving.loadbands import rate_bands
from roofline.serving.metrics import Slo
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.serve import make_replica
from roofline.serving.sim.drafting import DraftConfig
from roofline.serving.size import HEADROOM, Sized, _none, redundant_experts, size
from roofline.serving.sizerank import rank
from roofline.serving.whynone import describe
from roofline.serving.workers import Background
from roofline.serving.workload import Workload
from roofline.step.ops import Deployment

KEEP_POOL = 2  # layouts per pool that go on to the simulated search (pairs: KEEP_POOL²)


def pool_layouts(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    scale_out: Tier | None,
    keep: int = KEEP_POOL,
) -> tuple[list[Deployment], list[Deployment]]:
    """The prefill pool's and the decode pool's layouts to simulate on `hw`, best first."""
    s, o = int(w.prompts.mean()), int(w.outputs.mean())
    rate = float(w.rate or 1.0)
    pre = prefill_candidates(model, hw, base, eng, s, rate, slo.ttft_s, scale_out, keep)
    dec, _ = candidates(
        model, hw, base, eng, s, o, rate, slo.tpot_s, HEADROOM, scale_out, keep, decode_only=True
    )
    return [c.dep for c in pre], [c.dep for c in dec]


def pool_constraint(mode: TrafficMode, slo: Slo) -> str:
    """What sets the unit count, and each pool's saturation binding (module docstring)."""
    (b_pre, b_dec), (r_pre, r_dec) = mode.bindings, mode.pool_rates
    cap_pre, cap_dec = r_pre * mode.prefill_replicas, r_dec * mode.decode_replicas
    m = mode.metrics
    head = f"saturation of the {'prefill' if cap_pre <= cap_dec else 'decode'} pool"
    if (
        m is not None
        and (slo.ttft_s or slo.tpot_s)
        and mode.max_rate_per_unit < 0.97 * min(cap_pre, cap_dec)
    ):
        ttft = m.slo_ttft_s / slo.ttft_s if slo.ttft_s else 0.0
        tpot = m.slo_tpot_s / slo.tpot_s if slo.tpot_s else 0.0
        head = "TTFT SLO (prefill pool)" if ttft >= tpot else "TPOT SLO (decode pool)"
    return f"{head}; prefill replicas bound by {b_pre}, decode replicas by {b_dec}"


def _nodes(dep: Deployment) -> int:
    per_node = dep.links.gpus_per_node if dep.links else dep.gpus_per_replica
    return max(1, -(-dep.gpus_per_replica // max(per_node, 1)))


def _disaggregated(
    model: ModelArch,
    accelerators: list[Accelerator],
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    prices: dict[str, Price],
    link: KvLink,
    seed: int,
    scale_out: Tier | None,
    shape: tuple[int, int] | None,
) -> tuple[list[Sized], Background]:
    """Disaggregated deployments (module docstring): one per accelerator x prefill layout x
    decode layout, with the pool split that gives the most capacity per GPU (or `shape` =
    (prefill, decode) replicas) and as many units as the rate needs. A pair the engine cannot
    run (vLLM: the decode pool's attention TP not a multiple of the prefill pool's,
    launch.pools_refusal) is not simulated: its row says why. Returned started: the rows of the
    pairs not simulated, and the simulated pairs' search running in background workers
    (workers.Background)."""
    flags = engine_flags()
    max_len = w.max_len
    s_mean, o_mean = float(w.prompts.mean()), float(w.outputs.mean())
    out: list[Sized] = []
    tasks = []
    score_chips(model, accelerators, base, eng, int(s_mean), int(o_mean), slo.tpot_s, scale_out)
    for hw in accelerators:
        pres, decs = pool_layouts(model, hw, base, eng, w, slo, scale_out)
        if not pres or not decs:
            pool = "prefill" if not pres else "decode"
            out.append(_none(hw, base, f"disaggregated: no {pool} layout fits and meets the SLOs"))
        for p, d in ((p, d) for p in pres for d in decs):
            refusal = pools_refusal(flags, eng.name, p.attention_tp, d.attention_tp)
            if refusal is None:
                tasks.append((hw, p, d))
            else:  # not simulated: a row that says why, ranked after those that meet the SLOs
                pair = f"prefill {describe(p)} with decode {describe(d)}"
                out.append(
                    _none(hw, d, f"disaggregated: not searched, {pair}: {refusal}", searched=False)
                )

    def one(task: tuple[Accelerator, Deployment, Deployment]) -> Sized:
        hw, p_dep, d_dep = task
        try:
            dec = make_replica(model, hw, d_dep, eng, max_len)
            pre = make_replica(model, hw, p_dep, eng, max_len, chunked_prefill=False,
                               max_batched_tokens=PREFILL_TOKENS)  # fmt: skip
        except RooflineError as exc:
            return _none(hw, d_dep, str(exc))
        per_seq = float(dec.expected.blocks(int(s_mean + o_mean / 2) + 1, eng.block_tokens))
        b = int(max(1, min(dec.rules.max_seqs, dec.rules.budget_blocks // max(per_seq, 1))))
        s, o = max(int(s_mean), 1), max(int(o_mean), 2)
        ratio = disaggregate(
            model, hw, hw, p_dep, d_dep, link, b, s, o
        ).prefill_replicas_per_decode_replica
        mode = best_pools(model, pre, dec, link, w, slo, ratio, seed, shape=shape)
        if not mode.units or mode.metrics is None:
            return _none(hw, d_dep, "disaggregated: misses the SLOs even at light load")
        m = mode.metrics  # the whole fleet's pools at the rate (disagg.best_pools)
        at = fleet_at_rate(model, pre, dec, link, mode, w, slo, seed)  # bands under load, as
        bands = (  # the colocated rows' (size): under stationary arrivals at a rate
            rate_bands(m, float(w.rate), at, hw.efficiency.family, eng.profile_id)
            if w.stationary and w.rate
            else {}
        )
        price = prices.get(hw.id)
        usd = cost_per_hour(price, mode.gpus)
        tok_s = m.output_tokens_per_s
        ranks = d_dep.attention_dp
        return Sized(
            hw.id, d_dep.tp, d_dep.pp, d_dep.ep, mode.units, mode.gpus, mode.max_rate_per_unit,
            m.meets_slo, m, None, usd, cost_per_million_output_tokens(usd, tok_s),
            joules_per_output_token(price, mode.gpus, m.power_share, tok_s),
            prefill_replicas=mode.prefill_replicas, decode_replicas=mode.decode_replicas,
            basis="SLO capacity" if slo.ttft_s or slo.tpot_s else "saturation",
            binding=mode.bindings[1], saturation_rate_per_replica=mode.pool_rates[1],
            attention_dp=ranks, layout=describe(d_dep), nodes=_nodes(d_dep),
            max_seqs=dec.rules.max_seqs // ranks,
            max_batched_tokens=(dec.rules.max_batched_tokens or 0) // ranks,
            redundant_experts=redundant_experts(model, d_dep),
            constraint=pool_constraint(mode, slo),
            prefill_pool={
                "tp": p_dep.tp, "pp": p_dep.pp, "ep": p_dep.ep,
                "attention_dp": p_dep.attention_dp, "layout": describe(p_dep),
                "nodes": _nodes(p_dep), "redundant_experts": redundant_experts(model, p_dep),
                "max_batched_tokens": PREFILL_TOKENS // p_dep.attention_dp,
                "binding": mode.bindings[0], "saturation_rate_per_replica": mode.pool_rates[0],
            },
            load_bands=bands,
        )  # fmt: skip

    return out, Background(one, tasks)


def size_search(
    model: ModelArch,
    accelerators: list[Accelerator],
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    prices: dict[str, Price],
    minimize: str = "cost",
    seed: int = 0,
    headroom: float = HEADROOM,
    drafting: DraftConfig | None = None,
    scale_out: Tier | None = None,
    link: KvLink | None = None,
    shape: tuple[int, int] | None = None,
    router: str = DEFAULT_ROUTER,
    confidence: dict[str, Edges] | None = None,
) -> list[Sized]:
    """size's search: the colocated deployments (roofline.serving.size.size) and, given the KV
    `link` between pools, the disaggregated ones (`_disaggregated`, split `shape` or
    searched), ranked together best first. `confidence`: the band edges per accelerator
    (serving.confidence; colocated only)."""
    if link is not None and confidence and any(not e.neutral for e in confidence.values()):
        raise InputError("--confidence p90 sizes colocated fleets only: drop --disagg")
    # each chip's layouts scored side by side, for size.layouts to read (its arguments)
    tpot = slo.tpot_s if drafting is None else None
    prompt, output = int(np.mean(w.prompts)), int(np.mean(w.outputs))
    score_chips(model, accelerators, base, eng, prompt, output, tpot, scale_out)

    def colocated() -> list[Sized]:
        return size(
            model, accelerators, base, eng, w, slo, prices, minimize, seed,
            headroom=headroom, drafting=drafting, scale_out=scale_out, router=router,
            confidence=confidence,
        )  # fmt: skip

    if link is None:
        return colocated()
    # the disaggregated pairs run in the background while the colocated layouts are searched
    extra, pending = _disaggregated(
        model, accelerators, base, eng, w, slo, prices, link, seed, scale_out, shape
    )
    with pending:
        rows = colocated()
        extra += pending.result()
    return rank(rows + extra, minimize)

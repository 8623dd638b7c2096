"""Serving metrics under a workload: percentiles, throughput, goodput, SLO attainment, saturation.

Definitions (docs/METRICS.md, once): for each request, TTFT = first token at the client − the
client's send (queueing + prefill, chunked or not; + KV transfer when disaggregated; + the API
server's fixed path, policy.Frontend, in the expected figures); TPOT = (finish − first
token)/(O − 1) for O > 1 output tokens; ITL = every gap between consecutive output tokens of a
request (weighted: one per gap); E2E = finish − send. Throughput is the steady state's
(steady_state: the offered rate while the queue is stable, the saturation rate past it); the
benchmark window's figure = requests (output tokens) finished / the window from the first send to
the last finish (benchmark_serving's convention) keeps its own name. Goodput = steady requests/s
× SLO attainment (DistServe, Zhong et al. OSDI'24, defines goodput as the rate served within
SLO). SLO attainment = share of requests meeting every SLO. A deployment meets the SLOs when the
`pct`-th percentile of TTFT and of TPOT are within their limits. Requests go to replicas by a
named router (roofline.serving.router: least-loaded, as vLLM's data-parallel balancer, or round
robin).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.engines.scheduler import (
    PREFILL_FIRST,
    PRIORITY_PREEMPTION,
    EngineRules,
    Frontend,
    frontend_costs,
    output_reserve,
    sglang_max_running,
    version_defaults,
)
from roofline.serving.cost import MEMORY_POWER_SHARE
from roofline.serving.metrics import (
    ServeMetrics,
    Slo,
    metrics,
    past_saturation,
    replica_share,
)
from roofline.serving.router import (
    DEFAULT_ROUTER,
    LEAST_LOADED_PASSES,
    check_router,
    least_loaded_passes,
)
from roofline.serving.sessionroute import session_passes
from roofline.serving.sim.drafting import DraftConfig, DraftRound, choose, speculative_steps
from roofline.serving.sim.idealsteps import IdealSteps
from roofline.serving.sim.kvtiers import KvHierarchy
from roofline.serving.sim.multistep import amortised, streams_each_step
from roofline.serving.sim.prefixcache import replica_selection
from roofline.serving.sim.record import RunRecord
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.sim.slostop import SloStop
from roofline.serving.sim.steps import StepModel, kv_budget_blocks
from roofline.serving.workload import Workload
from roofline.step.memory import plan_memory
from roofline.step.ops import Deployment


@dataclass(frozen=True)
class Replica:
    """One replica's engine: step times (ideal and expected) and the scheduler's rules."""

    hw: Accelerator
    dep: Deployment
    rules: EngineRules
    ideal_steps: IdealSteps  # the ideal step times, built when first read (`ideal`)
    expected: StepModel
    frontend: Frontend | None = None  # the expected figures' API server (never the ideal's)
    model: ModelArch | None = None  # what it serves (the capacity bounds count its ops)
    drafting: DraftRound | None = None  # the speculative round its decode steps run (None: plain)
    engine: str = ""  # the engine's name (its priority rules: roofline.serving.sim.priority)
    kv: KvHierarchy | None = None  # tiers below HBM, retention (roofline.serving.sim.kvtiers)
    # the engine's own token budget a step, one attention-DP rank's (what a launch line sets;
    # rules.max_batched_tokens is the replica's, every rank's step together)
    rank_batched_tokens: int | None = None

    @property
    def gpus(self) -> int:
        return self.dep.gpus_per_replica

    @property
    def ideal(self) -> StepModel:
        return self.ideal_steps()


def make_replica(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    max_len: int,
    max_seqs: int | None = None,
    max_batched_tokens: int | None = None,
    chunked_prefill: bool | None = None,
    preemption: str = "recompute",
    swap_tier: Tier | None = None,
    capacity_bytes: float | None = None,
    tokenizer: str = "fast",
    drafting: DraftConfig | None = None,
    draft_context: float = 1024.0,
    scheduler_steps: int = 1,
    cache_tokens: int | None = None,
) -> Replica:
    """A replica of `model` on `hw` in layout `dep` with the engine's memory rule; `max_len` the
        longest prompt + output it must hold; `max_seqs` and `max_batched_tokens` None: the engine's
        defaults on this device and version (roofline.engines.scheduler.version_defaults; the budget
        also packs non-chunked prefill steps); `chunked_prefill` None: the version's default;
        `tokenizer` the API server's detokenizer path (fast or slow,
    engines.yaml api_*); `spec`: decode with a drafter (serving.sim.drafting; its round chosen at
    batch 1 and `draft_context` tokens), whose weights and KV take their share of the memory;
    `scheduler_steps` vLLM V0's --num-scheduler-steps (roofline.serving.sim.multistep). Raises
    InputError if the weights or one request do not fit.
    Under attention-DP the scheduler limits are per rank, as the engines take them (vLLM runs
    one engine core per DP rank, each with its own max_num_seqs and token budget; SGLang's DP
    attention workers likewise): the replica runs that many times the sequences, and a step
    carries every rank's decode tokens beside one rank's prompt chunk (the steady state of
    roofline.serving.attention_dp: the ranks take their prompts at different steps, and the
    step time already charges the rank-local prefill as if on one rank). Under a balancing
    scheduler (dep's attention_dp_balance "balanced") the ranks' prompts run in the same step:
    the step carries every rank's token budget, and its prompts share the rank-local time
    (sim.steps, module docstring). Each rank holds its own sequences' KV
    (steps.kv_budget_blocks), and a request must fit in one rank's."""
    pid = eng.profile_id  # the engine's version profile (roofline/engines/versions.py)
    hw = amortised(hw, pid, scheduler_steps)  # multi-step: host cost spread over the steps
    vprof = (hw.efficiency.engines or {}).get(pid)
    seqs_default, tokens_default, chunked_prefill = version_defaults(
        eng.name, hw, vprof, max_len, chunked_prefill
    )
    if max_batched_tokens is None:
        max_batched_tokens = tokens_default
    rnd, kv_share = None, 1.0
    if drafting is not None:
        rnd = choose(model, hw, dep, drafting, draft_context, pid)
        capacity_bytes, kv_share = _drafter_memory(model, hw, dep, drafting, rnd, capacity_bytes)
    ranks = dep.attention_dp
    limits = (max_seqs or seqs_default, max_batched_tokens or tokens_default)
    plan = plan_memory(model, hw, dep, eng, capacity_bytes, limits)
    if not plan.weights_fit:
        raise InputError(f"{model.id} does not fit on {hw.id} at TP{dep.tp} PP{dep.pp}")
    blk = eng.block_tokens
    budget = int(kv_budget_blocks(plan, model, dep, blk) * kv_share)
    if max_seqs is None and eng.name == "sglang":  # its cap follows its KV pool, per DP rank
        ctx = model.max_position_embeddings or max_len
        seqs_default = sglang_max_running(budget // ranks * blk, ctx)
    max_seqs = max_seqs if max_seqs is not None else seqs_default
    rank_tokens = max_batched_tokens
    if chunked_prefill and rank_tokens is not None:  # as below, for one rank's sequences
        rank_tokens = max(rank_tokens, max_seqs + 1)
    if max_batched_tokens is not None and ranks > 1:
        if dep.layout.attention_dp_balance == "balanced":  # every rank's budget in one step
            max_batched_tokens *= ranks
        else:  # one rank's prompt chunk beside every rank's decodes
            max_batched_tokens += (ranks - 1) * max_seqs
    max_seqs *= ranks
    if chunked_prefill and max_batched_tokens is not None:
        max_batched_tokens = max(max_batched_tokens, max_seqs + 1)
    rules = EngineRules(
        max_seqs,
        max(budget, 0),
        blk,
        max_batched_tokens,
        chunked_prefill,
        preemption,
        swap_tier.bandwidth_bytes_per_s if swap_tier else None,
        output_reserve(eng.name),
        scheduler_steps,
        vprof.prefill_requests_per_step if vprof is not None else 0,
        eng.name in PREFILL_FIRST and not chunked_prefill,  # SGLang's prefill batches fill up
        scheduler_steps > 1 and streams_each_step(eng.version),
    )
    top = max_seqs + (max_batched_tokens or max_len)
    steps = StepModel(model, hw, dep, max_seqs, max_len, False, max_tokens=top, engine=pid)
    if vprof is not None and vprof.decode_whole_cache:  # the expected step reads every slot
        steps.dense_cache = cache_tokens or max_len  # its preallocated cache, as configured
    if float(steps.blocks(max_len + 1, blk)) > budget // ranks:
        raise InputError(
            f"one request of {max_len:,} tokens does not fit in the KV budget of {hw.id} at "
            f"TP{dep.tp} PP{dep.pp} ({budget // ranks} blocks of {blk} tokens"
            + (" per attention-DP rank)" if ranks > 1 else ")")
        )
    profile = hw.efficiency.engines.get(pid) if hw.efficiency.engines else None
    if eng.frontend == "none":  # an offline harness: no API server on the path
        profile = None
    lat = profile.request_latency_s if profile is not None else 0.0
    per_req, per_tok, per_tok_fast = frontend_costs(profile, tokenizer)
    # the calibrated latency (one unloaded request, a fast tokenizer) already holds the API
    # server's work on that request and its one token in flight at a time
    front = Frontend(max(lat - per_req - per_tok_fast, 0.0), per_req, per_tok)
    if drafting is not None and rnd is not None:
        steps = speculative_steps(steps, model, hw, dep, drafting, rnd, False, pid)
    ideal = IdealSteps(model, hw, dep, max_seqs, max_len, top, pid, drafting, rnd)
    return Replica(
        hw, dep, rules, ideal, steps, front, model, rnd, eng.name, rank_batched_tokens=rank_tokens
    )


def _drafter_memory(model, hw, dep, drafting: DraftConfig, rnd: DraftRound, capacity_bytes):
    """(device memory left for the target, share of its KV budget the target keeps): the
    drafter's weights come off the memory (speculative.drafter_weight_bytes, or the draft
    model's); a draft model's KV grows with the target's, so it takes its share of the budget."""
    from roofline.levers.speculative import drafter_weight_bytes
    from roofline.step.memory import kv_bytes_per_token, weight_bytes_per_gpu

    cap = hw.usable_memory_bytes if capacity_bytes is None else capacity_bytes
    if drafting.draft is not None and drafting.draft_dep is not None:
        kv_t = kv_bytes_per_token(model, dep.kv.bits, dep.tp, dep.pp)
        kv_d = kv_bytes_per_token(drafting.draft, drafting.draft_dep.kv.bits, dep.tp, 1)
        return cap - weight_bytes_per_gpu(drafting.draft, drafting.draft_dep), kv_t / (kv_t + kv_d)
    vocab = drafting.draft_vocab
    return cap - drafter_weight_bytes(model, drafting.drafter, dep, rnd.gamma, vocab), 1.0


@dataclass(frozen=True)
class ServeResult:
    ideal: ServeMetrics
    expected: ServeMetrics
    replicas: int
    router: str = ""  # how requests were dealt to the replicas ("": one replica)


def run_replicas(
    rep: Replica,
    w: Workload,
    replicas: int,
    ideal: bool,
    one: bool = False,
    router: str = "round-robin",
    stop: SloStop | None = None,
) -> list[RunRecord]:
    """Simulate every replica, the requests dealt by `router` (roofline.serving.router), or only
    the first when `one` (round robin). Least-loaded routes an open loop without shared
    prefixes; a closed loop's users and a prefix workload's conversations stay round robin.
    `stop`: each replica's run raises SloMissed once it misses the SLO (sim.slostop)."""
    steps = rep.ideal if ideal else rep.expected

    def simulate(sel: slice | np.ndarray, pfx=None, users=None, arrival=None) -> RunRecord:
        rec = simulate_requests(
            steps,
            w.arrival_s[sel] if arrival is None else arrival,
            w.prompts[sel],
            w.outputs[sel],
            rep.rules,
            closed_loop=users,
            release_until_s=w.duration_s if w.duration_s is not None else math.inf,
            frontend=None if ideal else rep.frontend,
            prefix=pfx,
            priority=None if w.priority is None else w.priority[sel],
            priority_preemption=PRIORITY_PREEMPTION.get(rep.engine),
            kv=rep.kv,
            kv_gpus=rep.gpus,
            stop=stop,
        )
        return rec if w.klass is None else replace(rec, klass=w.klass[sel])

    if sessions_routed(w, replicas, router) and not one:  # turn by turn (sessionroute)
        return session_passes(
            w, replicas, router, lambda o, pfx, t: simulate(o, pfx, None, t), LEAST_LOADED_PASSES
        )
    if routed_least_loaded(w, replicas, router) and not one:
        return least_loaded_passes(w.n, w.arrival_s, replicas, simulate, LEAST_LOADED_PASSES)
    records = []
    for j in range(1 if one else replicas):
        pick: slice | np.ndarray = slice(j, None, replicas)
        pfx = None
        if w.prefix is not None:
            pick = replica_selection(w.prefix, w.n, replicas, j)
            pfx = w.prefix.take(pick)
        users = None
        if w.concurrency is not None:
            users = len(range(j, w.concurrency, replicas))
            if users == 0:
                continue
        records.append(simulate(pick, pfx, users))
    return records


def routed_least_loaded(w: Workload, replicas: int, router: str) -> bool:
    """Whether `router` least-loaded applies to `w` (an open loop without shared prefixes;
    cache-aware has nothing to match there and balances the load the same way)."""
    balance = router in ("least-loaded", "cache-aware")
    return balance and replicas > 1 and w.prefix is None and w.concurrency is None


def sessions_routed(w: Workload, replicas: int, router: str) -> bool:
    """Whether `w`'s prefixes, turns or sessions are routed turn by turn (every router but
    affinity, which keeps the replica_selection path: a session on one replica)."""
    return router != "affinity" and replicas > 1 and w.prefix is not None and w.concurrency is None


def router_used(w: Workload, replicas: int, router: str) -> str:
    """The router the fleet's figures rest on ("": one replica)."""
    if replicas == 1:
        return ""
    if sessions_routed(w, replicas, router) or (router == "affinity" and w.prefix is not None):
        return router
    return "least-loaded" if routed_least_loaded(w, replicas, router) else "round-robin"


def steady_state(
    m: ServeMetrics,
    offered_rate: float | None,
    saturation: Callable[[], tuple[float, float]],
    stable: bool,
    mean_output_tokens: float,
    compute_s_per_request: float,
    *,
    slo: Slo | None = None,
    saturation_rate: float | None = None,
) -> ServeMetrics:
    """The headline figures of `m` (`replicas` replicas) in steady state, independent of how
    long the run was. `saturation()`: the replicas' saturation (requests/s, output tokens/s),
    asked for only when the offered rate is not `stable` (below it).

    Open loop at an offered rate λ: a stable queue completes what is offered (flow
    conservation), so requests/s = λ and output tokens/s = λ × the length distribution's mean
    output; at or past the saturation rate it completes the saturation rate, and with `slo`
    given (stationary arrivals: Poisson or gamma) TTFT, queue and E2E have no steady state
    (metrics.past_saturation: unbounded, no SLO met, the run kept as its transient). A closed
    loop (no offered rate) keeps the window's figures. Goodput = requests/s × SLO attainment.
    Utilisation = requests/s ÷ `saturation_rate` (the replicas' together; None: unknown), the
    busy share of time of a server that completes at the saturation rate (ρ = λ/μ). The power
    share (roofline.serving.cost.power_w) follows from the share of GPU time the requests'
    FLOPs need at peak and the share of time a step runs."""
    if offered_rate is not None and stable:
        req, tok = offered_rate, offered_rate * mean_output_tokens
    elif offered_rate is not None:
        req, tok = saturation()
        saturation_rate = req
        if slo is not None:
            why = (
                f"offered {offered_rate:.3g} req/s is above the saturation rate {req:.3g} req/s:"
                " the queue grows without bound, so TTFT, queue and E2E have no steady state"
            )
            m = past_saturation(m, why, slo)
    else:
        req, tok = m.benchmark_requests_per_s, m.benchmark_output_tokens_per_s
    gpus = max(m.gpus, 1)
    compute = min(req * compute_s_per_request / gpus, 1.0)
    busy = max(m.step_share, compute)
    util = min(req / saturation_rate, 1.0) if saturation_rate else None
    return replace(
        m,
        requests_per_s=req,
        output_tokens_per_s=tok,
        output_tokens_per_s_per_gpu=tok / gpus,
        goodput_requests_per_s=req * m.slo_attainment,
        compute_share=compute,
        power_share=compute + MEMORY_POWER_SHARE * (busy - compute),
        utilisation=util,
    )


class _Saturation(Protocol):  # read-only: frozen dataclasses satisfy it
    @property
    def requests_per_s(self) -> float: ...

    @property
    def output_tokens_per_s(self) -> float: ...


class _Bounds(Protocol):
    @property
    def compute_s_per_request(self) -> float: ...

    @property
    def decode_compute_s_per_request(self) -> float: ...


class Capacity(Protocol):
    """What serve needs of a replica's capacity (roofline.serving.search.Capacity builds it)."""

    @property
    def mean_output_tokens(self) -> float: ...

    @property
    def bounds(self) -> _Bounds: ...

    def of(self, ideal: bool) -> _Saturation: ...

    def stable(self, rate: float, ideal: bool) -> bool: ...

    def known(self, ideal: bool) -> _Saturation | None: ...


def steady_capacity(w: Workload, capacity: Capacity | None) -> Capacity | None:
    """The Capacity serve's steady figures rest on: None (the run's own window figures) for a
    mix sharing KV under one that does not credit it (search.Capacity; mixcapacity's does)."""
    if w.mix is not None and w.prefix is not None and not getattr(capacity, "credits_sharing", 0):
        return None
    return capacity


def _steady(
    m: ServeMetrics,
    cap: Capacity,
    offered: float | None,
    ideal: bool,
    n: int,
    slo: Slo | None,
    verify_factor: float = 1.0,
) -> ServeMetrics:
    """steady_state for `n` replicas of one Capacity; `slo` None: not stationary arrivals;
    `verify_factor` the decode work per output token (DraftRound.verify_factor; 1: plain)."""

    def saturation() -> tuple[float, float]:
        sat = cap.of(ideal)
        return sat.requests_per_s * n, sat.output_tokens_per_s * n

    stable = offered is not None and cap.stable(offered / n, ideal)
    known = cap.known(ideal)  # the ideal's is probed only when something needs it
    b = cap.bounds
    work = b.compute_s_per_request + (verify_factor - 1.0) * b.decode_compute_s_per_request
    return steady_state(
        m, offered, saturation, stable, cap.mean_output_tokens, work,
        slo=slo, saturation_rate=known.requests_per_s * n if known is not None else None,
    )  # fmt: skip


def serve(
    rep: Replica,
    w: Workload,
    slo: Slo,
    replicas: int = 1,
    one_replica: bool = False,
    *,
    capacity: Capacity | None,
    router: str = DEFAULT_ROUTER,
    runs: dict | None = None,
    expected_only: bool = False,
) -> ServeResult:
    """Serve the workload on `replicas` copies of the replica, requests dealt by `router`
    (roofline.serving.router); ideal and expected step times, headline figures in steady state
    against the replica's `capacity` (roofline.serving.search.replica_capacity), each replica's
    own figures beside them (ServeMetrics.per_replica: stranding shows as one replica's tail).
    `capacity` None: the benchmark window's figures as a measuring harness reports them
    (benchmark_serving: completions / first send to last finish), for comparison with
    measurements only. This is the one evaluation of a fleet: serve, size, check and the day
    planner all call it. `runs`: the simulations already run on this replica (search.Capacity.runs),
    read rather than re-run when the same requests meet the same fleet under other SLOs.
    `expected_only`: the expected half alone (its ideal field repeats it), without each
    replica's own figures, for a caller that reads only the expected verdict (size's fleet at
    the band edges, for all but its last run)."""
    if not 1 <= replicas <= 100_000:
        raise InputError(f"replicas must be from 1 to 100000, got {replicas}")
    check_router(router)
    capacity = steady_capacity(w, capacity)
    out = [
        evaluate(
            rep, w, slo, replicas, one_replica, capacity, router, ideal, runs, not expected_only
        )
        for ideal in ((False,) if expected_only else (True, False))
    ]
    return ServeResult(out[0], out[-1], replicas, router_used(w, replicas, router))


def evaluate(
    rep,
    w,
    slo,
    replicas,
    one_replica,
    capacity,
    router,
    ideal: bool,
    runs: dict | None = None,
    shares: bool = True,
) -> ServeMetrics:
    """serve's figures with ideal or expected step times (one half of serve); `runs`: serve's;
    `shares`: each replica's own figures beside (ServeMetrics.per_replica)."""
    key = ("serve", id(w), replicas, ideal, one_replica, router)
    records = None if runs is None else runs.get(key)
    if records is None:
        records = run_replicas(rep, w, replicas, ideal, one_replica, router)
        if runs is not None:
            runs[key] = records
    n = len(records) if one_replica else replicas
    m = metrics(records, slo, rep.gpus * n)
    if capacity is not None:
        factor = 1.0 if rep.drafting is None else rep.drafting.verify_factor
        offered = w.offered_to(n, replicas)
        m = _steady(m, capacity, offered, ideal, n, slo if w.stationary else None, factor)
    if shares and len(records) > 1 and not m.unbounded:
        m = replace(m, per_replica=tuple(replica_share(r, slo, rep.gpus) for r in records))
    if w.mix is not None:  # a workload file's classes, each against its own SLOs
        from roofline.serving.classes import with_classes

        m = with_classes(m, records, w, slo)
    return m

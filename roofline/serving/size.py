"""Sizing: which accelerators, layouts and replica counts serve a request rate within the SLOs,
and what they cost.

For each accelerator and each replica layout (roofline.serving.candidates: TP, PP, EP and
attention-DP from the shared enumerator, within a node or across up to four, pruned by plan's
static estimate to the few that could win; DP = replicas), the highest request rate one replica
serves within the SLOs is found by searching a geometric grid of rates (step `GRID`): doubling to
bracket, then bisection on the grid indices, each point a simulation of the same requests (one
seed, so rates only stretch or compress the arrival times). Replicas = ceil(rate / that rate); the
fleet of that many replicas is then evaluated as `serve --dp N` evaluates it (serve.serve: the
whole request stream dealt by the router, least-loaded by default, roofline.serving.router), a
replica added (at most FLEET_TRIES) while its tail misses the SLOs, so every page reports the same
fleet's figures. Cost per hour, $ per million output tokens and joules per output token follow from
roofline.serving.cost. The frontier is the Pareto set of output tokens/s per GPU against output
tokens/s per user (1 / mean TPOT), the plot aiconfigurator users read; the cheapest (or the fewest
GPUs) is marked best."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError, RooflineError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import expert_slots
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.serving import confidence as conf
from roofline.serving import search as se
from roofline.serving.candidates import Candidate, candidates
from roofline.serving.confidence import Edges, edge_binding, level_of, slowed
from roofline.serving.cost import (
    Price,
    cost_per_hour,
    cost_per_million_output_tokens,
    joules_per_output_token,
)
from roofline.serving.loadbands import fleet_load_bands
from roofline.serving.metrics import ServeMetrics, Slo
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import capacity_at_edges, max_rate_within_slo, replica_capacity
from roofline.serving.serve import Replica, ServeResult, make_replica, serve
from roofline.serving.sim.drafting import DraftConfig
from roofline.serving.sizerank import ranked
from roofline.serving.sizerounds import search_rounds
from roofline.serving.whynone import describe, edge_miss, light_load_miss, no_layout, why_at
from roofline.serving.workload import Workload
from roofline.step.ops import Deployment

# layouts searched together after the first, before pruning against the best found: a constant,
# so the answer never depends on the machine's core count (the pool only sets the speed)
SEARCH_ROUND = 2


MINIMIZE = ("cost", "gpus")
FLEET_TRIES = 2  # replicas added when the fleet misses the SLOs its replica count was sized for
# an arrival log is its own traffic (bursts and lulls as they came): its fleet, first sized on a
# replica's capacity at the log's mean rate, gets a replica more while the replayed log's
# percentiles miss the SLOs, N, N + 1, ... up to N + REPLAY_TRIES; met at N, a replica less
# while the replay still meets them (N - 1, N - 2, ...): the fewest replicas the replay needs
REPLAY_TRIES = 8
HEADROOM = 0.10  # share of a replica's capacity left unused by default


@dataclass(frozen=True)
class Sized:
    hardware: str
    tp: int
    pp: int
    ep: int
    replicas: int  # = dp
    gpus: int
    max_rate_per_replica: float  # requests/s one replica serves within the SLOs (0: none)
    meets_slo: bool
    expected: ServeMetrics | None
    ideal: ServeMetrics | None
    cost_per_hour: float | None
    cost_per_million_output_tokens: float | None
    joules_per_output_token: float | None
    frontier: bool = False
    best: bool = False
    note: str = ""
    prefill_replicas: int = 0  # > 0: a disaggregated deployment of `replicas` (P + D) units
    decode_replicas: int = 0
    basis: str = ""  # what a replica was sized on: "SLO capacity" or "saturation"
    binding: str = ""  # what binds a replica's saturation (search.BINDINGS)
    saturation_rate_per_replica: float = 0.0
    speculation: dict | None = None  # the drafter's round a speculative replica runs
    attention_dp: int = 1
    layout: str = ""  # layout.Layout.describe() of one replica
    nodes: int = 1  # nodes one replica spans
    max_seqs: int = 0  # the scheduler limits sized on, per attention-DP rank
    max_batched_tokens: int = 0
    redundant_experts: int = 0  # expert slots beyond the routed experts (EPLB)
    # what sets the replica count: "TTFT SLO" or "TPOT SLO" (the one nearest its limit at the
    # sized load) when the SLO capacity is below saturation, else "saturation: <binding>"
    constraint: str = ""
    # disaggregated: the prefill pool's replica (the fields above are the decode pool's):
    # tp, pp, ep, attention_dp, layout, nodes, redundant_experts, max_batched_tokens, binding
    prefill_pool: dict | None = None
    router: str = ""  # how the fleet's requests were dealt (roofline.serving.router)
    # sized to a confidence (serving.confidence): the level, and the replicas and GPUs the
    # expected figures alone would need, beside this row's (at the level's edges)
    confidence: str = "expected"
    replicas_expected: int = 0
    gpus_expected: int = 0
    edges: Edges | None = None
    rate_per_replica_expected: float = 0.0  # a replica's capacity at the expected figures
    # False: a layout left out of the search (pruned against its chip's best); `bound_gpus` the
    # fewest GPUs it could need, at its rate bound
    searched: bool = True
    bound_gpus: int = 0
    load_bands: dict | None = None  # the fleet's bands at the rate, as serve's (loadbands.py)


@dataclass(frozen=True)
class ChipAnswer:
    """One accelerator asked for: its cheapest deployment that meets the SLOs (the one ranked
    first among its own), or None and why none (the bound that ruled each layout out)."""

    hardware: str
    best: Sized | None
    reason: str = ""


def chip_answers(rows: list[Sized], accelerators: list[str]) -> list[ChipAnswer]:
    """Every accelerator asked for, in the order asked: its first row that meets the SLOs (rows
    are ranked best first), else the reasons of its rows that did not."""
    out = []
    for hw in accelerators:
        mine = [r for r in rows if r.hardware == hw]
        ok = next((r for r in mine if r.meets_slo), None)
        if ok is not None:
            out.append(ChipAnswer(hw, ok))
            continue
        why = []
        for r in mine:
            if r.gpus:
                why.append(f"{r.layout}: {r.replicas} replicas still miss the SLOs")
            elif r.searched:
                why.append(f"{r.layout}: {r.note}" if r.layout else r.note)
        out.append(ChipAnswer(hw, None, "; ".join(dict.fromkeys(why)) or "no layout searched"))
    return out


def layouts(
    model: ModelArch,
    hw: Accelerator,
    base: Deployment,
    eng: Engine,
    w: Workload | None = None,
    slo: Slo | None = None,
    headroom: float = HEADROOM,
    scale_out: Tier | None = None,
    drafted: bool = False,
) -> list[Candidate]:
    """The replica layouts sizing simulates on `hw` (roofline.serving.candidates: every layout
    of the shared enumerator, scored by plan's static estimate, the best few kept). `drafted`:
    a drafter will run, whose decode the static estimate does not know, so no layout is
    dropped for missing the TPOT SLO at batch 1 without it."""
    prompt = int(np.mean(w.prompts)) if w is not None else 1000
    output = int(np.mean(w.outputs)) if w is not None else 1000
    rate = float(w.rate) if w is not None and w.rate else 1.0
    tpot = slo.tpot_s if slo is not None and not drafted else None
    kept, _ = candidates(model, hw, base, eng, prompt, output, rate, tpot, headroom, scale_out)
    return kept


def size(
    model: ModelArch,
    accelerators: list[Accelerator],
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    prices: dict[str, Price],
    minimize: str = "cost",
    seed: int = 0,
    max_replicas: int = 4096,
    headroom: float = HEADROOM,
    drafting: DraftConfig | None = None,
    scale_out: Tier | None = None,
    router: str = DEFAULT_ROUTER,
    confidence: dict[str, Edges] | None = None,
) -> list[Sized]:
    """Every accelerator × layout with its replica count for rate w.rate; sorted best first.
    `confidence`: per accelerator id, the band edges to size to (serving.confidence): each
    layout is sized on the expected figures and, where the edges are not neutral, again at
    them, through the same steps (`fleet`); the row is the fleet at the edges, with the
    expected fleet's replicas and GPUs beside it.
    A replica is sized on its capacity under the SLOs (search.max_rate_within_slo), or on its
    saturation rate without SLOs, × (1 − headroom). Where the engine's sequence cap binds the
    saturation, twice and four times the cap are tried too (the KV budget permitting) and the
    highest capacity kept: the scheduler limit a launch line then states. `spec`: every layout
    also with the drafter (serving.sim.drafting), so the ranking picks speculation where it pays."""
    if minimize not in MINIMIZE:
        raise InputError(f"--minimize must be cost or gpus, got {minimize}")
    if w.rate is None:
        raise InputError("sizing needs a request rate (--rate)")
    if not (math.isfinite(headroom) and 0 <= headroom < 1):
        raise InputError(f"--headroom must be from 0 to 1 (a share), got {headroom}")
    rate = float(w.rate)
    max_len = int(w.prompts.max() + w.outputs.max())
    has_slo = slo.ttft_s is not None or slo.tpot_s is not None
    basis = "SLO capacity" if has_slo else "saturation"
    out: list[Sized] = []
    tasks: list[tuple[Accelerator, Deployment, DraftConfig | None]] = []
    limits: list[tuple[float, float]] = []  # each layout's rate bound (one replica), batch-1 TTFT
    ctx = float(w.prompts.mean() + w.outputs.mean() / 2)
    for hw in accelerators:
        deps = layouts(model, hw, base, eng, w, slo, headroom, scale_out, drafting is not None)
        if not deps:
            why = no_layout(model, hw, base, eng, w, slo, scale_out, HEADROOM)
            out.append(replace(_none(hw, base, why), layout=""))  # the chip's, no layout's
        for c in deps:  # the drafter adds no prefill capacity: its variant keeps the bound
            for sp in (None, drafting) if drafting else (None,):
                tasks.append((hw, c.dep, sp))
                limits.append((c.rate_bound, c.latency_ttft_s))

    def capacity(rep: Replica, cap=None):
        cap = replica_capacity(rep, w) if cap is None else cap
        sat = cap.expected.requests_per_s
        r_cap = max_rate_within_slo(rep, w, slo, sat, False, seed, cap.runs) if has_slo else sat
        return rep, cap, sat, r_cap

    def fleet(rep: Replica, cap, runs: list[tuple[float, Workload, Slo]], least: int = 1,
              ideal: bool = True):  # fmt: skip
        """Replicas = ceil(rate / (capacity × (1 − headroom))) for each (capacity, workload,
        SLO) run, the most of them (at least `least`); the fleet evaluated under each as
        serve --dp n evaluates it, a replica added while any run's tail misses its SLO. The
        last run's result, meets_slo true only when every run's is; its ideal half only when
        `ideal` (else the expected repeated: a fleet whose ideal figures no row reads)."""
        n = max(least, *(math.ceil(float(wl.rate or 0.0) / (r * (1.0 - headroom)) * (1 - 1e-12))
                         for r, wl, _ in runs))  # fmt: skip
        res: list[ServeResult] = []
        n0, replay = n, any(wl.replay for _, wl, _ in runs)
        tries = REPLAY_TRIES if replay else FLEET_TRIES
        for _ in range(tries + 1):  # the fleet's tail can miss where one replica's did not
            if n > max_replicas:
                return n, None
            # the fleet evaluated as serve --dp n evaluates it: the whole stream, by the router
            res = [serve(rep, wl, sl, n, capacity=cap, router=router, runs=cap.runs,
                         expected_only=not ideal or replay or i < len(runs) - 1)  # last's ideal
                   for i, (_, wl, sl) in enumerate(runs)]  # fmt: skip
            if all(r.expected.meets_slo for r in res) or n + 1 > max_replicas:
                break
            n += 1
        ok = all(r.expected.meets_slo for r in res)
        while replay and ok and n == n0 and n > least:  # a log met at once: the fewest that do
            fewer = [serve(rep, wl, sl, n - 1, capacity=cap, router=router, runs=cap.runs,
                           expected_only=True) for _, wl, sl in runs]  # fmt: skip
            if not all(r.expected.meets_slo for r in fewer):
                break
            n, n0, res = n - 1, n - 1, fewer
        if ideal and replay:  # the last in full at the count found (its expected in cap.runs)
            res[-1] = serve(rep, *runs[-1][1:], n, capacity=cap, router=router, runs=cap.runs)
        return n, replace(res[-1], expected=replace(res[-1].expected, meets_slo=ok))

    def edged(hw: Accelerator) -> Edges | None:
        """The band edges `hw` is sized to, None at the expected figures (or neutral edges)."""
        at = (confidence or {}).get(hw.id)
        return at if at is not None and not at.neutral else None

    def need(r: float) -> int:  # replicas that serve `rate` at `r` each, headroom kept
        return math.ceil(rate / max(r * (1.0 - headroom), 1e-12) * (1 - 1e-12))

    def binding(res: ServeResult, lim: Slo, r: float, sat: float, sat_binding: str) -> str:
        """What sets a fleet's replica count: "TTFT SLO" or "TPOT SLO", the one nearest its
        limit in `lim` at the sized load, when a replica's capacity `r` is below its
        saturation rate `sat`, else "saturation: <what binds it>"."""
        if not has_slo or r >= sat * 0.97:
            return f"saturation: {sat_binding}"
        e = res.expected
        near = {
            "TTFT SLO": e.slo_ttft_s / lim.ttft_s if lim.ttft_s else 0.0,
            "TPOT SLO": e.slo_tpot_s / lim.tpot_s if lim.tpot_s else 0.0,
        }
        return max(near, key=near.__getitem__)

    def one(item: tuple[tuple[Accelerator, Deployment, DraftConfig | None], tuple],
            lower: list[int]) -> Sized:  # fmt: skip
        """The layout's row; `lower` gets the fewest GPUs it can need, at each point where it
        is left unsearched once that is no better than `limit` (recheck: the same points)."""
        (hw, dep, sp), limit = item  # limit: the key of its chip's best found so far
        price, at = prices.get(hw.id), edged(hw)
        low = at.capacity if at is not None else 1.0  # a replica serves no more than × low

        def cut(gpus: int) -> bool:
            lower.append(gpus)
            return key(gpus, price) >= limit

        def over(r: float) -> bool:  # a replica serves under r at the edges (the GPUs so far)
            return cut(max(lower[-1], min(need(r), max_replicas + 1) * rep.gpus))

        try:
            rep = make_replica(model, hw, dep, eng, max_len, drafting=sp, draft_context=ctx)
        except RooflineError as exc:
            return _none(hw, dep, str(exc))
        drafted = None
        if rep.drafting is not None and sp is not None:
            r = rep.drafting
            drafted = {"drafter": sp.drafter, "gamma": r.gamma, "tree_tokens": r.tree_tokens}
        cap0 = replica_capacity(rep, w)
        # its saturation bounds the rate a replica serves within the SLOs: a layout that even
        # there needs no fewer GPUs (no less cost) than its chip's best goes unsearched
        n_sat = math.ceil(rate / max(cap0.expected.requests_per_s * low * (1 - headroom), 1e-12))
        gpus_sat = min(n_sat, max_replicas + 1) * rep.gpus
        if cut(gpus_sat):
            return _unsearched(hw, dep, gpus_sat, minimize, at)
        # at the edges, before the light-load check (a layout pruned here needs no such run): a
        # miss (SLOs ÷ edges) at the rate needing its chip's best's GPUs bounds it
        if at is not None and min(limit) < math.inf and cap0.expected.binding != "max-seqs":
            ks = (k for k in range(2, max_replicas + 2) if key(k * rep.gpus, price) >= limit)
            m, t = next(ks, 0), at.slo(slo)
            ok_at = se.verdicts(rep, w, t, False, seed, cap0.runs)
            tw = se.cycled(w, se.slo_requests(t, w.n))
            x = rate / (max(m - 1, 1) * (1.0 - headroom) * low) * (1 - 1e-9)  # need(low × x) >= m
            if m and not ok_at(tw)(x) and cut(m * rep.gpus):
                return _unsearched(hw, dep, m * rep.gpus, minimize, at)
        if why := edge_miss(at, rep, w, slo, cap0.expected.requests_per_s, seed, cap0.runs):
            return replace(_none(hw, dep, why), confidence=level_of(confidence, hw.id))
        best = capacity(rep, cap0)
        per_rank = rep.rules.max_seqs // dep.attention_dp
        for factor in (2, 4):  # the engine's sequence cap, raised where it binds
            if best[1].expected.binding != "max-seqs" or per_rank * factor > 8192:
                break
            try:
                more = capacity(make_replica(model, hw, dep, eng, max_len, per_rank * factor,
                                             drafting=sp, draft_context=ctx))  # fmt: skip
            except RooflineError:
                break
            if more[3] <= best[3] * 1.02:
                break
            best = more
        rep, cap, sat, r_cap = best
        if r_cap <= 0:
            return _none(hw, dep, light_load_miss(rep, w, slo, sat, seed), r_cap)
        # at the band edges: no fewer replicas than expected, nor than the queue at rate ÷ low
        if at is not None and cut(min(need(r_cap * low), max_replicas + 1) * rep.gpus):
            return _unsearched(hw, dep, lower[-1], minimize, at)
        n, res = fleet(rep, cap, [(r_cap, w, slo)], ideal=at is None)
        if res is None:
            return _none(hw, dep, f"needs more than {max_replicas} replicas", r_cap)
        n_exp, r_exp, constraint = n, r_cap, binding(res, slo, r_cap, sat, cap.expected.binding)
        if at is not None:  # at the band edges, through the same steps (confidence.py):
            if cut(max(lower[-1], n * rep.gpus)):
                return _unsearched(hw, dep, lower[-1], minimize, at)
            r_own = capacity_at_edges(rep, w, slo, at, r_cap, sat, False, seed, cap.runs, rate,
                                      headroom, over)  # fmt: skip
            if r_own == 0:  # misses the SLOs ÷ the light-load edges at light load
                why = why_at(at, rep, w, slo, sat, seed)
                return replace(_none(hw, dep, why), confidence=at.level)
            if r_own is None or over(r_own):  # a rate it missed at, or its capacity
                return _unsearched(hw, dep, lower[-1], minimize, at)
            sw, lim = slowed(w, at, seed), at.slo(slo)  # queue at rate ÷ low, SLOs ÷ light edges
            n, res = fleet(rep, cap, [(r_own / low, sw, lim), (r_cap, w, slo)], n_exp)
            if res is None:
                why = f"at {at.level} needs more than {max_replicas} replicas"
                return replace(_none(hw, dep, why, r_own), confidence=at.level)
            q = serve(rep, sw, lim, n, capacity=cap, router=router, runs=cap.runs,
                      expected_only=True)  # fmt: skip
            own = binding(q, lim, r_own / low, sat, cap.expected.binding)
            constraint = edge_binding(at, (n_exp, need(r_cap * low), need(r_own)), own, constraint)
            r_cap = r_own
        ideal_m, exp_m = res.ideal, res.expected
        gpus = rep.gpus * n
        usd = cost_per_hour(price, gpus)
        tok_s = exp_m.output_tokens_per_s
        lay, ranks = dep.links, dep.attention_dp
        return Sized(
            hw.id,
            dep.tp,
            dep.pp,
            dep.ep,
            n,
            gpus,
            r_cap,
            exp_m.meets_slo,
            exp_m,
            ideal_m,
            usd,
            cost_per_million_output_tokens(usd, tok_s),
            joules_per_output_token(price, gpus, exp_m.power_share, tok_s),
            basis=basis,
            binding=cap.expected.binding,
            saturation_rate_per_replica=sat,
            speculation=drafted,
            attention_dp=dep.attention_dp,
            layout=describe(dep),
            nodes=max(1, -(-rep.gpus // lay.gpus_per_node)) if lay else 1,
            max_seqs=rep.rules.max_seqs // ranks,
            max_batched_tokens=rep.rank_batched_tokens or 0,
            redundant_experts=redundant_experts(model, dep),
            constraint=constraint,
            router=res.router,
            confidence=level_of(confidence, hw.id),
            replicas_expected=n_exp,
            gpus_expected=rep.gpus * n_exp,
            edges=at,
            rate_per_replica_expected=r_exp,
            load_bands=fleet_load_bands(rep, w, res, slo, cap, hw, eng, router, seed),
        )

    def key(gpus: int, price: Price | None) -> tuple[float, float]:
        cost = cost_per_hour(price, gpus)
        cost = math.inf if cost is None else cost
        return (cost, gpus) if minimize == "cost" else (gpus, cost)

    def run_one(task: tuple[Accelerator, Deployment, DraftConfig | None], limit: tuple):
        """one(task, limit) and the fewest GPUs its layout can need at each point one prunes."""
        got: list[int] = []
        row = one((task, limit), got)
        return got, row

    # no replica serves more than its layout's rate bound (candidates.prefill_bound), so the
    # bound gives the fewest GPUs (and least cost) a layout can need: layouts whose least is no
    # better than a deployment already found are not searched; the most promising go first
    bounds = []
    for task, (lim, t_pf) in zip(tasks, limits, strict=True):
        hw, dep, _ = task
        at, g = edged(hw), dep.gpus_per_replica
        gpus = need(lim * (at.capacity if at is not None else 1.0)) * g
        first = key(need(conf.search_order(at, slo, lim, t_pf)) * g, prices.get(hw.id))  # the order
        bounds.append((key(gpus, prices.get(hw.id)), g, gpus, task, first))
    bounds.sort(key=lambda b: (b[4], b[0], b[1]))
    bounds = conf.chips_in_turn(bounds, lambda b: b[3][0].id, any(edged(t[0]) for t in tasks))
    what = "GPUs" if minimize == "gpus" else "cost"

    def recheck(i: int, lower: Sequence[int], row: Sized, limit: tuple) -> Sized:
        hw, dep, _ = bounds[i][3]
        for gpus in lower:  # the first point at which one() would have pruned it on `limit`
            if key(gpus, prices.get(hw.id)) >= limit:
                return _unsearched(hw, dep, gpus, minimize, edged(hw))
        return row

    def at_bound(i: int) -> Sized:
        _, _, gpus, (hw, dep, _), _ = bounds[i]
        at = edged(hw)
        where = f"its rate bound × {at.level}'s low edge" if at is not None else "its rate bound"
        note = (
            f"not searched: even at {where} it needs {gpus:,} GPUs, no better"
            f" {what} than {_short(hw.id)}'s best"
        )
        return _none(hw, dep, note, searched=False, bound_gpus=gpus)

    def row_key(row: Sized) -> tuple[str, tuple[float, float]] | None:
        return (row.hardware, key(row.gpus, prices.get(row.hardware))) if row.meets_slo else None

    found = search_rounds(
        [b[3] for b in bounds], [b[0] for b in bounds], [b[3][0].id for b in bounds],
        run_one, recheck, at_bound, row_key, SEARCH_ROUND,
    )  # fmt: skip
    out += found
    return ranked(out, minimize)


def redundant_experts(model: ModelArch, dep: Deployment) -> int:
    """Expert slots beyond the routed experts (layout.expert_slots)."""
    if not model.is_moe or dep.ep <= 1:
        return 0
    return expert_slots(model.n_routed_experts, dep.ep) - model.n_routed_experts


def _none(
    hw: Accelerator,
    dep: Deployment,
    note: str,
    r1: float = 0.0,
    searched: bool = True,
    bound_gpus: int = 0,
) -> Sized:
    return Sized(
        hw.id, dep.tp, dep.pp, dep.ep, 0, 0, r1, False, None, None, None, None, None, note=note,
        attention_dp=dep.attention_dp, layout=describe(dep), searched=searched,
        bound_gpus=bound_gpus,
    )  # fmt: skip


def _unsearched(
    hw: Accelerator, dep: Deployment, gpus: int, minimize: str, at: Edges | None = None
) -> Sized:
    """The row of a layout left unsearched because even at its saturation rate (`at`: or at a
    band edge's bound, size's one()) it needs `gpus` GPUs, no better than its chip's best."""
    what = "GPUs" if minimize == "gpus" else "cost"
    need = (
        f"even at its saturation rate it needs {gpus:,} GPUs"
        if at is None
        else f"at {at.level} it needs at least {gpus:,} GPUs (its bounds so far)"
    )
    return _none(hw, dep, f"not searched: {need}, no better {what} than {_short(hw.id)}'s best",
                 searched=False, bound_gpus=gpus)  # fmt: skip


def _short(hw: str) -> str:
    vendor, _, rest = hw.partition("-")
    return rest if vendor in ("nvidia", "amd", "google", "intel", "apple") and rest else hw

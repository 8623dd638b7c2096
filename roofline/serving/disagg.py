"""Prefill/decode disaggregation against colocated serving: in closed form (steady state), and
under traffic as two pools of replicas with a queue in front of each and the KV transfer between.

Closed form (`disaggregate`):

Colocated (one pool, continuous batching): B sequences decode together and every request's
prefill stalls the batch once (P prompts per prefill step, t_p for the step), so a cycle of B
requests takes (B / P)·t_p + (O − 1)·t_d(B) and the effective time per output token is that over
(O − 1).
Under attention data parallelism the colocated prefill is paid rank by rank (each rank takes its
prompts at its own steps while the others wait; roofline.serving.attention_dp), expected only.
Disaggregated (DistServe, Zhong et al. OSDI'24; Splitwise, Patel et al. ISCA'24): prefill replicas
run P prompts per step (`prefill_batch`; 1 = one at a time) on compute-rich hardware, ship each
prompt's KV cache over a link (`kv_transfer_s`: the busiest port's KV bytes / (bandwidth × η) +
start latency + fixed cost) to decode replicas that only decode. TTFT = t_p + t_x,
TPOT = t_d(B). The pools are sized so prefill keeps up with decode: prefill replicas per decode
replica = B·t_p / (P·(O − 1)·t_d(B)); output tokens/s per GPU of the pair is then TensorRT-LLM's
rate-matched figure (tech blog 5, "Disaggregated Serving in TensorRT-LLM": total output tokens/s
/ (context GPUs × generation request rate / context request rate + generation GPUs)).

The KV transfer (link model, bytes per GPU when the pools' layouts differ) is
roofline.serving.kvtransfer.

Under traffic (`serve_disaggregated`): requests queue for the prefill pool (dealt round robin, each
replica running prefill-only steps with the engine's rules), their KV cache crosses the link
(`kv_transfer_s`), then they queue for the decode pool (dealt round robin in the order they
become ready) and decode there with the continuous-batching scheduler; the first token counts
as delivered once its KV reaches the decode pool (TTFT = queue + prefill + transfer). Link
contention between transfers is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine, engine
from roofline.serving.attention_dp import colocated_prefill_s
from roofline.serving.bounds import rate_bounds
from roofline.serving.kvtransfer import KvLink, kv_transfer_s
from roofline.serving.metrics import ServeMetrics, Slo, metrics
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.search import (
    Saturation,
    highest_ok,
    max_rate_within_slo,
    probe_lengths,
    replica_capacity,
    saturation,
    slo_requests,
)
from roofline.serving.serve import Replica, make_replica, run_replicas, serve, steady_state
from roofline.serving.sim.record import RunRecord
from roofline.serving.sim.scheduler import simulate_requests
from roofline.serving.workload import Workload, with_rate
from roofline.step.memory import kv_bytes_per_token
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill


@dataclass(frozen=True)
class Serving:
    """One way of serving: latencies and output tokens per second per GPU."""

    ttft_s: float
    tpot_s: float
    output_tokens_per_s_per_gpu: float
    gpus: float  # GPUs per unit of capacity (a decode replica and its share of prefill)


@dataclass(frozen=True)
class Disaggregation:
    colocated: Serving
    disaggregated: Serving
    prefill_s: float  # one prefill step of the prefill pool (prefill_batch prompts)
    decode_step_s: float  # one step of the decode batch
    kv_transfer_s: float
    kv_bytes_per_request: float
    prefill_replicas_per_decode_replica: float
    prefill_batch: int = 1  # prompts per prefill step
    prefill_tokens_per_s_per_gpu: float = 0.0  # the prefill pool alone: input tokens/s per GPU
    decode_tokens_per_s_per_gpu: float = 0.0  # the decode pool alone: output tokens/s per GPU


def disaggregate(
    model: ModelArch,
    prefill_hw: Accelerator,
    decode_hw: Accelerator,
    prefill_dep: Deployment,
    decode_dep: Deployment,
    link: Tier | KvLink,
    batch: int,
    prompt: int,
    output: int,
    ideal: bool = False,
    prefill_batch: int = 1,
) -> Disaggregation:
    """Colocated serving on `decode_hw` against prefill on `prefill_hw` plus decode on
    `decode_hw`, for requests of `prompt` tokens in and `output` out, `batch` decoding at once,
    the prefill pool running `prefill_batch` prompts per step."""
    if prefill_batch < 1:
        raise InputError(f"the prefill batch must be at least 1 prompt, got {prefill_batch}")
    kv_link = link if isinstance(link, KvLink) else KvLink(link)

    def t(r) -> float:
        return float(r.t_ideal_s if ideal else r.t_expected_s)

    steps = max(output - 1, 1)
    s = max(prompt, 1)
    t_d = t(decode(model, decode_hw, decode_dep, batch, prompt + 1, steps))
    # colocated: prompts prefill on the decode hardware, prefill_batch at a time, and stall the
    # decode batch (rank by rank under attention-DP)
    p_colo = prefill(model, decode_hw, decode_dep, prefill_batch, s)
    t_p_colo = t(p_colo) if ideal else colocated_prefill_s(p_colo, decode_dep)
    cycle = batch / prefill_batch * t_p_colo + steps * t_d
    colo = Serving(
        ttft_s=t_p_colo,
        tpot_s=cycle / steps,
        output_tokens_per_s_per_gpu=batch * output / cycle / decode_dep.gpus_per_replica,
        gpus=decode_dep.gpus_per_replica,
    )
    # disaggregated: the prefill group's GPUs send each prompt's KV cache, each decode GPU
    # receiving its shard (kvtransfer)
    t_p = t(prefill(model, prefill_hw, prefill_dep, prefill_batch, s))
    kv_total = kv_bytes_per_token(model, decode_dep.kv.bits) * prompt
    t_x = float(
        kv_transfer_s(
            model, prefill_dep, decode_dep.kv.bits, kv_link, np.array([prompt]), 0.0, decode_dep
        )[0]
    )
    ratio = batch * t_p / (prefill_batch * steps * t_d)
    gpus = decode_dep.gpus_per_replica + ratio * prefill_dep.gpus_per_replica
    dis = Serving(
        ttft_s=t_p + t_x,
        tpot_s=t_d,
        output_tokens_per_s_per_gpu=batch * output / (steps * t_d) / gpus,
        gpus=gpus,
    )
    return Disaggregation(
        colo,
        dis,
        t_p,
        t_d,
        t_x,
        kv_total,
        ratio,
        prefill_batch,
        prefill_batch * prompt / t_p / prefill_dep.gpus_per_replica,
        batch / t_d / decode_dep.gpus_per_replica,
    )


# ---- disaggregated pools under traffic -------------------------------------------------------
@dataclass(frozen=True)
class Pools:
    prefill: Replica
    decode: Replica
    prefill_replicas: int
    decode_replicas: int
    link: KvLink

    @property
    def gpus(self) -> int:
        return self.prefill.gpus * self.prefill_replicas + self.decode.gpus * self.decode_replicas


def _pooled(
    model: ModelArch, pools: Pools, w: Workload, slo: Slo, ideal: bool
) -> tuple[ServeMetrics, float]:
    """Prefill pool (prefill-only steps, queue in front), KV transfer, decode pool (queue in
    front, requests arrive with their KV and first token); returns the metrics and the mean
    exposed transfer time."""
    n = w.n
    # prefill pool: each request ends with its first token
    pre = Workload(w.arrival_s, w.prompts, np.ones(n, np.int64), w.rate, None, None, {})
    first, admitted, at_engine, sent, wait = (np.zeros(n) for _ in range(5))
    records = run_replicas(pools.prefill, pre, pools.prefill_replicas, ideal)
    for j, tr in enumerate(records):  # the prefill pool's front end: the request's whole path
        first[j :: pools.prefill_replicas] = tr.first_token_s
        admitted[j :: pools.prefill_replicas] = tr.admitted_s
        at_engine[j :: pools.prefill_replicas] = tr.arrival_s
        sent[j :: pools.prefill_replicas] = tr.client_sent_s
        if tr.first_wait_s is not None:  # the first token's wait in the API server
            wait[j :: pools.prefill_replicas] = tr.first_wait_s
    pre_dep, dec_dep = pools.prefill.dep, pools.decode.dep
    t_x = kv_transfer_s(
        model, pre_dep, dec_dep.kv.bits, pools.link, w.prompts, first - admitted, dec_dep
    )
    ready = first + t_x
    order = np.argsort(ready, kind="stable")
    steps = pools.decode.ideal if ideal else pools.decode.expected
    finish = np.empty(n)
    dec_traces = []
    for j in range(pools.decode_replicas):
        idx = order[j :: pools.decode_replicas]
        tr = simulate_requests(
            steps, ready[idx], w.prompts[idx], w.outputs[idx], pools.decode.rules, prefilled=True
        )
        finish[idx] = tr.finish_s
        dec_traces.append(tr)
    all_tr = records + dec_traces
    reps = len(all_tr)
    merged = RunRecord(
        at_engine,
        admitted,
        ready,
        finish,
        w.prompts,
        w.outputs,
        np.concatenate([t.itl_s for t in dec_traces]),
        np.concatenate([t.itl_weight for t in dec_traces]),
        sum(t.preemptions for t in all_tr),
        sum(t.recomputed_tokens for t in all_tr),
        sum(t.swapped_bytes for t in all_tr),
        sum(t.busy_s for t in all_tr) / reps,
        sum(t.prefill_s for t in all_tr),
        sum(t.decode_s for t in all_tr),
        sum(t.preempt_s for t in all_tr),
        sum(t.active_integral for t in all_tr) / reps,
        sum(t.decoding_integral for t in dec_traces) / len(dec_traces),
        sum(t.waiting_integral for t in all_tr) / reps,
        sum(t.kv_block_integral / t.budget_blocks for t in dec_traces) / len(dec_traces),
        max(t.peak_blocks for t in dec_traces),
        1,
        float(finish.max()),
        sent_s=sent,  # queue from the engine's arrival, TTFT from the client's send
        latency_s=records[0].latency_s,  # the API server's path outside the engine, as serve's
        first_wait_s=wait,
    )
    m = metrics([merged], slo, pools.gpus)
    in_system = (
        sum(t.active_integral + t.waiting_integral for t in all_tr) + float(t_x.sum())
    ) / m.window_s
    return replace(m, mean_in_system=in_system), float(t_x.mean())


@dataclass(frozen=True)
class DisaggResult:
    ideal: ServeMetrics
    expected: ServeMetrics
    kv_transfer_mean_s: float
    pools: Pools


def serve_disaggregated(model: ModelArch, pools: Pools, w: Workload, slo: Slo) -> DisaggResult:
    """Serve the workload on a prefill pool and a decode pool; ideal and expected step times."""
    if w.concurrency is not None:
        raise InputError("disaggregated serving takes an open-loop workload (--rate), not users")
    ideal, _ = _pooled(model, pools, w, slo, True)
    expected, t_x = _pooled(model, pools, w, slo, False)
    return DisaggResult(ideal, expected, t_x, pools)


def pool_saturations(
    pre: Replica, dec: Replica, w: Workload, ideal: bool = False
) -> tuple[Saturation, Saturation]:
    """The saturation of one prefill replica (prompts with one output token each) and of one
    decode replica (requests arriving with their KV) (roofline.serving.search)."""
    prompts, outputs = probe_lengths(w)
    return (
        saturation(pre, prompts, np.ones_like(outputs), ideal),
        saturation(dec, prompts, outputs, ideal, prefilled=True),
    )


def pools_capacity(pools: Pools, sats: tuple[Saturation, Saturation]) -> tuple[float, float, float]:
    """(requests/s, output tokens/s, mean output) the pools serve at most: the lesser of the
    prefill pool's saturation and the decode pool's, each × its replicas."""
    pre, dec = sats
    r_pre = pre.requests_per_s * pools.prefill_replicas
    r_dec = dec.requests_per_s * pools.decode_replicas
    tok = dec.output_tokens_per_s * pools.decode_replicas * min(1.0, r_pre / r_dec)
    return min(r_pre, r_dec), tok, dec.mean_output_tokens


def _steady_pooled(
    model: ModelArch, pools: Pools, w: Workload, slo: Slo, ideal: bool, cap: tuple
) -> ServeMetrics:
    """_pooled's metrics with the headline figures in steady state (serve.steady_state)."""
    m = _pooled(model, pools, w, slo, ideal)[0]
    d = pools.decode
    assert d.model is not None
    b = rate_bounds(d.model, d.hw, d.dep, 1, float(w.prompts.mean()), float(w.outputs.mean()), 1)
    rate = w.rate
    stable = rate is not None and rate < cap[0]
    return steady_state(
        m, rate, lambda: cap[:2], stable, cap[2], b.compute_s_per_request,
        slo=slo if w.stationary else None, saturation_rate=cap[0],
    )  # fmt: skip


def max_rate_disaggregated(
    model: ModelArch,
    pools: Pools,
    w: Workload,
    slo: Slo,
    hi: float,
    seed: int = 0,
    ideal: bool = False,
) -> float:
    """The highest request rate the pools serve within the SLOs, at most `hi` (their
    saturation), on runs of search.slo_requests requests."""
    n = slo_requests(slo, w.n)
    if n != w.n:
        w = Workload(
            np.zeros(n), np.resize(w.prompts, n), np.resize(w.outputs, n), 1.0, None, None, {}
        )

    def ok(rate: float) -> bool:
        return _pooled(model, pools, with_rate(w, rate, seed), slo, ideal)[0].meets_slo

    return highest_ok(ok, hi)


@dataclass(frozen=True)
class TrafficMode:
    """One way of serving a rate within the SLOs: the unit (a replica, or a set of pools), the
    highest rate one unit serves within the SLOs, the units the rate needs and the metrics."""

    name: str
    prefill_replicas: int
    decode_replicas: int
    gpus_per_unit: int
    max_rate_per_unit: float
    capacity_per_gpu: float  # max_rate_per_unit / gpus_per_unit: requests/s per GPU within SLO
    units: int
    gpus: int
    metrics: ServeMetrics | None
    # disaggregated: what binds a prefill replica's and a decode replica's saturation, and their
    # saturation rates (requests/s)
    bindings: tuple[str, str] = ("", "")
    pool_rates: tuple[float, float] = (0.0, 0.0)
    # the replicas the rate was simulated on: a decode replica's running sequences (per
    # attention-DP rank) and a prefill replica's token budget a step, as their launch lines set
    decode_max_seqs: int = 0
    prefill_batched_tokens: int = 0
    # disaggregated: the whole fleet's pools' (requests/s, output tokens/s, mean output) at most
    capacity: tuple[float, float, float] = (0.0, 0.0, 0.0)


def fleet_at_rate(
    model: ModelArch, pre: Replica, dec: Replica, link: KvLink, mode: TrafficMode, w: Workload,
    slo: Slo, seed: int = 0,
) -> Callable[[float], ServeMetrics]:  # fmt: skip
    """The expected steady-state metrics of best_pools' fleet (`mode`: its units x (P, D)
    replicas) at an offered rate, as best_pools' own figures are made (its load bands read
    them at the band edges' rates)."""
    pools = fleet_pools(pre, dec, link, mode)
    return lambda r: _steady_pooled(model, pools, with_rate(w, r, seed), slo, False, mode.capacity)


def fleet_pools(pre: Replica, dec: Replica, link: KvLink, mode: TrafficMode) -> Pools:
    """A disaggregated mode's whole fleet: its units x (P, D) replicas (one unit without a rate),
    served as one set of pools, the stream dealt among them."""
    k = max(mode.units, 1)
    return Pools(pre, dec, mode.prefill_replicas * k, mode.decode_replicas * k, link)


def compare_at_rate(
    model: ModelArch,
    p_hw: Accelerator,
    d_hw: Accelerator,
    p_dep: Deployment,
    d_dep: Deployment,
    eng: Engine,
    link: KvLink,
    w: Workload,
    slo: Slo,
    seed: int = 0,
    ideal: bool = False,
    shape: tuple[int, int] | None = None,
) -> tuple[TrafficMode, TrafficMode]:
    """disagg under traffic: colocated (chunked prefill, one pool) against disaggregated pools
    under the same SLOs and workload, by capacity per GPU: each unit's highest rate within the
    SLOs (at most its saturation), divided by its GPUs. The colocated replica (and the decode
    pool's) on the decode side with `eng`, prefill replicas with chunking off and an 8,192-token
    budget; pool shapes tried (best_pools): 1-4 decode replicas with the prefill replicas the
    closed-form ratio (prefill replicas per decode replica, at the batch a decode replica
    reaches: its KV or max-seqs bound at the mean context, not --batch) suggests, or only
    `shape` (P, D) when given. `ideal`: ideal step times throughout. Each mode's metrics are
    its whole fleet's at the rate: the colocated units as serve --dp N routes them (the same
    figures), the pools as `units` × (P, D) replicas, the stream dealt among them."""
    max_len = w.max_len
    colo = make_replica(model, d_hw, d_dep, eng, max_len)
    pre = make_replica(model, p_hw, p_dep, engine("auto", p_hw), max_len,
                       chunked_prefill=False, max_batched_tokens=8192)  # fmt: skip
    s_mean, o_mean = float(w.prompts.mean()), float(w.outputs.mean())
    per_seq = float(colo.expected.blocks(int(s_mean + o_mean / 2) + 1, colo.rules.block_tokens))
    b = int(max(1, min(colo.rules.max_seqs, colo.rules.budget_blocks // max(per_seq, 1.0))))
    ratio = disaggregate(
        model, p_hw, d_hw, p_dep, d_dep, link, b, max(int(s_mean), 1), max(int(o_mean), 2)
    ).prefill_replicas_per_decode_replica
    rate = float(w.rate or 0.0)
    cap = replica_capacity(colo, w)
    r_colo = max_rate_within_slo(colo, w, slo, cap.of(ideal).requests_per_s, ideal, seed)
    colo_mode = _mode("colocated", 0, 1, colo.gpus, r_colo, rate, None)
    if r_colo > 0:  # its fleet at the rate as serve --dp N runs it: the stream routed
        res = serve(colo, w, slo, max(colo_mode.units, 1), capacity=cap, router=DEFAULT_ROUTER)
        colo_mode = replace(colo_mode, metrics=res.ideal if ideal else res.expected)
    pools = best_pools(model, pre, colo, link, w, slo, ratio, seed, ideal, shape)
    ran = {"decode_max_seqs": colo.rules.max_seqs // d_dep.attention_dp,
           "prefill_batched_tokens": pre.rank_batched_tokens or 0}  # fmt: skip
    return colo_mode, replace(pools, **ran)


def best_pools(
    model: ModelArch,
    pre: Replica,
    dec: Replica,
    link: KvLink,
    w: Workload,
    slo: Slo,
    ratio: float,
    seed: int = 0,
    ideal: bool = False,
    shape: tuple[int, int] | None = None,
) -> TrafficMode:
    """The pool shape (P prefill + D decode replicas) with the most capacity per GPU (the first in
    (P, D) order among equals): D from 1 to 4, P from the closed-form `ratio` (or only
    `shape`); with its units for w.rate and the metrics there. A shape's capacity per GPU is at
    most its saturation (pools_capacity) per GPU, so the shapes are searched highest bound
    first and one whose bound cannot beat the best found is not searched."""
    rate = float(w.rate or 0.0)
    shapes = sorted({(max(1, round(ratio * nd)), nd) for nd in (1, 2, 3, 4)} | {(1, 1)})
    if shape is not None:
        shapes = [shape]
    best: TrafficMode | None = None
    at = len(shapes)  # the best's place in `shapes`
    sats = pool_saturations(pre, dec, w, ideal)
    every = [Pools(pre, dec, n_p, n_d, link) for n_p, n_d in shapes]
    caps = {sh: pools_capacity(p, sats) for sh, p in zip(shapes, every, strict=True)}
    bound = [caps[sh][0] / p.gpus for sh, p in zip(shapes, every, strict=True)]
    for i in sorted(range(len(shapes)), key=lambda i: -bound[i]):
        if best is not None and (bound[i], -i) <= (best.capacity_per_gpu, -at):
            continue  # even at its saturation no more capacity per GPU (or after an equal)
        (n_p, n_d), pools = shapes[i], every[i]
        r = max_rate_disaggregated(model, pools, w, slo, caps[n_p, n_d][0], seed, ideal)
        cand = _mode("disaggregated", n_p, n_d, pools.gpus, r, rate, None)
        if best is None or (cand.capacity_per_gpu, -i) > (best.capacity_per_gpu, -at):
            best, at = cand, i
    assert best is not None
    best = replace(
        best,
        bindings=(sats[0].binding, sats[1].binding),
        pool_rates=(sats[0].requests_per_s, sats[1].requests_per_s),
    )
    if best.max_rate_per_unit > 0:  # the whole fleet at the rate, as the colocated one is served
        pools = fleet_pools(pre, dec, link, best)
        cap = pools_capacity(pools, sats)
        best = replace(best, metrics=_steady_pooled(model, pools, w, slo, ideal, cap), capacity=cap)
    return best


def _mode(name, n_p, n_d, gpus, r_max, rate, m) -> TrafficMode:
    units = math.ceil(rate / r_max * (1 - 1e-12)) if r_max > 0 and rate > 0 else 0
    return TrafficMode(name, n_p, n_d, gpus, r_max, r_max / gpus, units, units * gpus, m)

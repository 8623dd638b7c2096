"""Capacity and SLO assertions for CI: does a deployment fit, hold a batch, meet TPOT/TTFT and
throughput targets? Pure: returns Check records; the CLI maps them to exit codes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.domain.units import fmt_bytes, fmt_rate, fmt_seconds
from roofline.engines.engine import Engine
from roofline.step.memory import kv_bytes_per_sequence, max_batch, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import prefill, request

if TYPE_CHECKING:
    from roofline.serving.confidence import Edges
    from roofline.serving.serve import ServeResult


@dataclass(frozen=True)
class Limits:
    """The assertions; None means not checked."""

    min_batch: int | None = None
    max_tpot_s: float | None = None
    max_ttft_s: float | None = None  # one request's TTFT on an idle replica (analyze's ttft_s)
    max_batch_prefill_s: float | None = (
        None  # the static batch's prefill (analyze's batch_prefill_s)
    )
    min_throughput: float | None = None  # output tokens/s over all replicas
    fits: bool = False
    min_concurrency: int | None = None  # sequences in flight over all replicas


_WHAT = {
    "max_ttft": "TTFT of one request on an idle replica ",
    "max_batch_prefill": "prefill of the static batch ",
}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    limit: float | bool
    value: float | bool
    unit: str
    detail: str


def run_checks(
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eng: Engine,
    *,
    batch: int,
    prompt: int,
    output: int,
    context: int,
    limits: Limits,
    replicas: int = 1,
    capacity_bytes: float | None = None,
    ideal: bool = False,
    eff: Efficiency | None = None,
    context_given: bool = False,
) -> list[Check]:
    """Evaluate every requested assertion. Latency and throughput use the expected (calibrated)
    prediction unless `ideal`; capacity uses the engine's KV budget at `context` tokens;
    `context_given` (--context set): TPOT and throughput at it too, as analyze --context reads
    them, else over the decode (prompt + output / 2 on average)."""
    plan = plan_memory(model, hw, dep, eng, capacity_bytes)
    mb = int(max_batch(plan, model, dep, context)) if plan.weights_fit else 0
    kv_needed = float(kv_bytes_per_sequence(model, dep, context, eng.block_tokens)) * batch
    out: list[Check] = []
    if limits.fits:
        ok = plan.weights_fit and kv_needed <= plan.kv_budget_bytes
        out.append(
            Check(
                "fits",
                ok,
                True,
                ok,
                "",
                (
                    f"weights {fmt_bytes(plan.weights_bytes)}/GPU, KV for batch {batch} at "
                    f"{context:,} tokens {fmt_bytes(kv_needed)} vs budget "
                    f"{fmt_bytes(plan.kv_budget_bytes)}"
                ),
            )
        )
    if limits.min_batch is not None:
        ok = mb >= limits.min_batch
        out.append(
            Check(
                "min_batch",
                ok,
                limits.min_batch,
                mb,
                "sequences",
                f"max batch {mb} at {context:,} tokens "
                f"({'≥' if ok else '<'} {limits.min_batch}, "
                f"{mb - limits.min_batch:+d})",
            )
        )
    if limits.min_concurrency is not None:
        total = mb * replicas
        ok = total >= limits.min_concurrency
        out.append(
            Check(
                "min_concurrency",
                ok,
                limits.min_concurrency,
                total,
                "sequences",
                f"{replicas} replica(s) x max batch {mb} = {total} at {context:,} tokens "
                f"({'≥' if ok else '<'} {limits.min_concurrency})",
            )
        )
    speed_limits = {
        "max_tpot": limits.max_tpot_s,
        "max_ttft": limits.max_ttft_s,
        "max_batch_prefill": limits.max_batch_prefill_s,
        "min_throughput": limits.min_throughput,
    }
    wants_speed = any(x is not None for x in speed_limits.values())
    if wants_speed and not plan.weights_fit:
        for name, limit in speed_limits.items():
            if limit is not None:
                out.append(Check(name, False, limit, float("nan"), "", "the weights do not fit"))
        return out
    if wants_speed:
        # --context: the decode steps of `batch` sequences holding `context` tokens, not the
        # mean over prompt + output, for TPOT and throughput alike (as analyze reads them)
        at = context if context_given else None
        r = request(model, hw, dep, batch, prompt, output, replicas, eff, eng.name, at)
        t = r.ideal if ideal else r.expected
        kind = "ideal" if ideal else "expected"
        # TPOT and throughput are the batch's (and the context's, when given): said with them
        where = f" at batch {batch:,}" + (f", {context:,} tokens" if at is not None else "")
        tpot = float(t.tpot_s)
        one = prefill(model, hw, dep, 1, max(prompt, 1), eff, eng.name)  # an idle replica
        ttft = float(one.t_ideal_s if ideal else one.t_expected_s)
        for name, limit, value, unit, smaller in (
            ("max_tpot", limits.max_tpot_s, tpot, "s", True),
            ("max_ttft", limits.max_ttft_s, ttft, "s", True),
            ("max_batch_prefill", limits.max_batch_prefill_s, float(t.batch_prefill_s), "s", True),
            (
                "min_throughput",
                limits.min_throughput,
                float(t.output_tokens_per_s),
                "tokens/s",
                False,
            ),
        ):
            if limit is None:
                continue
            ok = value <= limit if smaller else value >= limit
            margin = (value / limit - 1) if limit else 0.0
            shown = (
                (fmt_seconds(value), fmt_seconds(limit))
                if unit == "s"
                else (f"{value:,.0f} {unit}", f"{limit:,.0f}")
            )
            out.append(
                Check(
                    name,
                    ok,
                    limit,
                    value,
                    unit,
                    f"{kind} {_WHAT.get(name, '')}{shown[0]}"
                    f"{where if name in ('max_tpot', 'min_throughput') else ''}"
                    " vs limit "
                    f"{shown[1]} ({margin:+.1%})",
                )
            )
    return out


@dataclass(frozen=True)
class TrafficLimits:
    """Assertions under a request rate (roofline.serving); None means not checked."""

    rate: float
    max_ttft_p99_s: float | None = None
    max_tpot_p99_s: float | None = None
    min_goodput: float | None = None  # requests/s meeting both p99 limits as per-request SLOs
    min_prefix_hit_rate: float | None = None  # share of prefill tokens found in the prefix cache
    pct: float = 99.0  # the percentile the TTFT/TPOT limits are judged at (serve's --slo-pct)
    edges: Edges | None = None  # --confidence's band edges (serving.confidence); None: expected


def traffic_checks(
    res: ServeResult, limits: TrafficLimits, ideal: bool = False, queue: ServeResult | None = None
) -> list[Check]:
    """TTFT and TPOT at limits.pct (p99 unless a spec's slo_pct says; the check named for it),
    goodput and the prefix cache's hit rate of a run at limits.rate (serve_at) against `limits`
    (no prefix cache in the run: no hit).
    At a confidence (limits.edges, serving.confidence: `queue` is the same requests served at
    the rate ÷ the throughput band's low edge) each latency is the queue's × its light-load
    band's high edge, as `size --confidence` sizes, and goodput the queue's × the low edge (the
    same requests at the real fleet's pace)."""
    m = res.ideal if ideal else res.expected
    e = limits.edges if queue is not None else None
    rate = f"{fmt_rate(limits.rate)} req/s"
    if m.per_class:  # a workload file's classes: arrivals (sessions, parents of n samples)
        arrivals = sum(c.arrivals_per_s for c in m.per_class)
        rate = f"{arrivals:.4g} arrivals/s ({limits.rate:.4g} sequences/s)"
    kind = f"{'ideal' if ideal else 'expected'} at {rate}"
    q = (queue.ideal if ideal else queue.expected) if queue is not None else m
    if e is not None:
        kind = f"{e.level} edge at {rate}"
    if res.router:  # a fleet: the router its figures rest on (serving.router)
        kind += f" over {res.replicas} replicas, {res.router}"
    if m.requests:  # the run the percentiles rest on (a spec's requests, at least
        kind += f", {m.requests:,} requests"  # 50 beyond the percentile: cli.specs)
    out = []
    p, p99 = f"p{limits.pct:g}", limits.pct == 99.0

    def tail(x, what: str) -> float:
        return getattr(x, f"{what}_s").p99 if p99 else getattr(x, f"slo_{what}_s")

    ttft, tpot, good = tail(m, "ttft"), tail(m, "tpot"), m.goodput_requests_per_s
    if e is not None:
        ttft, tpot = tail(q, "ttft") * e.ttft, tail(q, "tpot") * e.tpot
        good = q.goodput_requests_per_s * e.capacity
    for name, limit, value, smaller in (
        (f"max_ttft_{p}", limits.max_ttft_p99_s, ttft, True),
        (f"max_tpot_{p}", limits.max_tpot_p99_s, tpot, True),
        ("min_goodput", limits.min_goodput, good, False),
    ):
        if limit is None:
            continue
        ok = value <= limit if smaller else value >= limit
        shown = (
            (fmt_seconds(value), fmt_seconds(limit))
            if smaller
            else (f"{value:.3g} req/s", f"{limit:.3g}")
        )
        margin = (value / limit - 1) if limit else 0.0
        detail = f"{kind}: {shown[0]} vs limit {shown[1]} ({margin:+.1%})"
        if not math.isfinite(value):  # past saturation (metrics.past_saturation)
            detail = f"{kind}: unbounded vs limit {shown[1]} ({q.unbounded or m.unbounded})"
        out.append(Check(name, ok, limit, value, "s" if smaller else "requests/s", detail))
    if limits.min_prefix_hit_rate is not None:
        hit, lim = (m.prefix.hit_rate if m.prefix is not None else 0.0), limits.min_prefix_hit_rate
        detail = f"{kind}: {hit:.1%} of prefill tokens cached vs limit {lim:.1%}"
        out.append(Check("min_prefix_hit_rate", hit >= lim, lim, hit, "share", detail))
    return out

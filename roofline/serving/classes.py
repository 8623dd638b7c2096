"""Per-class figures of a workload file's run (roofline.serving.mix): each class's TTFT, TPOT,
E2E and queueing percentiles against its own SLOs, out of the same run records as the pool's
(metrics.metrics on the class's requests), and the pool's verdict over the classes: it meets the
SLOs when every class meets its own; SLO attainment is the share of all requests within their
class's SLOs. Also the KV a class's `n` samples hold, shared and not (kv_sharing)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from roofline.serving.metrics import Percentiles, ServeMetrics, Slo, metrics, percentiles
from roofline.serving.sim.record import RunRecord
from roofline.serving.workload import Workload
from roofline.serving.workloadfile import ClassSpec

PER_REQUEST = ("arrival_s", "admitted_s", "first_token_s", "finish_s", "prompts", "outputs")
WAITS = ("sent_s", "first_wait_s", "finish_wait_s")


@dataclass(frozen=True)
class ClassMetrics:
    """One class's figures in a pool's run."""

    name: str
    priority: int
    arrivals_per_s: float  # the class's offered rate (requests, parents of n samples, sessions)
    requests: int  # sequences simulated
    ttft_s: Percentiles
    tpot_s: Percentiles
    e2e_s: Percentiles
    queue_s: Percentiles
    slo: Slo
    slo_attainment: float
    meets_slo: bool
    # its own share of the pool's output tokens/s: the pool's figure × the class's share of the
    # output tokens served in the run (the classes' figures sum to the pool's)
    output_tokens_per_s: float
    ttft_p99_by_turn_s: tuple[float, ...] = ()  # agent sessions: p99 TTFT of each turn
    unbounded: bool = False


def class_slo(c: ClassSpec, slo: Slo) -> Slo:
    """The class's own SLOs, the command's where it gives none."""
    ttft = c.slo_ttft_s if c.slo_ttft_s is not None else slo.ttft_s
    tpot = c.slo_tpot_s if c.slo_tpot_s is not None else slo.tpot_s
    return Slo(ttft, tpot, slo.pct)


def subset(rec: RunRecord, mask: np.ndarray) -> RunRecord:
    """The requests `mask` of a run record (per-request arrays only; no ITL, no cache)."""
    kw = {k: getattr(rec, k)[mask] for k in PER_REQUEST}
    for k in WAITS:
        v = getattr(rec, k)
        kw[k] = None if v is None else v[mask]
    return replace(rec, **kw, itl_s=np.zeros(0), itl_weight=np.zeros(0), prefix=None, klass=None)


def with_classes(m: ServeMetrics, records: list[RunRecord], w: Workload, slo: Slo) -> ServeMetrics:
    """`m` with each class's figures; the pool meets the SLOs when every class meets its own
    (class_slo) and the pool has a steady state."""
    mix = w.mix
    rates = mix.class_rates(w.mix_rate)
    out, ok_total, n_total = [], 0.0, 0
    served = sum(float(r.outputs[r.served].sum()) for r in records if r.klass is not None)
    for k, c in enumerate(mix.classes):
        cs = class_slo(c, slo)
        parts = [subset(r, r.klass == k) for r in records if r.klass is not None]
        parts = [p for p in parts if p.arrival_s.size and np.isfinite(p.arrival_s).any()]
        if not parts:
            continue
        cm = metrics(parts, cs, max(m.gpus, 1))
        by_turn = _by_turn(records, k) if c.turns > 1 else ()
        own = sum(float(p.outputs[p.served].sum()) for p in parts)
        tok_s = m.output_tokens_per_s * own / served if served else 0.0
        inf = Percentiles(math.inf, math.inf, math.inf, math.inf)
        unb = bool(m.unbounded)
        out.append(
            ClassMetrics(
                c.name, c.priority, rates[k], cm.requests,
                inf if unb else cm.ttft_s, cm.tpot_s, inf if unb else cm.e2e_s,
                inf if unb else cm.queue_s, cs,
                0.0 if unb and cs.ttft_s is not None else cm.slo_attainment,
                cm.meets_slo and not unb, tok_s,
                tuple(math.inf for _ in by_turn) if unb else by_turn, unb,
            )
        )  # fmt: skip
        ok_total += out[-1].slo_attainment * cm.requests
        n_total += cm.requests
    att = ok_total / n_total if n_total else 0.0
    # each class against its own SLOs (the command's only where a class gives none): the pool's
    # figures under the command's SLOs would hold a class to a limit it does not have
    meets = not m.unbounded and bool(out) and all(c.meets_slo for c in out)
    return replace(
        m,
        per_class=tuple(out),
        meets_slo=meets,
        slo_attainment=att,
        goodput_requests_per_s=m.requests_per_s * att,
    )


def _by_turn(records: list[RunRecord], k: int) -> tuple[float, ...]:
    """p99 TTFT of class k's turns, turn by turn."""
    ttft, turn = [], []
    for r in records:
        if r.klass is None or r.prefix is None:
            continue
        mask = (r.klass == k) & r.served & np.isfinite(r.first_token_s)
        sent = r.client_sent_s[mask]
        wait = np.zeros(int(mask.sum())) if r.first_wait_s is None else r.first_wait_s[mask]
        ttft.append(r.first_token_s[mask] + r.latency_s + wait - sent)
        turn.append(r.prefix.turn[mask])
    if not ttft:
        return ()
    t, u = np.concatenate(ttft), np.concatenate(turn)
    return tuple(percentiles(t[u == j]).p99 for j in range(int(u.max()) + 1) if np.any(u == j))


@dataclass(frozen=True)
class KvSharing:
    """The KV one arrival of a class with `n` samples holds at its end, in tokens (whole blocks):
    `independent` as n requests, `shared` with one copy of the prompt's full blocks."""

    n: int
    independent_tokens: int
    shared_tokens: int
    saved_share: float
    arrivals_that_fit: int  # in the KV budget, shared (the cliff: beyond it, preemption)
    arrivals_that_fit_independent: int


def kv_sharing(prompt: int, output: int, n: int, block: int, budget_blocks: int) -> KvSharing:
    """n samples of a `prompt`-token prompt, `output` tokens each: independent, n × blocks(prompt
    + output); shared, minus (n − 1) × the prompt's shareable blocks floor((prompt − 1) / block)
    (the prefix cache's rule: the last prompt token is computed by every sample)."""
    per = -(-(prompt + output) // block)
    shareable = (prompt - 1) // block
    ind, sh = n * per, n * per - (n - 1) * shareable
    return KvSharing(
        n, ind * block, sh * block, 1 - sh / ind, budget_blocks // sh, budget_blocks // ind
    )

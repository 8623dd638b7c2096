"""The saturation of one replica under a workload file's classes whose requests share KV (`n`
samples sharing their prompt, a system prompt, an agent's turns): the probe of
roofline.serving.search runs independent requests and would not credit the sharing, so this one
runs the mix itself, sharing and caching as the scheduler does (serving.sim.prefixcache).

The replica is kept never idle by offering the mix far above any rate it can serve
(OVERLOAD × the physical bound, serving.bounds: the queue never empties before the last arrival)
and its completion rate is read as search.saturation reads a closed loop's: from the end of the
users-th completion's step to the end of the (N − users)-th's, `users` the sequences the
replica holds at once (search.probe_users), so the warm-up and the drain are left out. A
session's later turns arrive after its tool waits as in the run, so the probe holds at least
`users` sessions. The rate counts sequences/s (a workload's `rate` for a mix); the physical
bounds count the prompt tokens the cache could serve (PrefixInfo.possible_hit_tokens), as
search.Capacity does for a shared prefix."""

from __future__ import annotations

import numpy as np

from roofline.serving.bounds import RateBounds, rate_bounds
from roofline.serving.mix import mix_workload
from roofline.serving.search import (
    PROBE_GENERATIONS,
    PROBE_SEED,
    Probed,
    Saturation,
    probe_users,
)
from roofline.serving.serve import Replica, run_replicas
from roofline.serving.workload import MAX_REQUESTS, Workload

OVERLOAD = 20.0  # the probe's offered rate over the physical bound


class MixCapacity(Probed):
    """search.Capacity's interface (serve.Capacity) for a mix whose requests share KV."""

    credits_sharing = True  # serve keeps it for a mix that shares KV (search.Capacity: not)

    def __init__(self, rep: Replica, w: Workload) -> None:
        self._rep, self._w = rep, w
        self._sat: dict[bool, Saturation] = {}
        self.mean_output_tokens = float(w.outputs.mean())
        r = rep.rules
        cached = 0.0
        if w.prefix is not None:
            cached = float(np.mean(w.prefix.possible_hit_tokens(w.prompts, r.block_tokens)))
        shortest = float(rep.expected.blocks(int(np.min(w.prompts)) + 1, r.block_tokens))
        batch = int(min(r.max_seqs, max(r.budget_blocks // max(shortest, 1.0), 1)))
        assert rep.model is not None, "a replica built by make_replica"
        self.bounds: RateBounds = rate_bounds(
            rep.model, rep.hw, rep.dep, rep.gpus, float(w.prompts.mean()),
            self.mean_output_tokens, batch, cached,
        )  # fmt: skip

    def _probe(self, ideal: bool) -> Saturation:
        rep, w = self._rep, self._w
        users = probe_users(rep, w.prompts)
        turns = max(c.turns for c in w.mix.classes)  # a session's turns come one at a time
        n = int(min(max(users * (PROBE_GENERATIONS + 2), users * turns * 2), MAX_REQUESTS))
        seq_rate = OVERLOAD * self.bounds.requests_per_s
        arrivals = seq_rate * w.mix_rate / max(w.rate or 1.0, 1e-30)  # sequences -> arrivals
        probe = mix_workload(w.mix, n, PROBE_SEED, arrivals)
        rec = run_replicas(rep, probe, 1, ideal)[0]
        done = rec.served & np.isfinite(rec.finish_s)
        f = np.sort(rec.finish_s[done])
        o = rec.outputs[done][np.argsort(rec.finish_s[done], kind="stable")]
        m = f.size
        u = min(users, max(m // 4, 1))
        j = int(np.searchsorted(f, f[u - 1], side="right")) - 1
        k = int(np.searchsorted(f, f[m - u - 1], side="right")) - 1 if m > u else m - 1
        if k <= j:  # one burst holds the whole window: the run's mean rate
            j, k = -1, m - 1
        span = max(float(f[k] - (f[j] if j >= 0 else 0.0)), 1e-30)
        rate, tokens = (k - j) / span, float(o[j + 1 : k + 1].sum()) / span
        bound = self.bounds.requests_per_s
        if rate > bound:
            rate, tokens = bound, tokens * bound / rate
        busy = max(rec.makespan_s, 1e-30)
        kv = rec.kv_block_integral / busy / max(rec.budget_blocks, 1)
        binding = "KV capacity" if kv >= 0.85 or rec.preemptions > 0 else "compute"
        if rec.active_integral / busy >= 0.95 * rep.rules.max_seqs:
            binding = "max-seqs"
        return Saturation(
            rate, tokens, binding, rec.decoding_integral / busy, kv,
            float(o.mean()), int(probe.n), None,
        )  # fmt: skip


def mix_capacity(rep: Replica, w: Workload, confirm: bool = False):
    """The replica's capacity for `w`: MixCapacity for a mix whose requests share KV, else
    search.replica_capacity."""
    from roofline.serving.search import replica_capacity

    if w.mix is not None and w.prefix is not None:
        return MixCapacity(rep, w)
    return replica_capacity(rep, w, confirm=confirm)

"""Routing a workload with prefixes, conversations or sessions across replicas (the routers of
roofline.serving.router, applied turn by turn):

- affinity: every turn of a session (a workload file's session, or a conversation) on one
  replica, session mod N: sticky sessions by a session id, as llm-d's session-affinity scorer
  and SGLang's router `consistent_hashing` policy (header-based sticky sessions) do. Nothing a
  session cached is lost to routing.
- round-robin and least-loaded: each turn routed on its own, as for any request (the router
  does not know the session), so a turn may land on a replica that does not hold its history:
  it recomputes what that replica lacks (it hits the longest earlier turn of its conversation
  served there, and the shared system prompt where it is cached). With N replicas a turn finds
  its previous turn about 1/N of the time.
- cache-aware: SGLang's router (sgl-model-gateway `cache_aware` policy, router_args.py defaults
  cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5): the router keeps an
  approximate tree of the prompts it sent to each replica. If the load is imbalanced (max − min
  running requests > 64 and max > 1.5 × min) the request goes to the least loaded replica;
  otherwise to the replica whose tree matches the longest share of its prompt when that share
  exceeds 0.3 (ties: the less loaded), else to the replica with the smallest tree. A turn's
  match is its previous turn's prompt (the router's tree holds prompts, not outputs) or the
  shared system prompt, where they were sent, or for a trace with hash ids the longest run of
  its blocks sent there.

A unit is routed whole: the requests of one session that arrive together (`n` samples of a
prompt, sub-agents fanned out from one context) go to one replica. The loads and arrival times
of a later turn come from the previous pass's simulation (the first pass is affinity), as for
least-loaded (roofline.serving.router); a turn moved off its predecessor's replica arrives at the
time that pass gave it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.serving.router import least_loaded
from roofline.serving.sim.prefixcache import PrefixInfo

CACHE_THRESHOLD = 0.3  # sgl-model-gateway router_args.py: cache_threshold
BALANCE_ABS = 64  # balance_abs_threshold
BALANCE_REL = 1.5  # balance_rel_threshold


def session_keys(info: PrefixInfo) -> np.ndarray:
    """What keeps requests together: the session (a workload file's) or the conversation."""
    return info.conv if info.session is None else info.session


def affinity(info: PrefixInfo, replicas: int) -> np.ndarray:
    """Each request's replica: its session mod N (replica_selection's rule)."""
    return session_keys(info) % replicas


def _units(info: PrefixInfo) -> np.ndarray:
    """A unit id per request: (session, turn) pairs numbered."""
    key = session_keys(info).astype(np.int64) * (int(info.turn.max()) + 1) + info.turn
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def _whole(chosen: np.ndarray, units: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Every request of a unit to the replica its first request (in `order`) got."""
    unit, got = units.tolist(), chosen.tolist()  # (lists: the same values, walked faster)
    first = [-1] * (max(unit) + 1)
    for i in order.tolist():
        if first[unit[i]] < 0:
            first[unit[i]] = got[i]
    return np.asarray(first, dtype=np.int64)[units]


def route(
    router: str,
    info: PrefixInfo,
    prompts: np.ndarray,
    replicas: int,
    sent_s: np.ndarray,
    admitted_s: np.ndarray,
    finish_s: np.ndarray,
) -> np.ndarray:
    """Each request's replica under `router`, from the previous pass's times per request."""
    if router == "affinity":
        return affinity(info, replicas)
    units = _units(info)
    order = np.argsort(sent_s, kind="stable")
    if router == "round-robin":  # dealt in the order the requests reach the router
        chosen = np.empty(len(order), dtype=np.int64)
        chosen[order] = np.arange(len(order)) % replicas
        return _whole(chosen, units, order)
    if router == "least-loaded":
        sels = least_loaded(sent_s, admitted_s, finish_s, replicas)
        chosen = np.empty(len(order), dtype=np.int64)
        for j, sel in enumerate(sels):
            chosen[sel] = j
        return _whole(chosen, units, order)
    return _cache_aware(info, prompts, replicas, sent_s, finish_s, units, order)


def _cache_aware(info, prompts, replicas, sent_s, finish_s, units, order) -> np.ndarray:
    """The cache-aware router's choice per request (route), walked over Python lists (the same
    values as the arrays: one numpy element read per use cost most of the time)."""
    n = len(prompts)
    has = info.succ >= 0
    pred_a = np.full(n, -1, dtype=np.int64)
    pred_a[info.succ[has]] = np.flatnonzero(has)
    pred, unit, plen = pred_a.tolist(), units.tolist(), np.asarray(prompts).tolist()
    sent, fin = sent_s.tolist(), finish_s.tolist()
    group, shared = info.group.tolist(), info.shared.tolist()
    hashes = None if info.hashes is None else [np.asarray(h).tolist() for h in info.hashes]
    chosen = [-1] * n
    unit_to = [-1] * (max(unit) + 1)
    tree = [0.0] * replicas  # tokens of the prompts sent to each replica
    groups: list[set[int]] = [set() for _ in range(replicas)]
    sent_ids: list[set[int]] = [set() for _ in range(replicas)]  # hash ids sent to each
    running: list[list[float]] = [[] for _ in range(replicas)]
    for i in order.tolist():
        u = unit[i]
        if unit_to[u] >= 0:
            chosen[i] = unit_to[u]
            continue
        t = sent[i]
        load = [float(sum(1 for f in r if f > t)) for r in running]
        lo, hi = min(load), max(load)
        if hi - lo > BALANCE_ABS and hi > BALANCE_REL * lo:
            j = load.index(lo)  # the first least loaded
        else:
            match = [0.0] * replicas
            g = group[i]
            for k in range(replicas):
                if g >= 0 and g in groups[k]:
                    match[k] = float(shared[i])
            if hashes is not None:  # a trace's block ids: the longest run sent there
                for k in range(replicas):
                    run = 0
                    for h in hashes[i]:
                        if h not in sent_ids[k]:
                            break
                        run += 1
                    match[k] = max(match[k], float(run * info.hash_block_tokens))
            p = pred[i]
            if p >= 0 and chosen[p] >= 0:
                k = chosen[p]
                match[k] = max(match[k], float(plen[p]))
            whole = max(float(plen[i]), 1.0)
            share = [m / whole for m in match]
            best = max(share)
            if best > CACHE_THRESHOLD:  # the first least loaded of the best matched
                j = min((k for k in range(replicas) if share[k] == best), key=load.__getitem__)
            else:
                j = tree.index(min(tree))
        chosen[i] = unit_to[u] = j
        tree[j] += float(plen[i])
        if group[i] >= 0:
            groups[j].add(group[i])
        if hashes is not None:
            sent_ids[j].update(hashes[i])
        running[j] = [f for f in running[j] if f > t] + [fin[i]]
    return np.asarray(chosen, dtype=np.int64)


def split(
    info: PrefixInfo, chosen: np.ndarray, j: int, sent_s: np.ndarray, arrival_s: np.ndarray
) -> tuple[np.ndarray, PrefixInfo, np.ndarray]:
    """Replica j's requests under `chosen`, in the order the simulator takes them (the first
    arrivals by time, then the later turns), their PrefixInfo and arrival times. A turn whose
    predecessor went elsewhere arrives on its own at the previous pass's `sent_s`, as a new
    conversation (its history is not in this replica's cache)."""
    sel = np.flatnonzero(chosen == j)
    n = len(chosen)
    pred = np.full(n, -1, dtype=np.int64)
    has = info.succ >= 0
    pred[info.succ[has]] = np.flatnonzero(has)
    mine = chosen == j
    first_turn = np.arange(n) < info.n_first
    broken = (~first_turn) & (pred >= 0) & ~mine[np.maximum(pred, 0)]
    is_first = (first_turn | broken)[sel]
    sent_at = np.where(first_turn, arrival_s, np.where(broken, sent_s, np.inf))
    arr = sent_at[sel]
    firsts = sel[is_first][np.argsort(arr[is_first], kind="stable")]
    order = np.concatenate([firsts, sel[~is_first]])
    pos = np.full(n, -1, dtype=np.int64)
    pos[order] = np.arange(len(order))
    succ = info.succ[order]
    local = np.where(succ >= 0, pos[np.maximum(succ, 0)], -1)
    # a moved turn continues what this replica holds of its conversation (an earlier turn's
    # KV is a prefix of its prompt), else starts a new conversation here
    conv, cut, before = info.conv.tolist(), broken.tolist(), pred.tolist()  # (as lists: faster)
    conv_of = list(conv)
    top = max(conv) + 1
    here: dict[int, int] = {}  # conversation -> its id on this replica
    for i in sel[np.argsort(info.turn[sel], kind="stable")].tolist():
        c = conv[i]
        if cut[i]:
            conv_of[i] = here.get(c, top + i)
        elif before[i] >= 0:
            conv_of[i] = conv_of[before[i]]
        here[c] = conv_of[i]
    sub = info.reorder(order, np.asarray(conv_of, dtype=info.conv.dtype)[order], local, len(firsts))
    times = sent_at[order]
    return order, sub, times


def session_passes(w, replicas: int, router: str, simulate, passes: int) -> list:
    """The replicas' records (roofline.serving.sim.record.RunRecord) of workload `w` (with
    prefix info) under `router`: a first pass with affinity, then `passes` − 1 passes each
    routed on the last one's times. `simulate(order, info, arrival_s)` runs one replica."""
    info, n = w.prefix, w.n
    chosen = affinity(info, replicas)
    sent = np.asarray(w.arrival_s, dtype=float)
    # a replica's run depends only on its requests in order and their arrival times (split
    # derives its PrefixInfo from those): one dealt the same as in an earlier pass takes that run
    ran: dict[tuple[bytes, bytes], Any] = {}
    for k in range(passes):
        records = []
        sent_new, admitted, finish = np.zeros(n), np.zeros(n), np.zeros(n)
        for j in range(replicas):
            order, sub, times = split(info, chosen, j, sent, w.arrival_s)
            if not order.size:
                continue
            key = (order.astype(np.int64).tobytes(), np.asarray(times, dtype=float).tobytes())
            if key not in ran:
                ran[key] = simulate(order, sub, times)
            rec = ran[key]
            records.append(rec)
            sent_new[order], admitted[order] = rec.client_sent_s, rec.admitted_s
            finish[order] = rec.finish_s
        if k == passes - 1:
            return records
        sent = sent_new
        chosen = route(router, info, w.prompts, replicas, sent, admitted, finish)
    return []

"""Which replica of a fleet each request goes to: the router model every fleet figure rests on
(serve --dp N, size, check and the day planner evaluate a fleet through serve.run_replicas).

- round-robin: request i to replica i mod N (a plain load balancer's rotation; llm-d's and
  Kubernetes' simplest policy). Each replica sees every N-th arrival: the gaps of a Poisson
  stream summed N at a time, more regular than a Poisson stream at rate / N.
- least-loaded (the default): each request to the replica with the least 4 × waiting + running
  requests, ties to the lowest index. This is vLLM's data-parallel balancer, what a plain
  `vllm serve --data-parallel-size N` deployment gets (vllm/v1/engine/core_client.py,
  DPLBAsyncMPClient.get_core_engine_for_request: `score = waiting * 4 + running` over the
  engines' counts; llm-d's queue scorer prefers the shortest queue the same way). The counts
  at an arrival come from the previous pass's simulation of each request (admission and finish
  times), starting from round robin, LEAST_LOADED_PASSES passes in all; vLLM's counts are
  published every 100 ms, a staleness not modelled.

- affinity and cache-aware: prefix-aware routing of a workload with shared prefixes, turns or
  sessions (roofline.serving.sessionroute, where round robin and least-loaded also route such a
  workload turn by turn). Without prefixes affinity deals round robin and cache-aware routes
  least-loaded (nothing to match). A closed loop keeps its users' replica, round robin.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from roofline.domain.errors import InputError

ROUTERS = ("least-loaded", "round-robin", "affinity", "cache-aware")
DEFAULT_ROUTER = "least-loaded"
LEAST_LOADED_PASSES = 3  # round robin, then two least-loaded passes on the last one's times
WAITING_WEIGHT = 4  # vLLM's score: 4 × waiting + running
ROUTER_SOURCE = {
    "least-loaded": "vLLM's data-parallel balancer: the replica with the least 4 x waiting +"
    " running requests (vllm/v1/engine/core_client.py, DPLBAsyncMPClient)",
    "round-robin": "request i to replica i mod N",
    "affinity": "every turn of a session on one replica (session mod N: sticky sessions, llm-d's"
    " session affinity)",
    "cache-aware": "SGLang's router cache_aware policy: the replica whose prompt tree matches over"
    " 0.3 of the prompt unless the load is imbalanced (sgl-model-gateway router_args.py)",
}


def check_router(router: str) -> str:
    if router not in ROUTERS:
        raise InputError(f"--router must be one of {', '.join(ROUTERS)}, got {router}")
    return router


def round_robin(n: int, replicas: int) -> list[np.ndarray]:
    """Request indices per replica: i mod `replicas`."""
    return [np.arange(j, n, replicas) for j in range(replicas)]


def least_loaded(
    arrival_s: np.ndarray, admitted_s: np.ndarray, finish_s: np.ndarray, replicas: int
) -> list[np.ndarray]:
    """Request indices per replica, each request (in arrival order) to the replica with the
    least WAITING_WEIGHT × waiting + running requests at its arrival, a request counted waiting
    from its arrival to `admitted_s` and running to `finish_s` (the times a previous pass
    simulated for it), ties to the lowest index. The replicas are scanned in index order and the
    scan stops at an idle one (score 0: none after it can score less); a replica's queues are
    brought up to date when a later scan reaches it (the arrivals come in time order, so what
    it counts at t is the same)."""
    arr, adm, fin = arrival_s.tolist(), admitted_s.tolist(), finish_s.tolist()
    # per replica: (waiting, a heap of (admit, finish); running, a heap of finish times)
    queues: list[tuple[list[tuple[float, float]], list[float]]] = [
        ([], []) for _ in range(replicas)
    ]
    chosen = [0] * len(arr)
    for i in np.argsort(arrival_s, kind="stable").tolist():
        t = arr[i]
        best, best_score = 0, -1
        for j, (w, r) in enumerate(queues):
            while w and w[0][0] <= t:  # admitted since: now running until it finishes
                heapq.heappush(r, heapq.heappop(w)[1])
            while r and r[0] <= t:
                heapq.heappop(r)
            score = WAITING_WEIGHT * len(w) + len(r)
            if best_score < 0 or score < best_score:
                best, best_score = j, score
                if score == 0:
                    break
        chosen[i] = best
        heapq.heappush(queues[best][0], (adm[i], fin[i]))
    picks = np.asarray(chosen, dtype=np.int64)
    return [np.flatnonzero(picks == j) for j in range(replicas)]


def least_loaded_passes(
    n: int, arrival_s: np.ndarray, replicas: int, simulate: Callable[[np.ndarray], Any], passes: int
) -> list:
    """The replicas' runs (`simulate(sel)`: one replica's run of requests `sel`) of `n` requests
    routed least-loaded: round robin first, then `passes` − 1 passes each dealt by least_loaded
    on the last pass's admission and finish times. A replica's run depends only on the requests
    dealt to it, so one dealt the same requests as in an earlier pass (the router settled on it)
    takes that pass's run rather than simulating it again (the same run, bit for bit)."""
    ran: dict[bytes, Any] = {}

    def dealt(sel: np.ndarray) -> Any:
        key = sel.astype(np.int64).tobytes()
        if key not in ran:
            ran[key] = simulate(sel)
        return ran[key]

    sels = round_robin(n, replicas)
    for _ in range(passes - 1):
        records = [dealt(sel) for sel in sels]
        admitted, finish = np.empty(n), np.empty(n)
        for sel, rec in zip(sels, records, strict=True):
            admitted[sel], finish[sel] = rec.admitted_s, rec.finish_s
        sels = least_loaded(arrival_s, admitted, finish, replicas)
    return [dealt(sel) for sel in sels if sel.size]

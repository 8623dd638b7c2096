"""Issue 33, item 1: one evaluation path for a fleet, one named router (round robin, or
least-loaded as vLLM's data-parallel balancer) behind serve --dp N and size alike."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.router import least_loaded, least_loaded_passes, round_robin

B200 = ["--weights", "fp8", "--kv-dtype", "fp8", "--prompt", "2k", "--output", "500"]
SLO = ["--slo-ttft", "2s", "--slo-tpot", "50ms"]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 200), replicas=st.integers(1, 9), seed=st.integers(0, 99))
def test_routers_partition_the_requests(n, replicas, seed):
    """Every request goes to exactly one replica, under either router."""
    rng = np.random.default_rng(seed)
    a = np.cumsum(rng.exponential(1.0, n))
    adm = a + rng.exponential(0.1, n)
    fin = adm + rng.exponential(5.0, n)
    for sels in (round_robin(n, replicas), least_loaded(a, adm, fin, replicas)):
        assert len(sels) == replicas
        assert sorted(np.concatenate(sels).tolist()) == list(range(n))
    sizes = [len(s) for s in round_robin(n, replicas)]
    assert max(sizes) - min(sizes) <= 1  # i mod N: shares differ by at most one


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 120),
    replicas=st.integers(1, 6),
    seed=st.integers(0, 999),
    grid=st.booleans(),
)
def test_least_loaded_is_the_rule_counted_by_brute_force(n, replicas, seed, grid):
    """Each request to the replica with the least 4 × waiting + running, the counts taken at its
    arrival over the requests routed before it (waiting: admitted after the arrival; running:
    admitted by then, finishing after it), ties to the lowest index: the same choices as the
    router's heaps and its stop at an idle replica. `grid`: arrivals on a 0.5 s grid, so that
    arrivals, admissions and finishes tie."""
    rng = np.random.default_rng(seed)
    if grid:
        a = np.sort(rng.integers(0, 20, n)) / 2.0
        adm = a + rng.integers(0, 4, n) / 2.0
        fin = adm + rng.integers(0, 10, n) / 2.0
    else:
        a = np.cumsum(rng.exponential(1.0, n))
        adm = a + rng.exponential(rng.uniform(0.01, 3.0), n)
        fin = adm + rng.exponential(rng.uniform(0.1, 10.0), n)
    to = [-1] * n
    for i in np.argsort(a, kind="stable"):
        t = a[i]
        scores = [
            4 * sum(1 for k in range(n) if to[k] == j and adm[k] > t)
            + sum(1 for k in range(n) if to[k] == j and adm[k] <= t < fin[k])
            for j in range(replicas)
        ]
        to[i] = scores.index(min(scores))
    sels = least_loaded(a, adm, fin, replicas)
    assert [s.tolist() for s in sels] == [
        [i for i in range(n) if to[i] == j] for j in range(replicas)
    ]


def test_least_loaded_by_hand():
    """4 × waiting + running, ties to the lowest index (vLLM's DPLBAsyncMPClient):
    requests that never finish and are admitted at once: each goes to the replica running the
    fewest, so 0, 1, 2, 0, 1, 2 (round robin); requests that finish before the next arrives:
    every replica idle at each arrival, all to replica 0."""
    a = np.arange(6, dtype=float)
    sels = least_loaded(a, a, np.full(6, np.inf), 3)
    assert [s.tolist() for s in sels] == [[0, 3], [1, 4], [2, 5]]
    sels = least_loaded(a, a, a + 0.5, 3)
    assert [s.tolist() for s in sels] == [[0, 1, 2, 3, 4, 5], [], []]
    # a waiting request weighs 4: replica 0 holds one waiting (admitted at 10), replica 1 three
    # running; the next arrival goes to replica 1 (score 3 < 4)
    a = np.array([0.0, 0.1, 0.2, 0.3, 1.0])
    adm = np.array([10.0, 0.1, 0.2, 0.3, 1.0])
    fin = np.full(5, np.inf)
    sels = least_loaded(a, adm, fin, 2)
    # 0 -> r0 (tie); 1 -> r1 (r0 scores 4); 2 -> r1 (1 < 4); 3 -> r1 (2 < 4); 4 -> r1 (3 < 4)
    assert [s.tolist() for s in sels] == [[0], [1, 2, 3, 4]]


class _Run:
    """A fake replica run of requests `sel`: each waits `queue` s per request dealt before it on
    its replica (a queue that grows with the share), then runs 0.5 s."""

    def __init__(self, arrival: np.ndarray, sel: np.ndarray, queue: float) -> None:
        self.sel = sel.tolist()
        self.admitted_s = arrival[sel] + queue * np.arange(sel.size)
        self.finish_s = self.admitted_s + 0.5


def _passes_by_hand(n, arrival, replicas, simulate, passes):
    """The least-loaded passes without sharing a run (what serve.run_replicas did before)."""
    sels = round_robin(n, replicas)
    for _ in range(passes - 1):
        admitted, finish = np.empty(n), np.empty(n)
        for sel in sels:  # each replica run, every pass
            rec = simulate(sel)
            admitted[sel] = rec.admitted_s
            finish[sel] = rec.finish_s
        sels = least_loaded(arrival, admitted, finish, replicas)
    return [simulate(sel) for sel in sels if sel.size]


def test_a_replica_dealt_the_same_requests_again_is_not_run_again():
    """Six requests 1 s apart, each done in 0.5 s: every arrival finds both replicas idle, so
    least-loaded deals all six to replica 0 (ties to the lowest index) after round robin's
    [0, 2, 4] and [1, 3, 5]. Runs: 2 (round robin), then [0..5] and [] (pass 2), then [0..5]
    again (the last pass): 5 by hand without sharing, 4 with it, the same runs returned."""
    a = np.arange(6, dtype=float)
    calls: list[list[int]] = []

    def sim(sel):
        calls.append(sel.tolist())
        return _Run(a, sel, 0.0)

    got = least_loaded_passes(6, a, 2, sim, 3)
    assert [r.sel for r in got] == [[0, 1, 2, 3, 4, 5]]
    assert calls == [[0, 2, 4], [1, 3, 5], [0, 1, 2, 3, 4, 5], []]
    calls.clear()
    assert [r.sel for r in _passes_by_hand(6, a, 2, sim, 3)] == [[0, 1, 2, 3, 4, 5]]
    assert len(calls) == 5


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    replicas=st.integers(1, 5),
    queue=st.sampled_from([0.0, 0.3, 2.0]),
    passes=st.integers(1, 4),
    seed=st.integers(0, 99),
)
def test_sharing_runs_across_passes_returns_what_running_each_returns(
    n, replicas, queue, passes, seed
):
    """Whatever the load, the passes sharing a run give each replica the run its requests get
    run alone, and never run more than running each pass does."""
    a = np.cumsum(np.random.default_rng(seed).exponential(0.4, n))
    shared, alone = [], []
    got = least_loaded_passes(n, a, replicas, lambda s: shared.append(1) or _Run(a, s, queue),
                              passes)  # fmt: skip
    ref = _passes_by_hand(n, a, replicas, lambda s: alone.append(1) or _Run(a, s, queue), passes)
    assert [r.sel for r in got] == [r.sel for r in ref]
    for x, y in zip(got, ref, strict=True):
        assert x.admitted_s.tolist() == y.admitted_s.tolist()
    assert len(shared) <= len(alone)


def test_size_and_serve_dp_give_the_same_fleet_figures(run):
    """The issue's case: size answers n x B200 TP1 (5 with FP8 at its static scale); serve --dp n
    of the same fleet and traffic prints the same p99 TTFT, both naming the router."""
    size = run(
        "size", "llama-3.1-70b", "--rate", "20", "--hardware", "b200", *B200, *SLO,
        "--format", "json",
    ).json()  # fmt: skip
    best = size["best"]
    assert best["tp"] == 1 and best["router"] == size["inputs"]["router"] == "least-loaded"
    serve = run(
        "serve", "llama-3.1-70b", "b200", "--tp", "1", "--dp", str(best["replicas"]), *B200,
        "--rate", "20", *SLO, "--format", "json",
    ).json()  # fmt: skip
    assert serve["inputs"]["router"] == "least-loaded"
    assert serve["expected"]["ttft_s"]["p99"] == best["expected"]["ttft_s"]["p99"]
    assert serve["expected"]["tpot_s"]["p99"] == best["expected"]["tpot_s"]["p99"]
    # each replica's own figures; the fleet's p99 lies within theirs
    per = serve["expected"]["per_replica"]
    assert len(per) == best["replicas"] and sum(r["requests"] for r in per) == 1000
    p99s = [r["ttft_p99_s"] for r in per]
    assert min(p99s) <= serve["expected"]["ttft_s"]["p99"] <= max(p99s)
    rr = run(
        "serve", "llama-3.1-70b", "b200", "--tp", "1", "--dp", str(best["replicas"]), *B200,
        "--rate", "20", *SLO, "--router", "round-robin", "--format", "json",
    ).json()  # fmt: skip
    assert rr["inputs"]["router"] == "round-robin"
    # round robin hands the 1,000 requests out in turn: the first 1000 mod n replicas one more
    n = best["replicas"]
    q, extra = divmod(1000, n)
    assert [r["requests"] for r in rr["expected"]["per_replica"]] == [q + 1] * extra + [q] * (
        n - extra
    )


def test_unknown_router_is_bad_input(run):
    r = run("serve", "llama-3.1-8b", "h100", "--rate", "1", "--router", "random")
    assert r.code == 2 and "--router" in r.stderr and not r.stdout

"""Issue 33, item 1: one evaluation path for a fleet, one named router (round robin, or
least-loaded as vLLM's data-parallel balancer) behind serve --dp N and size alike."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.router import least_loaded, round_robin

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

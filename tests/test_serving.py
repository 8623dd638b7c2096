"""Serving under traffic: queueing physics checked against hand-derived results.

Little's law (Little 1961), the Pollaczek–Khinchine mean wait of an M/D/1 queue (Kleinrock,
Queueing Systems vol. 1, eq. 5.73: W = ρ·D / (2(1 − ρ))), the light-load limit (TTFT = one
prefill, TPOT = one batch-1 decode step), and unbounded growth past saturation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.engines.engine import engine
from roofline.serving.metrics import Slo, metrics, percentiles
from roofline.serving.search import replica_capacity
from roofline.serving.serve import Replica, make_replica, run_replicas, serve
from roofline.serving.sim.scheduler import EngineRules
from roofline.serving.workload import make_workload, with_rate, workload_from_trace
from roofline.step.ops import Deployment
from roofline.step.phases import decode, prefill

DEP = Deployment()


@pytest.fixture(scope="module")
def m8(cat):
    return cat.model("llama-3.1-8b"), cat.accelerator("h100")


@pytest.fixture(scope="module")
def rep(m8):
    m, hw = m8
    return make_replica(m, hw, DEP, engine("vllm"), 2048)


def test_light_load_ttft_is_one_prefill_and_tpot_one_batch1_step(m8, rep):
    m, hw = m8
    # 0.01 req/s: a request every 100 s on average, each served in well under a second, so
    # nobody queues and nobody shares a step: TTFT = prefill(1, 1000), TPOT = the mean batch-1
    # decode step from KV length 1001 over the 99 steps after the first token
    w = make_workload(1000, 100, rate=0.01, requests=100, seed=3)
    r = serve(rep, w, Slo(), capacity=replica_capacity(rep, w))
    for ideal, got in ((True, r.ideal), (False, r.expected)):
        p = prefill(m, hw, DEP, 1, 1000)
        d = decode(m, hw, DEP, 1, 1001, 99)
        # expected: + vLLM's request_latency_us = 19000 (hardware/engines.yaml), the API
        # server's path outside the engine; never in the ideal
        want_ttft = float(p.t_ideal_s if ideal else p.t_expected_s + 0.019)
        want_tpot = float(d.t_ideal_s if ideal else d.t_expected_s)
        assert got.ttft_s.p50 == pytest.approx(want_ttft, rel=1e-3)
        assert got.tpot_s.p50 == pytest.approx(want_tpot, rel=1e-3)
        # nobody waits for the engine: the queue starts where the API server hands the request
        # over (vLLM's api_request_us = 7,750 us is in TTFT above, not in the queue)
        assert got.queue_s.p50 == pytest.approx(0.0, abs=1e-9)


def test_littles_law_on_20000_requests(rep):
    # L = λ·W (Little 1961): the time-averaged number of requests in the system (queued +
    # admitted), integrated from the scheduler's state, against the offered rate × mean E2E
    rate = 20.0
    w = make_workload(1000, 100, rate=rate, requests=20_000, seed=1)
    m = metrics(run_replicas(rep, w, 1, ideal=False), Slo(), rep.gpus)
    assert m.mean_in_system == pytest.approx(rate * m.e2e_s.mean, rel=0.03)


def test_md1_queue_matches_pollaczek_khinchine(m8):
    m, hw = m8
    # one sequence at a time, fixed lengths: an M/D/1 queue with service time
    # D = prefill(1, 500) + 49 decode steps from KV length 501 (no chunking, no sharing)
    s, o = 500, 50
    rep = make_replica(
        m,
        hw,
        DEP,
        engine("vllm"),
        s + o,
        max_seqs=1,
        max_batched_tokens=None,
        chunked_prefill=False,
    )
    p = float(prefill(m, hw, DEP, 1, s).t_expected_s)
    d = float(decode(m, hw, DEP, 1, s + 1, o - 1).t_expected_s)
    service = p + (o - 1) * d
    rho = 0.7
    w = make_workload(s, o, rate=rho / service, requests=20_000, seed=7)
    got = metrics(run_replicas(rep, w, 1, ideal=False), Slo(), rep.gpus)
    wait = rho * service / (2 * (1 - rho))  # P-K mean wait in queue, M/D/1
    assert got.queue_s.mean == pytest.approx(wait, rel=0.06)
    assert got.e2e_s.p50 >= service * (1 - 1e-9)
    assert got.ttft_s.mean == pytest.approx(wait + p, rel=0.06)


def test_p99_ttft_grows_without_bound_past_saturation(rep):
    base = make_workload(1000, 100, rate=1.0, requests=1000, seed=2)
    sat = replica_capacity(rep, base).expected.requests_per_s
    assert 0 < sat < math.inf

    def p99(n: int, rate: float) -> float:
        w = make_workload(1000, 100, rate=rate, requests=n, seed=2)
        return metrics(run_replicas(rep, w, 1, False), Slo(), 1).ttft_s.p99

    # past saturation the queue grows linearly with time: twice the requests, about twice
    # the wait at the end; below it the wait is stationary
    assert p99(4000, 1.5 * sat) > 1.7 * p99(2000, 1.5 * sat)
    assert p99(4000, 0.5 * sat) < 1.3 * p99(2000, 0.5 * sat)


@settings(max_examples=15, deadline=None)
@given(
    rate=st.floats(0.5, 60.0),
    ttft=st.floats(0.01, 5.0),
    tpot=st.floats(0.002, 0.1),
    seed=st.integers(0, 100),
)
def test_goodput_never_exceeds_throughput(rep, rate, ttft, tpot, seed):
    w = make_workload(
        "uniform:low=50,high=1500", "uniform:low=1,high=300", rate=rate, requests=300, seed=seed
    )
    m = metrics(run_replicas(rep, w, 1, False), Slo(ttft, tpot), 1)
    assert 0 <= m.goodput_requests_per_s <= m.requests_per_s * (1 + 1e-12)
    assert 0 <= m.slo_attainment <= 1
    assert m.ttft_s.p50 <= m.ttft_s.p90 <= m.ttft_s.p99
    assert m.e2e_s.mean >= m.ttft_s.mean


def test_ideal_never_slower_than_expected(rep):
    w = make_workload(1000, 200, rate=5.0, requests=500, seed=0)
    r = serve(rep, w, Slo(), capacity=replica_capacity(rep, w))
    assert r.ideal.ttft_s.mean <= r.expected.ttft_s.mean
    assert r.ideal.tpot_s.mean <= r.expected.tpot_s.mean


def test_closed_loop_keeps_n_users_busy(rep):
    # N users with no think time: N requests in the system at all times (Little: N = X·E2E)
    w = make_workload(500, 50, concurrency=8, requests=400, seed=0)
    m = metrics(run_replicas(rep, w, 1, False), Slo(), 1)
    assert m.requests_per_s * m.e2e_s.mean == pytest.approx(8, rel=0.03)


def test_replicas_split_the_load(rep):
    w = make_workload(1000, 100, rate=40.0, requests=2000, seed=0)
    cap = replica_capacity(rep, w)
    one, four = serve(rep, w, Slo(), 1, capacity=cap), serve(rep, w, Slo(), 4, capacity=cap)
    assert four.expected.gpus == 4
    assert four.expected.ttft_s.p99 < one.expected.ttft_s.p99
    assert four.expected.requests_per_s == pytest.approx(40.0, rel=0.1)


def test_weighted_percentiles_by_hand():
    # values 1, 2, 3 with 10, 80, 10 gaps: the median gap is 2, p99 is 3, mean 2
    p = percentiles(np.array([1.0, 2.0, 3.0]), np.array([10.0, 80.0, 10.0]))
    assert (p.p50, p.p99, p.mean) == (2.0, 3.0, 2.0)


def test_workload_checks_before_allocating():
    with pytest.raises(InputError, match="--requests"):
        make_workload(100, 100, rate=1.0, requests=10**9)
    with pytest.raises(InputError, match="--rate"):
        make_workload(100, 100, rate=-1.0)
    with pytest.raises(InputError, match="--rate × --duration"):
        make_workload(100, 100, rate=1e6, duration_s=1e6)
    with pytest.raises(InputError, match="--rate"):
        make_workload(100, 100)
    with pytest.raises(InputError, match="--prompt"):
        make_workload(0, 100, rate=1.0)


def test_poisson_gaps_and_seed():
    w = make_workload(100, 10, rate=4.0, requests=20_000, seed=5)
    gaps = np.diff(w.arrival_s)
    assert gaps.mean() == pytest.approx(0.25, rel=0.03)  # exponential, mean 1/rate
    assert gaps.std() == pytest.approx(0.25, rel=0.05)  # and standard deviation 1/rate
    again = with_rate(w, 8.0, seed=5)
    assert np.allclose(again.arrival_s * 2, w.arrival_s)  # one seed, the same requests


def test_trace_records():
    w = workload_from_trace(
        [
            {"input_tokens": 10, "output_tokens": 5, "arrival_s": 2.0},
            {"input_tokens": 20, "output_tokens": 6, "arrival_s": 1.0},
        ]
    )
    assert w.prompts.tolist() == [20, 10] and w.arrival_s.tolist() == [0.0, 1.0]
    with pytest.raises(InputError, match="line 1: unknown key"):
        workload_from_trace([{"input_tokens": 1, "output_tokens": 1, "foo": 1}])
    with pytest.raises(InputError, match="line 2"):
        workload_from_trace(
            [
                {"input_tokens": 1, "output_tokens": 1, "arrival_s": 0},
                {"input_tokens": 1, "output_tokens": 1},
            ]
        )


def test_engine_rules_checked():
    with pytest.raises(InputError, match="token budget"):
        EngineRules(256, 100, 16, 128, True)
    with pytest.raises(InputError, match="preemption"):
        EngineRules(8, 100, 16, None, False, "drop")


def test_replica_is_a_frozen_bundle(rep):
    assert isinstance(rep, Replica) and rep.gpus == 1


@settings(max_examples=25, deadline=None)
@given(
    rate=st.floats(0.2, 200.0),
    max_seqs=st.integers(1, 64),
    budget_tokens=st.integers(2048, 40_000),
    chunked=st.booleans(),
    preemption=st.sampled_from(["recompute", "swap"]),
    seed=st.integers(0, 1000),
)
def test_every_request_is_served_in_causal_order(
    m8, rate, max_seqs, budget_tokens, chunked, preemption, seed
):
    # any rate, batch limit, KV budget (down to one long request) and policy: every request
    # arrives, is admitted, gets its first token and finishes, in that order, and the trace's
    # state integrals obey Little's law exactly over the run (L = Σ time in system / T)
    from roofline.serving.sim.scheduler import simulate_requests
    from roofline.serving.sim.steps import StepModel

    m, hw = m8
    steps = StepModel(m, hw, DEP, 64, 1200, ideal=False, max_tokens=2200)
    rules = EngineRules(
        max_seqs, budget_tokens // 16, 16, 2048 if chunked else None, chunked, preemption, 64e9
    )
    w = make_workload(
        "uniform:low=1,high=1000", "uniform:low=1,high=200", rate=rate, requests=120, seed=seed
    )
    tr = simulate_requests(steps, w.arrival_s, w.prompts, w.outputs, rules)
    a, adm, first, fin = tr.arrival_s, tr.admitted_s, tr.first_token_s, tr.finish_s
    assert np.all(np.isfinite(fin))
    assert np.all(a <= adm + 1e-12) and np.all(adm <= first + 1e-12)
    assert np.all(first <= fin + 1e-12)
    in_system = (tr.active_integral + tr.waiting_integral) / tr.makespan_s
    assert in_system == pytest.approx(np.sum(fin - a) / tr.makespan_s, rel=1e-6)


def test_admission_to_completion_never_preempts(m8):
    # 10 requests at t = 0, 160-token prompts and 160 output tokens, a budget of 100 blocks of 16
    # tokens. To completion (TensorRT-LLM's GUARANTEED_NO_EVICT) a request needs
    # ceil(320 / 16) = 20 blocks: 100 / 20 = 5 start at once, the 6th when the first ends, and
    # nothing is preempted. On the KV held now (vLLM) one needs ceil(161 / 16) = 11 blocks: 9
    # start (99 blocks), and their growth to 20 blocks each overflows the budget: preemptions.
    from roofline.serving.sim.scheduler import simulate_requests
    from roofline.serving.sim.steps import StepModel

    m, hw = m8
    steps = StepModel(m, hw, DEP, 16, 400, ideal=False, max_tokens=2600)
    zeros, lens = np.zeros(10), np.full(10, 160)
    runs = {
        rho: simulate_requests(
            steps, zeros, lens, lens, EngineRules(16, 100, 16, 2048, True, reserve_output=rho)
        )
        for rho in (1.0, 0.0)
    }
    whole = runs[1.0]
    assert whole.preemptions == 0
    assert np.sum(whole.admitted_s == 0.0) == 5
    assert whole.admitted_s[5] == pytest.approx(np.min(whole.finish_s))
    assert runs[0.0].preemptions > 0
    with pytest.raises(InputError, match="output share reserved"):
        EngineRules(8, 100, 16, None, False, reserve_output=1.5)


def test_queued_prompts_fill_every_steps_token_budget(m8):
    # four 1,000-token prompts queued at t = 0, a budget of 2,048 tokens a step (chunked, as
    # vLLM V1 and SGLang pack the waiting prompts first come first served). Step 1 carries
    # 2,048 prompt tokens: prompts 0 and 1 whole, 48 of prompt 2; it lasts lin(2048) + A(1000)
    # x 2 + A(48). Step 2 carries the two new decodes and the 952 + 1,000 tokens left of prompts
    # 2 and 3 (1,954 <= 2,048 - 2): both get their first token at its end.
    from roofline.serving.sim.scheduler import simulate_requests
    from roofline.serving.sim.steps import StepModel

    m, hw = m8
    steps = StepModel(m, hw, DEP, 8, 1200, ideal=False, max_tokens=2600)
    lens = np.full(4, 1000)
    tr = simulate_requests(
        steps, np.zeros(4), lens, np.full(4, 50), EngineRules(8, 10_000, 16, 2048, True)
    )
    t1 = steps.lin(2048) + steps.prefill_attention_s([0, 0, 0], [1000, 1000, 48])
    first = tr.first_token_s
    assert first[0] == pytest.approx(t1) and first[1] == pytest.approx(t1)
    assert first[2] == pytest.approx(first[3]) and first[2] > t1
    assert first[2] - t1 < 2 * t1  # one step more, not one per prompt


def test_output_reserve_sets_how_many_start_at_once(m8):
    # 10 requests at t = 0, 160-token prompts and 480 output tokens, 200 blocks of 16 tokens. A
    # newcomer holds ceil(161 / 16) = 11 blocks now and ρ x 479 / 16 more are held back for it:
    # ρ = 1 (TensorRT-LLM): its whole sequence, ceil(640 / 16) = 40 blocks, so 200 / 40 = 5
    # start; ρ = 0.7 (SGLang): 11 + 20.96 = 31.96, so 6 (6.26); ρ = 0 (vLLM): 11, so all 10.
    from roofline.serving.sim.scheduler import simulate_requests
    from roofline.serving.sim.steps import StepModel

    m, hw = m8
    steps = StepModel(m, hw, DEP, 16, 700, ideal=False, max_tokens=2800)
    zeros = np.zeros(10)
    started = {
        rho: int(
            np.sum(
                simulate_requests(
                    steps,
                    zeros,
                    np.full(10, 160),
                    np.full(10, 480),
                    EngineRules(16, 200, 16, 2048, True, reserve_output=rho),
                ).admitted_s
                == 0.0
            )
        )
        for rho in (1.0, 0.7, 0.0)
    }
    assert started == {1.0: 5, 0.7: 6, 0.0: 10}

"""The API server's queue (policy.Frontend request_s/token_s, apiserver.ApiQueue): values
derived by hand in the comments, and the single-server bound as a property."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.engines.engine import engine
from roofline.engines.scheduler import Frontend, frontend_costs
from roofline.serving.metrics import Slo, metrics
from roofline.serving.serve import make_replica, run_replicas
from roofline.serving.workload import Workload, make_workload
from roofline.step.ops import Deployment


@pytest.fixture(scope="module")
def rep_l4(cat):
    m, hw = cat.model("qwen2.5-0.5b"), cat.accelerator("nvidia-l4")
    return make_replica(m, hw, Deployment(), engine("vllm"), 256 + 128)


def _run(rep, users: int, n: int, front: Frontend, out: int = 128):
    w = make_workload(256, out, concurrency=users, requests=n)
    w = Workload(w.arrival_s, w.prompts, w.outputs, None, users, None, w.description)
    r = dataclasses.replace(rep, frontend=front)
    traces = run_replicas(r, w, 1, ideal=False)
    return traces[0], metrics(traces, Slo(), 1)


def test_one_user_waits_one_token_of_api_server_work(rep_l4):
    # one user: each step hands the API server one token, t = 1 ms of work, well under a step
    # (~6.5 ms), so nothing queues: the first token and the last reach the client t later than
    # without the cost; 1/throughput (one request per cycle) grows by the last token's t
    t = 1e-3
    _, a = _run(rep_l4, 1, 10, Frontend(0.01))
    _, b = _run(rep_l4, 1, 10, Frontend(0.01, 0.0, t))
    assert b.ttft_s.mean - a.ttft_s.mean == pytest.approx(t, rel=1e-6)
    assert 1 / b.requests_per_s - 1 / a.requests_per_s == pytest.approx(t, rel=1e-6)


def test_a_burst_reaches_the_engine_together_after_all_its_work(rep_l4):
    # 6 users send at t = 0; the API server takes r = 4 ms for each before the engine sees it,
    # one event loop shared by the six handlers (issue 34): all six reach the engine at 6r
    # = 24 ms, none at r, 2r, ... as one after another would have them
    r = 4e-3
    tr, _ = _run(rep_l4, 6, 6, Frontend(0.0, r, 0.0))
    assert tr.arrival_s == pytest.approx(np.full(6, 6 * r), rel=1e-12)
    assert tr.client_sent_s == pytest.approx(np.zeros(6))


def test_requests_sent_apart_reach_the_engine_one_after_another():
    # sent at 0, 1, 1, 10 ms with r = 4 ms: the first leaves at 4; the pair sent at 1 ms waits
    # for it and shares the loop, 4 + 2 x 4 = 12; the last, sent at 10, waits for them: 16
    from roofline.serving.sim.apiserver import ApiQueue

    arrival = np.array([0.0, 1e-3, 1e-3, 10e-3, np.inf])
    ApiQueue(Frontend(0.0, 4e-3, 0.0)).tokenize_sent(arrival, 4)
    assert arrival[:4] == pytest.approx([4e-3, 12e-3, 12e-3, 16e-3], rel=1e-12)
    assert arrival[4] == np.inf  # not yet sent: untouched


@settings(max_examples=30, deadline=None)
@given(
    sends=st.lists(st.integers(0, 5), min_size=1, max_size=12),
    r_us=st.floats(1.0, 20_000.0),
)
def test_the_api_server_never_parses_faster_than_one_loop(sends, r_us):
    # one event loop: no request reaches the engine before it is sent plus its own work, the
    # first k requests take at least k·r of the loop's time after the first send, and a later
    # send never reaches the engine before an earlier one (first come, first served)
    from roofline.serving.sim.apiserver import ApiQueue

    r = r_us * 1e-6
    sent = np.cumsum(np.asarray(sends, dtype=float) * 1e-3)
    arrival = sent.copy()
    ApiQueue(Frontend(0.0, r, 0.0)).tokenize_sent(arrival, len(arrival))
    assert np.all(arrival >= sent + r * (1 - 1e-12))
    k = np.arange(1, len(arrival) + 1)
    assert np.all(arrival >= sent[0] + k * r * (1 - 1e-12))
    assert np.all(np.diff(arrival) >= 0)


def test_a_burst_moves_every_first_token_by_its_parse_work(rep_l4):
    # 24 requests at once, r = 2 ms each: they reach the engine 24 r = 48 ms after t = 0, the
    # engine's run is the same run 48 ms later, and make_replica keeps the unloaded path (one
    # request's r comes out of the fixed latency): every TTFT grows by (24 - 1) r = 46 ms
    # (validation/fit_api_request.py reads a burst's TTFT at cost c as TTFT(0) + (N - 1) c)
    lat = 19e-3
    r = 2e-3
    _, a = _run(rep_l4, 24, 24, Frontend(lat, 0.0, 0.0), out=16)
    _, b = _run(rep_l4, 24, 24, Frontend(lat - r, r, 0.0), out=16)
    assert b.ttft_s.p50 - a.ttft_s.p50 == pytest.approx(23 * r, rel=1e-6)
    assert b.ttft_s.p99 - a.ttft_s.p99 == pytest.approx(23 * r, rel=1e-6)


def test_a_saturated_api_server_sets_the_throughput(rep_l4):
    # 64 users on a 0.5B model: the engine alone streams ~64 tokens per ~7 ms step (~9,000
    # tokens/s); an API server at 1 ms per token clears 1,000 tokens/s, so the closed loop
    # settles at its rate: output tokens/s within a few % of 1/t (the first round's fill and
    # the last round's drain stay under it)
    t = 1e-3
    _, fast = _run(rep_l4, 64, 640, Frontend(0.0))
    _, slow = _run(rep_l4, 64, 640, Frontend(0.0, 0.0, t))
    assert fast.output_tokens_per_s > 5 / t
    assert slow.output_tokens_per_s == pytest.approx(1 / t, rel=0.05)
    assert slow.output_tokens_per_s <= 1 / t * (1 + 1e-9)
    # the queue sits in front of the engine: each new request waits for the tokens ahead of it
    assert slow.ttft_s.p50 > 10 * fast.ttft_s.p50


@settings(max_examples=12, deadline=None)
@given(
    users=st.integers(1, 48),
    t_us=st.floats(50, 3000),
)
def test_the_client_never_receives_tokens_faster_than_one_server_clears_them(rep_l4, users, t_us):
    # one event loop: n tokens take at least n·t of its time, and the window from the first
    # send to the last token seen holds all of them (the first step's tokens come after t = 0)
    t = t_us * 1e-6
    _, m = _run(rep_l4, users, 2 * users, Frontend(0.0, 0.0, t), out=32)
    assert m.output_tokens_per_s <= (1 / t) * (1 + 1e-9)


def test_front_end_costs_per_engine_and_bad_input():
    from roofline.catalog.load import load_catalog

    engines = load_catalog().engines
    req, tok, fast = frontend_costs(engines["vllm"], "slow")
    # hardware/engines.yaml: vLLM 800 us per token on the slow path, 40 us on the fast one,
    # 7,750 us per request (validation/fit_api_request.py)
    assert (req, tok, fast) == pytest.approx((7750e-6, 800e-6, 40e-6))
    assert frontend_costs(engines["vllm"], "fast")[1] == pytest.approx(40e-6)
    assert frontend_costs(engines["trtllm"]) == (0.0, 0.0, 0.0)  # no figure: none modelled
    assert frontend_costs(None, "slow") == (0.0, 0.0, 0.0)
    with pytest.raises(InputError):
        frontend_costs(engines["vllm"], "medium")
    with pytest.raises(InputError):
        Frontend(0.0, -1.0, 0.0)
    with pytest.raises(InputError):
        Frontend(0.0, 0.0, float("nan"))


def test_the_calibrated_latency_keeps_the_unloaded_request(cat, rep_l4):
    # make_replica moves the fast path's one token out of the fixed latency into the queue:
    # an unloaded request sees latency + that token = vLLM's request_latency_us (19,000 us)
    f = rep_l4.frontend
    assert f.latency_s + f.request_s + f.token_s == pytest.approx(19e-3, rel=1e-12)
    m, hw = cat.model("qwen2.5-0.5b"), cat.accelerator("nvidia-l4")
    slow = make_replica(m, hw, Deployment(), engine("vllm"), 384, tokenizer="slow").frontend
    assert slow.latency_s == pytest.approx(f.latency_s) and slow.token_s == pytest.approx(0.8e-3)


def test_frontend_none_lifts_the_api_servers_token_cap(cat):
    # vLLM's API server spends c = api_token_fast_us = 40 us per streamed token (engines.yaml),
    # one event loop for every token: a replica behind it streams at most 1 / c = 25,000
    # tokens/s. Qwen2.5-0.5B on one H100 at 1,024 users decodes faster than that, so behind the
    # API server the rate sits at or below 25,000; with --frontend none (an offline harness) the
    # cap is gone and the same replica runs faster than 25,000.
    from roofline.engines.scheduler import with_frontend

    m, hw = cat.model("qwen2.5-0.5b"), cat.accelerator("h100")
    w = make_workload(64, 256, concurrency=1024, requests=2048)
    rates = {}
    for fe in ("api", "none"):
        rep = make_replica(m, hw, Deployment(), with_frontend(engine("vllm"), fe), 64 + 256)
        assert (rep.frontend.token_s == 0.0) == (fe == "none")
        rates[fe] = metrics(run_replicas(rep, w, 1, ideal=False), Slo(), 1).output_tokens_per_s
    assert rates["api"] <= 1 / 40e-6 * 1.001
    assert rates["none"] > 1 / 40e-6
    with pytest.raises(InputError, match="frontend must be api or none"):
        with_frontend(engine("vllm"), "http")

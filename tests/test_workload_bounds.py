"""Workload files' physics bounds (issue 37), as properties over drawn mixes on one small
replica (Llama-3.1-8B on one H100, light load, 60-240 sequences a run, so each example runs in a
fraction of a second): sharing the prompt never holds more KV nor computes more prefill than
sending the samples apart; the ideal figures (peak FLOP/s and bytes/s, no API server) are never
slower than the expected ones; a stable pool's steady-state figures (the offered rate and the
classes' own throughput) do not depend on how long the run was."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.engines.engine import engine
from roofline.serving.metrics import Slo
from roofline.serving.mix import mix_workload
from roofline.serving.mixcapacity import mix_capacity
from roofline.serving.search import replica_capacity
from roofline.serving.serve import make_replica, serve
from roofline.serving.workloadfile import parse_workload
from roofline.step.ops import Deployment

FAST = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def rep(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    return make_replica(m, hw, Deployment(), engine("vllm"), 8192)


def _mix(rate: float, *classes: dict):
    return parse_workload({"rate": rate, "classes": list(classes)}, "t")


@FAST
@given(
    prompt=st.integers(64, 2000), output=st.integers(8, 200), n=st.integers(2, 4),
    seed=st.integers(0, 1000),
)  # fmt: skip
def test_shared_prompt_never_holds_more_kv_than_independent(rep, prompt, output, n, seed):
    """The same arrivals and lengths, n samples sharing the prompt or sent apart: the shared
    run computes at most the independent run's prefill (the prompt's full blocks once, not n
    times) and holds at most its KV blocks, time-averaged over the same requests."""
    runs, computed = [], []
    for share in (True, False):
        c = {"name": "r", "prompt": prompt, "output": output, "n": n, "share_prompt": share}
        w = mix_workload(_mix(0.5, c), 60, seed)
        runs.append(serve(rep, w, Slo(), capacity=None).expected)
        px = runs[-1].prefix  # no cache (apart): every prompt token is computed
        computed.append(int(w.prompts.sum()) if px is None else px.prefill_tokens_computed)
    shared, apart = runs
    assert computed[0] <= computed[1]
    # occupancy × window = the KV blocks' time integral; the shared run's never exceeds it
    assert shared.kv_occupancy * shared.window_s <= apart.kv_occupancy * apart.window_s * 1.001


@FAST
@given(
    share=st.floats(0.2, 0.8), p_hi=st.integers(0, 5), seed=st.integers(0, 1000),
    prompts=st.tuples(st.integers(100, 3000), st.integers(100, 3000)),
)  # fmt: skip
def test_ideal_never_slower_than_expected(rep, share, p_hi, seed, prompts):
    """Two classes at light load (2 arrivals/s on a replica that serves tens): ideal steps
    are never longer than expected ones and carry no API-server path, so no class's TTFT or
    TPOT is worse at ideal, at the median or the tail."""
    mix = _mix(
        2.0,
        {"name": "a", "share": share, "prompt": prompts[0], "output": 64, "priority": 0},
        {"name": "b", "share": 1 - share, "prompt": prompts[1], "output": 128, "priority": p_hi},
    )
    r = serve(rep, mix_workload(mix, 80, seed), Slo(), capacity=None)
    for i, e in zip(r.ideal.per_class, r.expected.per_class, strict=True):
        for f in ("ttft_s", "tpot_s"):
            assert getattr(i, f).p50 <= getattr(e, f).p50
            assert getattr(i, f).p99 <= getattr(e, f).p99


@FAST
@given(share=st.floats(0.2, 0.8), seed=st.integers(0, 1000))
def test_steady_figures_do_not_depend_on_run_length(rep, share, seed):
    """A stable pool completes what is offered (flow conservation): its steady requests/s is
    the offered sequences/s at any run length, and each class's own output tokens/s is its
    offered sequences/s × its output (here 0.6 × share × 4 req/s × 100 tokens, say) within
    the rounding of its share of a short run's requests (a few percent at 120 sequences)."""
    mix = _mix(
        4.0,
        {"name": "a", "share": share, "prompt": 500, "output": 100},
        {"name": "b", "share": 1 - share, "prompt": 1000, "output": 50},
    )
    offered_tok = [4.0 * share * 100, 4.0 * (1 - share) * 50]
    for requests in (120, 240):
        w = mix_workload(mix, requests, seed)
        r = serve(rep, w, Slo(), capacity=replica_capacity(rep, w)).expected
        assert r.requests_per_s == pytest.approx(4.0, rel=1e-9)
        assert not r.unbounded
        for c, want in zip(r.per_class, offered_tok, strict=True):
            assert c.output_tokens_per_s == pytest.approx(want, rel=0.06)


def test_the_saturation_probe_credits_shared_kv(rep):
    """n = 4 samples of a 3,000-token prompt and 100-token answers: sharing computes the
    prompt once per arrival, not four times, so the replica saturates at more sequences/s
    shared than sent apart (serving.mixcapacity's probe runs the mix itself; the independent
    requests take search's). Below it, the shared mix's figures are a steady state: requests/s
    is the offered 4 × 0.5 = 2 sequences/s at 120 sequences or 240."""
    caps = []
    for share in (True, False):
        c = {"name": "r", "prompt": 3000, "output": 100, "n": 4, "share_prompt": share}
        w = mix_workload(_mix(0.5, c), 120, 0)
        caps.append(mix_capacity(rep, w).of(False).requests_per_s)
    assert caps[0] > caps[1]
    c = {"name": "r", "prompt": 3000, "output": 100, "n": 4}
    for requests in (120, 240):
        w = mix_workload(_mix(0.5, c), requests, 0)
        m = serve(rep, w, Slo(), capacity=mix_capacity(rep, w)).expected
        assert m.requests_per_s == pytest.approx(2.0) and not m.unbounded


@FAST
@given(share=st.floats(0.3, 0.7), seed=st.integers(0, 1000), p_other=st.sampled_from([0, 100]))
def test_a_class_is_never_better_off_in_a_loaded_pool(rep, share, seed, p_other):
    """Class a's requests, the same draws alone (an empty pool) and beside class b (a loaded
    one, b served after or alongside a): a's p99 TTFT and TPOT are never better in the loaded
    pool. The same draws: a class's lengths and arrivals come from its own seed over the span
    requests / sequences/s, so alone it is run with the requests of its share of the pool."""
    a = {"name": "a", "share": share, "prompt": 800, "output": 100, "priority": 0}
    b = {"name": "b", "share": 1 - share, "prompt": 3000, "output": 300, "priority": p_other}
    pool = _mix(16.0, a, b)
    both = serve(rep, mix_workload(pool, 400, seed), Slo(), capacity=None).expected
    alone_w = mix_workload(pool.only(0), round(400 * share), seed)
    alone = serve(rep, alone_w, Slo(), capacity=None).expected
    loaded, empty = both.per_class[0], alone.per_class[0]
    assert loaded.requests == empty.requests
    assert loaded.ttft_s.p99 >= empty.ttft_s.p99 * (1 - 1e-9)
    assert loaded.tpot_s.p99 >= empty.tpot_s.p99 * (1 - 1e-9)

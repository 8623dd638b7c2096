"""Issue 33, item 2: past the saturation rate, stationary arrivals have no steady state (no SLO
"yes", unbounded TTFT/queue/E2E, the run kept as a labelled transient, `check` fails); a
replay's percentiles stay its own; utilisation is the busy share of the replica's capacity."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.engines.engine import engine
from roofline.serving.metrics import Slo
from roofline.serving.search import replica_capacity
from roofline.serving.serve import make_replica, serve, steady_state
from roofline.serving.workload import make_workload, replayed
from roofline.step.ops import Deployment

SERVE = ["serve", "llama-3.1-8b", "h100", "--prompt", "1000", "--output", "200"]
SLO = ["--slo-ttft", "1s", "--slo-tpot", "50ms"]


def test_serve_past_saturation_meets_no_slo(run, compute_once):
    """The issue's case: 41.4 req/s on one H100 whose saturation is about 27.6 req/s, 300
    requests (a run too short for its queue to show). (compute_once: the JSON, the table and
    the page below render one simulation)"""
    doc = run(*SERVE, "--rate", "41.4", "--requests", "300", *SLO, "--format", "json").json()
    sat = doc["saturation_rate"]["expected"]
    assert sat < 41.4  # the premise: offered above what the replica sustains
    e = doc["expected"]
    assert e["meets_slo"] is False
    assert e["ttft_s"]["p99"] is None and e["e2e_s"]["p99"] is None
    assert e["queue_s"]["mean"] is None and e["mean_queue_length"] is None
    assert "saturation" in e["unbounded"]
    # every request's wait grows past any TTFT limit: no goodput in steady state
    assert e["slo_attainment"] == 0.0 and e["goodput_requests_per_s"] == 0.0
    # the replica completes its saturation rate, all of its capacity busy
    assert math.isclose(e["throughput"]["requests_per_s"], sat, rel_tol=1e-9)
    assert e["utilisation"] == 1.0
    # the short run's figures, labelled, finite
    tr = e["transient"]
    assert tr["requests"] == 300 and tr["ttft_s"]["p99"] > 0
    assert "not the deployment's" in tr["note"]
    table = run(*SERVE, "--rate", "41.4", "--requests", "300", *SLO).stdout
    assert "meets SLO       NO" in table and "unbounded" in table and "transient" in table


def test_serve_page_past_saturation(run, tmp_path, compute_once):
    """The HTML page of the same run: it crashed (a null p99 TTFT on the chart's axis); the
    answer, the headline figure and the chart's table say unbounded, and the SLO is not met."""
    page = tmp_path / "serve.html"
    r = run(*SERVE, "--rate", "41.4", "--requests", "300", *SLO, "-o", str(page))
    assert r.code == 0, r.stderr
    html = page.read_text()
    assert "p99 TTFT unbounded" in html and 'data-value="null">unbounded<' in html
    assert '<td class="t">unbounded</td>' in html  # the chart's table


def test_check_fails_past_saturation(run):
    args = ["check", "llama-3.1-8b", "h100", "--prompt", "1000", "--output", "200"]
    r = run(*args, "--rate", "41.4", "--requests", "300", "--max-ttft-p99", "1s")
    assert r.code == 1
    assert "unbounded" in r.stdout
    # below saturation (a third of it) the same check passes
    assert run(*args, "--rate", "9", "--requests", "300", "--max-ttft-p99", "1s").code == 0


def test_utilisation_is_the_busy_share_of_capacity(run, compute_once):
    """ρ = λ / μ: at 18 req/s against the saturation rate μ, utilisation = 18 / μ (below 1).
    The share of time a step runs is reported apart (continuous batching runs one whenever a
    request is in flight, so it reads near 1 well below saturation)."""
    doc = run(*SERVE, "--rate", "18", "--requests", "300", *SLO, "--format", "json").json()
    e, sat = doc["expected"], doc["saturation_rate"]["expected"]
    assert math.isclose(e["utilisation"], 18 / sat, rel_tol=1e-9)
    assert e["utilisation"] < 1
    assert 0 < e["step_share"] <= 1
    assert e["unbounded"] is None and "transient" not in e
    # the binding constraint is shown with the occupancy it was read at (the saturation's), not
    # beside the run's own KV occupancy alone
    kv = doc["saturation_rate"]["kv_occupancy"]["expected"]
    table = run(*SERVE, "--rate", "18", "--requests", "300", *SLO).stdout
    assert f"(at saturation: KV {kv:.0%}" in table


def test_replay_keeps_its_own_percentiles(cat):
    """A log's arrivals are not a stationary process: past the saturation rate its percentiles
    are the replay's own, finite."""
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    rep = make_replica(m, hw, Deployment(), engine("vllm", hw), 1300)
    w = make_workload(1000, 200, rate=60.0, requests=300, seed=0)
    log = replayed(w.arrival_s, w.prompts, w.outputs, "log", "fixed 1000", "fixed 200")
    cap = replica_capacity(rep, log)
    assert log.rate is not None and log.rate > cap.expected.requests_per_s
    slo = Slo(1.0, 0.05)
    res = serve(rep, log, slo, capacity=cap).expected
    assert np.isfinite(res.ttft_s.p99) and res.unbounded == "" and res.transient is None
    # the same requests as a Poisson process at that rate: unbounded
    poisson = serve(rep, w, slo, capacity=cap).expected
    assert math.isinf(poisson.ttft_s.p99) and not poisson.meets_slo


@settings(max_examples=40, deadline=None)
@given(
    offered=st.floats(0.1, 100.0),
    sat=st.floats(0.1, 100.0),
    ttft_slo=st.booleans(),
)
def test_steady_state_bounds(offered, sat, ttft_slo):
    """For any offered rate and saturation rate: no SLO is met at or past saturation, and only
    there are the percentiles unbounded; utilisation ≤ 1 and goodput ≤ requests/s always."""
    m = _METRICS
    slo = Slo(1.0 if ttft_slo else None, 0.05)
    stable = offered < sat
    s = steady_state(m, offered, lambda: (sat, sat * 200), stable, 200.0, 0.01, slo=slo,
                     saturation_rate=sat)  # fmt: skip
    assert s.utilisation is not None and 0 < s.utilisation <= 1
    assert s.goodput_requests_per_s <= s.requests_per_s + 1e-12
    assert s.requests_per_s == min(offered, sat) or (not stable and s.requests_per_s == sat)
    if stable:
        assert s.unbounded == "" and s.meets_slo == m.meets_slo
        assert math.isclose(s.utilisation, offered / sat)
    else:
        assert not s.meets_slo and math.isinf(s.ttft_s.p99) and s.transient is m
        assert s.tpot_s == m.tpot_s  # the running batch sits at its cap: TPOT stays finite
        assert (s.slo_attainment == 0.0) == ttft_slo or m.slo_attainment == 0.0


def _metrics():
    """One short run of a small replica at light load: a ServeMetrics to put in steady state."""
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    rep = make_replica(m, hw, Deployment(), engine("vllm", hw), 1300)
    w = make_workload(1000, 200, rate=1.0, requests=50, seed=0)
    return serve(rep, w, Slo(1.0, 0.05), capacity=None).expected


_METRICS = _metrics()

"""The SLO search's runs stop once their verdict is a miss (roofline.serving.sim.slostop): the
stop never changes a verdict or a rate the search finds."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.catalog.load import load_catalog
from roofline.engines.engine import engine
from roofline.serving.metrics import Slo, metrics
from roofline.serving.search import Missed, max_rate_within_slo, replica_capacity
from roofline.serving.serve import make_replica, run_replicas
from roofline.serving.sim.slostop import SloMissed, SloStop
from roofline.serving.workload import make_workload, with_rate
from roofline.step.ops import Deployment


def test_the_count_over_a_limit_that_fixes_a_percentile():
    # numpy's linear p99 of 5,000 values reads sorted indices 4949 and 4950 (0.99 x 4999 =
    # 4949.01): 5,000 - 4,949 = 51 values over the limit put it over; one more for the margin
    assert SloStop.of(None, 0.05, 99, 5000).over == 52
    # p90 of 1,000: index 899.1, so 1,000 - 899 + 1 = 102
    assert SloStop.of(2.0, None, 90, 1000).over == 102
    x = np.concatenate([np.zeros(4949), np.ones(51)])  # 51 values over 0.5: p99 is over it
    assert np.percentile(x, 99) > 0.5
    x[4949] = 0.0  # 50 over: p99 interpolates 1% of the way to the next, not over 0.5
    assert np.percentile(x, 99) <= 0.5


@pytest.fixture(scope="module")
def replica():
    cat = load_catalog()
    w = make_workload(1000, 200, rate=10.0, requests=600, seed=0)
    rep = make_replica(cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(),
                       engine("vllm"), 1200)  # fmt: skip
    return rep, w


@pytest.mark.parametrize("rate", [5.0, 20.0, 40.0, 80.0])
def test_a_stopped_run_is_a_run_that_misses(replica, rate):
    rep, w = replica
    slo = Slo(ttft_s=0.5, tpot_s=0.03)
    wl = with_rate(w, rate, 0)
    full = metrics(run_replicas(rep, wl, 1, False), slo, rep.gpus)
    try:
        rec = run_replicas(rep, wl, 1, False, stop=SloStop.of(0.5, 0.03, 99, wl.n))
    except SloMissed as miss:
        assert not full.meets_slo
        assert (full.slo_ttft_s > 0.5) if miss.metric == "TTFT" else (full.slo_tpot_s > 0.03)
    else:  # not stopped: the same run, to the bit
        assert metrics(rec, slo, rep.gpus) == full


def test_the_search_finds_the_same_rate_with_runs_stopped(replica, monkeypatch):
    """At p90 the search's runs are the workload's 600 requests (slo_requests: at least
    50 / (1 - 0.90) = 500), where p99 runs 5,000: the stop's count over a limit is the same rule
    at any percentile (the test above), and 600 requests already stop some runs (asserted)."""
    rep, w = replica
    cap = replica_capacity(rep, w)
    sat = cap.expected.requests_per_s
    slo, strict, loose = (Slo(t, p, 90.0) for t, p in ((0.3, 0.02), (0.2, 0.015), (1.0, 0.05)))
    memo: dict = {}
    stopped = max_rate_within_slo(rep, w, slo, sat, memo=memo)
    assert any(isinstance(v, Missed) for v in memo.values())  # some runs did stop
    # a stricter SLO reads those verdicts from the memo; a looser one runs them again
    tighter = max_rate_within_slo(rep, w, strict, sat, memo=memo)
    looser = max_rate_within_slo(rep, w, loose, sat, memo=memo)

    class Never:
        @staticmethod
        def of(*args):
            return None

    monkeypatch.setattr("roofline.serving.slosearch.SloStop", Never)
    assert max_rate_within_slo(rep, w, slo, sat) == stopped
    assert max_rate_within_slo(rep, w, strict, sat) == tighter
    assert max_rate_within_slo(rep, w, loose, sat) == looser

"""size's speed-ups give the answers of the plain computations they replace: the layouts'
static scoring read again rather than recomputed (candidates._plans), the pool shapes that cannot
win left unsearched (disagg.best_pools), size --disagg's pairs run beside its colocated search
(workers.Background)."""

from __future__ import annotations

import os

import pytest

import roofline.serving.candidates as cands
import roofline.serving.disagg as disagg
from roofline.catalog.load import load_catalog
from roofline.engines.engine import engine
from roofline.serving.kvtransfer import KvLink
from roofline.serving.metrics import Slo
from roofline.serving.serve import make_replica
from roofline.serving.workers import Background
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment

CAT = load_catalog()


def test_decode_pool_scoring_reads_the_colocated_scoring(monkeypatch):
    m, hw = CAT.models["llama-3.1-70b"], CAT.accelerator("h100")
    eng, base = engine("auto", hw), Deployment()
    cands._PLANS.clear()
    calls = []
    real = cands.evaluate
    monkeypatch.setattr(cands, "evaluate", lambda *a, **k: calls.append(1) or real(*a, **k))
    colo, n = cands.candidates(m, hw, base, eng, 2000, 500, 10.0, 0.05, 0.1, None)
    first = len(calls)
    assert first >= n > 0  # every layout whose weights fit was estimated once
    dec, n2 = cands.candidates(m, hw, base, eng, 2000, 500, 10.0, 0.05, 0.1, None,
                               decode_only=True)  # fmt: skip
    assert len(calls) == first  # the decode pool's scoring read the colocated one's
    cands._PLANS.clear()
    fresh, n3 = cands.candidates(m, hw, base, eng, 2000, 500, 10.0, 0.05, 0.1, None,
                                 decode_only=True)  # fmt: skip
    assert len(calls) == 2 * first and (n2, dec) == (n3, fresh)  # read = recomputed
    # a decode pool has no prefill bound; the colocated layouts do
    assert all(c.rate_bound == float("inf") for c in dec)
    assert all(c.rate_bound < float("inf") for c in colo)


def test_best_pools_skips_only_shapes_that_cannot_win(monkeypatch):
    # every shape searched (the plain loop: the first of the most capacity per GPU) against
    # best_pools, which skips a shape whose saturation per GPU is no more than the best found
    m, hw = CAT.models["llama-3.1-8b"], CAT.accelerator("h100")
    link = KvLink(CAT.tier("infiniband-ndr"))
    pre = make_replica(m, hw, Deployment(), engine("vllm"), 1200, chunked_prefill=False,
                       max_batched_tokens=8192)  # fmt: skip
    dec = make_replica(m, hw, Deployment(), engine("vllm"), 1200)
    w = make_workload(1000, 100, rate=20.0, requests=200, seed=0)
    slo = Slo(ttft_s=0.5, tpot_s=0.02, pct=90)
    searched = []
    real = disagg.max_rate_disaggregated
    monkeypatch.setattr(disagg, "max_rate_disaggregated",
                        lambda mo, p, *a: searched.append(p) or real(mo, p, *a))  # fmt: skip
    got = disagg.best_pools(m, pre, dec, link, w, slo, 1.3)
    sats = disagg.pool_saturations(pre, dec, w)
    plain = None
    shapes = sorted({(max(1, round(1.3 * nd)), nd) for nd in (1, 2, 3, 4)} | {(1, 1)})
    for n_p, n_d in shapes:
        pools = disagg.Pools(pre, dec, n_p, n_d, link)
        r = real(m, pools, w, slo, disagg.pools_capacity(pools, sats)[0])
        if plain is None or r / pools.gpus > plain[0]:
            plain = (r / pools.gpus, n_p, n_d, r)
    assert plain is not None
    assert (got.capacity_per_gpu, got.prefill_replicas, got.decode_replicas,
            got.max_rate_per_unit) == plain  # fmt: skip
    assert 1 <= len(searched) < len(shapes)  # at least one shape was left unsearched


def _pid_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_background_gives_the_items_results_in_order(monkeypatch, jobs):
    monkeypatch.setenv("ROOFLINE_JOBS", jobs)
    with Background(_pid_square, [3]) as one, Background(_pid_square, [1, 2, 3, 4]) as four:
        got1, got4 = one.result(), four.result()
    assert [y for _, y in got1] == [9] and [y for _, y in got4] == [1, 4, 9, 16]
    # two cores: even one item runs in a forked worker, beside this process; one core: here
    assert (got1[0][0] != os.getpid()) == (jobs == "2")
    with Background(lambda x: 1 // x, [0]) as bad, pytest.raises(ZeroDivisionError):
        bad.result()
    assert Background(_pid_square, []).result() == []


def test_chips_scored_side_by_side_are_what_each_is_alone(monkeypatch):
    monkeypatch.setenv("ROOFLINE_JOBS", "2")
    m, eng, base = CAT.models["llama-3.1-70b"], engine("vllm"), Deployment()
    chips = [CAT.accelerator("h100"), CAT.accelerator("b200")]
    cands._PLANS.clear()
    alone = [cands.candidates(m, hw, base, eng, 2000, 500, 10.0, 0.05, 0.1, None) for hw in chips]
    cands._PLANS.clear()
    cands.score_chips(m, chips, base, eng, 2000, 500, 0.05, None)  # in two forked workers
    calls = []
    monkeypatch.setattr(cands, "evaluate", lambda *a, **k: calls.append(1))
    kept = [cands.candidates(m, hw, base, eng, 2000, 500, 10.0, 0.05, 0.1, None) for hw in chips]
    assert not calls and kept == alone  # read from the workers' scoring, the same candidates

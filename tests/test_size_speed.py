"""size's speed-ups give the answers of the plain computations they replace: the layouts'
static scoring read again rather than recomputed (candidates._plans)."""

from __future__ import annotations

import roofline.serving.candidates as cands
from roofline.catalog.load import load_catalog
from roofline.engines.engine import engine
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

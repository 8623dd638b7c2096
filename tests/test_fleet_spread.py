"""roofline fleet --days N (issue 40): the spread over drawn days by hand on a one-model fleet,
the stated rate distribution recovered from the days, a day independent of where and in which
order it runs, the process pool's JSON equal byte for byte to one process's and to Ray's (a
local instance of 2 CPUs, its session files removed), bad --days/--backend (one line, exit 2)."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.fleet.day import HOURS, Problem
from roofline.fleet.placement import Pool
from roofline.fleet.runners import run
from roofline.fleet.spread import Shared, chip_sigma, draw, one_day, percentiles, prepare

ROOT = Path(__file__).resolve().parent.parent


def _one_model(rate: float = 36.0, kappa: float = 10.0, price: float = 2.0) -> Problem:
    """One model at a constant rate on on-demand H100s: 1 GPU per replica, `kappa` req/s each,
    no scale-up delay, no scale-down tail (so a day costs its GPU-hours x the price)."""
    return Problem(
        ("m",), np.full((1, HOURS), rate), np.ones(1, dtype=int), np.array([[kappa]]),
        np.ones((1, 1)), np.zeros((1, 1)), 0.1, (Pool("h100", "on-demand", price, None),), (),
    )  # fmt: skip


def _days(p: Problem, days, seed: int = 7, **kw) -> list:
    return run(prepare, one_day, Shared(p, seed), list(days), **kw)


def test_chip_sigma_by_hand():
    # hardware/bands.json, throughput, nvidia-datacenter: measured / expected in [0.37, 1.66]
    # for 90% of points; s = ln(1.66 / 0.37) / (2 x 1.645) = ln 4.486 / 3.2897
    # = 1.5011 / 3.2897 = 0.4563
    assert chip_sigma("h100", ()) == pytest.approx(0.4563, abs=1e-3)


def test_a_day_by_hand():
    # 36 req/s x m on 10 req/s replicas: each hour needs ceil(36 m (1 +- Poisson noise) / 10)
    # GPUs; the noise of 129,600 m requests an hour is ~0.3% (1 / sqrt(129600 m)), so within
    # 1% whole: the peak GPUs lie in [ceil(0.99 x 3.6 m), ceil(1.01 x 3.6 m)], GPU-h in 24 x
    # that range, and $/day = GPU-h x $2 (no delay, no tail, nothing owned)
    for d in _days(_one_model(), range(2)):
        lo, hi = (
            math.ceil(0.99 * 3.6 * d.rate_multiplier),
            math.ceil(1.01 * 3.6 * d.rate_multiplier),
        )
        assert lo <= d.peak_gpus <= hi
        assert 24 * lo <= d.gpu_hours <= 24 * hi
        assert d.cost == pytest.approx(2.0 * d.gpu_hours)
        assert 0.0 <= d.slo_attainment_min <= d.slo_attainment <= 1.0


def test_the_stated_spreads_are_drawn():
    # m = exp(0.15 z): over 400 days log m has mean 0 (SE 0.15 / 20 = 0.0075) and sd 0.15
    # (SE ~ 0.15 / sqrt(800) = 0.0053), 4 SE either side; the capacity factor f = exp(s z) with
    # s = 0.5961 (above): its 5th-95th percentiles span 1.99 / 0.28 = 7.1x, median 1
    p = _one_model(rate=1.0)
    drawn = [draw(p, 7, d, {"h100": 0.5961}) for d in range(400)]
    logs = np.log([m for m, _, _ in drawn])
    assert abs(logs.mean()) < 0.03 and abs(logs.std() - 0.15) < 0.022
    f = np.array([fac[0] for _, _, fac in drawn])
    assert abs(np.log(np.median(f))) < 0.12
    assert 5.0 < np.percentile(f, 95) / np.percentile(f, 5) < 10.0


@settings(max_examples=3, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=3, unique=True))
def test_a_day_is_its_own_seed(days):
    # a day's figures do not depend on the other days, their order or the worker
    p = _one_model(rate=3.0)
    alone = {d: _days(p, [d])[0] for d in days}
    together = _days(p, list(reversed(days)))
    assert [alone[d] for d in reversed(days)] == together
    q = percentiles(together)
    for v in q.values():
        assert v["p10"] <= v["p50"] <= v["p90"]


def _blas_threads(state, item) -> tuple[int, int, int]:
    from threadpoolctl import threadpool_info

    return item, state, max([p["num_threads"] for p in threadpool_info()] or [1])


def test_the_pool_prepares_once_and_caps_blas_at_one_thread_per_worker():
    # the pool is serving.workers' (forked); the state is prepared once, in this process, and
    # each worker's BLAS runs one thread whatever this process had
    import os

    from threadpoolctl import threadpool_limits

    made = []
    with threadpool_limits(limits=2):
        out = run(
            lambda s: made.append(os.getpid()) or s * 10, _blas_threads, 4, [0, 1, 2], workers=2
        )
    assert made == [os.getpid()]
    assert [(i, st) for i, st, _ in out] == [(0, 40), (1, 40), (2, 40)]
    assert all(n == 1 for _, _, n in out)


def _json(days: list) -> str:
    return json.dumps(
        {"answer": percentiles(days), "days": [vars(d) for d in days]}, sort_keys=True
    )


def test_pool_and_ray_give_the_same_json_byte_for_byte():
    import ray  # installed by `make test` (the ray extra): this test is never skipped

    p = _one_model(rate=3.0)
    one = _json(_days(p, range(2), workers=1))
    pool = _json(_days(p, range(2), workers=2))
    assert pool == one
    tmp = tempfile.mkdtemp(prefix="rlray")  # short: Ray's socket paths must stay < 108 chars
    try:
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=tmp, log_to_driver=False)
        try:
            on_ray = _json(_days(p, range(2), backend="ray", workers=2))
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert on_ray == pool
    assert not Path(tmp).exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--days", "0"], "--days must be"), (["--days", "2", "--backend", "spark"], "--backend")],
)
def test_bad_days_and_backend_one_line_exit_2(run_main, args, says):
    r = run_main("fleet", str(ROOT / "examples/fleet.yaml"), *args)  # the entry point, in-process
    assert r.code == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr


def test_the_spread_document_its_table_and_page(monkeypatch, capsys):
    from roofline.cli.fleetspread import spread_doc
    from roofline.cli.publish import html_page
    from roofline.render.fleetspread import spread_table

    monkeypatch.setenv("ROOFLINE_JOBS", "1")
    monkeypatch.setenv("COLUMNS", "80")
    # 3 req/s on 10 req/s replicas: one replica every hour of any day with m < 3.3 (by hand),
    # so one day's percentiles are all 1 GPU and 24 GPU-hours
    doc = spread_doc(_one_model(rate=3.0), 7, 1, "pool", (), "x.yaml")
    assert doc["answer"]["peak_gpus"] == {"p10": 1.0, "p50": 1.0, "p90": 1.0}
    assert doc["answer"]["gpu_hours"]["p50"] == 24.0
    spread_table(doc)
    out = capsys.readouterr().out
    assert "Percentiles over days" in out and "rate_sigma=0.15" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "p90 peak GPUs" in html_page(doc)


def test_native_prints_during_placement_reach_stderr_not_stdout(capfd):
    """HiGHS (scipy's milp) printf()s notes such as "HighsMipSolverData::
    transformNewIntegerFeasibleSolution tmpSolver.run();" to file descriptor 1 itself, which
    once put that line before `fleet --days 100 --format json`'s document (exit 0, no JSON):
    under the guard the CLI puts round the solver such a write lands on stderr, and stdout
    works again after it."""
    import os

    from roofline.cli.startup import native_stdout_to_stderr

    with native_stdout_to_stderr():
        os.write(1, b"native note\n")
    os.write(1, b"result\n")
    out, err = capfd.readouterr()
    assert (out, err) == ("result\n", "native note\n")

"""Sharing GPUs applied to the fleet's placement (issue 39 item 3): two models on one GPU (their
time shares summed), an idle model asleep and woken in its wake time, and a LoRA model's
adapter slots taken from the KV budget (item 2), each by hand; the properties: sharing never
costs more than not sharing, no hour's placement exceeds the GPUs available."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog
from roofline.engines.engine import engine
from roofline.fleet.day import HOURS, Problem, gpus_per_hour, plan
from roofline.fleet.fleetfile import read_fleet
from roofline.fleet.placement import Pool, Share, place
from roofline.fleet.sizing import deployment
from roofline.step.memory import plan_memory

ROOT = Path(__file__).resolve().parent.parent
OWNED_1 = Pool("h100", "owned", 0.0, 1)
RENT = Pool("h100", "on-demand", 2.0, None)


def _share(ka: float, kb: float, n_p: int = 2) -> Share:
    return Share(0, 1, np.full(n_p, ka), np.full(n_p, kb), np.ones(n_p))


def test_two_models_share_one_owned_gpu_by_hand():
    # two models at 1 req/s each; a whole H100 serves 4 req/s of either (kappa), half of one
    # (kappa', the engine's memory halved) 2 req/s. One owned H100, more at $2/h on demand.
    # Apart: each needs ceil(1 / 4) = 1 replica of 1 GPU; the owned GPU takes one, the other is
    # rented: $2 for the hour. Shared: 1 / 2 + 1 / 2 = 1 <= 1 replica's time, one shared
    # replica on the owned GPU: $0, no rented GPU.
    rates, mins = np.array([1.0, 1.0]), np.array([1, 1])
    kappa, gpus = np.full((2, 2), 4.0), np.ones((2, 2))
    alone = place(rates, mins, kappa, gpus, [OWNED_1, RENT])
    assert alone.cost == pytest.approx(2.0) and alone.shared == ()
    both = place(rates, mins, kappa, gpus, [OWNED_1, RENT], (_share(2.0, 2.0),))
    assert both.cost == 0.0 and both.replicas == ((0, 0), (0, 0))
    assert both.shared == ((1, 0),)
    (ua, ub), _ = both.shared_rates[0]
    assert ua == pytest.approx(1.0) and ub == pytest.approx(1.0)
    # at 1.5 req/s each the time shares sum to 1.5: one shared replica is not enough, and two
    # do not fit the one owned GPU; one model on its own rented GPU and the other on the owned
    # one cost $2 as apart does (the placement never pays more with sharing on offer)
    more = place(rates * 1.5, mins, kappa, gpus, [OWNED_1, RENT], (_share(2.0, 2.0),))
    assert more.cost == pytest.approx(2.0)


def _problem(rates, kappa, gpus, pools, shared=(), mins=None, **kw) -> Problem:
    n_m = kappa.shape[0]
    owned = [p for p in pools if p.kind == "owned"]
    return Problem(
        tuple(f"m{i}" for i in range(n_m)), rates,
        np.ones(n_m, dtype=int) if mins is None else mins, kappa, gpus, np.zeros_like(kappa),
        0.1, tuple(pools), tuple([0.0] * len(owned)), shared=shared, **kw,
    )  # fmt: skip


cases = st.tuples(
    st.lists(
        st.lists(st.sampled_from([0.0, 0.5, 1.5, 6.0]), min_size=HOURS, max_size=HOURS),
        min_size=3,
        max_size=3,
    ),
    st.lists(st.sampled_from([2.0, 4.0, 9.0]), min_size=3, max_size=3),
    st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=3, max_size=3),
    st.integers(0, 4),
    st.sampled_from([None, 2, 6]),
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_sharing_never_costs_more_and_no_hour_exceeds_the_gpus(args):
    rates, kappa, half, owned, limit = args
    pools = [Pool("h100", "owned", 0.0, owned), Pool("h200", "on-demand", 4.5, limit)]
    k = np.array([[kk, kk * 1.5] for kk in kappa])
    g = np.ones((3, 2))
    shared = tuple(
        Share(a, b, np.array([half[a], half[a] * 1.5]), np.array([half[b], half[b] * 1.5]),
              np.ones(2))
        for a, b in ((0, 1), (0, 2), (1, 2))
    )  # fmt: skip
    base = _problem(np.array(rates), k, g, pools)
    with_share = replace(base, shared=shared)
    d0, d1 = plan(base), plan(with_share)
    # sharing never costs more than not sharing, hour by hour and over the day (the same
    # shortfalls or fewer: z = 0 is the placement without sharing)
    for h0, h1 in zip(d0.hours, d1.hours, strict=True):
        assert sum(h1.short) <= sum(h0.short) + 1e-6
        if sum(h0.short) == 0 and sum(h1.below_min) == sum(h0.below_min):
            assert h1.cost <= h0.cost + 1e-6
    if not d0.short_hours.any():
        assert d1.total_cost <= d0.total_cost + 1e-6
    # no hour's placement exceeds the GPUs available: shared replicas counted once
    total = gpus_per_hour(with_share, d1.hours)
    for h, hr in enumerate(d1.hours):
        x, z = np.array(hr.replicas), np.array(hr.shared)
        assert (x[:, 0] * g[:, 0]).sum() + z[:, 0].sum() <= owned
        if limit is not None:
            assert (x[:, 1] * g[:, 1]).sum() + z[:, 1].sum() <= limit
        assert total[h] == (x * g).sum() + z.sum()
        # each model's rate is served (its own replicas plus what shared ones give it), or short
        served = (x * k).sum(axis=1)
        u = np.array(hr.shared_rates)  # [pair, pool, (a, b)]
        for i, sh in enumerate(shared):
            served[sh.a] += u[i, :, 0].sum()
            served[sh.b] += u[i, :, 1].sum()
            # a shared replica's time: u_a / kappa'_a + u_b / kappa'_b <= z on each pool
            assert np.all(u[i, :, 0] / sh.kappa_a + u[i, :, 1] / sh.kappa_b <= z[i] + 1e-5)
        # (a shortfall within 1e-5 of the rate is none: placement._small, HiGHS's tolerance)
        r = np.array(rates)[:, h]
        assert np.all(served + np.array(hr.short) >= r - 1e-5 * np.maximum(1.0, r))


def test_an_idle_model_sleeps_and_wakes_in_its_wake_time_by_hand():
    # one model on 2 owned GPUs per replica, 5 req/s per replica, min_replicas 1, busy 6-23 at
    # 4 req/s and idle 0-5. Awake all day: 1 replica x 2 GPUs x 24 h = 48 GPU-h. Asleep in the
    # 6 idle hours: 2 x 18 = 36 GPU-h. Reactive scaling: at 6:00 the replica is woken on the
    # owned GPUs it slept on in its wake time (3 s, not the 120 s cold start): 4 req/s x 3 s =
    # 12 requests of the day's 4 x 3600 x 18 = 259,200 miss the SLO.
    rates = np.array([[0.0] * 6 + [4.0] * 18])
    pools = [Pool("h100", "owned", 0.0, 8)]
    awake = _problem(rates, np.array([[5.0]]), np.array([[2.0]]), pools, policy="reactive")
    awake = replace(awake, delay_s=np.array([[120.0]]))
    d0 = plan(awake)
    assert d0.gpu_hours[0] == 48.0 and d0.slo_attainment[0] == 1.0
    asleep = replace(awake, sleeps=(True,), wake_s=np.array([[3.0]]))
    d1 = plan(asleep)
    assert d1.gpu_hours[0] == 36.0 and d1.asleep_hours[0] == 6 and d1.wakes[0] == 1
    assert d1.slo_attainment[0] == pytest.approx(1 - 12 / 259_200)
    # a model that may not sleep (sleep: false) scaled to 0 by min_replicas 0 pays the cold
    # start instead: 4 x 120 = 480 requests
    cold = replace(awake, min_replicas=np.array([0]))
    assert plan(cold).slo_attainment[0] == pytest.approx(1 - 480 / 259_200)


def test_lora_slots_come_out_of_the_kv_budget_by_hand():
    # examples/fleet.yaml's coder: Qwen3-32B with 20 adapters of rank 16, vLLM on an H100. One
    # adapter: rank 16 x 131,072 (in + out per layer, tests/test_fleet_sharing.py) x 64 layers
    # x 2 B = 268,435,456 B; vLLM allocates max_loras (20) x max_lora_rank (16) of them before
    # sizing the KV cache: 20 x 268,435,456 = 5,368,709,120 B less KV on each GPU (TP 1).
    spec = next(m for m in read_fleet(ROOT / "examples/fleet.yaml").models if m.name == "coder-32b")
    cat = load_catalog()
    model, hw = cat.model(spec.model), cat.accelerator("h100")
    dep = deployment(spec, model)  # TP 1, the 20 slots at rank 16
    eng = engine("vllm", hw)
    plain = plan_memory(model, hw, replace(dep, lora_slots=0), eng).kv_budget_bytes
    assert plain - plan_memory(model, hw, dep, eng).kv_budget_bytes == pytest.approx(5_368_709_120)
    # slots: 4 keeps 4 adapters on the GPU: 4 x 268,435,456 = 1,073,741,824 B
    four = replace(spec, lora=replace(spec.lora, slots=4))
    assert plain - plan_memory(
        model, hw, deployment(four, model), eng
    ).kv_budget_bytes == pytest.approx(1_073_741_824)


def test_the_placement_cell_shows_shared_and_asleep():
    # pool A owned, B rented; m1 has 2 replicas of its own on A and one shared with m2 on B;
    # m3 sleeps this hour: "2A+1B~" for m1, "1B~" for m2, "z" for m3
    from roofline.render.fleet import hour_cell

    doc = {"inputs": {"pools": [{"pool": "h100 owned"}, {"pool": "h200 on-demand"}]}}
    hour = {
        "placements": [
            {"model": "m1", "pool": "h100 owned", "replicas": 2, "gpus": 2},
            {"model": "m1 + m2", "pool": "h200 on-demand", "replicas": 1, "gpus": 1,
             "shared": ["m1", "m2"], "rates": [1.0, 0.5], "owned": False},
        ],
        "short": [],
        "asleep": ["m3"],
    }  # fmt: skip
    assert hour_cell(doc, hour, "m1") == "2A+1B~"
    assert hour_cell(doc, hour, "m2") == "1B~"
    assert hour_cell(doc, hour, "m3") == "z"


def test_on_owned_gpus_sharing_takes_the_fewest_gpus():
    # two models at 1 req/s on 4 owned H100s (marginal cost 0 either way): apart they take 2
    # GPUs (a replica each, kappa 4), shared one (1 / 2 + 1 / 2 = 1 replica's time, kappa' 2):
    # among equal costs the placement takes the fewest GPUs, the shared replica
    pools = [Pool("h100", "owned", 0.0, 4)]
    k, g = np.full((2, 1), 4.0), np.ones((2, 1))
    hour = place(np.array([1.0, 1.0]), np.array([1, 1]), k, g, pools, (_share(2.0, 2.0, 1),))
    assert hour.replicas == ((0,), (0,)) and hour.shared == ((1,),)


def test_a_cached_sizing_is_stale_once_the_bands_change(tmp_path):
    """The fleet's sizings are cached across runs, keyed on the code and the catalogs; the
    catalogs' .json (hardware/bands.json: the error bands size prints) was left out of the key,
    so docs regenerated after the bands moved quoted a fleet sized on the old ones."""
    from roofline.fleet.sizing import _key

    (tmp_path / "bands.json").write_text("{}")
    item = ("spec", "h100", 1000, 0, 0.1, None, False, (str(tmp_path),))
    before = _key(item)
    (tmp_path / "bands.json").write_text('{"margin": 0.1}')
    assert before is not None and _key(item) != before

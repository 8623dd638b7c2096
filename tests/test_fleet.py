"""roofline fleet (issue 39): the hourly placement by hand, its properties (owned first, no pool
over its GPUs, pooling never dearer than sizing apart), a fleet of one equal to `size`, bad
fleet files (one line, exit 2) and the table at 80 columns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.fleet.day import HOURS, Problem, apart, owned_first_violations, plan
from roofline.fleet.placement import Pool, place

ROOT = Path(__file__).resolve().parent.parent
H100_OWNED = Pool("h100", "owned", 0.0, 16)
B200_OD = Pool("b200", "on-demand", 6.89, None)


def test_one_hour_by_hand():
    # one model, 10 req/s per 1-GPU replica on owned H100s, 30 on a rented B200 at $6.89:
    # 100 req/s -> 10 owned replicas, nothing rented; 200 req/s -> the 16 owned hold 160, so
    # ceil(40 / 30) = 2 B200s are rented ($13.78 for the hour), and with their 60 req/s
    # ceil(140 / 10) = 14 owned replicas suffice (fewer GPUs at the same cost)
    k, g = np.array([[10.0, 30.0]]), np.ones((1, 2))
    low = place(np.array([100.0]), np.array([1]), k, g, [H100_OWNED, B200_OD])
    assert low.replicas == ((10, 0),) and low.cost == 0.0
    high = place(np.array([200.0]), np.array([1]), k, g, [H100_OWNED, B200_OD])
    assert high.replicas == ((14, 2),) and high.cost == pytest.approx(2 * 6.89)
    # a limit the rate cannot fit: the shortfall is reported, not hidden
    capped = place(
        np.array([300.0]), np.array([1]), k, g, [H100_OWNED, Pool("b200", "on-demand", 6.89, 2)]
    )
    assert capped.replicas == ((16, 2),) and capped.short[0] == pytest.approx(300 - 160 - 60)


def _problem(rates, kappa, gpus, pools, owned_usd=None):
    n_m = kappa.shape[0]
    owned = [p for p in pools if p.kind == "owned"]
    return Problem(
        tuple(f"m{i}" for i in range(n_m)), rates, np.ones(n_m, dtype=int), kappa, gpus,
        np.zeros_like(kappa), 0.1, tuple(pools), tuple(owned_usd or [0.0] * len(owned)),
    )  # fmt: skip


fleets = st.integers(1, 3).flatmap(
    lambda n_m: st.tuples(
        st.lists(
            st.lists(st.sampled_from([0.0, 3.5, 17.0, 40.0]), min_size=HOURS, max_size=HOURS),
            min_size=n_m,
            max_size=n_m,
        ),
        st.lists(
            st.lists(st.sampled_from([0.0, 2.0, 5.0, 11.0]), min_size=3, max_size=3),
            min_size=n_m,
            max_size=n_m,
        ),
        st.lists(
            st.lists(st.sampled_from([1, 2, 4]), min_size=3, max_size=3), min_size=n_m, max_size=n_m
        ),
        st.integers(0, 12),
        st.sampled_from([None, 8, 24]),
    )
)


def _build(args):
    rates, kappa, gpus, owned, limit = args
    k = np.array(kappa)
    k[:, 1] = np.maximum(k[:, 1], 1.0)  # every model runs on some rented type
    pools = [Pool("h100", "owned", 0.0, owned), Pool("h200", "on-demand", 4.5, limit),
             Pool("h200", "spot", 2.5, limit, 0.05)]  # fmt: skip
    return _problem(np.array(rates), k, np.array(gpus, dtype=float), pools)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets)
def test_placement_properties(args):
    p = _build(args)
    day = plan(p)
    for h, hour in enumerate(day.hours):
        x = np.array(hour.replicas)
        used = x * p.gpus
        # no hour's placement exceeds the GPUs available: owned counts, rented limits
        assert used[:, 0].sum() <= p.pools[0].limit
        if p.pools[1].limit is not None:
            assert used[:, 1:].sum() <= p.pools[1].limit
        # each model's rate is served, or its shortfall said
        served = (x * p.kappa).sum(axis=1)
        assert np.all(served + np.array(hour.short) >= p.rates[:, h] - 1e-6)
        # owned first: no rented replica while idle owned GPUs could take its work
        assert owned_first_violations(p, hour, h) == []
    # pooling never costs more than sizing apart (zero delays: the hours are the whole cost)
    sep = apart(p)
    if sep.cost is not None and p.pools[1].limit is None:
        assert day.total_cost <= sep.cost + 1e-6
        assert sep.cost <= sep.static_cost + 1e-6  # autoscaled apart <= static peaks apart


@settings(max_examples=6, deadline=None)
@given(st.floats(0.5, 200), st.lists(st.floats(0.5, 50), min_size=3, max_size=3),
       st.lists(st.sampled_from([1, 2, 4, 8]), min_size=3, max_size=3))  # fmt: skip
def test_fleet_of_one_is_the_cheapest_single_chip(rate, kappa, gpus):
    # one model at a constant rate, rented only: each hour is the cheapest chip's
    # ceil(rate / kappa) replicas, as size ranks its deployments (cost, then GPUs)
    prices = [4.5, 6.89, 1.85]
    pools = [Pool(c, "on-demand", pr, None) for c, pr in zip("abc", prices, strict=True)]
    p = _problem(np.full((1, HOURS), rate), np.array([kappa]), np.array([gpus], float), pools)
    need = [math.ceil(rate / k * (1 - 1e-12)) for k in kappa]
    best = min(range(3), key=lambda j: (need[j] * gpus[j] * prices[j], need[j] * gpus[j]))
    hour = plan(p).hours[0]
    assert hour.replicas[0][best] == need[best] and sum(hour.replicas[0]) == need[best]


ONE = (ROOT / "examples/fleet-one.yaml").read_text()


def test_fleet_of_one_equals_size():
    """A fleet of one model at a constant rate on rented chips (examples/fleet-one.yaml) is
    `size`'s answer: the same chip, layout, GPUs and p99 TTFT and TPOT. docs/COMMANDS.md shows
    the two side by side and asserts the same: read through docgen.data, the session runs each
    command once."""
    from docs.docgen import data

    fl = data("roofline fleet examples/fleet-one.yaml")
    best = data(
        "roofline size llama-3.1-8b --hardware h100,b200 --weights fp8 --rate 30 --prompt 1k"
        " --output 200 --slo-ttft 1s --slo-tpot 50ms --slo-pct 90 --requests 100"
    )["best"]
    m = fl["models"][0]
    d = m["deployment"]
    assert (d["hardware"], d["layout"]) == (best["hardware"], best["layout"])
    assert m["gpu_hours_per_day"] == best["gpus"] * 24
    assert d["ttft_p99_s"] == best["expected"]["ttft_s"]["p99"]
    assert d["tpot_p99_s"] == best["expected"]["tpot_s"]["p99"]
    assert fl["hours"][5]["placements"][0]["replicas"] == best["replicas"]


@pytest.mark.parametrize(
    "text, says",
    [
        ("models: [{model: llama-3.1-8b, rate: 1, colour: red}]\nhardware: {rent: [{type: h100}]}",
         "models[0] (llama-3.1-8b): unknown key 'colour'"),
        ("models: [{model: llama-3.1-8b, hourly: [1, 2]}]\nhardware: {rent: [{type: h100}]}",
         "models[0] (llama-3.1-8b).hourly: expected a list of 24"),
        ("models: [{model: llama-3.1-8b, rate: 1}]\nhardware: {owned: [{type: h100, count: -1}]}",
         "hardware.owned[0].count: must be from 1"),
        ("models: [{model: llama-3.1-8b, rate: 1}]\nhardware: {rent: [{type: h999}]}",
         "hardware.rent (h999)"),
        ("models: [{model: nosuch-model, rate: 1}]\nhardware: {rent: [{type: h100}]}",
         "nosuch-model"),
        ("models: [{model: llama-3.1-8b, rate: 1, lora: {adapters: 2, throughput_cost: 0.2}}]\n"
         "hardware: {rent: [{type: h100}]}", "lora.throughput_cost: give its source"),
        ("models: [{model: llama-3.1-8b, rate: 1, lora: {adapters: 2, popularity: zip}}]\n"
         "hardware: {rent: [{type: h100}]}", "lora.popularity: one of uniform, zipf, got 'zip'"),
    ],
)  # fmt: skip
def test_bad_fleet_file_is_one_line(run_main, tmp_path, text, says):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    r = run_main("fleet", str(f))
    assert r.code == 2 and r.stdout == ""
    assert says in r.stderr and str(f) in r.stderr and r.stderr.count("\n") <= 2, r.stderr


def test_table_at_80_columns_hides_nothing(run, tmp_path, monkeypatch, compute_once):
    # (compute_once: the JSON, the table and the page print one placement)
    f = tmp_path / "one.yaml"
    f.write_text(ONE)
    doc = run("fleet", str(f), "--format", "json").json()
    monkeypatch.setenv("COLUMNS", "80")
    r = run("fleet", str(f), env={"COLUMNS": "80"})
    assert r.code == 0
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    text = " ".join(r.stdout.split())
    assert "pooling gain = " in text and "owned first = " in text  # the definitions
    for h in doc["hours"]:
        assert any(line.split()[:1] == [str(h["hour"])] for line in r.stdout.splitlines())
    from roofline.render.fleet import _usd

    assert f"{_usd(doc['answer']['cost_per_day'])}/day" in text
    html = run("fleet", str(f), "--format", "html").stdout
    assert "Placement per hour" in html and json.dumps(doc["answer"]["cost_per_day"])[:6] in html

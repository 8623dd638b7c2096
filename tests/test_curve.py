"""A day's traffic (roofline.serving.day, roofline.serving.dayfile, `size --traffic-curve`):
replicas per interval counted by hand, the scale-up delay's transitions, the attainment they cost,
the file formats and their errors."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cli import day as day_cli
from roofline.domain.errors import InputError
from roofline.serving.day import DayRates, plan_day
from roofline.serving.dayfile import read_day

SINUSOID = Path(__file__).resolve().parent.parent / "examples" / "curves" / "sinusoid-day.csv"


def _curve(rates, step_s=3600.0) -> DayRates:
    n = len(rates)
    return DayRates(np.arange(n) * step_s, np.full(n, step_s), np.array(rates, float), "test")


def test_sinusoidal_day_of_8b_on_h100_against_static_peak(run, tmp_path, monkeypatch):
    """Peak 200 req/s, trough 50 (r to 4r): rate(h) = 50 (2.5 - 1.5 cos(2 pi h / 24)) for the
    24 hours; the mean of the cosine over whole periods is 0, so the mean rate is 125 and the
    replica-hours before rounding, headroom and delay are 125 / 200 = 62.5% of the peak's."""
    svg = tmp_path / "day.svg"
    chart = ["-o", str(svg)] if importlib.util.find_spec("matplotlib") else []
    tables = []  # the p99 table's serving runs: the best deployment's only (its intervals)
    real_table = day_cli.latency_table
    monkeypatch.setattr(day_cli, "latency_table", lambda *a: tables.append(a) or real_table(*a))
    # round robin: the capacity per replica (one replica's search), the replicas per hour and
    # the GPU-hours (plan_day over that capacity) do not depend on the router; the p99 table of
    # the 32-replica fleet (daysize.latency_table, 8 loads) then runs each replica once where
    # least-loaded runs three passes (256 runs, not 768)
    r = run(
        "size", "llama-3.1-8b", "--hardware", "h100", "--traffic-curve", str(SINUSOID),
        "--headroom", "0.1", "--router", "round-robin", "-f", "json", *chart,
    )  # fmt: skip
    doc = r.json()
    if chart:
        assert svg.read_text().lstrip().startswith("<?xml") and f"wrote {svg}" in r.stderr
    day = doc["day"]
    assert len(tables) == 1 and day["latency_table"] is not None
    # every fleet gets its day (the best's alone with a table); layouts pruned against the
    # chip's best (issue 33: by their saturation too) are no fleet and listed apart
    assert all(d["day"] is not None for d in doc["deployments"] if d["meets_slo"])
    assert all(d["gpus"] for d in doc["deployments"])
    cap = day["capacity_per_replica"]  # a replica's saturation (size's search): the one input
    assert day["unrounded_share_of_static"] == pytest.approx(0.625, abs=1e-4)
    rates = [50 * (2.5 - 1.5 * math.cos(2 * math.pi * h / 24)) for h in range(24)]
    by_hand = [math.ceil(r / (cap * (1 - 0.1))) for r in rates]  # size's headroom rule
    assert [iv["replicas"] for iv in day["intervals"]] == by_hand
    assert max(by_hand) > 20  # replicas >> 1: the rounding is small
    assert day["gpu_hours_per_day"] == pytest.approx(sum(by_hand))  # TP1: one GPU a replica
    assert day["static_gpu_hours_per_day"] == pytest.approx(24 * math.ceil(200 / (cap * 0.9)))
    assert 0.6 < day["share_of_static"] < 0.68  # 62.5% plus the rounding up
    # the static deployment is the one size prints for the peak
    assert day["static_replicas"] == doc["best"]["replicas"]
    assert day["cost_per_day"] == pytest.approx(
        day["gpu_hours_per_day"] * doc["best"]["price_usd_per_gpu_hour"]
    )
    # $/Mtok: the day's cost over its output tokens (125 req/s x 86,400 s x 1,000 tokens)
    assert day["cost_per_million_output_tokens"] == pytest.approx(
        day["cost_per_day"] / (125 * 86_400 * 1000 / 1e6), rel=1e-4
    )
    # the delay: Llama-3.1-8B's 8.03e9 bf16 parameters (16.06 GB, its model card) read at
    # 0.89 GB/s, then 64 s of engine start (hardware/engines.yaml, Tensorfuse's measurement)
    assert day["scale_up_delay_s"] == pytest.approx(8.03e9 * 2 / 0.89e9 + 64, rel=0.01)
    assert 0.98 < day["slo_attainment"] < 1.0  # short only while replicas start on the rise


def test_attainment_of_a_step_by_hand():
    """Rates 10 then 30 req/s for an hour each, capacity 10, no headroom, delay 6 min: 1 then 3
    replicas; the first 360 s at 30 req/s have one replica ready (capacity 10), so 30 x 360 of
    the 10 x 3600 + 30 x 3600 requests are short: attainment 1 - 10,800 / 144,000 = 0.925. The
    day repeats, so the drop back to 10 is instant and the first hour is never short."""
    d = plan_day(_curve([10, 30]), 10.0, 0.0, 360.0)
    assert d.ordered.tolist() == [1, 3] and d.ready_min.tolist() == [1, 1]
    assert d.violated_s.tolist() == pytest.approx([0, 360])
    assert d.slo_attainment == pytest.approx(0.925)
    assert d.replica_hours_per_day == pytest.approx(4 * 12)  # 4 replica-hours per 2 h
    assert d.static_replica_hours_per_day == pytest.approx(3 * 24)


def test_a_delay_longer_than_an_interval():
    """Minutes at 10, 20, 30, 40 req/s, capacity 10: 1, 2, 3, 4 replicas; ready at t = the
    fewest ordered in [t - 90 s, t]. Minute 1: the window holds minute 0 (1 replica) all
    through, short 60 s; minute 2: 1 ready to 150 s, then 2 (< 3 needed), short 60 s; minute 3:
    2 then 3 (< 4), short 60 s. Only minute 0's 600 of the 6,000 requests are served in time."""
    d = plan_day(_curve([10, 20, 30, 40], 60.0), 10.0, 0.0, 90.0)
    assert d.violated_s.tolist() == pytest.approx([0, 60, 60, 60])
    assert d.slo_attainment == pytest.approx(0.1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.just(0.0), st.floats(0.001, 500.0)), min_size=1, max_size=48),
    st.floats(0.5, 50.0),
    st.floats(0.0, 0.5),
    st.floats(0.0, 7200.0),
)
def test_day_bounds(rates, cap, headroom, delay):
    """Never more than static peak; before rounding, the mean over the peak; no delay, no
    violation (the replicas ordered hold the rate with headroom to spare); a delay only lowers
    the attainment."""
    if max(rates) <= 0:
        rates = [*rates[:-1], 1.0]
    c = _curve(rates)
    d = plan_day(c, cap, headroom, delay)
    assert d.replica_hours_per_day <= d.static_replica_hours_per_day + 1e-9
    mean, peak = np.mean(rates), max(rates)
    assert d.unrounded_replica_hours_per_day / d.unrounded_static_replica_hours_per_day == (
        pytest.approx(mean / peak)
    )
    assert 0.0 <= d.slo_attainment <= 1.0
    assert plan_day(c, cap, headroom, 0.0).slo_attainment == 1.0
    assert plan_day(c, cap, headroom, delay / 2).slo_attainment >= d.slo_attainment - 1e-12


@pytest.mark.parametrize(
    ("name", "text", "step_s", "says"),
    [
        ("c.csv", "minute,rate\n0,5\n1,7\n2,6\n", 60.0, "CSV"),
        ("c.csv", "time_s,rate\n0,5\n30,7\n60,6\n", 30.0, "CSV"),
        ("c.yaml", "- {hour: 0, rate: 5}\n- {hour: 1, rate: 7}\n- {hour: 2, rate: 6}\n", 3600.0,
         "YAML"),
        ("c.json", '[{"hour": 0, "rate": 5}, {"hour": 1, "rate": 7}, {"hour": 2, "rate": 6}]',
         3600.0, "JSON"),
        ("c.yaml", "curve:\n  - {minute: 0, rate: 5}\n  - {minute: 1, rate: 7}\n"
         "  - {minute: 2, rate: 6}\n", 60.0, "YAML"),
    ],
)  # fmt: skip
def test_curve_formats_are_detected_and_said(tmp_path, name, text, step_s, says):
    f = tmp_path / name
    f.write_text(text)
    c = read_day(f)
    assert c.rate.tolist() == [5, 7, 6] and c.duration_s.tolist() == [step_s] * 3
    assert c.description.startswith(says) and str(f) in c.description


def _even_log(path, n: int, gap_s: float):
    """A roofline JSONL log of `n` arrivals `gap_s` apart."""
    lines = [
        f'{{"arrival_s": {i * gap_s:.4f}, "input_tokens": 100, "output_tokens": 10}}'
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_arrival_log_is_binned_in_windows_of_100_requests(tmp_path):
    """1,000 arrivals 0.1 s apart span 99.9 s: a 1 s window holds 10 (< 100), a 10 s window
    100: nine windows, the last running on to the last arrival (19.9 s, 200 arrivals); rates
    100 / 10 = 10 req/s and 200 / 19.9 = 10.05 req/s; every arrival counted."""
    c = read_day(_even_log(tmp_path / "even.jsonl", 1000, 0.1))
    assert c.duration_s.tolist()[:-1] == [10.0] * 8
    assert c.duration_s[-1] == pytest.approx(19.9)
    assert c.rate[:-1].tolist() == pytest.approx([10.0] * 8)
    assert c.rate[-1] == pytest.approx(200 / 19.9)
    assert (c.rate * c.duration_s).sum() == pytest.approx(1000)
    assert "counted per 10 s (9 windows" in c.description


def test_a_log_too_small_for_a_curve_is_refused_with_the_reason(run, tmp_path):
    """The 20-request BurstGPT sample: no window holds 100 requests twice (it was binned per
    second, and its SLO attainment was noise)."""
    log = Path(__file__).resolve().parent.parent / "examples" / "arrivals" / "burstgpt_sample.csv"
    with pytest.raises(InputError, match="20 arrivals over 16 s: too few for a day's curve"):
        read_day(log)
    r = run("size", "llama-3.1-8b", "--hardware", "h100", "--traffic-curve", str(log))
    assert r.code == 2 and "too few for a day's curve" in r.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("hour,rate\n0,5\n1,-3\n", "line 3 column rate: a rate must not be negative"),
        ("hour,rate\n0,5\n1,lots\n", "line 3 column rate: 'lots' is not a number"),
        ("hour,rate\n0,5\n0,6\n", "line 3 column hour: times must increase"),
        ("day,load\n0,5\n", "line 1: a curve needs the columns"),
        ("- {hour: 0, rate: 5}\n- {hour: 1, rate: -2}\n", "line 2 column 19 key rate"),
        ("- {hour: 0, rate: 5}\n- {hour: 1, rat: 2}\n", "line 2: unknown key 'rat'"),
    ],
)
def test_a_bad_curve_is_one_line_naming_file_line_and_column(run, tmp_path, text, says):
    f = tmp_path / ("c.yaml" if text.startswith("-") else "c.csv")
    f.write_text(text)
    r = run("size", "llama-3.1-8b", "--hardware", "h100", "--traffic-curve", str(f))
    assert r.code == 2 and says in r.stderr and str(f) in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_scale_up_delay_override_and_refusals(run):
    from roofline.catalog.load import load_catalog
    from roofline.cli.day import parse_delay
    from roofline.engines.engine import engine
    from roofline.serving.daysize import delay_for
    from roofline.step.ops import Deployment

    cat = load_catalog()
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    assert delay_for(m, hw, Deployment(), engine("vllm"), parse_delay("2min")) == (
        120.0,
        "--scale-up-delay",
    )
    r = run("size", "llama-3.1-8b", "--rate", "5", "--scale-up-delay", "10s")
    assert r.code == 2 and "needs --traffic-curve" in r.stderr
    r = run("size", "llama-3.1-8b", "--traffic-curve", str(SINUSOID), "--scale-up-delay", "-5s")
    assert r.code == 2 and "--scale-up-delay" in r.stderr
    # an engine without a sourced start figure asks for the delay instead of guessing one
    r = run(
        "size", "llama-3.1-8b", "--hardware", "h100", "--engine", "trtllm",
        "--traffic-curve", str(SINUSOID),
    )  # fmt: skip
    assert r.code == 2 and "give --scale-up-delay" in r.stderr

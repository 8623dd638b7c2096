"""Issue 37 item 1: the day planner on a workload file (size --workload --traffic-curve, check
with workload and traffic_curve): the curve gives the arrivals/s over all classes, each class
its share; results per class and overall (roofline.serving.mixday)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.confidence import Edges, slowed
from roofline.serving.day import DayRates, LatencyTable
from roofline.serving.mix import mix_workload
from roofline.serving.mixday import MixDayCapacity, MixLatency, plan_mix_day
from roofline.serving.workloadfile import read_workload

ROOT = Path(__file__).resolve().parent.parent
CHAT_BATCH = str(ROOT / "examples/workloads/chat-batch.yaml")
AGENT_FILE = ROOT / "examples/workloads/agent.yaml"


def _curve(rates: list[float], hour_s: float = 3600.0) -> DayRates:
    n = len(rates)
    return DayRates(np.arange(n) * hour_s, np.full(n, hour_s), np.array(rates, dtype=float), "test")


def test_a_mix_day_by_hand():
    """Two hours at 10 and 30 arrivals/s; a replica holds every class up to 5 arrivals/s (chat's
    limit), batch up to 20; shares 0.7/0.3; no headroom, a 30-minute scale-up delay.
    Ordered: ceil(10/5) = 2, ceil(30/5) = 6. Hour 2's first 30 minutes still have hour 1's 2
    ready (the delay): 2 x 5 = 10 < 30 arrivals/s, so 30 x 1,800 = 54,000 of the 10 x 3,600 +
    30 x 3,600 = 144,000 arrivals are short: attainment 1 - 54,000/144,000 = 0.625 for the pool
    and for chat; batch holds up to 2 x 20 = 40 >= 30: 1.0. Per day (7,200 s scaled to
    86,400: x 12): 1,728,000 arrivals, chat 0.7 of them = 1,209,600 (x 200 output tokens =
    241,920,000), batch 518,400; replica-hours (2 + 6) x 12 = 96."""
    cap = MixDayCapacity(5.0, (5.0, 20.0), (0.7, 0.3), (200.0, 500.0), 25.0)
    day, classes = plan_mix_day(_curve([10, 30]), cap, ["chat", "batch"], 0.0, 1800.0)
    assert day.ordered.tolist() == [2, 6]
    assert day.slo_attainment == pytest.approx(0.625)
    assert day.replica_hours_per_day == pytest.approx(96.0)
    chat, batch = classes
    assert chat.slo_attainment == pytest.approx(0.625)
    assert batch.slo_attainment == pytest.approx(1.0)
    assert chat.requests_per_day == pytest.approx(1_209_600)
    assert batch.requests_per_day == pytest.approx(518_400)
    assert chat.output_tokens_per_day == pytest.approx(241_920_000)
    assert (chat.peak_arrivals_per_s, batch.peak_arrivals_per_s) == pytest.approx((21.0, 9.0))


def _table(rates: list[float], ttft: list[float], tpot: list[float]) -> LatencyTable:
    return LatencyTable(np.array(rates), np.array(ttft), np.array(tpot))


def test_each_class_p99_per_interval_by_hand():
    """Three hours at 10, 25 and 40 arrivals/s; the pool holds every class up to 10 arrivals/s
    per replica, class b up to 20; no headroom or delay, at most 3 replicas. Ordered 1, 3 and
    min(4, 3) = 3: 10, 8.33 and 13.33 arrivals/s per ready replica. Tables (arrivals/s per
    replica -> p99 s), read by linear interpolation:
      pool  5 -> 0.2, 10 -> 0.4: 0.4; 0.2 + 3.33/5 x 0.2 = 0.3333; hour 3 past 10: none (null)
      a     5 -> 0.1, 10 -> 0.3: 0.3; 0.1 + 3.33/5 x 0.2 = 0.2333; none
      b     5 -> 1.0, 20 -> 4.0: 1 + 5/15 x 3 = 2.0; 1 + 3.33/15 x 3 = 1.6667;
            1 + 8.33/15 x 3 = 2.6667 (the loose class keeps a p99 while the pool is short)
    and TPOT the same at a tenth."""
    cap = MixDayCapacity(10.0, (10.0, 20.0), (0.5, 0.5), (1.0, 1.0), 1e9)
    lat = MixLatency(
        _table([5, 10], [0.2, 0.4], [0.02, 0.04]),
        (_table([5, 10], [0.1, 0.3], [0.01, 0.03]), _table([5, 20], [1.0, 4.0], [0.1, 0.4])),
    )
    day, (a, b) = plan_mix_day(_curve([10, 25, 40]), cap, ["a", "b"], 0.0, 0.0, 3, lat)
    assert day.ordered.tolist() == [1, 3, 3]
    np.testing.assert_allclose(day.ttft_p99_s, [0.4, 1 / 3, np.nan], rtol=1e-9)
    np.testing.assert_allclose(a.ttft_p99_s, [0.3, 0.7 / 3, np.nan], rtol=1e-9)
    np.testing.assert_allclose(b.ttft_p99_s, [2.0, 5 / 3, 8 / 3], rtol=1e-9)
    np.testing.assert_allclose(b.tpot_p99_s, [0.2, 1 / 6, 4 / 15], rtol=1e-9)


def test_a_mix_is_slowed_in_arrivals_not_sequences():
    """--confidence's queue (confidence.slowed): the agent file's 0.5 sessions/s of 10 turns
    (5 sequences/s) on a replica at half the expected capacity is served as 0.5 / 0.5 = 1
    session/s, 10 sequences/s (re-timing the file at its sequences/s would give 5 / 0.5 = 10
    sessions/s, 100 sequences/s)."""
    w = mix_workload(read_workload(AGENT_FILE), 200, 0)
    assert (w.mix_rate, w.rate) == pytest.approx((0.5, 5.0))
    s = slowed(w, Edges("p90", 0.5, 1.0, 1.0))
    assert (s.mix_rate, s.rate) == pytest.approx((1.0, 10.0))


@settings(max_examples=40, deadline=None)
@given(
    rates=st.lists(st.floats(0.5, 200.0), min_size=1, max_size=12),
    overall=st.floats(0.5, 50.0),
    looser=st.floats(1.0, 4.0),
    delay_s=st.floats(0.0, 7200.0),
    headroom=st.floats(0.0, 0.5),
)
def test_a_class_with_more_capacity_never_attains_less(rates, overall, looser, delay_s, headroom):
    """A class holding its SLOs up to a higher rate than the pool keeps at least the pool's
    attainment (same replicas, more capacity); the classes' requests sum to the pool's."""
    cap = MixDayCapacity(overall, (overall, overall * looser), (0.6, 0.4), (1.0, 1.0), 1e9)
    day, (a, b) = plan_mix_day(_curve(rates), cap, ["a", "b"], headroom, delay_s)
    assert a.slo_attainment == pytest.approx(day.slo_attainment)
    assert b.slo_attainment >= day.slo_attainment - 1e-12
    assert a.requests_per_day + b.requests_per_day == pytest.approx(day.requests_per_day)


def test_size_and_check_plan_the_same_mix_day(run, tmp_path):
    """size --workload --traffic-curve and check on the same file and curve: the same capacity,
    GPU-hours and attainment (one evaluation path). By hand on the curve 20, 40, 60, 30
    arrivals/s: mean 37.5, so 37.5 x 86,400 = 3,240,000 arrivals a day, chat's 70% 2,268,000;
    each hour's replicas ceil(rate / (capacity x 0.9)); and one replica at the capacity meets
    every class's SLOs in serve."""
    curve = tmp_path / "curve.csv"
    curve.write_text("hour,rate\n0,20\n1,40\n2,60\n3,30\n")
    common = ["--workload", CHAT_BATCH, "--traffic-curve", str(curve), "--requests", "200"]
    common += ["--scale-up-delay", "20min"]
    png = tmp_path / "day.png"  # the day drawn, each class's p99 beside its SLO
    draw = ["-o", str(png)] if importlib.util.find_spec("matplotlib") else []
    sz = run("size", "llama-3.1-8b", "--hardware", "h100", *common, *draw, "-f", "json")
    assert sz.code == 0, sz.stderr
    assert not draw or png.stat().st_size > 10_000
    day = sz.json()["deployments"][0]["day"]
    for iv in day["intervals"]:  # within capacity all day (20 min of delay short at rises)
        assert [c["name"] for c in iv["classes"]] == ["chat", "batch"]
        assert all(c["ttft_p99_s"] is not None and c["ttft_p99_s"] <= 1.0 for c in iv["classes"])
    cap = day["capacity_per_replica"]
    assert 0 < cap < day["saturation_per_replica"]
    assert day["requests_per_day"] == pytest.approx(3_240_000)
    chat = next(c for c in day["classes"] if c["name"] == "chat")
    assert chat["requests_per_day"] == pytest.approx(2_268_000)
    assert [iv["replicas"] for iv in day["intervals"]] == [
        math.ceil(r / (cap * 0.9)) for r in (20, 40, 60, 30)
    ]
    chk = run("check", "llama-3.1-8b", "h100", *common, "--min-slo-attainment", "0.5",
              "--max-gpu-hours-per-day", "1000", "-f", "json")  # fmt: skip
    assert chk.code == 0, chk.stderr
    dep = chk.json()["deployments"][0]  # the header names the file and its classes
    assert dep["workload"].endswith("chat-batch.yaml") and dep["classes"] == "chat, batch"
    assert "prompt_tokens" not in dep
    got = {c["name"]: c for c in chk.json()["checks"]}
    assert got["max_gpu_hours_per_day"]["value"] == pytest.approx(day["gpu_hours_per_day"])
    assert got["min_slo_attainment"]["value"] == pytest.approx(day["slo_attainment"])
    assert "chat " in got["min_slo_attainment"]["detail"]  # each class's attainment named
    srv = run("serve", "llama-3.1-8b", "h100", "--workload", CHAT_BATCH, "--rate", f"{cap!r}",
              "--requests", "200", "--no-saturation", "-f", "json")  # fmt: skip
    assert srv.json()["points"][0]["expected"]["meets_slo"] is True


def test_a_workload_day_refuses_what_cannot_apply(run, tmp_path):
    curve = tmp_path / "curve.csv"
    curve.write_text("hour,rate\n0,20\n1,40\n")
    args = ["--workload", CHAT_BATCH, "--traffic-curve", str(curve)]
    r = run("size", "llama-3.1-8b", "--hardware", "h100", *args, "-o", str(tmp_path / "d.html"))
    assert r.code == 2 and "drop --out FILE.html" in r.stderr
    r = run("size", "llama-3.1-8b", "--hardware", "h100", "--workload", CHAT_BATCH,
            "-o", str(tmp_path / "d.png"))  # fmt: skip
    assert r.code == 2 and "--traffic-curve" in r.stderr


def test_a_mix_day_capacity_at_p90_by_hand(monkeypatch):
    """The single-shape day's rule (confidence.capacity_at, as checks.day and size apply it) per
    class: at a throughput low edge of 0.5, expected capacities 10 (pool) and (10, 20) per
    class, and 6, (6, 30) against the SLOs ÷ the light-load edges (the expected model's queue
    at the rate ÷ 0.5): the pool 0.5 x min(10, 6) = 3; class a max(0.5 x min(10, 6), 3) = 3,
    class b max(0.5 x min(20, 30), 3) = 10. The search under the edged SLOs is asked only up
    to the expected capacities (10, 10, 20), never to the saturation."""
    import roofline.serving.mixday as md

    asked = []

    class Fake:
        def __init__(self, rep, w, slo, *a):
            self.edged = slo.ttft_s == 0.5  # the SLO ÷ the TTFT edge 2

        def capacities(self):
            return MixDayCapacity(10.0, (10.0, 20.0), (0.5, 0.5), (1.0, 1.0), 50.0)

        def highest(self, k, top=None):
            assert self.edged
            asked.append(top)
            return min(top, {None: 6.0, 0: 6.0, 1: 30.0}[k])

    monkeypatch.setattr(md, "_Search", Fake)
    monkeypatch.setattr(md, "edged", lambda w, e: w)
    from roofline.serving.metrics import Slo

    cap = md.mix_day_capacity(None, None, Slo(1.0, None, 99.0), 0, "least-loaded",  # type: ignore[arg-type]
                              Edges("p90", 0.5, 2.0, 1.0))  # fmt: skip
    assert (cap.overall, cap.per_class, cap.level) == (3.0, (3.0, 10.0), "p90")
    assert cap.expected is not None and cap.expected.overall == 10.0
    assert asked == [10.0, 10.0, 20.0]


def test_one_rule_for_the_capacity_at_the_edges():
    """size's and the day's capacity_at_edges and the mix's day all go through
    confidence.capacity_at: low x the edged search asked up to the expected capacity (the
    expected model's queue at the rate ÷ low), 0 when the expected capacity is 0 (the search
    then never runs)."""
    from roofline.serving.confidence import capacity_at

    e = Edges("p90", 0.25, 3.0, 2.0)
    assert capacity_at(e, 8.0, lambda top: 1.5) == 0.375  # 1.5 x 0.25: the latency edges bind
    assert capacity_at(e, 8.0, lambda top: top) == 2.0  # 8 x 0.25: the throughput edge alone
    assert capacity_at(e, 0.0, lambda top: 1 / 0) == 0.0


def test_a_workload_day_at_p90_in_check(run, tmp_path):
    """check with a workload file, a curve and --confidence p90 (refused before): the day at
    the band edges needs at least the expected day's GPU-hours, which its detail names. The
    chat class's SLO is 5 s here, not the example's 1 s: at p90 a TTFT SLO is divided by the
    TTFT p99 band's high edge (x13 to x14 on nvidia-datacenter, hardware/bands.json), and
    1 s / 14 = 71 ms is below an 8B H100 replica's light-load p99 beside 4k-token prompts, so
    the example's day has no capacity at p90 (check fails, as it should)."""
    curve = tmp_path / "curve.csv"
    curve.write_text("hour,rate\n0,20\n1,40\n")
    mix = tmp_path / "mix.yaml"
    mix.write_text(Path(CHAT_BATCH).read_text().replace("slo_ttft: 1s", "slo_ttft: 5s"))
    common = ["check", "llama-3.1-8b", "h100", "--workload", str(mix), "--traffic-curve",
              str(curve), "--requests", "200", "--scale-up-delay", "20min",
              "--max-gpu-hours-per-day", "1e6", "-f", "json"]  # fmt: skip
    exp = run(*common)
    p90 = run(*common, "--confidence", "p90")
    assert exp.code == 0 and p90.code == 0, p90.stderr
    low = p90.json()["deployments"][0]["confidence"]["capacity"]
    assert 0 < low < 1
    e, p = exp.json()["checks"][0], p90.json()["checks"][0]
    assert p["value"] >= e["value"]
    assert f"expected {e['value']:,.1f} GPU-hours" in p["detail"]

"""TTFT and TPOT bands under load (issue 35 item 2): the throughput band run through the queue
(roofline.serving.metrics.load_bands), by hand, as properties, and through `serve`."""

import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.serving.metrics import Percentiles, load_bands


def _m(ttft: float, tpot: float, unbounded: str = "", rps: float = math.nan) -> SimpleNamespace:
    """What load_bands reads of a ServeMetrics: the percentiles, `unbounded` and the steady
    throughput (NaN: none, so no throughput band)."""
    t = Percentiles(ttft, ttft, ttft, ttft)
    return SimpleNamespace(
        ttft_s=t,
        tpot_s=Percentiles(tpot, tpot, tpot, tpot),
        unbounded=unbounded,
        requests_per_s=rps,
    )


def test_load_band_by_hand():
    """λ = 10 req/s, capacity band [0.5, 2]: the high-capacity edge loads the expected model as
    10 / 2 = 5 req/s (TTFT 0.05 s), the low-capacity edge as 10 / 0.5 = 20 req/s (TTFT 0.4 s)
    against 0.1 s at 10. With TTFT's own band [0.5, 3]: low = 0.05 / 0.1 × 0.5 = 0.25 (-75%),
    high = 0.4 / 0.1 × 3 = 12 (+1100%). TPOT 20 ms at 10, 15 at 5, 30 at 20, its own band
    [0.8, 1.5]: low = 15 / 20 × 0.8 = 0.6, high = 30 / 20 × 1.5 = 2.25."""
    table = {5.0: _m(0.05, 0.015), 20.0: _m(0.4, 0.030)}
    asked = []

    def at(r):
        asked.append(r)
        return table[r]

    own = {"ttft_p99": (0.5, 3.0), "tpot_p99": (0.8, 1.5)}
    b = load_bands(_m(0.1, 0.020), 10.0, at, (0.5, 2.0), own)
    assert sorted(asked) == [5.0, 20.0]
    assert b["ttft_p99"].low == pytest.approx(0.25)
    assert b["ttft_p99"].high == pytest.approx(12.0)
    assert b["tpot_p99"].low == pytest.approx(0.6)
    assert b["tpot_p99"].high == pytest.approx(2.25)
    assert b["ttft_p50"].rates == (5.0, 20.0)


def test_past_saturation_at_the_low_edge_is_unbounded_with_its_reason():
    """At 20 req/s the expected model is past saturation: TTFT has no high edge (None, the
    reason naming the edge); TPOT keeps the figure at the batch cap."""
    slow = _m(math.inf, 0.040, "offered 20 req/s is above the saturation rate 15 req/s")
    b = load_bands(_m(0.1, 0.020), 10.0, {5.0: _m(0.05, 0.015), 20.0: slow}.get, (0.5, 2.0), {})
    assert b["ttft_p99"].high is None and b["ttft_p50"].high is None
    assert (
        "low edge (0.50 x" in b["ttft_p99"].reason and "saturation rate 15" in b["ttft_p99"].reason
    )
    assert b["tpot_p99"].high == pytest.approx(2.0) and b["tpot_p99"].reason == ""


def test_no_band_for_an_unbounded_expected_figure():
    assert load_bands(_m(math.inf, 0.02, "past"), 10.0, lambda r: _m(1, 1), (0.5, 2.0), {}) == {}


@given(
    f=st.floats(1e-3, 10), fast=st.floats(0.1, 1.0), slow=st.floats(1.0, 10.0),
    lo=st.floats(0.1, 0.95), hi=st.floats(1.05, 4.0),
    own=st.tuples(st.floats(0.2, 1), st.floats(1, 5)),
)  # fmt: skip
def test_the_band_holds_the_expected_figure(f, fast, slow, lo, hi, own):
    """Whatever the queue does, an edge stays on its side: low <= 1 <= high; and a figure that
    grows with load (fast <= 1 <= slow, as a queue's does) gives a band at least as wide as
    its own band."""
    table = {10.0 / hi: _m(f * fast, f * fast), 10.0 / lo: _m(f * slow, f * slow)}
    b = load_bands(_m(f, f), 10.0, table.get, (lo, hi), {"ttft_p99": own})["ttft_p99"]
    assert b.low <= 1.0 <= b.high
    assert b.low <= own[0] * (1 + 1e-9) and b.high >= own[1] * (1 - 1e-9)


def test_serve_band_comes_from_the_queue(run, compute_once):
    """8B on one H100, 1k in / 200 out at 20 req/s: the throughput band's low edge loads the
    expected model past its saturation rate (20 / low > saturation: both read off the
    document), so TTFT's band is unbounded above; its low edge is the figure at 20 / high,
    read here from a second command that simulates that rate itself (the same seed re-times
    the same requests), over the figure at 20, × TTFT's light-load band's low edge (the
    step's own error: the queue carries the load's)."""
    from roofline import load_catalog
    from roofline.catalog.bands import band
    from roofline.engines.engine import engine

    args = ["serve", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200"]
    d = run(*args, "--rate", "20", "--requests", "100", "--format", "json").json()
    thr, sat = d["bands"]["throughput"], d["saturation_rate"]["expected"]
    lb = d["load_bands"]["ttft_p99"]
    assert 20 / thr["low"] > sat
    assert lb["high"] is None and "saturation" in lb["unbounded"]
    edge = 20 / thr["high"]
    assert lb["rates"]["high_capacity"] == pytest.approx(edge)
    e = run(*args, "--rate", f"{edge!r}", "--requests", "100", "--format", "json").json()
    want = e["expected"]["ttft_s"]["p99"] / d["expected"]["ttft_s"]["p99"]
    hw = load_catalog().accelerator("h100")
    light = band("ttft_light", hw.efficiency.family, engine("auto", hw).profile_id)
    assert light is not None and light.low < 1.0
    assert lb["low"] == pytest.approx(want * light.low, rel=1e-6)
    t = run(*args, "--rate", "20", "--requests", "100")
    assert "/unbounded" in t.stdout and "through the queue" in t.stdout


def test_a_closed_loop_band_is_its_time_scale(run):
    """A closed loop (here a burst: 64 users, 64 requests) has no rate to scale: a replica k
    times as fast runs the same loop with every time ÷ k, k in the throughput band [lo, hi],
    × the light-load band, its edges moved by the closed-loop margin m (validation/
    closedbands.py). nvidia-datacenter under vLLM, as shipped when this was written:
    throughput [0.23, 1.79], TTFT light [0.59, 1.27], m = 0.364, so TTFT's band is
    0.59 / 1.79 × e^-0.364 = 0.229 to 1.27 / 0.23 × e^0.364 = 7.95 (-77%/+695%), the same for
    p50 and p99 (one time scale). Read here from the catalog, so a refit moves both sides."""
    from roofline import load_catalog
    from roofline.catalog.bands import band, closed_loop_margin
    from roofline.engines.engine import engine

    args = ["serve", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200"]
    d = run(*args, "--concurrency", "64", "--requests", "64", "--format", "json").json()
    hw = load_catalog().accelerator("h100")
    fam, pid = hw.efficiency.family, engine("auto", hw).profile_id
    thr = band("throughput", fam, pid)
    assert thr is not None and d["bands"]["throughput"]["low"] == thr.low
    for kind in ("ttft", "tpot"):
        light, m = band(f"{kind}_light", fam, pid), closed_loop_margin(kind)
        assert light is not None and m is not None
        for pct in ("p50", "p99"):
            lb = d["load_bands"][f"{kind}_{pct}"]
            assert lb["rates"] is None and lb["unbounded"] is None
            assert lb["low"] == pytest.approx(min(1.0, light.low / thr.high * math.exp(-m)))
            assert lb["high"] == pytest.approx(max(1.0, light.high / thr.low * math.exp(m)))
            assert lb["low"] <= 1.0 <= lb["high"]
    t = run(*args, "--concurrency", "64", "--requests", "64")
    assert "bands through the loop" in t.stdout


def test_throughput_band_at_a_rate_by_hand():
    """λ = 10 req/s, capacity band [0.5, 2]: the fast replica (k = 2) is the expected model at
    5 req/s, which serves 5, so 2 x 5 = 10: no gain; the slow one (k = 0.5) the model at 20,
    past its saturation of 15, so 0.5 x 15 = 7.5 of 10: low 0.75. The cost a token: 1 to 1/0.75."""
    fast, slow = _m(0.05, 0.015, rps=5.0), _m(math.inf, 0.04, "past", rps=15.0)
    b = load_bands(_m(0.1, 0.02, rps=10.0), 10.0, {5.0: fast, 20.0: slow}.get, (0.5, 2.0), {})
    assert (b["throughput"].low, b["throughput"].high) == pytest.approx((0.75, 1.0))
    cost = b["cost_per_million_output_tokens"]
    assert (cost.low, cost.high) == pytest.approx((1.0, 1 / 0.75))
    carried = {5.0: fast, 20.0: _m(0.4, 0.03, rps=20.0)}.get  # 20 req/s below saturation
    light = load_bands(_m(0.1, 0.02, rps=10.0), 10.0, carried, (0.5, 2.0), {})
    assert (light["throughput"].low, light["throughput"].high) == (1.0, 1.0)  # both carry it


def test_serve_prints_the_throughput_band_at_its_rate(run):
    """serve --rate printed the capacity's band (-57%/+93%) on a throughput that is the offered
    rate. Llama-3.1-8B, 1k/1k, one H100 at 6 req/s: expected capacity 7.00 req/s, the band's
    low edge 0.44, so the slow replica serves 0.44 x 7.00 = 3.08 of 6, low 0.513 (by hand)."""
    d = run("serve", "llama-3.1-8b", "h100", "--rate", "6", "--requests", "400",
            "--format", "json").json()  # fmt: skip
    thr, sat = d["bands"]["throughput"], d["saturation_rate"]["expected"]
    near = d["load_bands"]["throughput"]
    assert near["low"] == pytest.approx(thr["low"] * sat / 6, rel=1e-9)
    assert near["low"] == pytest.approx(0.513, abs=0.002) and near["high"] == 1.0
    assert "offered rate" in near["basis"]


def test_size_states_serve_dp_bands_for_one_fleet(run):
    """`size` printed the static bands beside each fleet (TTFT p99 up to +128%) where serve
    --dp N ran the same fleet's bands through its queue (unbounded): one fleet, two answers.
    Llama-3.1-8B 1k/1k at 20 req/s: size answers 4 x H100 (capacity 7.00 req/s each, 28 the
    fleet); at the throughput band's low edge 0.44 the fleet is offered 20 / 0.44 = 45.5 req/s,
    past its 28: TTFT has no top, and the slow fleet serves 0.44 x 28 = 12.3 of the 20 req/s,
    a throughput low edge of 0.616 by hand (-38%), its cost a token +62% (1 / 0.616)."""
    args = ("--rate", "20", "--prompt", "1k", "--output", "1k", "--slo-ttft", "2s",
            "--slo-tpot", "50ms")  # fmt: skip
    size = run("size", "llama-3.1-8b", "--hardware", "h100", *args, "--format", "json").json()
    best = size["best"]
    n = best["replicas"]
    serve = run("serve", "llama-3.1-8b", "h100", "--dp", str(n), *args, "--format", "json").json()
    assert best["load_bands"] == serve["load_bands"]  # the same fleet, the same bands
    sat = serve["saturation_rate"]["expected"]
    lo = size["deployments"][0]["bands"]["throughput"]["low"]
    thr = best["load_bands"]["throughput"]
    assert n == 4 and sat == pytest.approx(28.0, rel=0.01) and lo == pytest.approx(0.44)
    assert thr["low"] == pytest.approx(lo * sat / 20, rel=1e-9) and thr["high"] == 1.0
    assert best["load_bands"]["ttft_p99"]["high"] is None
    cost = best["load_bands"]["cost_per_million_output_tokens"]
    assert cost["high"] == pytest.approx(1 / thr["low"]) and cost["low"] == 1.0
    table = run("size", "llama-3.1-8b", "--hardware", "h100", *args).stdout
    assert "-38%/+0%" in table and "∞" in table and "+0%/+62%" in table  # the row, the answer

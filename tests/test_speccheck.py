"""speccheck.evaluate_spec (the evaluation `check --spec` and `report` share): the traffic limits
and report's latency and cost read one serving run per deployment, not two."""

import yaml

import roofline.serving.serve as serve_module
from roofline.checks.limits import Limits, TrafficLimits
from roofline.checks.spec import SpecCase, evaluate_spec
from roofline.engines.engine import engine
from roofline.step.ops import Deployment


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = serve_module.serve

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(serve_module, "serve", counted)
    return calls


def test_report_serves_each_candidate_once_and_shows_the_run_its_checks_read(
    run, tmp_path, monkeypatch
):
    spec = {
        "name": "chat",
        "model": "llama-3.1-8b",
        "rate": 2,
        "requests": 60,
        "prompt": 500,
        "output": 50,
        "checks": {"max_ttft_p99": "2s", "max_tpot_p99": "100ms"},
        "candidates": [{"hardware": "h100"}, {"hardware": "h200"}],
    }
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(spec))
    calls = _counting(monkeypatch)
    r = run("report", str(f), "--format", "json")
    assert r.code == 0, r.stderr
    assert len(calls) == 2  # two candidates, one run each (was two each: check's, then report's)
    for c in r.json()["candidates"]:
        value = {k["name"]: k["value"] for k in c["checks"]}
        assert value["max_ttft_p99"] == c["expected"]["ttft_s"]["p99"]
        assert value["max_tpot_p99"] == c["expected"]["tpot_s"]["p99"]


def test_served_is_none_without_traffic_limits_and_the_run_with_them(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    dep, eng = Deployment(), engine("auto", hw)
    static = SpecCase("a", m, hw, dep, eng, 1, 1, 1, 500, 50, 550, Limits(fits=True))
    assert evaluate_spec(static).served is None
    traffic = TrafficLimits(rate=1.0, max_tpot_p99_s=0.1)
    served = evaluate_spec(
        SpecCase("b", m, hw, dep, eng, 1, 1, 1, 500, 50, 550, Limits(), traffic, requests=40)
    )
    assert served.served is not None
    assert [c.name for c in served.checks] == ["max_tpot_p99"]
    assert served.checks[0].value == served.served.expected.tpot_s.p99

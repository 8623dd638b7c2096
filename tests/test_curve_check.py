"""check's assertions across a day (spec keys traffic_curve, headroom, scale_up_delay; checks
max_gpu_hours_per_day, min_slo_attainment): values by hand on a fleet the spec caps, exit codes,
and one-line refusals of bad specs."""

import shutil
from pathlib import Path

import pytest
import yaml

SINUSOID = Path(__file__).resolve().parent.parent / "examples" / "curves" / "sinusoid-day.csv"


def _spec(tmp_path: Path, checks: dict, **keys) -> str:
    shutil.copy(SINUSOID, tmp_path / "day.csv")
    d = {
        "name": "day",
        "model": "llama-3.1-8b",
        "hardware": "h100",
        "prompt": 1000,
        "output": 1000,
        "traffic_curve": "day.csv",  # relative to the spec's directory
        **keys,
        "checks": checks,
    }
    f = tmp_path / "spec.yaml"
    f.write_text(yaml.safe_dump({"deployments": [{k: v for k, v in d.items() if v is not None}]}))
    return str(f)


def test_a_fleet_capped_at_one_replica_by_hand(run, tmp_path):
    """dp: 1 caps the autoscaler at one replica of one GPU: 24 GPU-hours a day; one replica of
    an 8B (a few req/s at 1,000 in / 1,000 out) never holds the curve's 50 to 200 req/s, so no
    request of the day is within capacity: attainment 0."""
    spec = _spec(
        tmp_path,
        {"max_gpu_hours_per_day": 24, "min_slo_attainment": 0.5},
        dp=1,
        scale_up_delay="90s",
    )
    r = run("check", "--spec", spec, "-f", "json")
    assert r.code == 1  # the attainment fails
    got = {c["name"]: c for c in r.json()["checks"]}
    assert (
        got["max_gpu_hours_per_day"]["value"] == pytest.approx(24)
        and got["max_gpu_hours_per_day"]["ok"]
    )
    assert got["min_slo_attainment"]["value"] == 0.0 and not got["min_slo_attainment"]["ok"]
    assert "at most 1" in got["min_slo_attainment"]["detail"]


def test_an_autoscaled_day_holds(run, tmp_path):
    spec = _spec(tmp_path, {"max_gpu_hours_per_day": 24 * 33, "min_slo_attainment": 0.9})
    r = run("check", "--spec", spec, "-f", "json")
    assert r.code == 0, r.stdout
    got = {c["name"]: c for c in r.json()["checks"]}
    # below static peak (the unrounded share is 62.5%), above the unrounded hours
    assert got["max_gpu_hours_per_day"]["value"] < 24 * 33
    assert "derived" in got["min_slo_attainment"]["detail"]  # the delay and how it was found


@pytest.mark.parametrize(
    ("checks", "keys", "says"),
    [
        ({"min_slo_attainment": 1.5}, {}, "min_slo_attainment must be a share"),
        ({"max_gpu_hours_per_day": -3}, {}, "max_gpu_hours_per_day' must not be negative"),
        ({"max_gpu_hours_per_day": 0}, {}, "max_gpu_hours_per_day must be a positive"),
        ({}, {}, "traffic_curve needs max_gpu_hours_per_day or min_slo_attainment"),
        ({"min_slo_attainment": 0.9}, {"traffic_curve": "nope.csv"}, "nope.csv: no such file"),
        ({"min_slo_attainment": 0.9}, {"headroom": 1.2}, "headroom must be a share"),
        ({"min_slo_attainment": 0.9}, {"scale_up_delay": "-1s"}, "--scale-up-delay"),
    ],
)
def test_bad_curve_specs_are_one_line(run, tmp_path, checks, keys, says):
    r = run("check", "--spec", _spec(tmp_path, checks, **keys))
    assert r.code == 2 and says in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_curve_checks_need_a_curve(run, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("model: llama-3.1-8b\nhardware: h100\nchecks:\n  max_gpu_hours_per_day: 100\n")
    r = run("check", "--spec", str(f))
    assert r.code == 2 and "requires traffic_curve" in r.stderr


def test_check_options_are_the_spec_keys(run):
    """The same day from options: --dp caps the fleet at 2 replicas (48 GPU-hours by hand)."""
    r = run(
        "check", "llama-3.1-8b", "h100", "--prompt", "1000", "--output", "1000",
        "--traffic-curve", str(SINUSOID), "--dp", "2", "--scale-up-delay", "0s",
        "--max-gpu-hours-per-day", "48", "-f", "json",
    )  # fmt: skip
    assert r.code == 0 and r.json()["checks"][0]["value"] == pytest.approx(48)

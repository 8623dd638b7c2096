"""`roofline validate` on the published cases: the ideal bound holds, the expected error is small,
and the catalog's family efficiencies are exactly what the calibration method produces."""

from pathlib import Path

import pytest

from roofline.cases.case import summarize
from roofline.cases.evaluate import evaluate
from roofline.userfiles import load_cases

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "validation/public_cases.yaml"
EXTRA = ROOT / "validation/extra_cases.yaml"


def _evaluate(cat, c):
    return evaluate(c, cat.model(c.model), cat.accelerator(c.hardware), catalog=cat)


@pytest.fixture(scope="module")
def public(cat):
    return [
        evaluate(c, cat.model(c.model), cat.accelerator(c.hardware), catalog=cat)
        for c in load_cases(PUBLIC)
    ]


def test_public_cases_are_the_shared_ones():
    shared = ROOT.parent / "shared/validation/public_cases.yaml"  # beside the checkout
    if not shared.exists():  # outside the shared workspace there is nothing to compare with
        pytest.skip(f"no shared reference at {shared}")
    assert shared.read_text() == PUBLIC.read_text()


def test_no_case_beats_the_speed_of_light(public, cat):
    extra = [
        evaluate(c, cat.model(c.model), cat.accelerator(c.hardware), catalog=cat)
        for c in load_cases(EXTRA)
    ]
    for r in public + extra:
        assert r.speed_ratio_ideal <= 1.0, r.case.id


def test_expected_error_within_20_percent_median(public):
    s = summarize(public)
    assert s["bound_violations"] == 0
    assert s["median_abs_error"] < 0.20
    assert set(s["regimes"]) == {"ttft", "decode", "throughput"}
    for regime in s["regimes"].values():
        assert regime["median_abs_error"] < 0.25


def test_speed_ratio_direction(public):
    # a time metric: ideal / measured; a rate: measured / ideal — both below 1 when slower than SOL
    r = next(r for r in public if r.case.metric == "ttft_ms")
    assert r.speed_ratio_ideal == pytest.approx(r.ideal / r.measured)
    r = next(r for r in public if r.case.metric == "output_tokens_per_s")
    assert r.speed_ratio_ideal == pytest.approx(r.measured / r.ideal)


def test_catalog_figures_come_from_the_calibration(cat):
    # the engines' CPU step, the scalar shares of the families without kernel curves and every
    # family's case count and error band are exactly what validation/calibrate.py fits
    from validation.calibrate import bands, run

    _, full, loso, _ = run(cat)
    for key, value in full.items():
        kind, _, name = key.partition(":")
        if kind == "cpu" and name != "*":
            assert cat.engines[name].cpu_step_s == pytest.approx(round(value * 1e6) * 1e-6), key
        elif kind == "seq":
            engine, _, fam = name.partition(":")
            got = dict(cat.engines[engine].cpu_per_seq_s).get(fam, 0.0)
            assert got == pytest.approx(round(value * 1e6) * 1e-6), key
        elif kind in ("compute", "memory", "memory_weight_only", "compute_weight_only"):
            eff = cat.families[name].efficiency
            dequant = {
                "memory_weight_only": "memory_dequant",
                "compute_weight_only": "compute_dequant",
            }
            got = getattr(eff, dequant.get(kind, kind))
            assert got == pytest.approx(round(value, 2)), key
    for fam, (n, band) in bands(loso, cat).items():
        eff = cat.families[fam].efficiency
        assert (eff.cases, eff.error_band) == (n, pytest.approx(round(band, 3), abs=1e-9)), fam
    assert all(f.efficiency.step_overhead_s == 0 for f in cat.families.values())
    assert cat.engines["mlx"].cpu_step_s == cat.engines["llamacpp"].cpu_step_s  # borrowed


def test_cli_validate_json(run):
    r = run("validate", str(PUBLIC), "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert len(doc["cases"]) == 15
    case = doc["cases"][0]
    for key in ("id", "ideal", "expected", "measured", "speed_ratio_ideal", "error_expected"):
        assert key in case
    assert {"bound_violations", "median_abs_error", "max_abs_error"} <= set(doc["summary"])


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("  metric: ttft_ms", "  metric: ttft_hours"), "unknown metric 'ttft_hours'"),
        (("model: llama-3.3-70b", "model: llama-3.3-7b"), "unknown models 'llama-3.3-7b'"),
        (("weights: fp8", "weights: fp7"), "unknown weight format"),
        (("measured: 406.77", "measured: -1"), "must not be negative"),
    ],
)
def test_bad_cases_exit_2_naming_the_case(run, tmp_path, edit, needle):
    path = tmp_path / "cases.yaml"
    path.write_text(PUBLIC.read_text().replace(*edit, 1))
    r = run("validate", str(path))
    assert r.code == 2 and r.stdout == "" and needle in r.stderr
    assert "case '" in r.stderr


def test_accuracy_doc_is_current():
    from validation.accuracy_doc import render

    doc = (ROOT / "docs/ACCURACY.md").read_text()
    assert doc == render(), "docs/ACCURACY.md is stale: run `make accuracy`"


def test_attention_dp_with_wide_ep_is_evaluated(cat):
    # tp 1, ep 8 on 8 GPUs (attention data-parallel, experts over 8): one group of 8 GPUs
    from dataclasses import replace

    base = next(c for c in load_cases(PUBLIC) if c.model == "deepseek-r1")
    wide = replace(base, tp=1, ep=8)
    r = evaluate(wide, cat.model(wide.model), cat.accelerator(wide.hardware), catalog=cat)
    same = evaluate(base, cat.model(base.model), cat.accelerator(base.hardware), catalog=cat)
    assert r.ideal == pytest.approx(same.ideal)

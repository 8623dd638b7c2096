"""The serving cases' leave-one-source-out (validation/serving_crossval.py) and its committed
error file, read without re-running the 600 cases."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_leaving_out_trtllm_014_borrows_vllms_request_latency(cat):
    # hardware/engines.yaml: TensorRT-LLM's request_latency_us 11000 was fitted on the v0.14
    # online table (perf-overview.md at 258c754); without it, TensorRT-LLM borrows vLLM's 19000
    from validation.serving_crossval import TRTLLM_014, patch_without

    hw = cat.accelerator("nvidia-h100-sxm")
    patch, why = patch_without(TRTLLM_014, hw)
    assert patch == {("trtllm", "request_latency_s"): pytest.approx(19e-3)}
    assert "borrowed from vLLM" in why[0]
    assert patch_without("https://example.org/another-source", hw) == ({}, ())


def test_a_fit_on_several_sources_is_refitted_not_dropped(cat):
    from validation.serving_crossval import ServingFit, patch_without

    fit = ServingFit(
        "vllm",
        "cpu_step_s",
        ("a", "b", "c"),
        lambda p, e: 0.0,
        "refitted without one source",
        refit=lambda p, g: {"a": 1e-3, "b": 2e-3, "c": 3e-3}[g],
    )
    hw = cat.accelerator("nvidia-h100-sxm")
    assert patch_without("b", hw, (fit,))[0] == {("vllm", "cpu_step_s"): 2e-3}


def test_error_file_covers_every_case_or_says_why_not(engine_sweeps):
    # a case added to either file without re-running `python validation/serving_crossval.py`
    # (make accuracy) fails here; skipped cases name an engine the catalog lacks
    import yaml

    from roofline.engines.engine import ENGINES
    from validation.serving_crossval import CASE_FILES, load

    results, skipped = load()
    want = {}
    for rel in CASE_FILES:
        cases = (
            engine_sweeps  # the same file, parsed once per worker (tests/conftest.py)
            if rel == "validation/engine_sweeps.yaml"
            else yaml.safe_load((ROOT / rel).read_text())["cases"]
        )
        for c in cases:
            want[(rel, c["id"])] = (c.get("engine", "vllm"), float(c["measured"]))
    got = {(r.file, r.id): r.measured for r in results}
    gone = {(rel, cid) for rel, cid, _ in skipped}
    assert set(got) | gone == set(want) and not set(got) & gone
    assert all(got[k] == pytest.approx(want[k][1], rel=1e-5) for k in got)
    assert all(want[k][0] not in ENGINES for k in gone)


def test_trtllm_014_light_load_ttft_moves_by_the_latency_difference():
    # at QPS 2 the queue is near empty: leaving the source out swaps TensorRT-LLM's fitted
    # 11 ms for vLLM's 19 ms, so each mean TTFT rises by 8 ms
    from validation.serving_crossval import TRTLLM_014, load

    rows = [
        r
        for r in load()[0]
        if r.group == TRTLLM_014 and r.metric == "ttft_mean_ms" and "qps2" in r.id
    ]
    assert len(rows) == 12  # the 12 QPS-2 rows of the v0.14 online table
    for r in rows:
        assert r.out_of_sample - r.in_sample == pytest.approx(8.0, abs=0.05), r.id

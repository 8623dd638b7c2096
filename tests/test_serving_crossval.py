"""The serving cases' leave-one-source-out (validation/serving_crossval.py) and its committed
error file, read without re-running the 600 cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    from roofline.catalog.files import safe_load_yaml
    from roofline.engines.engine import ENGINES
    from validation.serving_crossval import CASE_FILES, load

    results, skipped = load()
    want = {}
    for rel in CASE_FILES:
        cases = (
            engine_sweeps  # the same file, parsed once per worker (tests/conftest.py)
            if rel == "validation/engine_sweeps.yaml"
            else safe_load_yaml((ROOT / rel).read_text())["cases"]
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


def test_leaving_out_amds_v1_tables_refits_vllms_step_figures(cat):
    # AMD's ROCm/vllm dev-docker README at 040de12 holds the vLLM 0.10.0 latency table that
    # validation/calibrate.py fits vLLM's cpu_step and its amd-instinct per-sequence cost (60 us)
    # on (validation/extra_cases.yaml) and the throughput table scored at full load
    # (validation/highload_cases.yaml): one publication. Without it no amd-instinct vLLM step
    # case ran two batch sizes, so the family pays no per-sequence cost (hardware/engines.yaml's
    # rule for a family not named), and cpu_step is fitted on the vLLM CI's H200 and A100 tables
    # alone, which no longer weigh it against AMD's (the shipped 1700 us is both families' pick)
    from validation.serving_crossval import ROCM_V1_TABLES, all_fits, patch_without

    hw = cat.accelerator("amd-mi300x")
    assert dict(hw.efficiency.engines["vllm"].cpu_per_seq_s) == {
        "amd-instinct": pytest.approx(60e-6)
    }
    patch, why = patch_without(ROCM_V1_TABLES, hw, all_fits())
    assert patch[("vllm", "cpu_per_seq_s")] == ()
    step = patch[("vllm", "cpu_step_s")]
    assert step != pytest.approx(1700e-6) and 0 <= step <= 4000e-6  # calibrate.py's grid
    assert all("validation/calibrate.py" in w for w in why)
    # without the new fits (FITS alone) the source's cases kept the in-sample figures
    assert patch_without(ROCM_V1_TABLES, hw)[0] == {}


def test_leaving_out_nims_page_borrows_the_fitted_engines_median_cpu_step(cat):
    # TensorRT-LLM's cpu_step_us (1525) is fitted on NIM's concurrency-1 ITL rows of its
    # Llama-3.3-70B page (validation/extra_cases.yaml), whose other rows are serving cases
    # (validation/engine_sweeps.yaml). Without them TensorRT-LLM has no decode step case and
    # takes the median of the engines fitted (validation/crossval.py): gpt-fast 0, llama.cpp
    # 1550 and vLLM 1700 us (hardware/engines.yaml) -> 1550 us
    from validation.serving_crossval import STEP_SOURCES, all_fits, patch_without

    nim = "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md"
    assert nim in STEP_SOURCES
    patch, _ = patch_without(nim, cat.accelerator("nvidia-h100-sxm"), all_fits())
    assert patch == {("trtllm", "cpu_step_s"): pytest.approx(1550e-6)}


def test_every_step_source_scored_here_is_mapped(cat):
    # a step case (validation/calibrate.py's fit) whose source text names a serving source's
    # page is the same publication: STEP_SOURCES must map it, else leaving the page out here
    # keeps figures fitted on it (in sample in disguise)
    from roofline.cases.casefiles import load_serving_cases
    from validation.calibrate import fitted_bases
    from validation.serving_crossval import CASE_FILES, STEP_SOURCES, source_group

    serving = {source_group(c) for f in CASE_FILES for c in load_serving_cases(ROOT / f)}
    step_groups = {b.group for b in fitted_bases(cat)}
    assert set(STEP_SOURCES) <= serving and set(STEP_SOURCES.values()) <= step_groups
    for b in fitted_bases(cat):
        for g in serving:
            page = g.removeprefix("https://").removesuffix(".md")
            if page in b.case.source or page in b.group:
                assert STEP_SOURCES.get(g) == b.group, (b.case.id, g)


def test_every_refit_table_names_every_source_its_fit_uses(cat, engine_sweeps):
    # each figure's leave-one-source-out values (the tables the fit scripts print) must cover
    # every source the fit script fits on: a source missing from its table is scored with the
    # figure fitted on it
    from roofline.cases.casefiles import load_serving_cases
    from validation import (
        fit_amd_v0,
        fit_api_request,
        fit_engine_versions,
        fit_seq_cost,
        fit_stack_kernels,
    )
    from validation import serving_crossval as sc

    def groups(cases) -> set[str]:
        return {sc.source_group(c) for c in cases}

    every = [c for f in sc.CASE_FILES for c in load_serving_cases(ROOT / f)]
    from validation import engine_sweeps_report

    assert fit_engine_versions.PATH == engine_sweeps_report.PATH  # the fixture's file
    v0 = fit_engine_versions.version_cases("vllm-v0", cat, engine_sweeps)
    assert set(sc.V0_FIT) == groups(c for c in v0 if not fit_engine_versions.excluded(c))
    assert set(sc.AMD_V0_FIT) == groups(fit_amd_v0.cases(cat))
    assert set(sc.SGLANG_SEQ_FIT) == groups(fit_seq_cost.cases(cat, "sglang", sc.SGLANG_SEQ_FAMILY))
    assert set(sc.API_REQUEST_FIT) == groups(fit_api_request.cases("vllm"))
    assert set(sc.SGLANG_API_REQUEST_FIT) == groups(fit_api_request.cases("sglang"))
    assert set(sc.GAUDI_K) == groups(
        c for c in every if cat.accelerator(c["hardware"]).family == "intel-gaudi"
    )
    for engine, fits in sc.STACK_FIT.items():
        assert set(fits) == groups(fit_stack_kernels.cases(cat, engine, sc.STACK_FAMILY))


def test_amd_v0_refits_are_what_the_fit_prints(cat):
    # validation/serving_crossval.py AMD_V0_FIT is pasted from `python -m validation.fit_amd_v0`
    # (~6 s: it runs the grid points the fits can pick, fit_amd_v0.search, which the next test
    # holds to the whole grid's answer); a catalog change that moves the fit must move the table
    # too, else the left-out source is scored with a figure fitted with it
    from validation import fit_amd_v0
    from validation.serving_crossval import AMD_V0_FIT

    _, _, without = fit_amd_v0.refits(cat)
    assert {g: round(s * 1e6) for g, s in AMD_V0_FIT.items()} == without


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 24),
    st.lists(
        st.tuples(
            st.sampled_from("abc"),
            st.lists(st.integers(-6, 6), min_size=1, max_size=24),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_amd_v0_search_picks_what_the_whole_grid_picks(n, curves):
    # fit_amd_v0.search runs only the grid points whose gap can hold a fit's least loss, assuming
    # each case's log error monotone in the grid value; on made-up monotone errors (small
    # integers, so losses tie often: the first of equals must win as on the whole grid) each
    # fit, on every source and without each, is the whole grid's
    from validation import fit_amd_v0 as f

    grid = tuple(range(0, 5 * n, 5))
    cols = []
    for group, steps, rising in curves:
        col = sorted((steps * n)[:n], reverse=not rising)  # monotone over the grid
        cols.append((group, [x / 4 for x in col]))

    def errors_at(us: float) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for group, col in cols:
            out.setdefault(group, []).append(col[grid.index(us)])
        return out

    whole = {us: errors_at(us) for us in grid}
    leaves = [None, *sorted({g for g, _ in cols})]
    part = f.search(errors_at, grid, leaves)
    assert set(part) <= set(grid)
    assert {k: f.fit(part, k) for k in leaves} == {k: f.fit(whole, k) for k in leaves}


def test_amd_v0_loss_floor_by_hand():
    # between two runs a case's error lies between its ends: from -1 to 2 it passes 0 (floor 0),
    # from 1 to 3 it stays above 1 (floor 1); a source left out counts nothing
    from validation import fit_amd_v0 as f

    a, b = {"s": [-1.0, 1.0], "t": [0.5]}, {"s": [2.0, 3.0], "t": [-0.5]}
    assert f.loss_floor(a, b, None) == 0.0 + 1.0 + 0.0
    assert f.loss_floor({"s": [-2.0]}, {"s": [-3.0]}, None) == 4.0
    assert f.loss_floor(a, b, "s") == 0.0 and f.loss_floor({"s": [2.0]}, {"s": [3.0]}, "s") == 0.0


def test_amd_v0_search_refuses_an_error_that_turns_back():
    # the search's premise, checked on the points it runs: an error that falls then rises
    from validation import fit_amd_v0 as f

    grid = (0, 5, 10)
    col = {0: 1.0, 5: -1.0, 10: 1.0}
    with pytest.raises(AssertionError, match="not monotone"):
        f.search(lambda us: {"a": [col[us]]}, grid, [None])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_api_request_refits_are_what_the_fit_prints(cat, engine):
    # API_REQUEST_FIT / SGLANG_API_REQUEST_FIT are pasted from `python -m
    # validation.fit_api_request <engine>` (~2 s): the same check as AMD_V0_FIT's
    from validation import fit_api_request as f
    from validation.serving_crossval import API_REQUEST_FIT, SGLANG_API_REQUEST_FIT

    table = {"vllm": API_REQUEST_FIT, "sglang": SGLANG_API_REQUEST_FIT}[engine]
    pts = f.base(cat, engine, f.cases(engine))
    cap = f.BOUND_US.get(engine, 1e9)
    assert {g: round(s * 1e6) for g, s in table.items()} == {
        g: round(f.fit(pts, g, cap)) for g in table
    }


def test_sglangs_mxfp4_runs_stay_out_of_the_host_fits():
    # validation/fit_engine_versions.py unmodelled_kernel: SGLang's MXFP4 MoE is a kernel the
    # catalog does not time, so neither its per-sequence fit (excluded) nor its API-time fit
    # (fit_api_request.cases) reads those runs; vLLM's MXFP4 runs and SGLang's others stay in
    from roofline.cases.casefiles import load_serving_cases
    from validation import fit_api_request
    from validation.fit_engine_versions import excluded, unmodelled_kernel
    from validation.serving_crossval import CASE_FILES

    run = {"engine": "sglang", "weights": "mxfp4", "source": "https://example.org/page (row)"}
    assert unmodelled_kernel(run) and excluded(run) == unmodelled_kernel(run)
    assert not unmodelled_kernel(run | {"engine": "vllm"})
    assert not unmodelled_kernel(run | {"weights": "bf16"})
    got = fit_api_request.cases("sglang")
    assert got and all(str(c.get("weights")) != "mxfp4" for c in got)
    # the pages' SGLang gpt-oss bursts exist in the files, so the filter has work to do
    every = [c for f in CASE_FILES for c in load_serving_cases(ROOT / f)]
    assert any(unmodelled_kernel(c) and c.get("arrivals") == "burst" for c in every)


def test_a_throughput_at_a_rate_is_held_to_the_load_it_offers():
    """TensorRT-LLM 0.14's QPS-32 rows (500 requests of 16 output tokens) measure 493 tokens/s
    where the ideal run's own Poisson sample gives 465: its arrivals are a sample, and the bound
    of a throughput at a rate is the offered load, 32 x 16 = 512 tokens/s (by hand)."""
    from validation.serving_crossval import ServingResult
    from validation.serving_tables import offered, violates

    file = "validation/engine_sweeps.yaml"
    case = "trtllm014-serve-h100-llama31-8b-tp1-467-16-qps32-out"

    def row(measured: float, ideal: float) -> ServingResult:
        return ServingResult(file, case, "g", "trtllm", "0.14.0", "nvidia-h100-sxm",
                             "nvidia-datacenter", "output_tokens_per_s", measured, ideal,
                             measured, measured, ())  # fmt: skip

    assert offered(row(493.0, 465.0)) == 512.0
    assert row(493.0, 465.0).bound_violation and not violates(row(493.0, 465.0))
    assert violates(row(530.0, 465.0))  # past what 32 requests/s of 16 tokens can carry
    assert not violates(row(400.0, 465.0))  # below the ideal: no violation at all

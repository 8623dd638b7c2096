"""validation/engine_sweeps.yaml: public serving sweeps per engine keep their schema (issue 24)."""

from __future__ import annotations

from pathlib import Path

from roofline.catalog.load import load_catalog
from validation.engine_sweeps_report import METRICS, RESERVED, problems, source_key

ROOT = Path(__file__).resolve().parent.parent


def test_engine_sweeps_schema_and_catalog_ids(engine_sweeps):
    cat, cases = load_catalog(), engine_sweeps
    assert problems(cases, set(cat.models), set(cat.accelerators)) == []
    assert {c["metric"] for c in cases} <= METRICS


def test_engine_sweeps_cite_no_mlperf_and_name_their_sources(engine_sweeps):
    cases = engine_sweeps
    for c in cases:
        text = (str(c.get("source", "")) + " " + str(c.get("notes", ""))).lower()
        assert not any(word in text for word in RESERVED), c["id"]
        assert "http" in c["source"], c["id"]
        assert str(c["retrieved"]) in ("2026-12-04", "2026-12-07"), c["id"]  # stored copies read
    assert len({source_key(c) for c in cases}) >= 2


def test_problems_flags_a_bad_case():
    good = {
        "id": "x",
        "model": "m",
        "hardware": "h",
        "tp": 1,
        "weights": "bf16",
        "kv": "bf16",
        "engine": "vllm",
        "frontend": "api",
        "arrivals": "poisson",
        "rate": 1.0,
        "prompt": 10,
        "output": 10,
        "metric": "ttft_p50_ms",
        "measured": 5.0,
        "source": "https://example.org/t (row 1)",
        "retrieved": "2026-12-04",
    }
    assert problems([good], {"m"}, {"h"}) == []
    bad = dict(good, metric="ttft_p90_ms", source="MLPerf v5.0 https://x", kv="fp7")
    del bad["rate"]
    found = problems([bad, good], {"m"}, {"h"})
    assert any("metric" in p for p in found)
    assert any("cites mlperf" in p for p in found)
    # an InferenceX figure, its source spelled as SemiAnalysis' repository names it, is refused
    semi = dict(good, id="y", source="https://github.com/SemiAnalysisAI/InferenceX (H200 row)")
    assert any("cites inferencex" in p for p in problems([semi], {"m"}, {"h"}))
    assert any("rate" in p for p in found)
    assert any("duplicate" in p for p in found)
    assert any("kv fp7" in p for p in found)


# results reserved as the independent check: no file a fit reads or writes may cite, mirror or
# name them: the validation case files and tables, the catalog's fitted figures
FIT_FILES = ("validation/*.yaml", "validation/*.csv", "hardware/*.yaml", "hardware/*.json")
# what marks a result rather than a mention: MLCommons' results repositories (and any fork or
# mirror: inference_results_vX.Y), LoadGen's logs, a case id; any word of SemiAnalysis' benchmark
RESULT_MARKERS = (
    "mlcommons/inference_results",
    "inference_results_v",
    "mlperf_log_",
    "- id: mlperf",
    "inferencemax",
    "inferencex",
    "semianalysis",
)


def test_no_validation_file_holds_an_mlperf_result():
    """MLPerf Inference results (every round) are the independent check: no validation file or
    fitted catalog file may hold one (a case citing mlcommons' results repositories, a fork or
    mirror of them, or LoadGen logs). SemiAnalysis' InferenceMAX / InferenceX results are
    reserved the same way: a file that mentions them at all fails. (The word MLPerf alone may
    appear, as in the files' own statement that nothing here comes from it, or a datasheet's
    system name.)"""
    files = sorted(f for pattern in FIT_FILES for f in ROOT.glob(pattern))
    assert any(f.suffix == ".csv" for f in files) and any(
        f.parent.name == "hardware" for f in files
    )
    for f in files:
        text = f.read_text().lower()
        for marker in RESULT_MARKERS:
            assert marker not in text, f"{f.name} holds a reserved result ({marker})"


def test_reserved_markers_catch_every_spelling():
    """The markers match the names as sources write them (case-insensitively, as the checks lower
    the text), including a mirror's repository path; the case-file check (RESERVED) holds every
    one of them too."""
    for name in (
        "InferenceMAX",
        "InferenceX",
        "SemiAnalysis",
        "github.com/SemiAnalysisAI/InferenceX",
        "github.com/mlcommons/inference_results_v5.1",
        "github.com/someone/inference_results_v4.1 (a fork)",
        "mlperf_log_summary.txt",
    ):
        assert any(m in name.lower() for m in RESULT_MARKERS), name
        assert any(m in name.lower() for m in RESERVED), name

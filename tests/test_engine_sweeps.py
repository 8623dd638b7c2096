"""validation/engine_sweeps.yaml: public serving sweeps per engine keep their schema (issue 24)."""

from __future__ import annotations

from pathlib import Path

from roofline.catalog.load import load_catalog
from validation.engine_sweeps_report import METRICS, load, problems, source_key

ROOT = Path(__file__).resolve().parent.parent


def test_engine_sweeps_schema_and_catalog_ids():
    cat = load_catalog()
    cases = load()
    assert problems(cases, set(cat.models), set(cat.accelerators)) == []
    assert {c["metric"] for c in cases} <= METRICS


def test_engine_sweeps_cite_no_mlperf_and_name_their_sources():
    cases = load()
    for c in cases:
        text = (str(c.get("source", "")) + " " + str(c.get("notes", ""))).lower()
        assert "mlperf" not in text, c["id"]
        assert "http" in c["source"], c["id"]
        assert str(c["retrieved"]) == "2026-12-04", c["id"]
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
    assert any("MLPerf" in p for p in found)
    assert any("rate" in p for p in found)
    assert any("duplicate" in p for p in found)
    assert any("kv fp7" in p for p in found)


# results reserved as the independent check: no validation file may cite, mirror or name them
RESERVED_MARKERS = ("inferencemax", "inferencex", "semianalysis")


def test_no_validation_file_holds_an_mlperf_result():
    """MLPerf Inference results (every round) are the independent check: no validation file,
    fitted or not, may hold one (a case citing mlcommons' results repositories or LoadGen logs).
    SemiAnalysis' InferenceMAX / InferenceX results are reserved the same way: a validation file
    that mentions them at all fails."""
    for f in sorted((ROOT / "validation").glob("*.yaml")):
        text = f.read_text().lower()
        for marker in ("mlcommons/inference_results", "mlperf_log_summary", "- id: mlperf"):
            assert marker not in text, f"{f.name} holds an MLPerf result ({marker})"
        for marker in RESERVED_MARKERS:
            assert marker not in text, f"{f.name} mentions a reserved benchmark ({marker})"


def test_reserved_markers_catch_every_spelling():
    """The markers match the names as sources write them (case-insensitively, as the check lowers
    the text), including a mirror's repository path."""
    for name in (
        "InferenceMAX",
        "InferenceX",
        "SemiAnalysis",
        "github.com/SemiAnalysisAI/InferenceX",
    ):
        assert any(m in name.lower() for m in RESERVED_MARKERS), name

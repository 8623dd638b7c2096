"""validation/highload_cases.yaml: published serving measurements at high load keep the serving
schema, name their sources and hold nothing from the reserved independent checks."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from roofline.cases.casefiles import load_serving_cases
from roofline.cases.serving import METRICS
from roofline.catalog.files import safe_load_yaml
from roofline.catalog.load import load_catalog
from validation.engine_sweeps_report import RESERVED  # MLPerf, InferenceMAX/X: the check

ROOT = Path(__file__).resolve().parent.parent
HIGHLOAD = ROOT / "validation" / "highload_cases.yaml"
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")


def test_highload_cases_load_and_use_catalog_ids():
    cases = load_serving_cases(HIGHLOAD)
    assert len(cases) >= 40
    cat = load_catalog()
    for c in cases:
        assert c["model"] in cat.models, c["id"]
        assert c["hardware"] in cat.accelerators, c["id"]
        assert c["metric"] in METRICS, c["id"]
        assert c["arrivals"] in ("poisson", "closed", "burst"), c["id"]


def test_highload_cases_name_a_url_and_a_retrieval_date_or_commit():
    for c in load_serving_cases(HIGHLOAD):
        source = str(c["source"])
        assert re.search(r"https?://\S+", source), c["id"]
        retrieved = c.get("retrieved")
        if retrieved is not None:
            date.fromisoformat(str(retrieved))  # a real date, YYYY-MM-DD
        pinned = COMMIT.search(source) or COMMIT.search(str(c.get("notes", "")))
        assert retrieved is not None or pinned, f"{c['id']}: neither retrieved date nor commit"


def test_highload_cases_hold_no_reserved_source():
    raw = safe_load_yaml(HIGHLOAD.read_text())  # the file as written (libyaml: 360 kB)
    for c in raw["cases"]:
        text = " ".join(str(v) for v in c.values()).lower()
        for marker in RESERVED:
            assert marker not in text, f"{c['id']} mentions a reserved source ({marker})"

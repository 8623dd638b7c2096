"""Check validation/engine_sweeps.yaml (public serving sweeps per engine, issue 24 item 3) and
print how its cases spread: per engine, hardware, metric and source.

Checks: the keys of every case against the schema in the file's header, unique ids, catalog model
and hardware ids, the metric and frontend/arrivals vocabularies, a URL and retrieval date in every
case, and no MLPerf or InferenceMAX/InferenceX figure (both reserved as the independent check:
RESERVED). No model is evaluated here. Run: `python -m validation.engine_sweeps_report` (exit 1
on a problem).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("engine_sweeps.yaml")

# Reserved as the independent check (issue 34): MLPerf Inference results (every round: MLCommons'
# inference_results_vX.Y repositories and any fork or mirror of them, LoadGen's log files) and
# SemiAnalysis' InferenceMAX / InferenceX results (github.com/SemiAnalysisAI/InferenceX and its
# dashboards). A case citing one of these words, in any case, is refused.
RESERVED = (
    "mlperf",
    "mlcommons",
    "inference_results_v",
    "inferencemax",
    "inferencex",
    "semianalysis",
)

REQUIRED = {
    "id",
    "model",
    "hardware",
    "tp",
    "weights",
    "kv",
    "engine",
    "frontend",
    "arrivals",
    "prompt",
    "output",
    "metric",
    "measured",
    "source",
    "retrieved",
}
OPTIONAL = {
    "pp",
    "ep",
    "attention_dp",
    "attention_dp_balance",
    "engine_version",
    "rate",
    "concurrency",
    "requests",
    "max_num_seqs",
    "max_num_batched_tokens",
    "harness",
    "chunked_prefill",
    "gpu_memory_utilization",
    "num_scheduler_steps",
    "max_cache_length",
    "notes",
}
METRICS = {
    "ttft_mean_ms",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_mean_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_p50_ms",
    "e2e_p50_ms",
    "requests_per_s",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
}
FRONTENDS = {"api", "none"}
ARRIVALS = {"poisson", "closed", "burst"}
URL = re.compile(r"https?://\S+")


def load(path: Path = PATH) -> list[dict[str, Any]]:
    """The file's cases (a list of mappings)."""
    import yaml  # noqa: TID251 (a validation script reading its own data file)

    # libyaml's SafeLoader where built (the same safe subset and objects; 0.8 -> 0.1 CPU-s)
    raw = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(raw, dict) or set(raw) != {"cases"} or not isinstance(raw["cases"], list):
        raise ValueError(f"{path}: expected one top-level key 'cases' holding a list")
    return raw["cases"]


def source_key(case: dict[str, Any]) -> str:
    """The source a case cites: its first URL without the fragment."""
    m = URL.search(str(case.get("source", "")))
    return m.group(0).split("#")[0].rstrip(").,'") if m else "(no url)"


def problems(cases: list[dict[str, Any]], models: set[str], hardware: set[str]) -> list[str]:
    """Every schema or catalog problem, one line each (empty: the file is fine). Weight and KV
    formats are checked against roofline.domain.precision's tables."""
    from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS

    out: list[str] = []
    seen: set[str] = set()
    for i, c in enumerate(cases):
        name = c.get("id", f"#{i + 1}") if isinstance(c, dict) else f"#{i + 1}"
        if not isinstance(c, dict):
            out.append(f"{name}: not a mapping")
            continue
        missing, unknown = REQUIRED - set(c), set(c) - REQUIRED - OPTIONAL
        out += [f"{name}: missing {k}" for k in sorted(missing)]
        out += [f"{name}: unknown key {k}" for k in sorted(unknown)]
        if name in seen:
            out.append(f"{name}: duplicate id")
        seen.add(name)
        if c.get("model") not in models:
            out.append(f"{name}: model {c.get('model')} not in the catalog")
        if c.get("hardware") not in hardware:
            out.append(f"{name}: hardware {c.get('hardware')} not in the catalog")
        if c.get("weights") not in WEIGHT_FORMATS:
            out.append(f"{name}: weights {c.get('weights')} not a known format")
        if c.get("kv") not in KV_FORMATS:
            out.append(f"{name}: kv {c.get('kv')} not a known format")
        if c.get("metric") not in METRICS:
            out.append(f"{name}: metric {c.get('metric')} not allowed")
        if c.get("frontend") not in FRONTENDS:
            out.append(f"{name}: frontend {c.get('frontend')} not api|none")
        arr = c.get("arrivals")
        if arr not in ARRIVALS:
            out.append(f"{name}: arrivals {arr} not poisson|closed|burst")
        if arr == "poisson" and not isinstance(c.get("rate"), (int, float)):
            out.append(f"{name}: poisson arrivals need a rate")
        if arr == "closed" and not isinstance(c.get("concurrency"), int):
            out.append(f"{name}: closed arrivals need a concurrency")
        if not isinstance(c.get("measured"), (int, float)) or c["measured"] <= 0:
            out.append(f"{name}: measured must be a positive number")
        if not URL.search(str(c.get("source", ""))):
            out.append(f"{name}: source has no URL")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(c.get("retrieved", ""))):
            out.append(f"{name}: retrieved is not a YYYY-MM-DD date")
        cited = (str(c.get("source", "")) + " " + str(c.get("notes", ""))).lower()
        for word in RESERVED:
            if word in cited:
                out.append(f"{name}: cites {word} (reserved as the independent check)")
    return out


def main() -> int:
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    cases = load()
    bad = problems(cases, set(cat.models), set(cat.accelerators))
    for line in bad:
        print(line, file=sys.stderr)
    print(f"{len(cases)} cases, {len({source_key(c) for c in cases})} sources")
    other = sorted({c["engine"] for c in cases} - set(cat.engines))
    if other:
        print(f"engines with no profile in hardware/engines.yaml: {', '.join(other)}")
    for title, key in (
        ("engine", lambda c: c["engine"]),
        ("hardware", lambda c: c["hardware"]),
        ("metric", lambda c: c["metric"]),
        ("engine/metric", lambda c: f"{c['engine']} {c['metric']}"),
        ("source", source_key),
    ):
        print(f"\n{title}:")
        for k, n in sorted(Counter(key(c) for c in cases).items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:4d}  {k}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Files a user hands to a command, as opposed to catalog entries: published measurements for
`validate` (validation/*_cases.yaml), deployments for `check`, request traces (JSONL) for
`--prompt-dist FILE`. Loading is as strict as the catalog's: unknown keys, wrong types and
duplicate ids fail with one line naming the file, the entry and the key."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.errors import CatalogError, InputError
from roofline.files import read_text, yaml
from roofline.files import safe_load_yaml as _safe_load
from roofline.schema import NUM
from roofline.schema import check as _check
from roofline.schema import positive as _positive

if TYPE_CHECKING:  # imported where cases are loaded: a query never needs it
    from roofline.cases.case import Case


_CASE_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "model": (str, True),
    "hardware": (str, True),
    "gpus": (int, True),
    "tp": (int, True),
    "pp": (int, True),
    "ep": (int, True),
    "weights": (str, True),
    "kv": (str, True),
    "batch": ((int, type(None)), True),
    "prompt": (int, True),
    "output": (int, True),
    "metric": (str, True),
    "measured": (NUM, True),
    "source": (str, True),
    "notes": (str, False),
    "engine": (str, False),
    "attention_dp": (int, False),
    "speculative": (dict, False),
    "offload": (dict, False),
    "disagg": (dict, False),  # disaggregated serving (roofline.cases.disagg)
    "burst": (
        dict,
        False,
    ),  # every request at once through the serving simulator (roofline.cases.all_at_t0)
}
_CASE_BURST_KEYS: dict[str, tuple[Any, bool]] = {
    "requests": (int, True),
    "prompt": ((int, str), False),
    "output": ((int, str), False),
    "max_seqs": (int, False),
    "max_batched_tokens": (int, False),
    "chunked_prefill": (bool, False),
}
# lever cases (validation/levers_cases.yaml): a speculative-decoding or a weight-offload setting
_CASE_SPECULATIVE_KEYS: dict[str, tuple[Any, bool]] = {
    "drafter": (str, True),
    "gamma": (int, True),
    "tau": (NUM, False),
    "acceptance": (NUM, False),
    "decay": (NUM, False),
    "tree_tokens": ((int, str), False),
    "draft_vocab": (int, False),
    "topk": (int, False),
    "tau_gamma": (int, False),
    "tau_tree_tokens": (int, False),
    "draft_model": (str, False),
    "draft_weights": (str, False),
}
# disaggregated-serving cases (validation/disagg_cases.yaml, roofline.cases.disagg)
_CASE_DISAGG_KEYS: dict[str, tuple[Any, bool]] = {
    "pool": (str, True),
    "prefill_tp": (int, False),
    "prefill_ep": (int, False),
    "prefill_attention_dp": (int, False),
    "prefill_batch": (int, False),
    "link": (str, False),
    "link_efficiency": (NUM, False),
    "transfer_overhead_ms": (NUM, False),
    "scale_out": (str, False),
    "two_batch_overlap": (bool, False),
}
_CASE_OFFLOAD_KEYS: dict[str, tuple[Any, bool]] = {
    "host": (str, True),
    "gpu_layers": (int, True),
    "mode": (str, False),
    "block_batches": (int, False),
    "kv_host": (bool, False),
    "overlap": (bool, False),
}


def load_cases(path: str | Path) -> list[Case]:
    """Read published measurements (schema of validation/public_cases.yaml), strictly."""
    from roofline.cases.case import Case

    text = read_text(path, stdin_dash=True)
    try:
        raw = _safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cases"), list):
        raise CatalogError(f"{path}: expected a mapping with a 'cases' list")
    cases, seen = [], set()
    for i, entry in enumerate(raw["cases"]):
        name = entry.get("id", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
        where = f"{path}: case '{name}'"
        d = _check(where, entry, _CASE_KEYS)
        if d["id"] in seen:
            raise CatalogError(f"{where}: duplicate id")
        seen.add(d["id"])
        for key in ("gpus", "tp", "pp", "ep", "output"):
            _positive(where, key, d[key])
        _positive(where, "measured", d["measured"])
        if d["batch"] is not None:
            _positive(where, "batch", d["batch"])
        if "speculative" in d:
            _check(f"{where}: speculative", d["speculative"], _CASE_SPECULATIVE_KEYS)
            if ("tau" in d["speculative"]) == ("acceptance" in d["speculative"]):
                raise CatalogError(f"{where}: speculative needs one of 'tau' or 'acceptance'")
        if "offload" in d:
            _check(f"{where}: offload", d["offload"], _CASE_OFFLOAD_KEYS)
        if "disagg" in d:
            _check(f"{where}: disagg", d["disagg"], _CASE_DISAGG_KEYS)
        if "burst" in d:
            _check(f"{where}: burst", d["burst"], _CASE_BURST_KEYS)
        cases.append(Case(**{**d, "measured": float(d["measured"])}))
    return cases


_SPEC_KEYS: dict[str, tuple[Any, bool]] = {
    "name": (str, False),
    "model": (str, True),
    "hardware": (str, True),
    "tp": (int, False),
    "pp": (int, False),
    "ep": (int, False),
    "gpus": (int, False),
    "dp": (int, False),
    "weights": (str, False),
    "kv_dtype": (str, False),
    "engine": (str, False),
    "memory": ((str, int, float), False),
    "rate": ((str, int, float), False),
    "requests": (int, False),
    "seed": (int, False),
    "batch": (int, False),
    "prompt": ((str, int), False),
    "output": ((str, int), False),
    "context": ((str, int), False),
    "shared_prefix": ((str, int, float), False),
    "prefixes": (int, False),
    "turns": (int, False),
    "think_time": ((str, int, float), False),
    "checks": (dict, True),
    # across a day's traffic (roofline/curvechecks.py): the curve file (relative to the spec's
    # directory), the share of capacity left unused, and the delay instead of the derived one
    "traffic_curve": (str, False),
    "headroom": (NUM, False),
    "scale_up_delay": ((str, int, float), False),
}
_SPEC_CHECK_KEYS: dict[str, tuple[Any, bool]] = {
    "min_batch": (int, False),
    "max_tpot": ((str, int, float), False),
    "max_ttft": ((str, int, float), False),
    "max_batch_prefill": ((str, int, float), False),
    "min_throughput": (NUM, False),
    "fits": (bool, False),
    "min_concurrency": (int, False),
    "max_ttft_p99": ((str, int, float), False),
    "max_tpot_p99": ((str, int, float), False),
    "min_goodput": (NUM, False),
    "max_gpu_hours_per_day": (NUM, False),  # across traffic_curve
    "min_slo_attainment": (NUM, False),  # across traffic_curve: a share of the requests, 0 to 1
    "min_prefix_hit_rate": (NUM, False),
}


def load_spec(path: str | Path, candidates: bool = False) -> list[dict[str, Any]]:
    """Deployments to check, from YAML or JSON ('-' reads stdin): one mapping, a list, or a
    mapping with a 'deployments' list. Keys are validated; values keep their human units.

    With `candidates` (`roofline report`): one mapping of the same keys (the question: model,
    traffic, checks) and a `candidates:` list of mappings that each override some of them
    (hardware, tp, weights, ...); one deployment per candidate, checked as above."""
    name = "<stdin>" if str(path) == "-" else str(path)
    text = read_text(path, stdin_dash=True)
    try:
        raw = _safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(
            f"{name}: is not valid YAML or JSON ({getattr(exc, 'problem', exc)})"
        ) from None
    if candidates:
        raw = _candidates(name, raw)
    if isinstance(raw, dict) and "deployments" in raw:
        raw = raw["deployments"]
    entries = raw if isinstance(raw, list) else [raw]
    if not entries or raw is None:
        raise CatalogError(f"{name}: no deployments to check")
    out = []
    for i, entry in enumerate(entries):
        label = entry.get("name", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
        where = f"{name}: deployment '{label}'"
        d = _check(where, entry, _SPEC_KEYS)
        _check(f"{where}: checks", d["checks"], _SPEC_CHECK_KEYS)
        if "traffic_curve" in d and str(path) != "-":  # relative to the spec's own directory
            d = {**d, "traffic_curve": str(Path(path).parent / d["traffic_curve"])}
        out.append({**d, "name": label})
    return out


def _candidates(name: str, raw: Any) -> list[dict[str, Any]]:
    """A report spec's deployments: the shared keys merged under each candidate's own."""
    if not isinstance(raw, dict) or not isinstance(raw.get("candidates"), list):
        raise CatalogError(f"{name}: expected a mapping with a 'candidates' list")
    if not raw["candidates"]:
        raise CatalogError(f"{name}: candidates: the list is empty")
    base = {k: v for k, v in raw.items() if k != "candidates"}
    out = []
    for i, cand in enumerate(raw["candidates"]):
        if not isinstance(cand, dict):
            raise CatalogError(f"{name}: candidate #{i + 1}: expected a mapping")
        if "checks" in cand:
            raise CatalogError(f"{name}: candidate #{i + 1}: checks are shared; set them once")
        d = {**base, **cand}
        if "name" not in cand:
            d["name"] = f"{d.get('hardware', '?')} TP{d.get('tp', 1)}" + (
                f" {d['weights']}" if d.get("weights") else ""
            )
        out.append(d)
    return out


def read_jsonl(path: str | Path) -> list[Any]:
    """One JSON value per non-empty line (a request trace); errors name the line."""
    path = Path(path)
    lines = read_text(path).splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {i + 1}: not JSON ({exc.msg})") from None
    return out


_SERVING_CASE_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "model": (str, True),
    "hardware": (str, True),
    "tp": (int, False),
    "pp": (int, False),
    "ep": (int, False),
    "attention_dp": (int, False),
    "weights": (str, True),
    "kv": (str, True),
    "engine": (str, False),
    "engine_version": ((str, int, float), False),
    "frontend": (str, False),
    "tokenizer": (str, False),
    "arrivals": (str, True),
    "rate": (NUM, False),
    "concurrency": (int, False),
    "requests": (int, False),
    "prompt": ((int, str), True),
    "output": ((int, str), True),
    "max_num_seqs": (int, False),
    "max_num_batched_tokens": (int, False),
    "chunked_prefill": (bool, False),
    "gpu_memory_utilization": (NUM, False),
    "num_scheduler_steps": (int, False),
    "metric": (str, True),
    "measured": (NUM, True),
    "source": (str, True),
    "retrieved": ((str, date), False),
    "notes": (str, False),
}


def is_serving_case_file(path: str | Path) -> bool:
    """True for a file of serving measurements under traffic (cases with `arrivals`), which
    `validate` runs through the serving model rather than one step's physics."""
    try:
        raw = _safe_load(read_text(path, stdin_dash=True)) if str(path) != "-" else None
    except yaml.YAMLError:
        return False
    cases = raw.get("cases") if isinstance(raw, dict) else None
    return isinstance(cases, list) and any(isinstance(c, dict) and "arrivals" in c for c in cases)


def load_serving_cases(path: str | Path) -> list[dict[str, Any]]:
    """Published serving measurements (validation/serving_cases.yaml), key-checked strictly."""
    path = Path(path)
    text = read_text(path)
    try:
        raw = _safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict) or set(raw) != {"cases"} or not isinstance(raw["cases"], list):
        raise CatalogError(f"{path}: expected one top-level key 'cases' holding a list")
    seen: set[str] = set()
    out = []
    for i, entry in enumerate(raw["cases"]):
        name = entry.get("id", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
        d = _check(f"{path}: case '{name}'", entry, _SERVING_CASE_KEYS)
        if d["id"] in seen:
            raise CatalogError(f"{path}: case '{name}': duplicate id")
        seen.add(d["id"])
        out.append(dict(d))
    return out

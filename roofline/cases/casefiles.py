"""Files a user hands to a command, as opposed to catalog entries: published measurements for
`validate` (validation/*_cases.yaml), deployments for `check`, request traces (JSONL) for
`--prompt-dist FILE`. Loading is as strict as the catalog's: unknown keys, wrong types and
duplicate ids fail with one line naming the file, the entry and the key."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.catalog.files import parse_yaml, read_text, yaml
from roofline.catalog.files import safe_load_yaml as _safe_load
from roofline.catalog.schema import NUM, SOURCED
from roofline.catalog.schema import check as _check
from roofline.catalog.schema import positive as _positive
from roofline.domain.errors import CatalogError

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
    **SOURCED,
    "engine": (str, False),
    "attention_dp": (int, False),
    "attention_dp_balance": (str, False),  # serialised | balanced (serving.attention_dp)
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
    raw = parse_yaml(text, str(path))
    if not isinstance(raw, dict) or not isinstance(raw.get("cases"), list):
        raise CatalogError(f"{path}: expected a mapping with a 'cases' list")
    if not raw["cases"]:
        raise CatalogError(f"{path}: the 'cases' list is empty: nothing to validate")
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
        if d["prompt"] < 0:  # 0: a decode step at a context of its own (extra_cases.yaml)
            raise CatalogError(f"{where}: key 'prompt' must not be negative, got {d['prompt']}")
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


_SERVING_CASE_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "model": (str, True),
    "hardware": (str, True),
    "tp": (int, False),
    "pp": (int, False),
    "ep": (int, False),
    "attention_dp": (int, False),
    "attention_dp_balance": (str, False),  # serialised | balanced (serving.attention_dp)
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
    "harness": (str, False),
    "chunked_prefill": (bool, False),
    "gpu_memory_utilization": (NUM, False),
    "num_scheduler_steps": (int, False),
    "max_cache_length": (int, False),
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


_CHECKED: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (path, text): its checked cases


def load_serving_cases(path: str | Path) -> list[dict[str, Any]]:
    """Published serving measurements (validation/serving_cases.yaml), key-checked strictly. A
    file is parsed once per process for the same text (the fits and the tests read the case
    files many times); each call returns its own copies (every value is a scalar)."""
    path = Path(path)
    text = read_text(path)
    key = (str(path), text)
    if key not in _CHECKED:
        _CHECKED[key] = _checked_serving_cases(path, text)
    return [dict(d) for d in _CHECKED[key]]


def _checked_serving_cases(path: Path, text: str) -> list[dict[str, Any]]:
    raw = parse_yaml(text, str(path))
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

"""Golden JSON contracts: the key structure (names, nesting, order and value types) of each
command's `--format json`, compared with tests/golden/*.json. Values are not frozen here (other
tests derive them independently); a changed key shows up in review as a golden diff.
Regenerate with `make golden` (UPDATE_GOLDEN=1) and review the diff. `make golden` also records
each file's SHA-256 in tests/golden/MANIFEST.sha256, so a golden edited by hand (or by anything
else) fails test_goldens_come_from_make_golden."""

import hashlib
import json
import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = GOLDEN / "MANIFEST.sha256"
ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "analyze": ["analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--output", "1k"],
    "capacity": ["capacity", "llama-3.1-405b", "h100", "--tp", "8", "--weights", "fp8"],
    "kv": ["kv", "deepseek-r1", "--context", "32k"],
    "kv_compare": ["kv", "llama-3.1-70b", "--compare"],
    "kv_allocation": ["kv", "llama-3.1-8b", "--allocation", "paged", "--lengths", "100,200"],
    "bytes": ["bytes", "llama-3.1-8b", "h100", "--levers"],
    "hardware_show": ["hardware", "show", "h100"],
    "models_show": ["models", "show", "mixtral-8x7b"],
    "cliff": [
        "cliff",
        "llama-3.1-8b",
        "h100",
        "--max-seqs",
        "1,8",
        "--requests",
        "8",
        "--output",
        "1k",
    ],
    "check": ["check", "llama-3.1-8b", "h100", "--fits", "--max-tpot", "1s"],
    "validate": ["validate", str(ROOT / "validation/public_cases.yaml")],
    "disagg": [
        "disagg",
        "llama-3.1-70b",
        "--prefill",
        "h100",
        "--decode",
        "h200",
        "--prefill-tp",
        "4",
        "--decode-tp",
        "4",
    ],
    "serve": ["serve", "llama-3.1-8b", "h100", "--rate", "5", "--requests", "100"],
    "size": [
        "size",
        "llama-3.1-8b",
        "--rate",
        "5",
        "--hardware",
        "h100,l40s",
        "--requests",
        "100",
        "--slo-ttft",
        "2s",
    ],
    "fleet": ["fleet", str(ROOT / "examples/fleet-one.yaml")],
    "fleet_days": ["fleet", str(ROOT / "examples/fleet-one.yaml"), "--days", "2"],
    "tiers": ["tiers", "llama-3.1-70b", "h100", "--tp", "4", "--tier-capacity", "128GB"],
    "plan": ["plan", "llama-3.1-70b", "h100", "--gpus", "4", "--weights", "fp8"],
    "offload": ["offload", "llama-3.1-70b", "rtx-4090", "--weights", "q4_k_m", "--sweep"],
    "edge": [
        "edge",
        "deepseek-r1",
        "m3-ultra",
        "--weights",
        "q4_k_m",
        "--wired-limit",
        "480GB",
        "--devices",
        "rtx-5090",
    ],
    "speculate": [
        "speculate",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--draft",
        "llama-3.1-8b",
        "--gamma",
        "2,4",
    ],
}


def skeleton(value):
    """The shape of a JSON value: dict keys in order, the first item of lists, type names."""
    if isinstance(value, dict):
        return {k: skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [skeleton(value[0])] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "string"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_contract(run, name):
    doc = run(*COMMANDS[name], "--format", "json").json()
    assert doc["schema_version"] == 1
    shape = skeleton(doc)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(shape, indent=1) + "\n")
        _record(path)
    assert shape == json.loads(path.read_text()), f"JSON contract of {name} changed"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest() -> dict[str, str]:
    """golden file name -> the SHA-256 `make golden` recorded (sha256sum's format)."""
    if not MANIFEST.exists():
        return {}
    return {name: h for h, name in (line.split() for line in MANIFEST.read_text().splitlines())}


def _record(path: Path) -> None:
    """Record `path`'s hash in the manifest (make golden; its tests of one file run in order)."""
    rows = {**_manifest(), path.name: _digest(path)}
    MANIFEST.write_text("".join(f"{h}  {n}\n" for n, h in sorted(rows.items())))


def test_goldens_come_from_make_golden():
    """Every golden is the file `make golden` wrote: its hash is the one the manifest recorded
    then (`sha256sum -c MANIFEST.sha256` in tests/golden says the same), and every command's
    golden is listed."""
    files = {p.name: _digest(p) for p in GOLDEN.glob("*.json")}
    assert set(files) == {f"{name}.json" for name in COMMANDS}
    changed = sorted(n for n, h in files.items() if _manifest().get(n) != h)
    assert not changed, f"goldens changed outside `make golden`: {changed} (run make golden)"

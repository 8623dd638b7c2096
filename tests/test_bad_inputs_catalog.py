"""Bad catalog and config.json inputs, one test per defect: each is one stderr line and exit 2
(never an internal error, never a silent wrong answer), and a valid input still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import refused

EXAMPLES = Path(__file__).resolve().parent.parent / "examples/configs"
DENSE = EXAMPLES / "Phi-3-mini-4k-instruct/config.json"  # phi3
MOE = EXAMPLES / "Qwen2-57B-A14B/config.json"  # qwen2_moe with a shared expert

H100_ALIAS = """accelerators:
- id: test-gpu
  name: Test GPU
  vendor: nvidia
  family: nvidia-geforce
  aliases: [h100]
  memory: {type: GDDR6, capacity_gb: 48, bandwidth_tb_s: 0.768}
  dense_tflops: {fp32: 38.7, bf16: 154.8, fp16: 154.8}
  sparsity_2_4: false
  source: a test
"""


def _config(tmp_path: Path, base: Path, **change: object) -> str:
    """A copy of `base` with `change` applied, as tmp_path/config.json."""
    cfg = {**json.loads(base.read_text()), **change}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize("command", ["analyze", "kv", "import"])
@pytest.mark.parametrize(
    ("base", "key", "value"),
    [
        (DENSE, "intermediate_size", "big"),
        (DENSE, "vocab_size", "x"),
        (MOE, "num_experts", "many"),
        (MOE, "shared_expert_intermediate_size", "x"),  # read only by the qwen2_moe mapping
    ],
)
def test_a_count_that_is_not_a_number_is_named(run, tmp_path, command, base, key, value):
    """Was exit 3, 'internal error: ValueError: invalid literal for int()'."""
    path = _config(tmp_path, base, **{key: value})
    args = {
        "analyze": ["analyze", path, "h100"],
        "kv": ["kv", path],
        "import": ["models", "import", path],
    }
    refused(run(*args[command]), path, f"key '{key}'", "must be a whole number", repr(value))


@pytest.mark.parametrize(
    ("base", "change", "needles"),
    [
        # was silently truncated to 32 layers
        (DENSE, {"num_hidden_layers": 32.5}, ("key 'num_hidden_layers'", "whole number", "32.5")),
        # was accepted as a dense model although a top-k above the expert count is refused
        (MOE, {"num_experts": 0}, ("num_experts_per_tok", "above n_routed_experts (0)")),
        # was exit 3, ZeroDivisionError (the shared expert counted in experts of width 0)
        (MOE, {"moe_intermediate_size": 0}, ("key 'moe_intermediate_size'", "at least 1")),
    ],
)
def test_a_count_that_would_be_miscounted_is_refused(run, tmp_path, base, change, needles):
    refused(run("kv", _config(tmp_path, base, **change)), *needles)


def test_whole_counts_written_as_floats_or_strings_still_work(run, tmp_path):
    """32.0 and "32" are 32: the same figures as the config as published."""
    published = run("kv", str(DENSE), "-f", "json")
    assert published.code == 0, published.stderr
    for spelling in (32.0, "32"):
        r = run("kv", _config(tmp_path, DENSE, num_hidden_layers=spelling), "-f", "json")
        assert r.code == 0, r.stderr
        assert r.json()["kv_bytes_per_token"] == published.json()["kv_bytes_per_token"]


def test_per_layer_counts_import_from_a_file(run, tmp_path):
    """Hunyuan-A13B's config.json gives moe_intermediate_size per layer (a list): it imports
    from a file as it does from a mapping (was refused: 'must be a number, got [3072, ...')."""
    from tests.test_import_families import HUNYUAN_A13B

    path = tmp_path / "config.json"
    path.write_text(json.dumps(HUNYUAN_A13B))
    r = run("models", "import", str(path), "-f", "json")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["models"][0]["moe_intermediate_size"] == 3072


def test_catalog_validate_takes_format(run, tmp_path):
    """-f/--format as every command takes it (was 'No such option: -f'); the JSON parses."""
    good = run("catalog", "validate", "examples/catalog", "-f", "json")
    assert good.code == 0, good.stderr
    assert good.json()["ok"] is True and good.json()["problems"] == []
    (tmp_path / "g.yaml").write_text(H100_ALIAS.replace("vendor: nvidia", "vendr: nvidia"))
    r = run("catalog", "validate", str(tmp_path), "--format", "json")
    assert r.code == 2 and r.stderr.count("\n") == 1 and "'vendr'" in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and len(doc["problems"]) == 1 and "'vendr'" in doc["problems"][0]


def test_catalog_validate_sees_an_alias_a_shipped_entry_holds(run, tmp_path):
    """validate said ok while loading the same directory failed on the alias."""
    (tmp_path / "x.yaml").write_text(H100_ALIAS)
    clash = "accelerator 'test-gpu': alias 'h100' is also used by 'nvidia-h100-sxm'"
    loaded = run("--catalog", str(tmp_path), "hardware", "list")
    refused(loaded, clash)
    validated = run("catalog", "validate", str(tmp_path))
    assert validated.code == 2 and validated.stderr == loaded.stderr, validated.stderr


def test_an_empty_catalog_path_is_refused(run, tmp_path, monkeypatch):
    """--catalog '' read the current directory as a catalog (here an empty one: exit 0)."""
    monkeypatch.chdir(tmp_path)
    refused(run("--catalog", "", "hardware", "list"), "catalog directory ''", "empty path")
    refused(run("catalog", "validate", ""), "catalog directory ''", "empty path")
    # empty segments of ROOFLINE_CATALOG are skipped, as before
    assert run("hardware", "list", "-f", "json", env={"ROOFLINE_CATALOG": "::"}).code == 0


def test_an_unknown_tier_names_the_command_that_lists_tiers(run):
    """The hint named `roofline tier list`, which does not exist."""
    r = run("tiers", "llama-3.1-8b", "h100", "--tier", "zzzzzzzzzz")
    refused(r, "unknown tier 'zzzzzzzzzz'", "see `roofline hardware tiers`")


def test_every_listing_hint_names_a_command(run):
    """Each section's 'see `roofline ...`' hint names a command that runs."""
    from roofline.catalog.load import _LISTED_BY

    for command in _LISTED_BY.values():
        r = run(*command.split(), "-f", "json")
        assert r.code == 0, (command, r.stderr)


def test_a_number_too_long_to_read_is_one_line(run, tmp_path):
    """An integer of 5,000 digits (past int()'s 4,300) or the date 2024-13-45 was exit 3."""
    huge = "1" + "0" * 5000
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": ' + huge + "}")
    refused(run("kv", str(config)), str(config), "5001 digits")
    (tmp_path / "m.yaml").write_text(f"models:\n- id: big\n  hidden_size: {huge}\n")
    refused(run("catalog", "validate", str(tmp_path)), "m.yaml", "not valid YAML", "5001 digits")
    (tmp_path / "m.yaml").unlink()
    prices = "prices:\n- id: x\n  offers: [{cloud: c, usd_per_gpu_hour: 1, date: 2024-13-45}]\n"
    (tmp_path / "prices.yaml").write_text(prices)
    refused(run("catalog", "validate", str(tmp_path)), "prices.yaml", "month must be in 1..12")


def test_catalog_validate_names_each_problem_of_an_entry_once(run, tmp_path):
    """A model with a text hidden_size and no attention heads: two problems, each named once
    (the text key's stand-in '?' had been refused as the same key 19 more times, hiding the
    heads)."""
    (tmp_path / "m.yaml").write_text(
        "models:\n- id: m1\n  name: M\n  model_type: llama\n  hidden_size: abc\n"
        "  num_hidden_layers: 2\n  num_attention_heads: 0\n  num_key_value_heads: 1\n"
        "  vocab_size: 10\n  intermediate_size: 4\n  max_position_embeddings: 128\n  source: x\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 2, r.stderr
    assert "hidden_size' must be an integer, got 'abc'" in lines[0]
    assert "num_attention_heads" in lines[1]

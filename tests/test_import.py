"""Issue #6: importing Hugging Face config.json files gives the published parameter counts."""

import json
from pathlib import Path

import pytest
import yaml

from roofline.catalog import Catalog, model_from_config

HF = Path(__file__).resolve().parent / "data/hf"


@pytest.mark.parametrize(
    ("folder", "published_total", "published_active"),
    [
        ("Llama-3.1-8B", 8.03e9, None),  # HF model page
        ("Mixtral-8x7B-v0.1", 46.7e9, 12.9e9),  # Mistral blog
        ("Qwen3-30B-A3B", 30.5e9, 3.3e9),  # Qwen model card
        ("DeepSeek-V3", 671e9, 37e9),  # DeepSeek-V3 report
        ("gpt-oss-120b", 116.83e9, None),  # gpt-oss model card
        ("gemma-3-27b-it", 27.01e9, None),  # Gemma 3 report, text decoder
        ("QwQ-32B", 32.76e9, None),  # count of the Qwen2.5-32B shape
        ("Mistral-7B-v0.1", 7.24e9, None),  # Mistral 7B: "7.3B" rounded; 7.24B counted on HF
        ("Qwen3-32B", 32.8e9, None),  # Qwen model card
        ("DeepSeek-V2", 236e9, 21e9),  # DeepSeek-V2 report
        ("Llama-4-Maverick-17B-128E", 400e9, 17e9),  # Meta Llama 4 blog
    ],
)
def test_import_gives_published_counts(folder, published_total, published_active):
    m = model_from_config(HF / folder / "config.json")
    assert m.params_total == pytest.approx(published_total, rel=0.005)
    if published_active:
        assert m.params_active == pytest.approx(published_active, rel=0.03)


def test_gemma2_non_embedding_count_is_exact():
    # Gemma 2 report (arXiv 2408.00118), Table 2: Gemma 2 9B has 8,324,201,984 non-embedding
    # parameters; its embedding (256000 × 3584) is tied with the output head
    m = model_from_config(HF / "gemma-2-9b/config.json")
    p = m.param_breakdown()
    assert p["total"] - p["embedding"] == 8_324_201_984
    # local/global alternation starting with a local layer: 21 of each, window 4096
    assert {(g.count, g.window) for g in m.layer_groups} == {(21, 4096), (21, None)}


def test_import_matches_the_catalog_entry(cat):
    for folder, entry in (
        ("DeepSeek-V3", "deepseek-v3"),
        ("gpt-oss-120b", "gpt-oss-120b"),
        ("gemma-3-27b-it", "gemma-3-27b"),
    ):
        imported = model_from_config(HF / folder / "config.json")
        shipped = cat.model(entry)
        assert imported.param_breakdown() == shipped.param_breakdown(), folder
        assert [(g.count, g.window, g.moe) for g in imported.layer_groups] == [
            (g.count, g.window, g.moe) for g in shipped.layer_groups
        ]


def test_cli_import_writes_a_loadable_entry(run, tmp_path):
    out = tmp_path / "qwen3.yaml"
    r = run(
        "models", "import", str(HF / "Qwen3-30B-A3B/config.json"), "--id", "my-qwen", "-o", str(out)
    )
    assert r.code == 0 and "30.53B" in r.stderr
    cat = Catalog()
    cat.add_dir(tmp_path)
    assert cat.model("my-qwen").n_routed_experts == 128
    assert yaml.safe_load(out.read_text())["models"][0]["moe_intermediate_size"] == 768


def test_analyze_takes_a_config_path(run):
    doc = run("analyze", str(HF / "Llama-3.1-8B/config.json"), "h100", "--format", "json").json()
    assert doc["inputs"]["model"] == "llama-3.1-8b"
    assert 0.9 < doc["decode"]["arithmetic_intensity"] < 1.3


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ({"model_type": "bert"}, "model_type 'bert' is not supported"),
        ({"hidden_size": None}, "missing field 'hidden_size'"),
        ({"num_local_experts": None}, "missing field 'num_local_experts'"),
    ],
)
def test_import_errors_name_the_field(run, tmp_path, edit, needle):
    cfg = json.loads((HF / "Mixtral-8x7B-v0.1/config.json").read_text())
    cfg.update(edit)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("models", "import", str(path))
    assert r.code == 2 and needle in r.stderr and r.stdout == ""

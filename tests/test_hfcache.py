"""Issue 9: a Hub repo id finds its config.json in the local Hugging Face cache (no network)."""

import json
import os
from pathlib import Path

import pytest

from roofline.catalog.hfcache import cached_config, hub_cache_dir, is_repo_id
from roofline.catalog.load import load_catalog
from roofline.domain.errors import InputError, UnknownEntryError

HF = Path(__file__).resolve().parent / "data/hf"
REPO = "acme/Llama-3.1-8B-Tuned"  # not a catalog id or alias


def _snapshot(hub: Path, repo: str, rev: str, cfg: dict, mtime: float) -> None:
    """Lay out one snapshot the way huggingface_hub does: the file is a symlink into blobs/."""
    repo_dir = hub / ("models--" + repo.replace("/", "--"))
    (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
    blob = repo_dir / "blobs" / f"blob-{rev}"
    blob.write_text(json.dumps(cfg))
    snap = repo_dir / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    os.utime(snap, (mtime, mtime))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A fake cache: refs/main names 'aaa' (vocab 128256); a newer snapshot 'bbb' differs."""
    hub = tmp_path / "hub"
    llama = json.loads((HF / "Llama-3.1-8B/config.json").read_text())
    _snapshot(hub, REPO, "aaa", llama, 1_000_000)
    _snapshot(hub, REPO, "bbb", {**llama, "vocab_size": 128}, 2_000_000)
    refs = hub / f"models--{REPO.replace('/', '--')}" / "refs"
    refs.mkdir()
    (refs / "main").write_text("aaa")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    return hub


def test_cache_dir_follows_huggingface_hub(tmp_path):
    assert hub_cache_dir({"HF_HUB_CACHE": "/x", "HF_HOME": "/y"}) == Path("/x")
    assert hub_cache_dir({"HF_HOME": "/y"}) == Path("/y/hub")
    assert hub_cache_dir({}) == Path.home() / ".cache/huggingface/hub"


def test_refs_main_wins_over_the_newest_snapshot(hub):
    assert cached_config(REPO).parent.name == "aaa"
    m = load_catalog().model(REPO)
    # Llama-3.1-8B's shape: 8.03B (HF model page), so the refs/main snapshot was read
    assert m.params_total == pytest.approx(8.03e9, rel=0.005)
    assert m.id == "llama-3.1-8b-tuned"


def test_without_refs_main_the_newest_snapshot_is_used(hub):
    (hub / f"models--{REPO.replace('/', '--')}" / "refs" / "main").unlink()
    assert cached_config(REPO).parent.name == "bbb"


def test_hf_home_is_used_when_hf_hub_cache_is_unset(hub, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(hub.parent))
    assert cached_config(REPO).parent.name == "aaa"


def test_cli_commands_take_a_repo_id(run, hub):
    doc = run("models", "show", REPO, "--format", "json").json()
    assert doc["model"]["params_total"] == pytest.approx(8.03e9, rel=0.005)
    doc = run("analyze", REPO, "h100", "--format", "json").json()
    assert 0.9 < doc["decode"]["arithmetic_intensity"] < 1.3
    r = run("models", "import", REPO)
    assert r.code == 0 and "id: llama-3.1-8b-tuned" in r.stdout and REPO in r.stdout


def test_not_cached_is_one_line_and_exit_2(run, hub):
    r = run("models", "show", "acme/not-downloaded")
    assert r.code == 2 and r.stdout == ""
    assert "not in the local Hugging Face cache" in r.stderr
    assert str(hub / "models--acme--not-downloaded") in r.stderr.replace("\n", "")
    assert "huggingface-cli download acme/not-downloaded config.json" in r.stderr
    with pytest.raises(InputError, match="not in the local Hugging Face cache"):
        cached_config("acme/not-downloaded")


def test_catalog_ids_and_paths_are_not_repo_ids(cat, tmp_path):
    assert is_repo_id("meta-llama/Llama-3.1-8B")
    assert not is_repo_id("llama-3.1-8b") and not is_repo_id("a/b/config.json")
    assert not is_repo_id("../x") and not is_repo_id(str(tmp_path))
    with pytest.raises(UnknownEntryError, match="unknown model 'llama-9'"):
        cat.model("llama-9")

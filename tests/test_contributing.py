"""CONTRIBUTING.md is true: every path it names exists, and its first recipe (a new accelerator
in a directory given as --catalog) works as it says."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "CONTRIBUTING.md"


def test_every_named_path_exists():
    named = set(
        re.findall(
            r"`((?:roofline|hardware|tests|docs|examples|validation)/[^`<>]+?)`", DOC.read_text()
        )
    )
    assert len(named) >= 15  # the four recipes name their files
    missing = sorted(p for p in named if not (ROOT / p.split(" ")[0]).exists())
    assert missing == []


def test_an_accelerator_from_a_scratch_catalog(run, tmp_path):
    """The H100 entry copied under a new id and bandwidth: `analyze` reads it from --catalog and
    its decode step moves the same bytes at the new bandwidth. Batch-1 decode is memory-bound
    (about 1 FLOP per byte against a ridge near 300), so its ideal time, bytes / bandwidth, is
    3.35 / 6.70 = half the H100's."""
    src = (ROOT / "hardware/nvidia-h100-sxm.yaml").read_text()
    assert "id: nvidia-h100-sxm" in src and "bandwidth_tb_s: 3.35," in src
    mine = src.replace("id: nvidia-h100-sxm", "id: my-h100-2x").replace(
        "bandwidth_tb_s: 3.35,", "bandwidth_tb_s: 6.70,"
    )
    mine = re.sub(r"\n  aliases: \[[^\]]*\]", "", mine)
    (tmp_path / "mine.yaml").write_text(mine)
    args = ("analyze", "llama-3.1-8b", "--batch", "1", "-f", "json")
    base = run(*args[:2], "h100", *args[2:]).json()
    new = run("--catalog", str(tmp_path), *args[:2], "my-h100-2x", *args[2:]).json()
    t0, t1 = base["decode"]["t_ideal_s"], new["decode"]["t_ideal_s"]
    assert new["decode"]["bytes"] == base["decode"]["bytes"]
    assert abs(t1 / t0 - 0.5) < 1e-9

"""Issue 38 item 4: the published effect the validation table of docs/COMMANDS.md ("KV beyond
HBM") reproduces first, both sides of it: a CPU tier adds prefix hits only once the HBM cache
evicts (LMCache's CPU offloading stores KV evicted from GPU memory; while everything fits, the
GPU's prefix cache already holds it). Routing's 1/N is tests/test_kvtiers.py's."""

from __future__ import annotations

import pytest

# agent sessions on Llama-3.1-8B, one H100: 4 turns on a 2k system prompt, 2 sessions/s
AGENT = """rate: 2
classes:
  - name: agent
    system_prompt: 2000
    prompt: 300
    output: 100
    turns: 4
    tool_wait: 2s
"""


def _cache(run, path, memory: str, *extra: str) -> dict:
    args = ["serve", "llama-3.1-8b", "h100", "--workload", str(path), "--requests", "400"]
    r = run(*args, "--memory", memory, "--no-saturation", *extra, "-f", "json")
    assert r.code == 0, r.stderr
    return r.json()["points"][0]["expected"]["prefix_cache"]


@pytest.mark.parametrize("memory", ["80GB", "20GB"])
def test_a_cpu_tier_adds_hits_only_once_hbm_evicts(run, tmp_path, memory):
    """80 GB a GPU: about 62 GB of KV beside the 16 GB of weights holds every session (no
    eviction), so the tier adds nothing. 20 GB: about 2 GB of KV cannot hold 2 sessions/s x
    (2,000 + up to 4 x 400) tokens x 128 KiB a token of idle history, so HBM evicts and the tier
    serves what it would have dropped: more than 10 points of hits."""
    (tmp_path / "agent.yaml").write_text(AGENT)
    hbm = _cache(run, tmp_path / "agent.yaml", memory)
    cpu = _cache(run, tmp_path / "agent.yaml", memory, "--kv-offload", "cpu:100GB")
    if memory == "80GB":
        assert hbm["evicted_blocks"] == 0
        assert cpu["hit_rate"] == pytest.approx(hbm["hit_rate"])
        assert cpu["tier_hit_rates"] == [0]
    else:
        assert hbm["evicted_blocks"] > 0
        assert cpu["hit_rate"] > hbm["hit_rate"] + 0.10
        assert cpu["tier_hit_rates"][0] > 0.10

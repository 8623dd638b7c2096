"""Issue 38 item 4: the published effect the validation table of docs/COMMANDS.md ("KV beyond
HBM") reproduces first, both sides of it: a CPU tier adds prefix hits only once the HBM cache
evicts (LMCache's CPU offloading stores KV evicted from GPU memory; while everything fits, the
GPU's prefix cache already holds it). Routing's 1/N is tests/test_kvtiers.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import AGENT  # agent sessions on Llama-3.1-8B, one H100


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


def test_a_mooncake_replay_finds_no_more_than_the_trace_reuses():
    """Five minutes of the Mooncake conversation trace on 4 x H100: the hits are bounded by the
    trace's own reuse (a prompt token hits only if its 512-token block was sent before, as the
    release's README says of hash_ids: 12 shared ids share 12 x 512 = 6,144 tokens), computed
    here from the file; a CPU tier under cache-aware routing recovers hits HBM evicted. (The
    replays through docgen.data: docs/COMMANDS.md reads the same two lines, and the session runs
    each once.)"""
    from docs.docgen import data

    path = Path(__file__).resolve().parent.parent / "examples/arrivals"
    trace = path / "mooncake_conversation_5min.jsonl"
    seen: set[int] = set()
    hit = total = 0
    for line in trace.read_text().splitlines():
        r = json.loads(line)
        k = next((i for i, h in enumerate(r["hash_ids"]) if h not in seen), len(r["hash_ids"]))
        hit, total = hit + min(512 * k, r["input_length"]), total + r["input_length"]
        seen |= set(r["hash_ids"])
    bound = hit / total
    assert 0.15 < bound < 0.25  # about a fifth of the prompt tokens reuse an earlier block
    cmd = "roofline serve llama-3.1-8b h100 --dp 4 --arrivals"
    cmd += " examples/arrivals/mooncake_conversation_5min.jsonl --router cache-aware"
    hbm = data(cmd)["expected"]["prefix_cache"]
    cpu = data(cmd + " --kv-offload cpu:200GB")["expected"]["prefix_cache"]
    assert hbm["evicted_blocks"] > 0
    assert hbm["hit_rate"] < cpu["hit_rate"] <= bound
    assert cpu["tier_hit_rates"][0] > 0.05

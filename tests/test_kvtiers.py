"""KV beyond HBM (roofline.serving.sim.kvtiers, blockcache, sessionroute): tiers under the prefix
cache, retention between turns, Mooncake hash_ids, prefix-aware routing and agent fan-out, against
figures derived by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.levers.tiers import tier_bandwidth
from roofline.serving.arrivals import read_arrivals
from roofline.serving.mix import mix_workload
from roofline.serving.sessionroute import affinity, route, split
from roofline.serving.sim.blockcache import BlockCache, hashed_info
from roofline.serving.sim.kvtiers import KvHierarchy, KvTier, TierStore, parse_offload
from roofline.serving.sim.prefixcache import PrefixCache, PrefixInfo
from roofline.serving.workloadfile import parse_workload

ROOT = Path(__file__).resolve().parents[1]
SERVE = ("serve", "llama-3.1-8b", "h100", "--prompt", "1000", "--output", "100", "--turns", "2")
SERVE += ("--rate", "1", "--requests", "40", "--no-saturation", "-f", "json")


# ---- options -----------------------------------------------------------------------------------
def test_offload_spec_reads_decimal_sizes():
    assert parse_offload("cpu:200GB,ssd:2TB") == [("cpu", 200e9), ("ssd", 2e12)]
    assert parse_offload("cxl:512G") == [("cxl", 512e9)]


@pytest.mark.parametrize("spec", ["cpu", "cpu:0GB", "cpu:lots", ":200GB"])
def test_bad_offload_spec_is_an_input_error(spec):
    with pytest.raises(InputError):
        parse_offload(spec)


@pytest.mark.parametrize(
    "extra",
    [
        ("--retention", "offload"),  # no tier to offload to
        ("--retention", "keep"),
        ("--kv-offload", "pcie5-x16:1GB"),  # a link, not a memory tier
    ],
)
def test_bad_kv_options_exit_2_with_one_line(run, extra):
    r = run(*SERVE, *extra)
    assert r.code == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1


# ---- tiers -------------------------------------------------------------------------------------
def test_tier_store_overflows_to_the_next_tier_then_drops():
    """Capacities 10 and 8 blocks: 6 + 6 overflow the first; the older goes down a tier; a third
    6 pushes the second tier past 8, and its oldest leaves the hierarchy."""
    s = TierStore([10, 8], [1.0, 2.0])
    s.put(1, 6)
    s.put(2, 6)
    assert s.used == [6, 6]
    s.put(3, 6)
    assert s.used == [6, 6] and s.dropped == 6  # 1 went 0 -> 1 -> out; 2 to tier 1
    assert s.take(3) == (0, 6)
    assert s.take(2) == (1, 6)
    assert s.take(1) == (-1, 0)


def test_store_capacity_and_load_time_by_hand(cat):
    """Llama-3.1-70B fp8 KV on TP4: 80 layers x 8 KV heads x 128 x (K, V) x 1 B / 4 GPUs = 40,960
    B per token per GPU; a 16-token block 655,360 B. 200 GB over the replica's 4 GPUs holds
    200e9 / (655,360 x 4) = 76,293.9 blocks. H100's host link PCIe Gen5 x16 (64 GB/s) against
    a DDR5 socket of 307.2 GB/s shared by 4 GPUs (76.8 GB/s): 64 GB/s, so a block loads in
    655,360 / 64e9 = 10.24 us."""
    hw, ddr = cat.accelerator("h100"), cat.tier("ddr5-socket-spr")
    bw = tier_bandwidth(hw, ddr, sharing=4)
    assert bw == pytest.approx(64e9)
    kv = KvHierarchy((KvTier("cpu", ddr.id, 200e9, bw),), "offload")
    s = TierStore.build(kv, 16, 40_960.0, 4)
    assert s.cap[0] == pytest.approx(76_293.9, rel=1e-5)
    assert s.load_s[0] == pytest.approx(10.24e-6)


def test_a_lower_tier_is_never_faster_than_hbm(cat):
    """Physics: every memory or storage tier, through any accelerator's host link, at most its
    HBM bandwidth."""
    tiers = [t for t in cat.tiers.values() if t.kind in ("memory", "storage")]
    assert tiers
    for hw in cat.accelerators.values():
        if hw.host_link is None:
            continue
        for t in tiers:
            assert tier_bandwidth(hw, t, sharing=1) <= hw.memory_bandwidth_bytes_per_s


def test_a_cpu_hit_costs_less_than_recomputing_it(cat):
    """Loading a token's KV from host DRAM (40,960 B at 64 GB/s: 0.64 us per GPU) against the
    least a recompute costs on 4 H100s: 2 x 70.6e9 FLOPs / (4 x 989.4e12 FLOP/s dense BF16,
    fp8 at twice that: 1,979e12) = 17.8 us. A hit is ~28x cheaper (engines load rather than
    recompute)."""
    hw = cat.accelerator("h100")
    load = 40_960 / tier_bandwidth(hw, cat.tier("ddr5-socket-spr"), sharing=4)
    recompute = 2 * 70.6e9 / (4 * 1979e12)
    assert load == pytest.approx(0.64e-6)
    assert load < recompute / 20


# ---- retention (PrefixCache) -------------------------------------------------------------------
def _two_turns() -> PrefixInfo:
    """One conversation: turn 1 (request 0) 100 tokens in, 20 out; turn 2 (request 1) 100 + 20
    + 10 = 130 tokens, its history 120."""
    z = np.zeros(2, dtype=np.int64)
    return PrefixInfo(
        np.full(2, -1), z, z, np.array([0, 120]), np.array([1, -1]), 0.0, 1, np.array([0, 1])
    )


@pytest.mark.parametrize(
    ("retention", "hit", "pinned_delta"),
    [
        # turn 1 leaves 100 + 20 - 1 = 119 tokens of KV: 7 full blocks of 16 = 112 tokens;
        # turn 2 may hit floor(129 / 16) = 8 blocks, so all 7 (112 tokens)
        ("cache", 112, 0),
        ("pinned", 112, 7),  # held in use: the scheduler's KV grows by 7 blocks until turn 2
        ("drop", 0, 0),
    ],
)
def test_retention_between_turns(retention, hit, pinned_delta):
    c = PrefixCache(_two_turns(), 16, None, retention)
    c.admit(0, 100)
    assert c.release(0, 119, True, True) == pinned_delta
    assert c.idle_blocks == (7 if retention == "cache" else 0)
    got, delta = c.admit(1, 130)
    assert got == hit
    assert delta == -pinned_delta


def test_offload_hits_come_from_the_tier_with_their_load_time():
    store = TierStore([100.0], [1e-3])
    c = PrefixCache(_two_turns(), 16, store, "offload")
    c.admit(0, 100)
    c.release(0, 119, True, True)
    assert c.idle_blocks == 0 and store.used == [7]
    got, _ = c.admit(1, 130)
    assert got == 112 and c.tier_hits == [112]
    assert c.load_s == pytest.approx(7e-3)  # 7 blocks at 1 ms


def test_lru_evictions_spill_to_the_tier():
    store = TierStore([100.0], [1e-3])
    c = PrefixCache(_two_turns(), 16, store)
    c.admit(0, 100)
    c.release(0, 119, True, True)
    c.fit(0.0)  # no free space: the 7 idle blocks leave HBM, to the CPU tier
    assert c.evicted == 7 and store.used == [7]
    got, _ = c.admit(1, 130)
    assert got == 112 and c.tier_hits == [112]


def test_serve_retention_hit_rates_by_hand(run):
    """20 conversations of 2 turns, Llama-3.1-8B: turn 1 receives 1,000 tokens, turn 2 1,000 +
    100 + 1,000 = 2,100, its history's KV 1,099 tokens = 68 blocks = 1,088 tokens. Received
    20 x 3,100 = 62,000; the cache hits 20 x 1,088 = 21,760 (35.1%); drop hits nothing; offload
    hits the same tokens, all from the CPU tier."""
    keep = run(*SERVE).json()["expected"]["prefix_cache"]
    drop = run(*SERVE, "--retention", "drop").json()["expected"]["prefix_cache"]
    off = run(*SERVE, "--kv-offload", "cpu:200GB", "--retention", "offload").json()
    pc = off["expected"]["prefix_cache"]
    assert keep["prefill_tokens_received"] == 62_000
    assert keep["hit_rate"] == pytest.approx(21_760 / 62_000)
    assert drop["hit_rate"] == 0.0
    assert pc["hit_rate"] == pytest.approx(21_760 / 62_000)
    assert pc["tier_hit_rates"] == [pytest.approx(21_760 / 62_000)]
    assert pc["hbm_hit_rate"] == pytest.approx(0.0, abs=1e-12)
    assert off["inputs"]["kv_tiers"][0]["tier"] == "ddr5-socket-spr"


# ---- hash_ids (BlockCache) ---------------------------------------------------------------------
def test_block_hits_from_hash_ids_by_hand():
    """512-token trace blocks over 16-token engine blocks: 32 engine blocks each. Request 0
    (1,600 tokens, blocks 1 2 3 4) runs; request 1 (1,100 tokens, blocks 1 2 9) may hit
    floor(1,099 / 16) = 68 engine blocks = 1,088 tokens: 2 whole trace blocks (1,024 tokens),
    both held by request 0, so the scheduler's double count drops by 2 x 32. Released (1, then
    0, each tail first) the idle order is 9, 4, 3, 2, 1: five blocks."""
    c = BlockCache(hashed_info([np.array([1, 2, 3, 4]), np.array([1, 2, 9])]), 16)
    assert c.admit(0, 1600) == (0, 0)
    assert c.admit(1, 1100) == (1024, -64)
    assert c.release(1, 1100) == 64
    c.release(0, 1600)
    assert c.idle_blocks == 5 * 32
    c.fit(64)  # room for 2 trace blocks: 9, 4 and 3 go first
    assert list(c.lru) == [2, 1]
    assert c.admit(1, 1100)[0] == 1024


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=6), min_size=1, max_size=25),
    st.integers(0, 6),
)
def test_a_tier_never_lowers_the_hit_rate(reqs, room):
    """Physics: the same requests, the same HBM room; with a CPU tier under it at least as many
    tokens hit (a block evicted from HBM may still be found below)."""
    hits = []
    for store in (None, TierStore([1e9], [0.0])):
        c = BlockCache(hashed_info([np.array(r) for r in reqs]), 16, store)
        for i, r in enumerate(reqs):
            c.admit(i, 512 * len(r) + 1)
            c.release(i, 512 * len(r))
            c.fit(room * 32)
        hits.append(c.hits)
    assert hits[1] >= hits[0]


def test_mooncake_hash_ids_are_read_into_the_workload():
    w = read_arrivals(ROOT / "examples/arrivals/mooncake_sample.jsonl")
    assert w.prefix is not None and w.prefix.hashes is not None
    assert w.prefix.hashes[0].tolist() == list(range(19))  # the first record, ceil(9,291 / 512)
    assert w.prefix.hash_block_tokens == 512


# ---- routing -----------------------------------------------------------------------------------
def test_a_moved_turn_is_a_new_conversation_on_its_replica():
    info = _two_turns()
    sent = np.array([0.0, 5.0])
    order, sub, times = split(info, np.array([0, 1]), 1, sent, np.array([0.0, np.inf]))
    assert order.tolist() == [1] and sub.n_first == 1 and times.tolist() == [5.0]
    assert sub.conv[0] != 0  # not the conversation replica 0 cached
    assert affinity(info, 2).tolist() == [0, 0]


def test_round_robin_deals_turns_in_arrival_order():
    """Three one-turn conversations and their second turns, sent at 0, 1, 2, 3, 4, 5: dealt 0 1 0
    1 0 1 by time, so a second turn lands where its first went only by chance."""
    z = np.zeros(6, dtype=np.int64)
    conv = np.array([0, 1, 2, 0, 1, 2])
    turn = np.array([0, 0, 0, 1, 1, 1])
    info = PrefixInfo(np.full(6, -1), z, conv, z, np.array([3, 4, 5, -1, -1, -1]), 0.0, 3, turn)
    sent = np.arange(6.0)
    chosen = route("round-robin", info, np.full(6, 100), 2, sent, sent, sent + 0.5)
    assert chosen.tolist() == [0, 1, 0, 1, 0, 1]


def test_routing_reuse_falls_as_one_over_n(run):
    """4 turns per conversation on 4 replicas: with affinity every later turn finds its history;
    dealt round robin, a later turn lands on its history's replica 1/4 of the time (the
    published 1/N of load-only routing), so the history hits fall to about a quarter."""
    args = ("serve", "llama-3.1-8b", "h100", "--dp", "4", "--prompt", "500", "--output", "50")
    args += ("--turns", "4", "--rate", "4", "--requests", "160", "--no-saturation", "-f", "json")
    aff = run(*args, "--router", "affinity").json()["expected"]["prefix_cache"]["hit_rate"]
    rr = run(*args, "--router", "round-robin").json()["expected"]["prefix_cache"]["hit_rate"]
    assert 0.15 < rr / aff < 0.40


# ---- fan-out -----------------------------------------------------------------------------------
AGENT = {
    "rate": 1.0,
    "classes": [{"name": "a", "system_prompt": 800, "prompt": 100, "output": 50, "turns": 3}],
}


def test_fan_out_sub_agents_share_the_lead_context():
    """4 sub-agents per session of 3 turns: 3 + 4 = 7 sequences per arrival; each sub-agent's
    prompt is the lead's first (800 + 100) + its own 100 tokens, arriving with the lead, its
    first 900 tokens one prefix group per session, the lead's turns in it too."""
    doc = {**AGENT, "classes": [{**AGENT["classes"][0], "fan_out": 4}]}
    mix = parse_workload(doc)
    assert mix.classes[0].sequences_per_arrival == 7
    w = mix_workload(mix, requests=70, seed=1)
    info = w.prefix
    assert info is not None
    assert np.all(info.shared == 900)  # every sequence of a session hangs from its context
    subs = np.flatnonzero((info.turn == 0) & (w.prompts == 1000))
    assert len(subs) == 4 * 10  # 70 sequences / 7 per session
    assert np.all(w.prompts[subs] == 1000)
    for s in np.unique(info.session[subs]):
        mine = subs[info.session[subs] == s]
        lead = np.flatnonzero((info.session == s) & (w.prompts == 900))
        assert len(lead) == 1 and info.turn[lead[0]] == 0
        assert len(set(info.group[mine].tolist())) == 1
        assert np.all(w.arrival_s[mine] == w.arrival_s[lead[0]])


def test_the_fan_out_lead_shares_its_context_with_its_sub_agents():
    """Issue 37: "fan-out sub-agents share the parent's prefix while it is cached". One session
    (one turn, 4 sub-agents) on vLLM's 16-token blocks: the lead's prompt is 800 + 100 = 900
    tokens, 56 full blocks (896 tokens); each sub-agent's 1,000-token prompt starts with them.
    Admitted together, the five sequences pin the 56 context blocks once: the scheduler counts
    each sequence's blocks in full and the cache's correction takes back 4 x 56 = 224 of the
    5 x 56 = 280 it counted. Each sub-agent hits all 56 blocks (896 tokens) the lead computes,
    and so does the lead's next turn in its conversation."""
    doc = {**AGENT, "classes": [{**AGENT["classes"][0], "turns": 2, "fan_out": 4}]}
    w = mix_workload(parse_workload(doc), requests=6, seed=1)
    info = w.prefix
    assert info is not None and len(w.prompts) == 6  # the lead's 2 turns + 4 sub-agents
    first = np.flatnonzero(info.n_first > np.arange(6))
    cache = PrefixCache(info, 16)
    hits, correction = [], 0
    for r in first:  # the lead first (it arrives first), then its sub-agents
        hit, delta = cache.admit(int(r), int(w.prompts[r]))
        hits.append(hit)
        correction += delta
    assert hits == [0, 896, 896, 896, 896]
    assert correction == -224
    assert cache.pinned_blocks == 56
    lead = int(first[0])
    cache.release(lead, int(w.prompts[lead] + w.outputs[lead] - 1), ended=True)
    nxt = int(info.succ[lead])
    assert cache.admit(nxt, int(w.prompts[nxt]))[0] >= 896


def test_fan_out_with_samples_is_refused():
    doc = {**AGENT, "classes": [{**AGENT["classes"][0], "turns": 1, "n": 2, "fan_out": 2}]}
    with pytest.raises(InputError, match="fan_out"):
        parse_workload(doc)


def test_kv_options_in_size_without_a_workload_file_are_refused(run):
    r = run("size", "llama-3.1-8b", "--rate", "1", "--hardware", "h100", "--retention", "drop")
    assert r.code == 2 and r.stdout == ""
    assert "--retention" in r.stderr


def test_a_class_sets_its_own_retention():
    """`retention: drop` on the agent class: its turns' history is not kept (as --retention
    drop); `retention` without turns is refused."""
    doc = {**AGENT, "classes": [{**AGENT["classes"][0], "retention": "drop"}]}
    w = mix_workload(parse_workload(doc), requests=30, seed=1)
    assert w.prefix is not None and w.prefix.retention is not None
    assert set(w.prefix.retention.tolist()) == {3}  # RETENTIONS.index("drop")
    bad = {**AGENT, "classes": [{**AGENT["classes"][0], "turns": 1, "retention": "pinned"}]}
    with pytest.raises(InputError, match="retention"):
        parse_workload(bad)


def test_kv_options_without_reused_kv_are_refused(run):
    r = run("serve", "llama-3.1-8b", "h100", "--rate", "1", "--requests", "20", "--kv-offload",
            "cpu:100GB")  # fmt: skip
    assert r.code == 2 and r.stdout == ""
    assert "reused" in r.stderr


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-7, 1e-2), st.floats(1e-7, 1e-2))
def test_a_hit_never_costs_more_than_recomputing_it(load_s, recompute_s):
    """Physics: a tier whose block loads slower than the engine recomputes it is not loaded
    from; the cache recomputes those blocks (no hit, no load time)."""
    store = TierStore([100.0], [load_s])
    store.choose(recompute_s)
    c = PrefixCache(_two_turns(), 16, store, "offload")
    c.admit(0, 100)
    c.release(0, 119, True, True)
    got, _ = c.admit(1, 130)
    assert c.load_s <= 7 * recompute_s
    assert got == (112 if load_s <= recompute_s else 0)

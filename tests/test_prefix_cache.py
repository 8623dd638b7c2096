"""Prefix caching in the serving simulator (roofline.serving.sim.prefixcache): a shared system
prompt and multi-turn conversations, against figures derived by hand from the model's shape."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.sim.prefixcache import PrefixCache, PrefixConfig

SERVE = ("serve", "llama-3.1-8b", "h100", "--output", "200", "--rate", "1", "--requests", "300")


def _serve(run, *extra: str) -> dict:
    r = run(*SERVE, "--prompt", "2200", *extra, "-f", "json")
    assert r.code == 0, r.stderr
    return r.json()


def _flops_per_request(prompt: int, cached: int, output: int) -> float:
    """Llama-3.1-8B by hand: 32 layers, d_model 4096, 32 query heads and 8 KV heads of 128, FFN
    14336, vocabulary 128256. Linear weights per layer: q and o 4096², k and v 4096·1024, gate,
    up and down 3·4096·14336 = 218,103,808, so 2 FLOPs each per token: 32 · 2 · 218.1M. Causal
    attention over S tokens: QKᵀ and PV each Σ_{i≤S} 2·4096·i = 4096·S(S+1) per layer. A
    prefill that finds H tokens cached runs tokens H+1 … S: linear (S − H) tokens, attention
    A(S) − A(H); LM head 2·4096·128256 once per prefill and once per decode step; decode step t
    attends T = S + t tokens: 4·4096·T per layer."""
    layers, d, ffn, vocab = 32, 4096, 14336, 128256
    lin = 2 * layers * (2 * d * d + 2 * d * 1024 + 3 * d * ffn)
    head = 2 * d * vocab

    def attn(s: int) -> float:
        return layers * 2 * d * s * (s + 1)

    pre = lin * (prompt - cached) + attn(prompt) - attn(cached) + head
    steps = output - 1
    mean_t = prompt + (1 + steps) / 2  # T = S+1 … S+O−1
    dec = steps * (lin + head + layers * 4 * d * mean_t)
    return pre + dec


def test_shared_prefix_2000_plus_200(run):
    """2,000 shared + 200 new tokens on Llama-3.1-8B / H100 at 1 req/s (vLLM, 16-token blocks:
    2,000 = 125 whole blocks, so a warm request computes exactly its 200 new tokens)."""
    base = _serve(run)
    hot = _serve(run, "--shared-prefix", "2k")
    pc = hot["expected"]["prefix_cache"]
    n = 300
    # every prompt is received whole; the first (cold) one computes 2,200, the rest 200 each
    assert pc["prefill_tokens_received"] == 2200 * n
    assert pc["prefill_tokens_computed"] == 2200 + 200 * (n - 1)
    assert pc["prefill_tokens_received"] / pc["prefill_tokens_computed"] == pytest.approx(
        2200 / 200, rel=0.04
    )  # 11x
    assert "prefix_cache" not in base["expected"]  # no option, no cache: as before
    # p50 TTFT ≈ 69 → ≈ 31 ms: the 200-token prefill reads the 16.06 GB of weights (4.8 ms at
    # 3.35 TB/s) plus the engine's fixed costs (19 ms request path, 1.45 ms step, launches)
    t0, t1 = base["expected"]["ttft_s"]["p50"], hot["expected"]["ttft_s"]["p50"]
    assert 0.060 < t0 < 0.080
    assert 16.06e9 / 3.35e12 + 0.019 < t1 < 0.036
    assert 1.9 < t0 / t1 < 2.5
    # the compute bound counts computed tokens: the FLOPs ratio by hand (≈ 5.6x)
    ratio = _flops_per_request(2200, 0, 200) / _flops_per_request(2200, 2000, 200)
    assert 5.0 < ratio < 6.0
    bound = hot["saturation_rate"]["compute_bound"] / base["saturation_rate"]["compute_bound"]
    assert bound == pytest.approx(ratio, rel=0.02)
    # the saturation probe sees the cache too, and stays under the bound
    sat0, sat1 = base["saturation_rate"], hot["saturation_rate"]
    assert sat1["expected"] > 1.5 * sat0["expected"]
    assert sat1["expected"] <= sat1["compute_bound"] * (1 + 1e-9)


def test_shrunk_memory_lowers_the_hit_rate_and_says_why(run):
    """Eight system prompts of 2,000 tokens (125 blocks each, 1,000 in all): with 22 GB the KV
    budget cannot keep them all idle next to the running sequences, so LRU evicts some."""
    args = ("--shared-prefix", "2k", "--prefixes", "8", "--rate", "4")
    roomy = run(*SERVE, "--prompt", "2200", *args, "-f", "json").json()
    r = run(*SERVE, "--prompt", "2200", *args, "--memory", "22GB", "-f", "json")
    tight = r.json()
    a, b = roomy["expected"]["prefix_cache"], tight["expected"]["prefix_cache"]
    assert a["hit_rate"] == pytest.approx(a["possible_hit_rate"])
    assert a["hits_lost_to_eviction"] is None
    assert b["hit_rate"] < a["hit_rate"] - 0.01
    assert b["evicted_blocks"] > 0
    assert "LRU evicted" in b["hits_lost_to_eviction"]
    assert "LRU evicted" in r.stderr and "--memory" in r.stderr


def _multi_turn(run, engine: str) -> list[float]:
    r = run(
        "serve", "llama-3.1-8b", "h100", "--prompt", "300", "--output", "300", "--turns", "5",
        "--think-time", "5s", "--rate", "0.5", "--requests", "100", "--engine", engine,
        "--no-saturation", "-f", "json",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    pc = r.json()["expected"]["prefix_cache"]
    assert pc["evicted_blocks"] == 0  # plenty of room: nothing leaves during the think time
    return pc["cached_share_by_turn"]


def test_multi_turn_cached_share_by_turn(run):
    """5 turns of 300 in / 300 out, outputs cached, 16-token blocks. Turn k's prompt is
    L_k = (k−1)·600 + 300 = 600k − 300 tokens; turn k−1 leaves the KV of its prompt and its
    output but the last token (never fed back: vLLM caches computed tokens only, SGLang inserts
    (prompt + output)[:-1]), 600(k−1) − 1 tokens, of which floor((600(k−1) − 1)/16) whole blocks:
      k=2: floor(599/16)  = 37 → 592/900   = 0.6578
      k=3: floor(1199/16) = 74 → 1184/1500 = 0.7893
      k=4: floor(1799/16) = 112 → 1792/2100 = 0.8533
      k=5: floor(2399/16) = 149 → 2384/2700 = 0.8830
    The issue's 0, 0.658, 0.800, 0.853, 0.889 counts floor(600(k−1)/16) blocks, i.e. the last
    output token as cached too; it differs only where 600(k−1) is a whole number of blocks
    (k = 3, 5), by one block."""
    shares = _multi_turn(run, "vllm")
    hand = [0.0] + [
        math.floor((600 * (k - 1) - 1) / 16) * 16 / (600 * k - 300) for k in range(2, 6)
    ]
    assert shares == pytest.approx(hand, abs=1e-9)
    assert shares == pytest.approx([0, 0.658, 0.800, 0.853, 0.889], abs=0.012)
    # SGLang's page size 1: every token but the last output one, (600(k−1) − 1)/(600k − 300)
    sg = _multi_turn(run, "sglang")
    assert sg == pytest.approx([0.0] + [(600 * (k - 1) - 1) / (600 * k - 300) for k in range(2, 6)])


def test_check_spec_min_prefix_hit_rate(run, tmp_path):
    """A warm 2,200-token prompt finds 2,000 cached: the hit rate over n requests is
    2000(n − 1)/(2200 n), 0.906 at n = 300."""
    spec = tmp_path / "spec.yaml"
    body = (
        "name: chat\nmodel: llama-3.1-8b\nhardware: h100\nrate: 1\nrequests: 300\nprompt: 2200\n"
        "output: 200\nshared_prefix: 2k\nchecks:\n  min_prefix_hit_rate: {}\n"
    )
    spec.write_text(body.format(0.9))
    r = run("check", "--spec", str(spec), "-f", "json")
    assert r.code == 0, r.stdout + r.stderr
    (c,) = r.json()["checks"]
    assert c["value"] == pytest.approx(2000 * 299 / (2200 * 300))
    spec.write_text(body.format(0.95))
    assert run("check", "--spec", str(spec)).code == 1


@pytest.mark.parametrize(
    "args",
    [
        ("--shared-prefix", "abc"),
        ("--turns", "0"),
        ("--think-time", "5s"),
        ("--prefixes", "3"),
        ("--shared-prefix", "-5"),
    ],
)
def test_bad_prefix_options_exit_2(run_main, args):
    r = run_main(*SERVE, "--prompt", "2200", *args)
    assert r.code == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stdout == ""


@settings(max_examples=60, deadline=None)
@given(
    shared=st.integers(1, 300),
    block=st.sampled_from([1, 16]),
    lengths=st.lists(st.integers(2, 600), min_size=1, max_size=12),
    free=st.integers(0, 60),
)
def test_cache_never_hits_more_than_it_may(shared, block, lengths, free):
    """Whatever the order: a prefill finds at most floor((L − 1)/block) whole blocks cached (its
    last token is always computed), never more than it could have without evictions, and after
    fit the idle blocks fit in the free space."""
    spec = PrefixConfig(shared_tokens=shared, turns=2)
    prompts, outputs, info = spec.build(lengths, lengths)
    cache = PrefixCache(info, block)
    for r in range(len(prompts)):
        L = int(prompts[r])
        hit, _ = cache.admit(r, L)
        assert 0 <= hit <= (L - 1) // block * block
        cache.release(r, L + int(outputs[r]) - 1)
        cache.fit(free)
        assert 0 <= cache.idle_blocks <= free
    s = cache.stats(prompts)
    assert s.hit_tokens <= s.possible_tokens <= s.received_tokens


def test_closed_loop_users_hold_conversations(run):
    """8 users, 3 turns of 1,000 in / 200 out, no think time: turn 2's prompt is 2,200 tokens
    and finds floor(1199/16)·16 = 1,184 cached; turn 3's is 3,400 and finds
    floor(2399/16)·16 = 2,384. Only the requests that ran count."""
    r = run("serve", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200",
            "--concurrency", "8", "--turns", "3", "--duration", "20s", "-f", "json")  # fmt: skip
    assert r.code == 0, r.stderr
    shares = r.json()["expected"]["prefix_cache"]["cached_share_by_turn"]
    assert shares == pytest.approx([0.0, 1184 / 2200, 2384 / 3400])

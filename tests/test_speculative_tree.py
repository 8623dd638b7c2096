"""Tree verification and the per-batch choice of the round: the tree's yield τ(T) by hand,
the draft cost of a tree, the choice a planner makes at batch 1 and far past the ridge, the
engine's host cost of a speculative round, and the properties τ ≤ min(T, γ + 1), τ growing in
T, no chosen speed-up rising with batch past the ridge."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.levers.acceptance import (
    alpha_from_tau,
    expected_tokens_per_round,
    rank_acceptance,
    tree_tokens_per_round,
)
from roofline.levers.speculative import (
    choose_round,
    round_candidates,
    speculate,
)
from roofline.step.ops import Deployment


def test_rank_acceptance_by_hand():
    # c_1 = p, c_k = p (s = 1): q_k = p·(1 − p)^(k−1) -> 0.6, 0.24, 0.096 (top-3 covers 0.936)
    assert rank_acceptance(0.6, 3, 1.0) == pytest.approx([0.6, 0.24, 0.096])
    # s = 0.5: c = 0.6, 0.3, 0.3 -> 0.6, 0.4·0.3 = 0.12, 0.4·0.7·0.3 = 0.084
    assert rank_acceptance(0.6, 3, 0.5) == pytest.approx([0.6, 0.12, 0.084])
    assert rank_acceptance(0.6, 1) == pytest.approx([0.6])


def test_tree_gain_matches_the_published_chain_tree_pair():
    # SpecDecode-Bench (SGLang, EAGLE, Qwen3-8B, GSM8K): accepted length 2.25 with a chain of
    # 3 drafts, 2.92 with a tree of 21 drafts, depth 3, branching 4 (22 tokens with the root)
    alpha = alpha_from_tau(2.25, 3)
    assert tree_tokens_per_round(22, 3, alpha, topk=4) == pytest.approx(2.92, abs=0.01)


def test_tree_yield_by_hand():
    # α = 0.5, depth 2, topk 2: ranks q = 0.5, 0.25. Path products: depth 1: 0.5, 0.25; depth 2
    # under the first: 0.25, 0.125; under the second: 0.125, 0.0625 (6 nodes). The best tree of
    # T tokens (root included) takes the T − 1 largest:
    by_hand = {1: 1.0, 2: 1.5, 3: 1.75, 4: 2.0, 5: 2.125, 6: 2.25, 7: 2.3125, 50: 2.3125}
    for t, e in by_hand.items():
        assert tree_tokens_per_round(t, 2, 0.5, topk=2, sibling=1.0) == pytest.approx(e), t
    # a chain (topk 1) of γ + 1 tokens is Leviathan's E: 1 + 0.5 + 0.25
    assert tree_tokens_per_round(3, 2, 0.5, topk=1) == pytest.approx(1.75)
    assert tree_tokens_per_round(3, 2, 0.5, topk=1) == pytest.approx(
        float(expected_tokens_per_round(2, 0.5))
    )
    # per-position rates: p = 0.8, 0.5, topk 1, depth 2 -> 1 + 0.8 + 0.4 = 2.2
    assert tree_tokens_per_round(3, 2, [0.8, 0.5], topk=1) == pytest.approx(2.2)


def test_tau_measured_on_a_tree_inverts():
    # what a 5-token tree yields at α = 0.5 (depth 2, topk 2) inverts back to α = 0.5
    e = float(tree_tokens_per_round(5, 2, 0.5, topk=2))
    assert alpha_from_tau(e, 2, tree_tokens=5, topk=2) == pytest.approx(0.5, abs=1e-9)


def _llama8b(cat, batch, context=2048):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    return m, hw, (m, None, hw, Deployment(), None, batch, context)


def test_tree_draft_steps_carry_the_tree_width(cat):
    # T = 32, γ = 5, topk 8: (32 − 1) / 5 = 6.2 draft tokens per level (under topk), so every
    # op of a draft step (head GEMMs, its attention, the draft LM head) does 6.2× the chain's FLOPs
    _, _, args = _llama8b(cat, 1.0)
    chain = speculate(*args, 5.0, 0.7, drafter="eagle3")
    tree = speculate(*args, 5.0, 0.7, drafter="eagle3", tree_tokens=32)
    assert float(tree.draft.flops) / float(chain.draft.flops) == pytest.approx(6.2, rel=0.01)
    narrow = speculate(*args, 5.0, 0.7, drafter="eagle3", tree_tokens=32, topk=4)
    assert float(narrow.draft.flops) / float(chain.draft.flops) == pytest.approx(4.0, rel=0.01)


@pytest.mark.parametrize("batch", [1.0, 64.0])
def test_sglang_round_pays_the_scheduler_its_overlap_hides(cat, batch):
    # SGLang turns overlap scheduling off under EAGLE: the verify step pays vLLM's non-overlapped
    # CPU step (cpu_step_us in hardware/engines.yaml) where plain SGLang decode pays 300 µs.
    # The host time per running sequence (cpu_per_seq_us) stays SGLang's own in both: at batch
    # 1 each pays SGLang's nvidia-datacenter figure once (60 µs in engines.yaml), at batch 64
    # 64 times (3.84 ms) in both, so it cancels and the difference is the two CPU steps alone,
    # whatever vLLM's per-sequence figure
    _, hw, args = _llama8b(cat, batch)
    s = speculate(*args, 3.0, 0.7, drafter="eagle3", engine="sglang")
    engines, fam = hw.efficiency.engines, hw.efficiency.family
    vllm, sglang = engines["vllm"], engines["sglang"]
    assert dict(sglang.cpu_per_seq_s).get(fam, 0.0) > 0.0  # the figure the rule is about
    extra = vllm.cpu_step_s - sglang.cpu_step_s
    assert float(s.verify.t_overhead_s - s.baseline.t_overhead_s) == pytest.approx(extra, rel=0.02)


def test_choice_by_hand_at_both_ends(cat):
    # batch 1: every verify pass of up to 64 tokens reads the same weights (memory-bound), so
    # the round that yields most, the 64-token tree, wins. Batch 4096 at a short context (128):
    # the verify pass is compute-bound, its time ∝ tokens verified, and E/T is largest for the
    # chain of one draft (E(1)/2 > E(γ)/(γ + 1) > tree yields per token): the planner falls
    # back to γ = 1. (At a long context the KV reads keep attention memory-bound and longer
    # rounds still pay at large batch, MagicDec's regime: not this test.) The engine's host cost
    # per draft step (engines.yaml spec_draft_step_cpu_us) is set to 0 here: with it, a deeper
    # tree also pays more host time, which this hand argument leaves out.
    _, hw, args = _llama8b(cat, np.array([1.0, 4096.0]), context=128)
    no_host = {k: replace(v, draft_round_cpu_s=0.0, draft_step_cpu_s=0.0)
               for k, v in hw.efficiency.engines.items()}  # fmt: skip
    eff = replace(hw.efficiency, engines=no_host)
    cands = round_candidates(range(1, 6), "eagle3")
    s, top = choose_round(*args, cands, 0.7, eff, drafter="eagle3")
    assert s.verify_tokens[0] == 64 and s.gamma[0] == 5
    assert s.verify_tokens[1] == 2 and s.gamma[1] == 1
    assert float(top) == pytest.approx(float(tree_tokens_per_round(64, 5, 0.7)))
    # the choice is the best candidate at each batch
    for g, t in cands:
        one = speculate(*args, float(g), 0.7, eff, drafter="eagle3", tree_tokens=t)
        assert np.all(s.speedup_expected >= one.speedup_expected - 1e-12)


def test_round_candidates():
    assert round_candidates([2], "ngram") == [(2, None)]
    assert round_candidates([5], "eagle") == [(5, None), (5, 8), (5, 16), (5, 32), (5, 64)]
    assert round_candidates([1, 7], "draft", 12) == [(1, None), (1, 8), (1, 12), (7, None), (7, 12)]


@settings(max_examples=60, deadline=None)
@given(
    t=st.integers(1, 80),
    depth=st.integers(1, 8),
    alpha=st.floats(0.0, 1.0),
    topk=st.integers(1, 10),
    decay=st.floats(0.3, 1.0),
)
def test_tree_yield_bounds(t, depth, alpha, topk, decay):
    e = float(tree_tokens_per_round(t, depth, alpha, decay, topk))
    assert 1.0 - 1e-12 <= e <= min(t, depth + 1) + 1e-9  # τ ≤ T and ≤ γ + 1
    assert float(tree_tokens_per_round(t + 1, depth, alpha, decay, topk)) >= e - 1e-12
    if t >= depth + 1:  # the best tree of γ + 1 or more tokens yields at least the chain's E
        assert e >= float(expected_tokens_per_round(depth, alpha, decay)) - 1e-9


@settings(max_examples=8, deadline=None)
@given(alpha=st.floats(0.3, 0.95), drafter=st.sampled_from(["eagle", "eagle3", "ngram"]))
def test_chosen_speedup_falls_with_batch_past_the_ridge(cat, alpha, drafter):
    # past the ridge (Llama-3.1-8B bf16 on H100: ~300 tokens a step) at a short context every
    # verify token costs compute, so more sequences can only shrink what speculation saves
    batches = np.array([512.0, 1024.0, 2048.0, 4096.0])
    _, _, args = _llama8b(cat, batches, context=128)
    s, _ = choose_round(*args, round_candidates(range(1, 5), drafter), alpha, drafter=drafter)
    up = s.speedup_expected
    assert np.all(np.diff(up) <= 1e-3 * up[:-1])


def test_cli_tree_choice(run):
    doc = run(
        "speculate",
        "llama-3.1-8b",
        "h100",
        "--drafter",
        "eagle3",
        "--tau",
        "3",
        "--gamma",
        "3,5",
        "--batches",
        "1,4096",
        "--format",
        "json",
    ).json()
    first, last = doc["by_batch"]
    assert first["tree_tokens"] == 64 and last["tree_tokens"] == last["best_gamma"] + 1
    assert doc["inputs"]["tree_tokens"] == "auto"
    pinned = run(
        "speculate", "llama-3.1-8b", "h100", "--gamma", "5", "--tree-tokens", "32",
        "--batches", "1,64", "--format", "json",
    ).json()  # fmt: skip
    assert {r["tree_tokens"] for r in pinned["by_batch"]} == {32}
    chain = run(
        "speculate", "llama-3.1-8b", "h100", "--gamma", "4", "--tree-tokens", "chain",
        "--format", "json",
    ).json()  # fmt: skip
    assert chain["rows"][0]["verify_tokens_per_sequence"] == 5
    for bad in (("--tree-tokens", "many"), ("--tree-tokens", "3", "--gamma", "4"), ("--topk", "0")):
        r = run("speculate", "llama-3.1-8b", "h100", *bad)
        assert r.code == 2 and r.stdout == "" and r.stderr.startswith("error:"), bad


def test_draft_model_case_needs_its_model(run, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "cases:\n- {id: x, model: llama-3.1-70b, hardware: h100, gpus: 4, tp: 4, pp: 1, ep: 1,\n"
        "   weights: bf16, kv: bf16, batch: 1, prompt: 1, output: 8, metric: speedup,\n"
        "   measured: 2.0, source: s, speculative: {drafter: draft, gamma: 3, acceptance: 0.8}}\n"
    )
    r = run("validate", str(bad))
    assert r.code == 2 and "draft_model" in r.stderr
    good = tmp_path / "good.yaml"
    good.write_text(
        bad.read_text().replace("acceptance: 0.8", "acceptance: 0.8, draft_model: llama-3.1-8b")
    )
    doc = run("validate", str(good), "--format", "json").json()
    assert doc["summary"]["bound_violations"] == 0

"""Speculative decoding: acceptance (α, τ, per position), each drafter's step cost by hand, the
verify pass and the sampler are not free, speed-up against batch and the crossover."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.domain.precision import weight_format
from roofline.levers.acceptance import (
    alpha_from_tau,
    expected_tokens_per_round,
    position_acceptance,
)
from roofline.levers.speculative import (
    crossover_batch,
    speculate,
)
from roofline.step.ops import Deployment

H100_BW = 3.35e12


def test_expected_tokens_by_hand():
    # Leviathan et al. 2023: E = (1 − α^(γ+1)) / (1 − α)
    assert expected_tokens_per_round(3, 0.5) == pytest.approx((1 - 0.5**4) / 0.5)  # 1.875
    assert expected_tokens_per_round(4, 1.0) == 5  # every draft accepted, plus the bonus token
    assert expected_tokens_per_round(4, 0.0) == 1  # only the target's own token


def test_per_position_acceptance_by_hand():
    # p = 0.9, 0.8, 0.5: E(3) = 1 + 0.9 + 0.9·0.8 + 0.9·0.8·0.5 = 1 + 0.9 + 0.72 + 0.36 = 2.98
    assert expected_tokens_per_round(3, [0.9, 0.8, 0.5]) == pytest.approx(2.98)
    # past the list the last rate repeats: E(5) = 2.98 + 0.36·0.5 + 0.36·0.25 = 3.25
    assert expected_tokens_per_round(5, [0.9, 0.8, 0.5]) == pytest.approx(3.25)
    # geometric decay α = 0.8, d = 0.5: p = 0.8, 0.4 -> E(2) = 1 + 0.8 + 0.32 = 2.12
    assert expected_tokens_per_round(2, 0.8, decay=0.5) == pytest.approx(2.12)
    assert position_acceptance(3, 0.8, 0.5) == pytest.approx([0.8, 0.4, 0.2])


def test_tau_to_alpha_by_hand():
    # at γ = 1, τ = 1 + α; at γ = 2, τ = 1 + α + α²: τ = 2.44 is α = 0.8
    assert alpha_from_tau(1.8, 1) == pytest.approx(0.8, abs=1e-9)
    assert alpha_from_tau(2.44, 2) == pytest.approx(0.8, abs=1e-9)
    with pytest.raises(InputError):
        alpha_from_tau(3.5, 1)  # at most γ + 1 = 2 tokens a round
    with pytest.raises(InputError):
        alpha_from_tau(0.5, 4)


@given(gamma=st.integers(1, 16), alpha=st.floats(0.01, 0.99), decay=st.floats(0.3, 1.0))
def test_tau_alpha_round_trip(gamma, alpha, decay):
    tau = float(expected_tokens_per_round(gamma, alpha, decay))
    assert alpha_from_tau(tau, gamma, decay) == pytest.approx(alpha, abs=1e-6)


@given(gamma=st.integers(1, 32), alpha=st.floats(0.0, 0.999))
def test_expected_tokens_between_one_and_gamma_plus_one(gamma, alpha):
    e = float(expected_tokens_per_round(gamma, alpha))
    assert 1.0 - 1e-9 <= e <= gamma + 1 + 1e-9


def _llama8b(cat, drafter, batch=1.0, gamma=4.0, acceptance=0.8, **kw):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    draft = cat.model("llama-3.2-1b") if drafter == "draft" else None
    return speculate(
        m,
        draft,
        hw,
        Deployment(),
        Deployment(),
        batch,
        2048,
        gamma,
        acceptance,
        drafter=drafter,
        **kw,
    )


def test_eagle_step_by_hand(cat):
    # one Llama-3.1-8B layer: attention 4096·(32+2·8)·128 + 32·128·4096 = 41,943,040, MLP
    # 3·4096·14336 = 176,160,768 -> 218.1M params; the fc 2·4096² = 33.6M; the LM head
    # 128,256·4096 = 525.3M; bf16: (218.1M + 33.6M + 525.3M)·2 B = 1.554 GB -> 0.464 ms at
    # 3.35 TB/s per draft step (the 2k-token cache of one layer, 2048·4096 B = 8.4 MB, adds 2.5 µs)
    fc = 2 * 4096**2
    s = _llama8b(cat, "eagle")
    step = float(s.t_draft_round_ideal_s) / 4
    assert step == pytest.approx((218_103_808 + fc + 525_336_576) * 2 / H100_BW, rel=0.02)
    # fused in the target's graph: no engine step (vLLM's ~2 ms of CPU time) per draft step
    eff = cat.accelerator("h100").efficiency
    overhead = eff.step_overhead_s + eff.engines["vllm"].cpu_step_s
    assert float(s.t_draft_round_expected_s) / 4 < overhead
    # EAGLE-3's 32,000-token draft head: (218.1M + 33.6M + 32,000·4096)·2 B / 3.35 TB/s = 0.229 ms
    s3 = _llama8b(cat, "eagle3")
    step3 = float(s3.t_draft_round_ideal_s) / 4
    assert step3 == pytest.approx((218_103_808 + fc + 32_000 * 4096) * 2 / H100_BW, rel=0.03)


def test_medusa_heads_by_hand(cat):
    # γ = 4 heads of D² + D·V = 16,777,216 + 525,336,576 params each, bf16, one pass:
    # 4·542,113,792·2 B = 4.337 GB -> 1.2946 ms at 3.35 TB/s
    s = _llama8b(cat, "medusa")
    assert float(s.t_draft_round_ideal_s) == pytest.approx(4 * 542_113_792 * 2 / H100_BW, rel=1e-6)


def test_ngram_and_draft_model_costs(cat):
    s = _llama8b(cat, "ngram")
    assert float(s.t_draft_round_expected_s) == 0.0 and s.draft is None
    d = _llama8b(cat, "draft")
    # a separate model: γ engine steps of its own, each with the full per-step overhead
    assert float(d.t_draft_round_expected_s) == pytest.approx(4 * float(d.draft.t_expected_s))
    overhead = cat.accelerator("h100").efficiency.step_overhead_s
    assert float(d.draft.t_expected_s) > overhead


def test_mtp_step_by_hand(cat):
    # DeepSeek-V3 MTP on 8×H200, fp8, batch 1, per GPU: 9 experts (8 routed + 1 shared) of
    # 3·7168·2048 = 44.04M params -> 396.4 MB / 8; MLA attention q_a 7168·1536 and kv_a 7168·576
    # replicated (15.14M) + (q_b 1536·128·192 + kv_b 512·128·256 + o 128·128·7168)/8 = 21.49M ->
    # 36.6 MB; router 7168·256 at 16 bit = 3.67 MB; LM head 129,280·7168 at 16 bit / 8 = 231.7 MB;
    # eh_proj 2·7168² at fp8 / 8 = 12.8 MB. Sum 334.3 MB -> 69.6 µs at 4.8 TB/s; plus the layer's
    # collectives, latency-bound at batch 1 on NVLink (α = 0.5 µs): the TP all-reduce after
    # attention 2·(8−1)·α = 7 µs and the EP all-to-all, dispatch + combine, 2·(8−1)·α = 7 µs
    m, hw = cat.model("deepseek-v3"), cat.accelerator("h200")
    dep = Deployment(weights=weight_format("fp8"), layout=Layout(tp=8, ep=8))
    s = speculate(m, None, hw, dep, None, 1, 1, 1.0, 0.85, drafter="mtp")
    by_hand = (396.4e6 / 8 + 36.6e6 + 3.67e6 + 231.7e6 + 12.8e6) / 4.8e12 + 14e-6
    assert float(s.t_draft_round_ideal_s) == pytest.approx(by_hand, rel=0.03)


def test_verify_and_sampling_are_not_free(cat):
    s = _llama8b(cat, "eagle", batch=64.0, gamma=7.0)
    assert float(s.verify.t_expected_s) > float(s.baseline.t_expected_s)
    # sampler: B·(γ+1) target rows read twice + B·γ draft rows once vs 2·B rows for plain decode
    assert float(s.t_sample_round_s) == pytest.approx(
        float(s.t_sample_baseline_s) * (8 * 2 + 7) / 2
    )


def test_tree_verification_costs_more_than_a_chain(cat):
    chain = _llama8b(cat, "eagle", batch=32.0)
    tree = _llama8b(cat, "eagle", batch=32.0, tree_tokens=60)
    assert float(tree.verify_tokens) == 60 and float(chain.verify_tokens) == 5
    assert float(tree.verify.t_expected_s) > float(chain.verify.t_expected_s)
    with pytest.raises(InputError):
        _llama8b(cat, "eagle", tree_tokens=3)  # fewer than γ + 1


def test_speedup_falls_with_batch(cat):
    s = _llama8b(cat, "eagle", batch=np.array([1.0, 256.0, 1024.0]), gamma=4.0)
    up = s.speedup_expected
    assert up[0] > up[1] > up[2]
    hopeless = _llama8b(cat, "eagle", acceptance=0.0)
    assert float(hopeless.speedup_expected) < 1.0  # drafts cost time and yield nothing


def test_crossover_by_hand():
    # between batch 2 (1.2×) and 4 (0.8×) in log batch: 2·2^((1 − 1.2)/(0.8 − 1.2)) = 2^1.5
    assert crossover_batch([1, 2, 4], [1.5, 1.2, 0.8]) == pytest.approx(2**1.5)
    assert crossover_batch([1, 2, 4], [1.5, 1.2, 1.1]) is None
    assert crossover_batch([1, 2, 4], [0.9, 0.8, 0.7]) == 1


def test_verify_raises_decode_intensity(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    d = cat.model("llama-3.1-8b")
    s = speculate(
        m,
        d,
        hw,
        Deployment(layout=Layout(tp=4)),
        Deployment(layout=Layout(tp=4)),
        1,
        4096,
        np.array([1, 3, 7.0]),
        0.8,
    )
    base = float(s.baseline.arithmetic_intensity)
    # at batch 1 the verify pass of γ + 1 tokens reads the same bytes: ~(γ + 1)× the intensity
    for g, i in zip((1, 3, 7), s.verify.arithmetic_intensity, strict=True):
        assert i == pytest.approx((g + 1) * base, rel=0.15)


def test_cli_speculate(run):
    doc = run(
        "speculate",
        "llama-3.1-8b",
        "h100",
        "--drafter",
        "eagle",
        "--tau",
        "3.2",
        "--gamma",
        "2,4",
        "--batches",
        "1,8,64",
        "--format",
        "json",
    ).json()
    assert doc["inputs"]["acceptance"] == pytest.approx(alpha_from_tau(3.2, 4))
    assert [r["batch"] for r in doc["by_batch"]] == [1, 8, 64]
    assert "crossover_batch" in doc and doc["best_gamma"] in (2, 4)
    lst = run("speculate", "llama-3.1-8b", "h100", "--acceptance", "0.9,0.7", "--gamma", "2")
    assert lst.code == 0
    for bad in (
        ("--tau", "9", "--gamma", "2"),
        ("--drafter", "draft"),
        ("--acceptance", "1.5"),
        ("--drafter", "lookahead"),
    ):
        r = run("speculate", "llama-3.1-8b", "h100", *bad)
        assert r.code == 2 and r.stdout == "" and r.stderr.startswith("error:"), bad


def test_cli_speculate_chart(run, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "speedup.svg"
    r = run("speculate", "llama-3.1-8b", "h100", "--gamma", "3", "--batches", "1,4", "-o", str(out))
    assert r.code == 0 and out.read_text().startswith("<?xml")


def test_lever_cases_validate_without_bound_violations(run):
    """validation/levers_cases.yaml runs through `roofline validate`: no measured speed-up beats
    its round's expected tokens E, no measured rate beats the speed of light."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "validation/levers_cases.yaml"
    doc = run("validate", str(path), "--format", "json").json()
    assert doc["summary"]["bound_violations"] == 0
    assert "speculative" in doc["summary"]["regimes"]


def test_lever_case_schema_is_strict(run, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "cases:\n- {id: x, model: llama-3.1-8b, hardware: h100, gpus: 1, tp: 1, pp: 1, ep: 1,\n"
        "   weights: bf16, kv: bf16, batch: 1, prompt: 1, output: 8, metric: speedup,\n"
        "   measured: 2.0, source: s, speculative: {drafter: eagle, gamma: 3}}\n"
    )
    r = run("validate", str(bad))
    assert r.code == 2 and "tau" in r.stderr


@settings(max_examples=30, deadline=None)
@given(
    gamma=st.integers(1, 8),
    alpha=st.floats(0.0, 1.0),
    batch=st.integers(1, 512),
    drafter=st.sampled_from(["eagle", "eagle3", "medusa", "ngram", "draft"]),
)
def test_no_speedup_beats_the_tokens_per_round(cat, gamma, alpha, batch, drafter):
    # the verify pass never costs less than a plain step, drafting and the larger sampler never
    # cost less than nothing: speed-up ≤ E (the bound `validate` uses as the ideal)
    s = _llama8b(cat, drafter, batch=float(batch), gamma=float(gamma), acceptance=alpha)
    e = float(s.tokens_per_round)
    assert float(s.speedup_ideal) <= e * (1 + 1e-9)
    assert float(s.speedup_expected) <= e * (1 + 1e-9)

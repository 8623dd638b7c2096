"""Engine version profiles (roofline/engines/versions.py, hardware/engines.yaml `base`/`versions`):
a stated version picks the profile whose range holds it, an unknown one is refused naming the
ranges known, and a version's scheduler defaults and per-sequence host cost apply (by hand)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import MIN_ENGINE

from roofline.catalog.kernels import engine_profile
from roofline.domain.errors import CatalogError, InputError
from roofline.engines.engine import engine
from roofline.engines.scheduler import version_defaults
from roofline.engines.versions import in_range, parse_version, pick_profile
from roofline.step.ops import Deployment
from roofline.step.phases import decode
from roofline.timing.host import EngineProfile

CUR = EngineProfile("vllm", 0.0, 0.0, 0.0, 1.0, versions=">=0.8")
V0 = EngineProfile("vllm-v0", 0.0, 0.0, 0.0, 1.0, base="vllm", versions=">=0.5,<0.8")
OTHER = EngineProfile("trtllm", 0.0, 0.0, 0.0, 1.0)
PROFILES = {p.id: p for p in (CUR, V0, OTHER)}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0.7.3.dev138+g21f6ca217", (0, 7, 3)),  # a dev build: its release number
        ("0.6.0 (ROCm fork, docker x)", (0, 6, 0)),
        ("v0.10.2", (0, 10, 2)),
        ("main as of 2024-03-28", None),  # a branch: the current version
        (None, None),
    ],
)
def test_parse_version(text, want):
    assert parse_version(text) == want


def test_ranges_by_hand():
    # >=0.5,<0.8 holds 0.5 (= 0.5.0), 0.7.4 and 0.6; not 0.8 nor 0.4.3; 0.10 is above 0.8
    spec = ">=0.5,<0.8"
    assert in_range((0, 5), spec) and in_range((0, 7, 4), spec) and in_range((0, 6), spec)
    assert not in_range((0, 8), spec) and not in_range((0, 4, 3), spec)
    assert in_range((0, 10, 2), ">=0.8")


def test_a_version_picks_the_profile_whose_range_holds_it():
    assert pick_profile("vllm", "0.6.0", PROFILES) == "vllm-v0"
    assert pick_profile("vllm", "0.7.4.dev181+gf35f8e22", PROFILES) == "vllm-v0"
    assert pick_profile("vllm", "0.10.2", PROFILES) == "vllm"
    assert pick_profile("vllm", None, PROFILES) == "vllm"  # no version: the current one
    assert pick_profile("vllm", "main, June 2026", PROFILES) == "vllm"
    # an engine without version profiles takes any stated version, even one it cannot read
    assert pick_profile("trtllm", "NIM 1.8.0 (container)", PROFILES) == "trtllm"


def test_unknown_version_names_the_known_ranges():
    with pytest.raises(InputError) as exc:
        pick_profile("vllm", "0.4.3", PROFILES)
    assert "0.4.3" in str(exc.value)
    assert "vllm (>=0.8)" in exc.value.hint and "vllm-v0 (>=0.5,<0.8)" in exc.value.hint
    with pytest.raises(InputError, match="cannot read an engine version"):
        pick_profile("vllm", "yesterday's build", PROFILES)


def test_engine_at_version_from_the_catalog(cat):
    hw = cat.accelerator("h100")
    assert engine("vllm@0.6", hw).profile_id == "vllm-v0"
    assert engine("vllm", hw, "0.6.2").profile_id == "vllm-v0"
    assert engine("vllm", hw).profile_id == "vllm"
    assert engine("vllm@0.6", hw).name == "vllm"  # the memory rule and launch flags stay vLLM's
    with pytest.raises(InputError, match="disagree"):
        engine("vllm@0.6", hw, "0.7")


def test_catalog_refuses_a_bad_range():
    entry = {**MIN_ENGINE, "base": "vllm"}
    with pytest.raises(CatalogError, match="needs 'versions'"):
        engine_profile("engines: x", entry)
    with pytest.raises(CatalogError, match="bad version bound"):
        engine_profile("engines: x", {**entry, "versions": "~0.5"})
    assert engine_profile("engines: x", {**entry, "versions": "<0.8"}).versions == "<0.8"


def test_v0_scheduler_defaults_by_hand(cat):
    hw = cat.accelerator("h100")  # 80 GB: V1 would run 1024 sequences and 8192 tokens
    v0 = replace(V0, max_num_seqs=256, chunked_prefill=False)
    # V0 (vllm/config.py SchedulerConfig, 0.5-0.6): 256 sequences; unchunked budget
    # max(max_model_len, 2048), chunked 512
    assert version_defaults("vllm", hw, v0, 1000, None) == (256, 2048, False)
    assert version_defaults("vllm", hw, v0, 4096, None) == (256, 4096, False)
    assert version_defaults("vllm", hw, v0, 4096, True) == (256, 512, True)  # chunked: 512
    assert version_defaults("vllm", hw, None, 4096, None) == (1024, 8192, True)


def test_v0_per_sequence_cost_adds_n_times_c(cat):
    # a V0 step of B sequences pays c·B beyond the same step at c = 0: 100 µs × 64 = 6.4 ms
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    fam = hw.efficiency.family
    v0 = cat.engines["vllm-v0"]
    steps = []
    for c_s in (0.0, 100e-6):
        prof = replace(v0, cpu_per_seq_s=((fam, c_s),))
        eff = replace(hw.efficiency, engines={**hw.efficiency.engines, "vllm-v0": prof})
        steps.append(
            float(decode(m, hw, Deployment(), 64, 512, 1, eff, engine="vllm-v0").t_expected_s)
        )
    assert steps[1] - steps[0] == pytest.approx(6.4e-3, abs=1e-9)


def test_cli_refuses_an_unknown_version(run):
    r = run("serve", "llama-3.1-8b", "h100", "--engine", "vllm@0.4", "--rate", "1")
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "vllm-v0 (>=0.5,<0.8)" in r.stderr


def test_a_v0_replica_runs_v0_scheduler_defaults(cat):
    # vllm@0.6 on an H100 (80 GB): V0's 256 sequences, prompts unchunked, a prefill budget of
    # max(max_model_len, 2048) = 3,000 tokens for 3,000-token requests; V1 there: 1024, chunked
    from roofline.serving.serve import make_replica

    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    v0 = make_replica(m, hw, Deployment(), engine("vllm@0.6", hw), 3000).rules
    assert (v0.max_seqs, v0.chunked_prefill, v0.max_batched_tokens) == (256, False, 3000)
    v1 = make_replica(m, hw, Deployment(), engine("vllm", hw), 3000).rules
    assert (v1.max_seqs, v1.chunked_prefill) == (1024, True)

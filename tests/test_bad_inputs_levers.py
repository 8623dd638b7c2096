"""Bad inputs to the lever commands (offload, edge, tiers, bytes, kv, analyze, speculate) found by
a fuzzer, one test each: refused as one stderr line and exit 2 with nothing on stdout, or, where
the command reports as asked (a batch past the memory, as analyze does), said on one line."""

from __future__ import annotations

import pytest
from conftest import refused


@pytest.mark.parametrize(
    "args",
    [
        ["edge", "llama-3.1-70b", "rtx-4090", "--weights", "q4_k_m", "--host", "h100"],
        ["offload", "llama-3.1-8b", "rtx-4090", "--host", "h100", "--gpu-layers", "10"],
    ],
)
def test_a_gpu_is_no_host_cpu(run, args):
    """1: --host names a host CPU entry (family cpu): an H100's HBM is no host RAM."""
    refused(run(*args), "--host h100", "not a host CPU", "amd-epyc-9654")


def test_an_unknown_host_gets_a_host_did_you_mean(run):
    r = run("offload", "llama-3.1-8b", "rtx-4090", "--host", "epyc")
    refused(r, "--host epyc", "did you mean 'epyc-9654'?")


def test_tiers_says_a_batch_past_hbm_and_the_tier(run):
    """2: as analyze says a batch past the KV budget: one warning with the most that fits."""
    r = run("tiers", "llama-3.1-70b", "h100", "--tp", "4", "--tier-capacity", "256GB",
            "--batch", "100000")  # fmt: skip
    assert r.code == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "at most 1,806 sequences fit" in r.stderr, r.stderr


def test_tiers_refuses_a_prefix_past_the_context(run):
    """2: a returning turn of 100k cached tokens does not fit a 10k context."""
    r = run("tiers", "llama-3.1-70b", "h100", "--tp", "4", "--tier-capacity", "256GB",
            "--prefix", "100k", "--context", "10k")  # fmt: skip
    refused(r, "--prefix (100,000 tokens)", "exceed --context (10,000 tokens)")


def test_bytes_refuses_weights_that_do_not_fit(run):
    """3: as analyze refuses it."""
    refused(run("bytes", "llama-3.1-405b", "h100"), "llama-3.1-405b", "more than vllm leaves")


def test_kv_refuses_lengths_past_max_len(run):
    """4: listed lengths are not clipped to --max-len."""
    r = run("kv", "llama-3.1-8b", "--allocation", "contiguous", "--max-len", "10",
            "--lengths", "100,200")  # fmt: skip
    refused(r, "--lengths", "200 tokens", "--max-len")


def test_analyze_names_the_context_its_kv_is_at(run):
    """5: the KV of 1,000,000 tokens is said at 1,000,000 tokens, not prompt + output."""
    r = run("analyze", "llama-3.1-8b", "h100", "--context", "1m")
    assert r.code == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if "of KV per GPU" in x)
    assert "131 GB of KV per GPU at 1,000,000 tokens" in line, line


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--draft", "llama-3.1-8b", "--drafter", "eagle"], ["give --draft or --drafter"]),
        (["--tau", "3", "--acceptance", "0.8"], ["give --tau or --acceptance, not both"]),
        # the default's own value, given: dropped as silently (it was accepted)
        (["--tau", "3", "--acceptance", "0.7"], ["give --tau or --acceptance, not both"]),
        # Llama has no multi-token-prediction module: an MTP speed-up of 2.5x was printed
        (["--drafter", "mtp"], ["no multi-token-prediction layers", "llama-3.1-8b"]),
    ],
)
def test_speculate_refuses_options_that_conflict(run, args, needles):
    """6: one of two options was silently dropped."""
    refused(run("speculate", "llama-3.1-8b", "h100", *args), *needles)


@pytest.mark.parametrize(
    "args",
    [
        ["offload", "llama-3.1-70b", "rtx-4090", "--tp", "16"],
        ["tiers", "llama-3.1-70b", "h100", "--tier-capacity", "256GB", "--tp", "16"],
    ],
)
def test_tp_past_one_node_is_refused_as_analyze_refuses_it(run, args):
    """7: analyze's layout check."""
    refused(run(*args), "--tp 16 spans more than one node")


def test_analyze_refuses_an_overhead_past_an_hour(run):
    """8: 1e30 s would print a 31-digit TTFT."""
    refused(run("analyze", "llama-3.1-8b", "h100", "--overhead", "1e30s"), "at most 1 hour")


def test_tiers_answers_at_its_defaults(run):
    """`roofline tiers MODEL HW` had always failed ('cxl2-x16 has no capacity'): the default tier
    is now a device with a capacity, Micron's 256 GB CZ120. By hand: Llama-3.1-8B's bf16 KV is
    32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token, so 256 GB holds
    floor(256e9 / (2,000 x 131,072)) = 976 more sequences of 2,000 tokens than HBM alone."""
    r = run("tiers", "llama-3.1-8b", "h100", "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["inputs"]["tier"] == "micron-cz120"
    assert doc["max_batch_with_tier"] - doc["max_batch_hbm"] == 976

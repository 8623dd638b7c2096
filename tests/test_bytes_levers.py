"""Issue #3: where the bytes go, the levers, KV variants, allocation waste and eviction."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.layout import Layout
from roofline.engines.engine import ENGINES
from roofline.levers.kvcache import allocation_waste, attention_variants, parse_lengths
from roofline.levers.table import evaluate_levers
from roofline.step.memory import kv_bytes_per_sequence, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import decode


def test_gqa_shrinks_kv_4x_to_8x_for_llama3(cat):
    # Llama-3.1-8B: 32 query heads over 8 KV heads = 4x; 70B: 64 / 8 = 8x; 405B: 128 / 8 = 16x
    for model, factor in (("llama-3.1-8b", 4), ("llama-3.1-70b", 8), ("llama-3.1-405b", 16)):
        rows = {v.name: v for v in attention_variants(cat.model(model))}
        mha, gqa = rows["MHA"].kv_elements_per_token_layer, rows["GQA"].kv_elements_per_token_layer
        assert mha / gqa == factor


def test_deepseek_r1_mla_vs_mha_of_its_width(cat):
    rows = {v.name: v for v in attention_variants(cat.model("deepseek-r1"))}
    # MLA 576 elements vs MHA 2·128 heads·128 = 32,768: 1.76% (98.2% smaller)
    assert rows["own MLA"].kv_elements_per_token_layer / rows[
        "MHA"
    ].kv_elements_per_token_layer == pytest.approx(576 / 32768)


def test_cli_compare_reproduces_deepseek_v2_93_percent(run):
    doc = run(
        "kv",
        "deepseek-v2",
        "--compare",
        "--baseline",
        "deepseek-llm-67b",
        "--kv-bits",
        "6",
        "--format",
        "json",
    ).json()
    own = doc["variants"][0]
    # 34,560 elements at 6 bits vs 194,560 at 16 bits: 1 − 0.0666 = 93.3%
    assert own["reduction_vs_baseline"] == pytest.approx(1 - 34560 * 6 / (194560 * 16))
    assert {"kv_bytes_per_token", "ratio_to_mha"} <= set(own)


def test_contiguous_vs_paged_waste_by_hand():
    lengths = np.array([100.0, 17.0, 2048.0])
    per_token = 10.0
    c = allocation_waste(lengths, per_token, "contiguous", 16, 2048)
    # used 2165 tokens of 3 × 2048 reserved
    assert c.waste_fraction == pytest.approx(1 - 2165 / 6144)
    p = allocation_waste(lengths, per_token, "paged", 16, 2048)
    # blocks: 112 + 32 + 2048 = 2192 slots
    assert p.waste_fraction == pytest.approx(1 - 2165 / 2192)


def test_essay_waste_figures_with_sharegpt_lengths():
    lengths, desc = parse_lengths("sharegpt", 2048)
    contiguous = allocation_waste(lengths, 1.0, "contiguous", 16, 2048).waste_fraction
    paged = allocation_waste(lengths, 1.0, "paged", 16, 2048).waste_fraction
    assert 0.60 <= contiguous <= 0.80  # "wasted 60 to 80%"
    assert paged < 0.04  # "under 4%"
    assert "ShareGPT" in desc


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 4096), min_size=1, max_size=50),
    block=st.sampled_from([1, 8, 16, 32, 128]),
)
def test_waste_properties(lengths, block):
    arr = np.array(lengths, dtype=float)
    for mode in ("contiguous", "paged"):
        w = allocation_waste(arr, 1.0, mode, block, 4096).waste_fraction
        assert 0.0 <= w < 1.0
    paged = allocation_waste(arr, 1.0, "paged", block, 4096)
    # paged waste is below one block per sequence
    assert paged.allocated_bytes - paged.used_bytes < len(arr) * block


def test_eviction_caps_kv_and_decode_reads(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    full, evicted = Deployment(), Deployment(kv_token_budget=2048)
    assert kv_bytes_per_sequence(m, evicted, 32768) == 2048 * 131_072
    saved = float(
        decode(m, hw, full, 8, 32768).kv_bytes - decode(m, hw, evicted, 8, 32768).kv_bytes
    )
    assert saved == pytest.approx(8 * (32768 - 2048) * 131_072)


def test_levers_by_hand(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    rows = {
        r.lever.name: r
        for r in evaluate_levers(
            m, hw, Deployment(layout=Layout(tp=4)), ENGINES["vllm"], 32, 8000, 131072, 2048
        )
    }
    base = rows["baseline"]
    assert rows["int4 weights"].bits_per_weight == 4.125  # 16 / 4.125 = 3.88x, not 4x
    assert rows["2:4 sparsity"].bits_per_weight == 9  # 8 value bits + 1 index bit
    assert rows["fp8 KV"].kv_bytes_per_token == base.kv_bytes_per_token / 2
    # contiguous reserves 131,072 tokens; paged holds ceil(8000/16)·16 = 8000 tokens;
    # KV per token per GPU at TP4: 80 layers × 2 × 2 heads × 128 × 2 B = 81,920
    budget = plan_memory(m, hw, Deployment(layout=Layout(tp=4)), ENGINES["vllm"]).kv_budget_bytes
    assert base.max_batch == budget // (131072 * 81920)
    assert rows["paged KV"].max_batch == budget // (8000 * 81920)
    for r in rows.values():  # every lever reduces or keeps bytes and time
        assert r.weight_bytes_per_gpu <= base.weight_bytes_per_gpu
        assert r.kv_bytes_per_sequence <= base.kv_bytes_per_sequence
        assert r.t_step_ideal_s <= base.t_step_ideal_s * (1 + 1e-12)
        assert r.max_batch >= base.max_batch


def test_bytes_json_and_405b_crossover(run):
    doc = run(
        "bytes",
        "llama-3.1-405b",
        "h100",
        "--tp",
        "8",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--batch",
        "64",
        "--context",
        "32k",
        "--format",
        "json",
    ).json()
    for phase in ("prefill", "decode"):
        assert {"weight_bytes", "kv_bytes", "activation_bytes"} <= set(doc[phase])
    # weights/GPU = 405.85e9 params (linear in fp8, embedding+head 2×128256×16384 in bf16) / 8;
    # KV per token per GPU = 126 layers × 2 × 1 KV head × 128 × 1 B = 32,256
    # crossover T* = weight read / (64 × 32,256) ≈ 24.6k tokens: a realistic reasoning trace
    assert 20_000 < doc["crossover"]["context_at_batch"] < 30_000
    assert doc["decode"]["kv_share"] > doc["decode"]["weight_share"]


def test_bytes_batch_one_is_weight_dominated(run):
    doc = run("bytes", "llama-3.1-8b", "h100", "--context", "4k", "--format", "json").json()
    assert doc["decode"]["weight_share"] > 0.9


def test_levers_cli(run):
    doc = run(
        "bytes",
        "llama-3.1-8b",
        "h100",
        "--batch",
        "16",
        "--context",
        "8k",
        "--levers",
        "--format",
        "json",
    ).json()
    assert [r["lever"] for r in doc["levers"]["rows"]][-1] == "all levers"
    assert "not modelled" in doc["levers"]["note"]


def test_allocation_cli_and_errors(run):
    doc = run(
        "kv",
        "llama-3.1-8b",
        "--allocation",
        "paged",
        "--lengths",
        "100,200,300",
        "--format",
        "json",
    ).json()
    assert doc["waste_fraction"] == pytest.approx(1 - 600 / (112 + 208 + 304))
    r = run("kv", "llama-3.1-8b", "--allocation", "paged", "--lengths", "zipf:a=2")
    assert r.code == 2 and "unknown distribution" in r.stderr
    r = run("kv", "llama-3.1-8b", "--kv-budget", "1k", "--sink", "4")
    assert r.code == 2 and "not both" in r.stderr


def test_kv_eviction_cli_max_batch_gain(run, cat):
    doc = run(
        "kv",
        "llama-3.1-8b",
        "--context",
        "32000",
        "--kv-budget",
        "2000",
        "--batch",
        "16",
        "--hardware",
        "h100",
        "--format",
        "json",
    ).json()
    ev = doc["eviction"]
    per_token = 131_072
    assert ev["kv_bytes_saved_per_sequence"] == (32000 - 2000) * per_token
    assert ev["decode_kv_read_saved_bytes_per_step"] == 16 * (32000 - 2000) * per_token
    budget = plan_memory(
        cat.model("llama-3.1-8b"), cat.accelerator("h100"), Deployment(), ENGINES["vllm"]
    ).kv_budget_bytes
    assert ev["max_batch_without_eviction"] == budget // (32000 * per_token)
    assert ev["max_batch_with_eviction"] == budget // (2000 * per_token)
    assert ev["accuracy_modelled"] is False


@settings(max_examples=15, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gemma-3-27b", "qwen3-32b"]),
    batch=st.integers(1, 256),
    context=st.integers(64, 65536),
)
def test_every_lever_reduces_or_keeps_bytes(model, batch, context):
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    m, hw = cat.model(model), cat.accelerator("b200")
    rows = evaluate_levers(
        m, hw, Deployment(layout=Layout(tp=2)), ENGINES["vllm"], batch, context, 131072, 2048
    )
    base = rows[0]
    for r in rows[1:]:
        assert r.weight_bytes_per_gpu <= base.weight_bytes_per_gpu
        assert r.kv_bytes_per_sequence <= base.kv_bytes_per_sequence
        assert r.t_step_ideal_s <= base.t_step_ideal_s * (1 + 1e-9)
        assert r.max_batch >= base.max_batch

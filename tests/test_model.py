"""Parameter counts against the published totals (issue #2), with the arithmetic shown."""

import pytest

from roofline.domain.model import ModelArch


def test_llama_31_8b_by_hand(cat):
    # embedding and head: 128256 × 4096 each = 525,336,576
    # per layer: q,o 4096² ×2 + k,v 4096×1024 ×2 = 41,943,040; MLP 3×4096×14336 = 176,160,768;
    # two norms 8,192 → 218,112,000 × 32 = 6,979,584,000; final norm 4,096
    expected = 2 * 525_336_576 + 6_979_584_000 + 4_096
    assert cat.model("llama-3.1-8b").params_total == expected  # 8,030,261,248 = "8.03B"


@pytest.mark.parametrize(
    ("model", "published", "tolerance"),
    [
        ("llama-3.1-405b", 405.85e9, 0.005),
        ("llama-3.1-8b", 8.03e9, 0.001),
        ("llama-3.1-70b", 70.55e9, 0.001),
        ("deepseek-v3", 671e9, 0.002),
        ("deepseek-r1", 671e9, 0.002),
        ("mixtral-8x7b", 46.7e9, 0.002),
        ("qwen3-235b-a22b", 235e9, 0.005),
        ("qwen3-30b-a3b", 30.5e9, 0.005),
        ("gpt-oss-120b", 116.83e9, 0.001),  # model card
        ("gemma-3-27b", 27.01e9, 0.002),
    ],
)
def test_total_params_match_published(cat, model, published, tolerance):
    assert cat.model(model).params_total == pytest.approx(published, rel=tolerance)


def test_active_params(cat):
    # DeepSeek-V3 report: 37B activated (README_WEIGHTS: 36.7B incl. embedding and head)
    assert cat.model("deepseek-r1").params_active == pytest.approx(37e9, rel=0.03)
    # Mistral blog: 12.9B active of 46.7B
    assert cat.model("mixtral-8x7b").params_active == pytest.approx(12.9e9, rel=0.005)


def test_deepseek_mtp_module_is_reported_separately(cat):
    # HF checkpoint 685B − 671B ≈ 14B; README_WEIGHTS: 11.5B unique + its own embedding and head
    # (2 × 129280 × 7168 = 1.85B) = 13.4B
    p = cat.model("deepseek-v3").param_breakdown()
    assert p["mtp"] == pytest.approx(13.4e9, rel=0.02)
    assert p["total"] + p["mtp"] == pytest.approx(685e9, rel=0.002)


def test_mixtral_breakdown_by_hand(cat):
    # mistralai/Mixtral-8x7B-v0.1 config.json: D 4096, 32 layers, 32 heads, 8 KV heads (d_head
    # 128), 8 experts of F 14336 (SwiGLU: 3 matrices), top-2, V 32000, untied embeddings
    p = cat.model("mixtral-8x7b").param_breakdown()
    assert p["embedding"] == p["lm_head"] == 32000 * 4096  # 131,072,000
    # q, o 4096² each + k, v 4096 × 1024 each = 41,943,040 a layer
    assert p["attention"] == 32 * 41_943_040  # 1,342,177,280
    # 3 × 4096 × 14336 = 176,160,768 an expert, 8 experts, 32 layers
    assert p["experts_routed"] == 45_097_156_608
    assert p["mlp"] == p["experts_shared"] == 0
    assert p["router"] == 32 * 4096 * 8  # 1,048,576
    assert p["norms"] == 32 * 2 * 4096 + 4096  # two RMSNorms a layer and the final one
    # 2 × 131,072,000 + 1,342,177,280 + 45,097,156,608 + 1,048,576 + 266,240
    assert p["total"] == 46_702_792_704  # Mistral: "46.7B total parameters"
    # six of the eight experts idle for a token: − 32 × 6 × 176,160,768 = 33,822,867,456
    assert p["active"] == 12_879_925_248  # Mistral: "12.9B active"


def test_layer_groups_model_local_attention(cat):
    gemma = cat.model("gemma-3-27b")  # every 6th layer global: 10 of 62
    assert {(g.count, g.window) for g in gemma.layer_groups} == {(52, 1024), (10, None)}
    oss = cat.model("gpt-oss-120b")  # alternating sliding (128) and full
    assert {(g.count, g.window) for g in oss.layer_groups} == {(18, 128), (18, None)}
    dsv3 = cat.model("deepseek-v3")  # first 3 layers dense
    assert [(g.count, g.moe) for g in dsv3.layer_groups] == [(3, False), (58, True)]


def test_head_dim_defaults_to_d_over_n():
    m = ModelArch(
        id="x",
        model_type="llama",
        hidden_size=4096,
        num_hidden_layers=2,
        num_attention_heads=32,
        vocab_size=10,
        intermediate_size=8,
    )
    assert m.d_head == 128 and m.n_kv_heads == 32 and m.attention_kind == "MHA"


def test_every_catalog_model_matches_its_published_total(cat):
    # each entry's `published.params_total_b` comes from its model card or report
    checked = 0
    for m in cat.models.values():
        if m.published_params_total:
            assert m.params_total == pytest.approx(m.published_params_total, rel=0.01), m.id
            checked += 1
    assert checked >= 30


def test_opt_30b_parameters_by_hand(cat):
    # facebook/opt-30b: D 7168, 48 layers, F 28672, V 50272, tied, biases everywhere, LayerNorm
    # with bias, learned positions of 2048 + 2 rows. Per layer: q/k/v/o 4*7168^2 + 4*7168, FFN
    # 2*7168*28672 + 28672 + 7168, two LayerNorms 4*7168 = 616,655,872
    per_layer = 4 * 7168**2 + 4 * 7168 + 2 * 7168 * 28672 + 28672 + 7168 + 4 * 7168
    total = 48 * per_layer + 50272 * 7168 + 2050 * 7168 + 2 * 7168
    assert cat.model("opt-30b").params_total == total  # 29.97B, the paper's "30B"

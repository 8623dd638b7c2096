"""Parallel layouts: validation, pipeline stages and bubbles, sends, one weight accounting, EP and
attention-DP. Expected values are derived by hand in the comments."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.domain.layout import (
    Layout,
    bubble_fraction,
    expert_load_imbalance,
    links,
    pipeline_time_s,
    stage_layer_counts,
    stages,
    validate,
)
from roofline.domain.precision import WEIGHT_FORMATS
from roofline.engines.engine import ENGINES
from roofline.step.memory import kv_bytes_per_sequence, max_batch, plan_memory
from roofline.step.memory import weight_bytes_per_gpu as weights_per_gpu
from roofline.step.ops import Deployment, decode_ops, stage_weight_bytes
from roofline.step.phases import decode, prefill
from roofline.timing.collectives import send_time_s


def _dep(cat, m, hw, **kw) -> Deployment:
    """A deployment carrying a validated layout (as the CLI builds it)."""
    lay = validate(Layout(**kw, scale_out=cat.tier("infiniband-ndr")), m, hw)
    return Deployment(layout=lay.replica(), links=links(lay, hw))


# ---- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("analyze", "llama-3.1-8b", "h100", "--tp", "5"),  # 32 query heads / 5 = 6.4
        ("analyze", "llama-3.1-8b", "h100", "--tp", "6"),  # 5.33 heads
        ("analyze", "llama-3.1-70b", "h100", "--tp", "6"),  # 64 query / 8 KV heads
        ("analyze", "llama-3.1-8b", "h100", "--tp", "4096"),
        ("analyze", "llama-3.1-8b", "h100", "--pp", "64"),  # 32 layers
        ("analyze", "mixtral-8x7b", "h100", "--tp", "16", "--ep", "16"),  # 8 experts
        ("analyze", "llama-3.1-8b", "h100", "--tp", "16"),  # beyond the 8-GPU NVLink domain
        ("analyze", "llama-3.1-8b", "h100", "--attention-dp", "2", "--tp", "2"),  # dense
        ("analyze", "llama-3.1-8b", "h100", "--ep", "2", "--tp", "2"),  # dense
        ("analyze", "llama-3.1-8b", "h100", "--tp", "8", "--nodes", "2"),  # 4 per node < TP
        ("capacity", "llama-3.1-8b", "h100", "--tp", "6"),
        ("bytes", "llama-3.1-8b", "h100", "--tp", "6"),
        ("kv", "llama-3.1-8b", "--tp", "6"),  # every command that builds a step refuses it
        ("check", "llama-3.1-8b", "h100", "--tp", "6", "--fits"),
        ("speculate", "llama-3.1-70b", "h100", "--draft", "llama-3.1-8b", "--tp", "6"),
        ("cliff", "llama-3.1-8b", "h100", "--tp", "6"),
        ("analyze", "llama-3.1-8b", "h100", "--microbatches", "0", "--pp", "2"),
        ("analyze", "llama-3.1-8b", "h100", "--microbatches", "4"),  # no pipeline to split
        ("analyze", "llama-3.1-8b", "h100", "--tp", "16", "--scale-out", "nvme-gen5"),
    ],
)
def test_bad_layouts_exit_2_with_one_line(run, args):
    r = run(*args)
    assert r.code == 2, r.stdout
    assert r.stdout == "" and r.stderr.startswith("error:") and "Traceback" not in r.stderr


def test_fractional_heads_are_refused_with_the_head_count(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    with pytest.raises(InputError, match="32 query heads"):
        validate(Layout(tp=6), m, hw)
    validate(Layout(tp=8), m, hw)  # 4 query heads and 1 KV head per GPU


def test_kv_heads_replicate_past_tp_equal_k(cat):
    # Llama-3.1-70B, 64 query and 8 KV heads, TP16 (cross-node): each GPU 4 query heads and one
    # KV head (each KV head on 2 GPUs). qkv per GPU: q 8192·64·128/16 = 4,194,304, k and v
    # 2·8192·128·1 = 2,097,152: 6,291,456 parameters, 12,582,912 bytes in bf16.
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    dep = _dep(cat, m, hw, tp=16, cross_node_tp=True)
    qkv = next(op for op in decode_ops(m, hw, dep, 1, 100) if op.name == "attn.qkv")
    assert float(qkv.weight_bytes) / m.num_hidden_layers == 12_582_912


def test_cross_node_tp_uses_the_network(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    lay = validate(Layout(tp=16, cross_node_tp=True, scale_out=cat.tier("infiniband-ndr")), m, hw)
    assert lay.nodes == 2 and links(lay, hw).tp.name.startswith("InfiniBand")
    inside = validate(Layout(tp=8), m, hw)
    assert links(inside, hw).tp is hw.scale_up


def test_ep_across_nodes_runs_at_the_off_node_share(cat):
    # EP16 over two nodes of 8: of the 15/16 of a message a rank sends away, 8/16 leaves the
    # node; at 50 GB/s per NDR port the all-to-all moves as if at 50·15/8 = 93.75 GB/s.
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    lay = validate(
        Layout(tp=16, ep=16, attention_dp=16, scale_out=cat.tier("infiniband-ndr")), m, hw
    )
    ep = links(lay, hw).ep
    assert ep.bandwidth_bytes_per_s == pytest.approx(93.75e9)
    assert links(lay, hw).tp is hw.scale_up  # attention TP is 1: no cross-node all-reduce


def test_stage_split_follows_vllm():
    # vLLM get_pp_indices: 61 layers over 4 stages = 15 each, the one left over to the stage
    # before the last; 126 over 4 = 31 each, two left over to stages 1 and 2
    assert stage_layer_counts(61, 4) == (15, 15, 16, 15)
    assert stage_layer_counts(126, 4) == (31, 32, 32, 31)
    assert stage_layer_counts(32, 2) == (16, 16)


# ---- pipeline parallelism --------------------------------------------------------------------
def test_pp2_halves_the_weight_read_per_stage(cat):
    # Llama-3.1-8B: a layer holds 4096·(32+2·8)·128 (qkv) + 4096·4096 (o) + 3·4096·14336 (mlp)
    # = 25,165,824 + 16,777,216 + 176,160,768 = 218,103,808 parameters, 436,207,616 B in bf16.
    # PP2: each stage holds 16 of the 32 layers: 6,979,321,856 B read per decode pass.
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    pp1, pp2 = Deployment(), Deployment(layout=Layout(pp=2))

    def layer_bytes(ops):
        return sum(float(o.weight_bytes) for o in ops if o.name.startswith(("attn.", "mlp")))

    one = layer_bytes(decode_ops(m, hw, pp1, 1, 100))
    first = layer_bytes(decode_ops(m, hw, pp2, 1, 100, stage=stages(m, 2)[0]))
    assert one == 32 * 436_207_616
    assert first == 16 * 436_207_616 == one / 2


def test_embedding_on_the_first_stage_head_on_the_last(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    dep = Deployment(layout=Layout(pp=2))
    first, last = stages(m, 2)
    names0 = {o.name for o in decode_ops(m, hw, dep, 1, 100, stage=first)}
    names1 = {o.name for o in decode_ops(m, hw, dep, 1, 100, stage=last)}
    assert "embed" in names0 and "lm_head" not in names0 and "pp.send" in names0
    assert "lm_head" in names1 and "embed" not in names1 and "pp.send" not in names1


def test_bubble_fraction_by_hand():
    # GPipe: (pp − 1) / (m + pp − 1); pp 4, m 4: 3/7; pp 2, m 1: 1/2; pp 1: none
    assert bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert bubble_fraction(2, 1) == pytest.approx(1 / 2)
    assert bubble_fraction(1, 8) == 0
    # one round of 4 micro-batches through 4 stages of 1 s each: 7 s, 3 of them idle
    assert pipeline_time_s(1.0, 4, 4) == 7.0


def test_pipelined_decode_matches_the_schedule(cat):
    # PP2, one micro-batch: a decode step is both stages in turn, 2·t_stage(1). With two
    # micro-batches of one sequence each over n rounds the stages stay busy:
    # (n·2 + 2 − 1)·t_stage(1) in all.
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    t_stage = (
        float(decode(m, hw, Deployment(layout=Layout(pp=2, microbatches=1)), 1, 500).t_expected_s)
        / 2
    )
    n = 1000
    two = decode(m, hw, Deployment(layout=Layout(pp=2, microbatches=2)), 2, 500, steps=1)
    assert float(two.t_expected_s) == pytest.approx(3 * t_stage, rel=1e-9)
    # over many rounds the mean round tends to 2·t_stage (KV grows, so compare one step's)
    rounds = pipeline_time_s(t_stage, 2, 2, n) / n
    assert rounds == pytest.approx((2 * n + 1) / n * t_stage)


def test_prefill_rows_add_up_to_the_pipelined_step(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    p = prefill(m, hw, Deployment(layout=Layout(tp=4, pp=2)), 8, 1000)
    assert p.ops[-1].op.name == "pp.bubble"
    rows = sum(float(r.t_ideal_s) for r in p.ops)
    assert rows == pytest.approx(float(p.t_ideal_s))
    # m = 2 micro-batches: the bubble is (pp − 1)/(m + pp − 1) = 1/3 of the step when the
    # slowest stage sets the pace (here the first: it also holds the embedding)
    assert float(p.ops[-1].t_ideal_s) / float(p.t_ideal_s) == pytest.approx(1 / 3, rel=0.02)


def test_a_send_costs_bytes_over_bandwidth_plus_one_latency(cat):
    # NVLink 4: 450 GB/s per direction, 0.5 µs. One decode token of Llama-3.1-8B: 4096 values of
    # 2 B = 8,192 B → 0.5 µs + 8,192 / 450e9 s = 0.518204 µs
    hw = cat.accelerator("h100")
    assert send_time_s(hw.scale_up, 8192) == pytest.approx(0.5e-6 + 8192 / 450e9)
    m = cat.model("llama-3.1-8b")
    ops = decode_ops(m, hw, Deployment(layout=Layout(pp=2)), 1, 100, stage=stages(m, 2)[0])
    send = next(o for o in ops if o.name == "pp.send")
    assert float(send.message_bytes) == 8192 and send.kind == "p2p"


# ---- one weight accounting -------------------------------------------------------------------
@pytest.mark.parametrize(
    "model,hw_id,kw",
    [
        ("llama-3.1-70b", "h100", {"pp": 2}),
        ("llama-3.1-70b", "h100", {"tp": 4, "pp": 2}),
        ("deepseek-r1", "h200", {"tp": 8}),
        ("deepseek-r1", "h200", {"tp": 8, "ep": 8, "attention_dp": 8}),
        ("llama-3.1-70b", "h100", {"tp": 16, "cross_node_tp": True}),
    ],
)
def test_the_step_reads_what_the_memory_plan_stores(cat, model, hw_id, kw):
    """At a batch that touches every expert, one decode pass of the heaviest stage reads every
    weight byte the memory plan puts on that GPU, less the rows of the embedding it does not
    look up and the norms (not modelled as reads)."""
    m, hw = cat.model(model), cat.accelerator(hw_id)
    dep = replace(_dep(cat, m, hw, **kw), weights=WEIGHT_FORMATS["fp8"]).with_layout(microbatches=1)
    stored = weights_per_gpu(m, dep)
    heaviest = max(stages(m, dep.pp), key=lambda s: stage_weight_bytes(m, dep, s))
    ops = decode_ops(m, hw, dep, 4096, 100, stage=heaviest)  # (1 − 8/256)^4096 ≈ 0
    read = sum(float(o.weight_bytes) for o in ops if o.name != "embed")
    b_o = 2.0
    norms = heaviest.layers * (m.attn_norm_params + m.layer_norm_params) * b_o
    norms += m.hidden_size * b_o if heaviest.last else 0.0
    table = m.vocab_size * m.hidden_size * b_o / dep.tp if heaviest.first else 0.0
    assert read + norms + table == pytest.approx(stored, rel=1e-9)


def test_mla_down_projections_are_stored_whole_on_every_rank(cat):
    # DeepSeek-R1: q_a 7168·1536 + kv_a 7168·(512+64) = 11,010,048 + 4,128,768 = 15,138,816
    # parameters per layer sit whole on every TP rank (vLLM ReplicatedLinear): 61 layers in fp8
    # = 923,467,776 B. W(tp) = S/tp + R, so R = 2·W(2) − W(1) holds them (+ router and norms).
    m = cat.model("deepseek-r1")
    fp8 = Deployment(weights=WEIGHT_FORMATS["fp8"])
    w1 = weights_per_gpu(m, fp8)
    w2 = weights_per_gpu(m, fp8.with_layout(tp=2))
    router = 58 * (7168 * 256 + 256) * 2  # bf16, replicated
    norms = (61 * (1536 + 512 + 2 * 7168) + 7168) * 2
    assert 2 * w2 - w1 == pytest.approx(923_467_776 + router + norms)


# ---- attention-DP and EP ---------------------------------------------------------------------
def test_mla_latent_once_per_attention_dp_rank(cat):
    # DeepSeek-R1 latent: 61 layers × 576 × 2 B = 70,272 B per token; 1,000 tokens = 70.272 MB.
    # With attention-DP 16 a sequence lives on one GPU, so 16 groups each fit floor(budget/70.272
    # MB) sequences; without, every GPU holds every sequence's latent (replicated over TP).
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    eng = ENGINES["sglang"]  # token-granular pool: no block rounding
    adp = replace(_dep(cat, m, hw, tp=16, ep=16, attention_dp=16), weights=WEIGHT_FORMATS["fp8"])
    tp = adp.with_layout(attention_dp=1)
    assert float(kv_bytes_per_sequence(m, adp, 1000)) == 61 * 576 * 2 * 1000
    assert float(kv_bytes_per_sequence(m, tp, 1000)) == 61 * 576 * 2 * 1000
    plan = plan_memory(m, hw, adp, eng)
    per_group = math.floor(plan.kv_budget_bytes / 70_272_000)
    assert int(max_batch(plan, m, adp, 1000)) == 16 * per_group
    # and the step: 16 sequences over 16 groups read one sequence's latent per GPU per layer
    core = next(o for o in decode_ops(m, hw, adp, 16, 1000) if o.name == "attn.core")
    assert float(core.kv_bytes) / core.layers == 1000 * 576 * 2


def test_alltoall_bytes_for_top_k_routing(cat):
    # DeepSeek-R1, batch 256 under attention-DP 16 + EP16: each token goes to k = 8 experts, a
    # rank dispatches its share: 256·8·7168 values·2 B / 16 = 1,835,008 B per call, a dispatch
    # and a combine in each of the 58 MoE layers.
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    dep = _dep(cat, m, hw, tp=16, ep=16, attention_dp=16)
    a2a = next(o for o in decode_ops(m, hw, dep, 256, 1000) if o.name == "ep.alltoall")
    assert float(a2a.message_bytes) == 1_835_008
    assert a2a.layers == 2 * 58 and a2a.ranks == 16
    assert a2a.link.bandwidth_bytes_per_s == pytest.approx(93.75e9)  # two nodes: see above


def test_shared_expert_all_reduce_under_ep(cat):
    # DeepSeek-R1 on TP8 with attention-DP 4 (attention TP 2): the shared expert is split over
    # the 2 GPUs of an attention group, so its output is all-reduced over them
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    dep = Deployment(layout=Layout(tp=8, ep=8, attention_dp=4))
    names = {o.name: o for o in decode_ops(m, hw, dep, 64, 1000)}
    assert names["tp.allreduce(shared)"].ranks == 2 and "ep.alltoall" in names
    # without attention-DP every rank holds every token: one all-reduce of the MoE output
    plain = {o.name for o in decode_ops(m, hw, Deployment(layout=Layout(tp=8, ep=8)), 64, 1000)}
    assert "tp.allreduce(moe)" in plain and "ep.alltoall" not in plain


def test_expert_load_imbalance_by_hand():
    # one token, top-8 of 256 experts over 16 ranks: μ = 8/16 = 0.5; per-token variance
    # 8·(1/16)·(15/16)·(248/255) = 0.455882, σ = 0.675190; √(2 ln 16) = 2.354820;
    # expected max ≈ 0.5 + 1.589949 = 2.089949 → 4.1799 × the mean
    assert float(expert_load_imbalance(1, 8, 256, 16)) == pytest.approx(4.1799, rel=1e-4)
    assert float(expert_load_imbalance(1000, 8, 256, 1)) == 1.0


@given(
    t=st.floats(1, 1e6),
    k=st.integers(1, 8),
    ep=st.sampled_from([2, 4, 8, 16, 32, 64]),
)
def test_imbalance_is_at_least_one_and_falls_with_tokens(t, k, ep):
    e = 256
    a = float(expert_load_imbalance(t, k, e, ep))
    b = float(expert_load_imbalance(t * 4, k, e, ep))
    assert 1.0 <= a <= ep * min(k, e / ep) / k + 1e-9
    assert b <= a + 1e-12


@given(pp=st.integers(1, 64), m=st.integers(1, 256), n=st.integers(1, 10_000))
def test_pipeline_never_beats_busy_time_and_bubble_falls_with_microbatches(pp, m, n):
    total = float(pipeline_time_s(1.0, pp, m, n))
    assert total >= n * m - 1e-9  # a stage does m micro-batches a round
    assert total >= n * pp - 1e-9  # a token crosses every stage each round
    assert bubble_fraction(pp, m + 1) <= bubble_fraction(pp, m)
    assert 0 <= bubble_fraction(pp, m) < 1


def test_pipeline_ideal_never_slower_than_expected(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    for dep in (
        Deployment(layout=Layout(tp=4, pp=2)),
        Deployment(layout=Layout(tp=2, pp=4, microbatches=8)),
    ):
        b = np.array([1.0, 8.0, 64.0])
        d = decode(m, hw, dep, b, 2000, steps=100)
        assert np.all(d.t_ideal_s <= d.t_expected_s)


@given(pp=st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_more_stages_never_store_more_per_gpu(pp):
    from roofline.catalog.load import load_catalog

    m = load_catalog().model("llama-3.1-8b")
    if pp > 1:
        assert weights_per_gpu(m, Deployment(layout=Layout(pp=pp))) < weights_per_gpu(
            m, Deployment(layout=Layout(pp=pp // 2))
        )


def test_links_follow_the_domains(cat):
    # A100 PCIe: an NVLink bridge joins 2 GPUs (scale_up.domain_gpus 2); TP4 in the same 8-GPU
    # server all-reduces over PCIe (host_link.domain_gpus 8); GB200: 72 GPUs on NVLink
    m = cat.model("llama-3.1-70b")
    pcie = cat.accelerator("nvidia-a100-80gb-pcie")
    assert links(validate(Layout(tp=2), m, pcie), pcie).tp is pcie.scale_up
    assert links(validate(Layout(tp=4), m, pcie), pcie).tp is pcie.host_link
    gb = cat.accelerator("gb200")
    lay = validate(Layout(tp=8, pp=8), m, gb)  # 64 GPUs, one NVL72 domain: no network needed
    assert lay.nodes == 1 and links(lay, gb).pp is gb.scale_up


def test_the_layout_checks_its_degrees_once_for_every_caller():
    # EP 3 cannot spread experts over a TP-8 group (8 % 3 = 2), attention-DP 3 cannot split it;
    # the same check holds whether a Deployment, plan or a case makes the layout
    with pytest.raises(InputError, match="--ep 3 must divide --tp 8"):
        Layout(tp=8, ep=3)
    with pytest.raises(InputError, match="--attention-dp 3 must divide --tp 8"):
        Deployment(layout=Layout(tp=8, ep=8)).with_layout(attention_dp=3)
    with pytest.raises(InputError, match="--tp must be a whole number from 1 to 4096"):
        Layout(tp=0)


def test_a_deployment_reads_its_degrees_from_its_layout():
    # TP 8 with attention-DP 8: attention split over 8 / 8 = 1 GPU; PP 2 runs 2 micro-batches
    # unless told (vLLM's virtual engines); one replica is TP x PP = 16 GPUs
    dep = Deployment(layout=Layout(tp=8, pp=2, ep=8, attention_dp=8))
    assert (dep.tp, dep.pp, dep.ep, dep.attention_dp) == (8, 2, 8, 8)
    assert (dep.attention_tp, dep.pipeline_microbatches, dep.gpus_per_replica) == (1, 2, 16)
    wide = Layout(tp=8, pp=2, ep=8, dp=4, attention_dp=8, microbatches=4, nodes=8)
    assert wide.replica() == Layout(tp=8, pp=2, ep=8, attention_dp=8, microbatches=4)


def test_analyze_echoes_the_micro_batches_it_ran(run):
    """A batch of 4 splits into at most 4 micro-batches: --microbatches 64 ran as 4, so the
    GPipe bubble is (pp - 1) / (m + pp - 1) = 1 / 5 (not 1 / 65), and the JSON says 4 beside
    the 64 asked."""
    doc = run(
        "analyze", "llama-3.1-8b", "h100", "--pp", "2", "--microbatches", "64", "--batch", "4",
        "--format", "json",
    ).json()  # fmt: skip
    pipe = doc["pipeline"]
    assert pipe["microbatches"] == 4 and pipe["microbatches_asked"] == 64
    assert pipe["gpipe_bubble_fraction"] == pytest.approx(1 / 5)

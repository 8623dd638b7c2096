"""Launch lines and the layouts size searches (issue 24): every flag a launch line emits is in
hardware/engine_flags.yaml with its source; degrees map to each engine's flags as the engines'
argument docs say; redundant expert slots and attention-DP KV, checked by hand."""

import re

import pytest

from roofline.catalog.engine_flags import engine_flags
from roofline.domain.layout import Layout, expert_slots, validate
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import engine
from roofline.engines.launch import LAUNCH_ENGINES, LaunchSetup, launch
from roofline.serving.candidates import candidates
from roofline.serving.sim.steps import kv_budget_blocks
from roofline.step.memory import plan_memory
from roofline.step.ops import Deployment

FP8 = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["bf16"])
SPECS = [
    LaunchSetup("org/m", tp, pp, ep, adp, red, seqs, toks, 3000, 0.9, w, kv, nodes)
    for tp, pp, ep, adp, red, nodes in [
        (1, 1, 1, 1, 0, 1),
        (8, 2, 1, 1, 0, 2),
        (8, 1, 8, 1, 0, 1),
        (8, 1, 8, 8, 0, 1),
        (16, 1, 16, 4, 0, 2),
        (72, 1, 72, 72, 32, 9),
    ]
    for seqs, toks in [(None, None), (256, 8192)]
    for w, kv in [("bf16", "bf16"), ("fp8", "fp8")]
]


def test_every_flag_has_a_source_and_the_engine_a_version():
    table = engine_flags()
    assert set(table) == set(LAUNCH_ENGINES)
    for e in table.values():
        assert e["version"]
        for f in e["flags"] + e.get("options", []):
            src = f["source"]
            assert src["repo"].count("/") == 1 and src["path"] and src["where"]
            assert re.fullmatch(r"[0-9a-f]{40}", src["commit"])


@pytest.mark.parametrize("name", LAUNCH_ENGINES)
def test_every_emitted_flag_is_listed(name):
    listed = {f["flag"] for f in engine_flags()[name]["flags"]}
    for spec in SPECS:
        x = launch(engine_flags(), name, spec)
        emitted = {a for a in x.argv if a.startswith("--")}
        assert emitted <= listed, (spec, emitted - listed)
        if name != "vllm" or spec.ep in (1, spec.tp):
            assert x.argv, spec


def test_degrees_map_as_the_engines_document():
    spec = LaunchSetup("deepseek-ai/DeepSeek-R1", 8, 1, 8, 8, 0, 128, 8192, 3000, 0.9, "fp8", "fp8")

    def pairs(argv):
        return " ".join(argv)

    # vLLM: attention TP = TP / attention-DP = 1, DP 8, experts over TP x DP
    v = pairs(launch(engine_flags(), "vllm", spec).argv)
    assert "--tensor-parallel-size 1 " in v and "--data-parallel-size 8 " in v
    assert "--enable-expert-parallel" in v and "--kv-cache-dtype fp8" in v
    # SGLang: tp is every GPU, dp the attention groups; its request cap is the server's
    s = pairs(launch(engine_flags(), "sglang", spec).argv)
    assert "--tp-size 8 " in s and "--ep-size 8 " in s and "--dp-size 8 --enable-dp-attention" in s
    assert "--max-running-requests 1024 " in s  # 128 per rank x 8 ranks
    assert "--kv-cache-dtype fp8_e4m3" in s
    # TensorRT-LLM: attention-DP and the KV dtype in the options file
    t = launch(engine_flags(), "trtllm", spec)
    assert t.options == {"enable_attention_dp": True, "kv_cache_config": {"dtype": "fp8"}}
    # vLLM cannot run EP between 1 and TP x DP: no line rather than a wrong one
    assert launch(engine_flags(), "vllm", LaunchSetup("m", 8, ep=4)).argv == ()


def test_redundant_expert_slots_by_hand(cat):
    # DeepSeek's EPLB: EP72 over 256 experts takes ceil(256 / 72) = 4 slots a rank, 288 in all
    assert expert_slots(256, 72) == 288 and expert_slots(256, 64) == 256
    m, hw = cat.model("deepseek-r1"), cat.accelerator("gb200")
    lay = validate(Layout(72, 1, 72, 1, 72), m, hw)  # refused before: 72 does not divide 256
    assert lay.attention_tp == 1
    with pytest.raises(Exception, match="exceeds"):
        validate(Layout(512, 1, 512, 1, 512), m, cat.accelerator("h200"))
    r = launch(engine_flags(), "vllm", LaunchSetup("m", 72, 1, 72, 72, 288 - 256))
    assert '{"num_redundant_experts": 32}' in r.argv


def test_attention_dp_kv_is_per_rank_by_hand(cat):
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    dep = Deployment(
        weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["bf16"], layout=Layout(tp=8, ep=8)
    )
    adp = dep.with_layout(attention_dp=8)
    # MLA latent (512 + 64) x 2 bytes x 61 layers = 70,272 bytes a token, on every GPU that
    # holds the sequence: one GPU under TP8, one rank of eight under attention-DP 8
    per_block = 70_272 * 16
    for d, ranks in ((dep, 1), (adp, 8)):
        plan = plan_memory(m, hw, d, engine("vllm"))
        assert kv_budget_blocks(plan, m, d, 16) == int(plan.kv_budget_bytes // per_block) * ranks


def test_size_searches_attention_dp_and_ep(cat):
    m, hw = cat.model("deepseek-r1"), cat.accelerator("h200")
    net = cat.tier("infiniband-ndr")
    kept, scored = candidates(m, hw, FP8, engine("vllm"), 2000, 1000, 10.0, 0.05, 0.1, net, 99)
    shapes = {(c.layout.tp, c.layout.ep, c.layout.attention_dp) for c in kept}
    assert scored > 50  # TP, PP, EP and attention-DP over 1 to 4 nodes of 8
    # EP over the node is kept over TP-sharded experts (TP8 EP1): under TP every rank permutes
    # all T·k routed rows at the full hidden width, under EP8 an eighth of them (ops.py)
    assert (8, 8, 1) in shapes and any(adp > 1 for _, _, adp in shapes)
    assert any(tp > 8 for tp, _, _ in shapes)  # EP across nodes over the scale-out link


def test_size_prints_the_launch_line(run):
    args = ("size", "qwen3-30b-a3b", "--rate", "20", "--hardware", "h100", "--prompt", "1k",
            "--output", "200", "--slo-tpot", "50ms", "--requests", "200")  # fmt: skip
    r = run(*args, "--format", "json")
    best = r.json()["best"]
    listed = {f["flag"] for f in engine_flags()["vllm"]["flags"]}
    argv = best["launch"]["argv"]
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen3-30B-A3B"]
    assert {a for a in argv if a.startswith("--")} <= listed
    assert f"--tensor-parallel-size {best['tp'] // best['attention_dp']}" in " ".join(argv)
    assert best["constraint"]
    lines = run(*args, env={"COLUMNS": "80"}).stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("launch ("))
    assert all(len(x) <= 80 for x in lines)
    assert lines[start + 1].startswith("  vllm serve Qwen/Qwen3-30B-A3B")
    # a shell command: every line but the last continues with a backslash
    body = [x for x in lines[start + 1 :] if x.startswith("  ")]
    assert all(x.endswith(" \\") for x in body[:-1]) and not body[-1].endswith("\\")


@pytest.mark.parametrize(
    "args, says",
    [
        (("serve", "llama-3.1-8b", "h100", "--tp", "2", "--attention-dp", "2", "--rate", "1"),
         "needs a mixture-of-experts"),
        (("size", "llama-3.1-8b", "--rate", "1", "--pools", "3:1"), "give --disagg"),
        (("size", "llama-3.1-8b", "--rate", "1", "--scale-out", "nvlink5"), "not a network"),
    ],
)  # fmt: skip
def test_layout_options_refuse_in_one_line(run, args, says):
    r = run(*args)
    assert r.code == 2 and says in r.stderr and r.stdout == ""

"""Launch lines and the layouts size searches (issue 24): every flag a launch line emits is in
hardware/engine_flags.yaml with its source; degrees map to each engine's flags as the engines'
argument docs say; redundant expert slots and attention-DP KV, checked by hand."""

import json
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


def test_size_prints_the_launch_line(run, compute_once):
    """(compute_once: the JSON run searches; the table renders a copy of its answer. p50: the SLO
    search's runs hold max(200, 50 / (1 - 0.5)) = 200 requests, not the 5,000 p99 needs,
    slosearch.slo_requests; the launch line is read alike at any percentile)"""
    args = ("size", "qwen3-30b-a3b", "--rate", "20", "--hardware", "h100", "--prompt", "1k",
            "--output", "200", "--slo-tpot", "50ms", "--slo-pct", "50",
            "--requests", "200")  # fmt: skip
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


# ---- issue 36: launch lines you can paste -------------------------------------------------------
def _by(items, means, field):
    return next(f[field] for f in items if f["means"] == means)


def test_drafter_flags_from_the_table():
    """Each engine's drafter flags, names read from the sourced table: a chain of 4 (SGLang:
    4 steps, top-k 1, 5 tokens verified) and a tree of 16 with top-k 8."""
    from roofline.engines.draft_launch import DraftLaunch

    t = engine_flags()
    chain = DraftLaunch("eagle3", "org/head", 4)
    setup = LaunchSetup("org/m", 2, draft=chain)
    v = launch(t, "vllm", setup).argv
    flag = _by(t["vllm"]["flags"], "speculative", "flag")
    keys = t["vllm"]["speculative"]
    cfg = json.loads(v[v.index(flag) + 1])
    assert cfg == {
        _by(keys, "speculative", "key"): t["vllm"]["values"]["speculative"]["eagle3"],
        _by(keys, "draft_model", "key"): "org/head",
        _by(keys, "gamma", "key"): 4,
    }
    sg = t["sglang"]["flags"]
    s = " ".join(launch(t, "sglang", setup).argv)
    want = [("speculative", "EAGLE3"), ("draft_model", "org/head"), ("gamma", "4"),
            ("topk", "1"), ("tree_tokens", "5")]  # fmt: skip
    for means, value in want:
        assert f"{_by(sg, means, 'flag')} {value}" in s
    tree = launch(
        t, "sglang", LaunchSetup("org/m", 2, draft=DraftLaunch("eagle3", "o/h", 4, 16, 8))
    )
    assert f"{_by(sg, 'topk', 'flag')} 8 {_by(sg, 'tree_tokens', 'flag')} 16" in " ".join(tree.argv)
    opts = launch(t, "trtllm", setup).options["speculative_config"]
    assert opts == {"decoding_type": "Eagle", "max_draft_len": 4, "speculative_model": "org/head"}
    listed = {o["key"] for o in t["trtllm"]["options"]}
    assert {f"speculative_config.{k}" for k in opts} <= listed
    # an engine without the drafter kind launches plainly and says so
    medusa = launch(t, "sglang", LaunchSetup("org/m", 2, draft=DraftLaunch("medusa", "o/h", 3)))
    assert _by(sg, "speculative", "flag") not in medusa.argv and "no medusa" in medusa.note


def test_prequantized_checkpoint_drops_the_quantization_flag(cat):
    from roofline.engines.launch import served

    m = cat.model("llama-3.1-70b")
    fp8 = next(c for c in m.checkpoints if c.weights == "fp8")
    bf16 = next(c for c in m.checkpoints if c.weights == "bf16")
    assert served(m, "fp8") == (fp8.repo, True) and served(m, "bf16") == (bf16.repo, False)
    assert fp8.source.startswith("https://") and "Instruct" in bf16.repo
    quant = _by(engine_flags()["vllm"]["flags"], "quantization", "flag")
    for name in ("vllm", "sglang"):
        pre = launch(engine_flags(), name, LaunchSetup(fp8.repo, 2, weights="fp8",
                                                        prequantized=True))  # fmt: skip
        assert quant not in pre.argv and "loaded as published" in pre.note
    # a model with no fp8 checkpoint in the catalog is quantized on the fly
    q = served(cat.model("llama-3.3-70b"), "fp8")
    assert q == ("meta-llama/Llama-3.3-70B-Instruct", False)
    on_the_fly = launch(engine_flags(), "vllm", LaunchSetup(q[0], 2, weights="fp8"))
    assert f"{quant} {engine_flags()['vllm']['values']['quantization']['fp8']}" in " ".join(
        on_the_fly.argv
    )


def test_replicas_as_the_engine_runs_them():
    t = engine_flags()
    dp = launch(t, "vllm", LaunchSetup("org/m", 2, replicas=3, dp_replicas=True))
    assert f"{_by(t['vllm']['flags'], 'replicas', 'flag')} 3" in " ".join(dp.argv)
    apart = launch(t, "vllm", LaunchSetup("org/m", 8, replicas=3))
    assert "--data-parallel-size" not in apart.argv and "3 replicas" in apart.note
    sg = launch(t, "sglang", LaunchSetup("org/m", 8, replicas=2))
    port = t["sglang"]["server_port"]
    assert sg.router == (*t["sglang"]["replica_router"], _by(t["sglang"]["flags"],
                         "replica_router", "flag"), f"http://REPLICA_0:{port}",
                         f"http://REPLICA_1:{port}")  # fmt: skip


def test_max_model_len_rule():
    from roofline.engines.launch import model_len

    assert model_len(131072, 1500, fixed=True) == 131072  # fixed: the model's own maximum
    assert model_len(131072, 9000, fixed=False) == 9000  # drawn: the longest request
    assert model_len(None, 1500, fixed=True) == 1500
    assert model_len(4096, 5000, fixed=True) == 5000  # never below the longest request


def test_checkpoint_entries_are_checked():
    from roofline.catalog.checkpoints import checkpoints, drafter_heads
    from roofline.domain.errors import CatalogError

    ok = {"repo": "a/b", "weights": "fp8", "source": "https://x"}
    assert checkpoints("m", [ok])[0].weights == "fp8"
    bads = [({**ok, "repo": "ab"}, "owner/name"), ({**ok, "weights": "fp3"}, "weights"),
            ({**ok, "extra": 1}, "unknown key"), ({"repo": "a/b"}, "missing")]  # fmt: skip
    for bad, says in bads:
        with pytest.raises(CatalogError, match=says):
            checkpoints("m", [bad])
    with pytest.raises(CatalogError, match="drafter"):
        drafter_heads("m", [{"repo": "a/b", "drafter": "lookahead", "source": "s"}])


def test_size_speculative_winner_launches_with_its_drafter(cat):
    """The issue's command: the winner drafts with EAGLE-3 (γ 4, a chain), its line says so
    and serves the pre-quantized fp8 checkpoint without a quantization flag. (Read through
    docgen.data: docs/COMMANDS.md runs the same line, and the session runs it once.)"""
    from docs.docgen import data

    best = data(
        "roofline size llama-3.1-70b --rate 2 --hardware h100 --weights fp8 --prompt 1k"
        " --output 500 --slo-ttft 2s --slo-tpot 20ms --drafter eagle3 --tau 3.5 --gamma 4"
        " --tree-tokens chain"
    )["best"]
    t, m = engine_flags()["vllm"], cat.model("llama-3.1-70b")
    argv = best["launch"]["argv"]
    fp8 = next(c.repo for c in m.checkpoints if c.weights == "fp8")
    assert argv[:3] == [*t["command"][:2], fp8]
    assert _by(t["flags"], "quantization", "flag") not in argv
    assert best["speculation"]["drafter"] == "eagle3"
    cfg = json.loads(argv[argv.index(_by(t["flags"], "speculative", "flag")) + 1])
    assert cfg["method"] == t["values"]["speculative"]["eagle3"]
    assert cfg["num_speculative_tokens"] == best["speculation"]["gamma"] == 4
    ml = argv[argv.index(_by(t["flags"], "max_model_len", "flag")) + 1]
    assert int(ml) == m.max_position_embeddings  # fixed lengths: the model's own maximum
    assert {a for a in argv if a.startswith("--")} <= {f["flag"] for f in t["flags"]}


def test_html_shows_a_command_with_a_copy_button():
    from roofline.render.html.launch import launch_html

    doc = {"version": "v", "argv": ["vllm", "serve", "a/b", "--tensor-parallel-size", "2"],
           "note": "n", "options_file": None}  # fmt: skip
    html = launch_html(doc)
    assert "<button" in html and "copy" in html
    assert "vllm serve a/b --tensor-parallel-size 2" in html and "vllm, serve" not in html


def test_a_launch_line_sets_the_budget_each_rank_ran(cat):
    """Under attention DP the replica's step holds one rank's prompt chunk beside every rank's
    decodes: vLLM V1 on an H100, 8,192 tokens and 1,024 sequences a rank, so 8,192 + 7 x 1,024
    = 15,360 tokens a replica step at ADP8 (by hand). The launch line had printed 15,360 / 8 =
    1,920, a budget no rank ran; it prints the rank's own 8,192."""
    from roofline.domain.layout import Layout
    from roofline.engines.engine import engine
    from roofline.serving.serve import make_replica
    from roofline.step.ops import Deployment

    m, hw = cat.model("qwen3-30b-a3b"), cat.accelerator("h100")
    dep = Deployment(layout=Layout(tp=8, ep=8, attention_dp=8))
    rep = make_replica(m, hw, dep, engine("vllm", hw), 3000)
    assert rep.rules.max_batched_tokens == 15_360 and rep.rank_batched_tokens == 8192
    one = make_replica(m, hw, Deployment(layout=Layout(tp=8, ep=8)), engine("vllm", hw), 3000)
    assert one.rank_batched_tokens == one.rules.max_batched_tokens == 8192


def test_disagg_launches_the_replicas_it_simulated(run):
    """Under --rate the decode pool ran vLLM's own 1,024 running sequences (an H100, V1) and the
    prefill pool an 8,192-token budget with chunking off; the launch line had set the decode
    servers to --max-num-seqs 1 (the static --batch)."""
    r = run("disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--prompt", "2k",
            "--output", "200", "--rate", "10", "--slo-ttft", "1s", "--slo-tpot", "40ms",
            "--requests", "300", "--format", "json")  # fmt: skip
    assert r.code == 0, r.stderr
    launch = r.json()["launch"]
    dec, pre = " ".join(launch["decode"]["argv"]), " ".join(launch["prefill"]["argv"])
    assert "--max-num-seqs 1024" in dec and "--max-num-batched-tokens 8192" in pre


def test_size_says_when_the_drafter_did_not_pay(run):
    """size --drafter keeps a layout's drafted variant only where it is cheaper; at 20 req/s of
    Llama-3.1-8B 1k/1k on H100 no row drafts (serve --drafter at the same fleet misses the
    SLOs), and size said nothing of the drafter asked for: it now says so on stderr."""
    r = run("size", "llama-3.1-8b", "--hardware", "h100", "--rate", "20", "--prompt", "1k",
            "--output", "1k", "--slo-ttft", "2s", "--slo-tpot", "50ms", "--requests", "300",
            "--drafter", "eagle", "--format", "json")  # fmt: skip
    assert not any(d.get("speculation") for d in r.json()["deployments"])
    assert "--drafter eagle did not pay" in r.stderr

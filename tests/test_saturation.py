"""The saturation rate, the physical bounds it must respect and the steady-state figures built on
it (roofline.serving.search, bounds, serve.steady_state)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.engines.engine import engine
from roofline.serving.bounds import rate_bounds
from roofline.serving.metrics import Slo
from roofline.serving.rates import serve_rates
from roofline.serving.search import replica_capacity, saturation, slo_requests
from roofline.serving.serve import make_replica, serve
from roofline.serving.workload import make_workload
from roofline.step.ops import Deployment

H100_BF16_DENSE = 989.4e12  # FLOP/s, NVIDIA H100 SXM datasheet (dense bf16)
SERVE = ["serve", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200"]


@pytest.fixture(scope="module")
def m8(cat):
    return cat.model("llama-3.1-8b"), cat.accelerator("h100")


def test_compute_bound_by_hand(m8):
    m, hw = m8
    # Llama-3.1-8B: 8.03e9 parameters, of which the 128,256 × 4,096 embedding (a lookup, no
    # FLOPs) and the LM head of the same size; 32 layers, 32 query heads of 128 dims.
    vocab_params = 128_256 * 4_096
    body = 8.03e9 - 2 * vocab_params
    s, o = 1000, 200
    matmuls = 2 * body * (s + (o - 1))  # every prompt token and every decoded token
    lm_head = 2 * vocab_params * (1 + (o - 1))  # once per prefill, once per decode step
    per_pair = 2 * 2 * 32 * 32 * 128  # QK^T and PV, 2 FLOPs a multiply-add, all layers
    attn = per_pair * (s * (s + 1) / 2 + sum(range(s + 1, s + o)))
    flops = matmuls + lm_head + attn
    assert flops == pytest.approx(1.733e13, rel=0.01)  # the figure from the op count
    b = rate_bounds(m, hw, Deployment(), 1, s, o, 446)
    assert b.flops_per_request == pytest.approx(flops, rel=0.01)
    assert b.compute_requests_per_s == pytest.approx(H100_BF16_DENSE / flops, rel=0.01)
    assert b.compute_requests_per_s == pytest.approx(57.1, rel=0.01)
    # bandwidth: 446 sequences share one read of 16.06 GB of weights per step; each reads its own
    # KV (131,072 B/token, 32 layers × 8 KV heads × 128 × 2 × 2 B) at ~1,100 tokens
    step_bytes = 16.06e9 + 446 * 131_072 * (s + 1 + (o - 2) / 2)
    want = 3.35e12 * 446 / ((o - 1) * step_bytes)
    assert b.bandwidth_requests_per_s == pytest.approx(want, rel=0.03)


def test_tensor_parallel_bounds_scale_with_gpus(m8):
    m, hw = m8
    one = rate_bounds(m, hw, Deployment(), 1, 1000, 200, 64)
    two = rate_bounds(m, hw, Deployment(layout=Layout(tp=2)), 2, 1000, 200, 64)
    assert two.compute_requests_per_s == pytest.approx(2 * one.compute_requests_per_s)


def _rep(m8, max_seqs=None, **kw):
    m, hw = m8
    return make_replica(m, hw, Deployment(), engine("vllm", hw), 4096, max_seqs, **kw)


@settings(max_examples=5, deadline=None)
@given(
    prompt=st.integers(50, 2000),
    output=st.integers(2, 400),
    max_seqs=st.sampled_from([8, 32, 128, None]),
    chip=st.sampled_from(["h100", "l4", "mi300x"]),
    spread=st.booleans(),
)
def test_saturation_respects_the_bounds(cat, prompt, output, max_seqs, chip, spread):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator(chip)
    lengths = f"lognormal:mean={prompt},sigma=0.8" if spread else prompt
    w = make_workload(lengths, output, rate=1.0, requests=50)
    max_len = int(w.prompts.max() + w.outputs.max())
    rep = make_replica(m, hw, Deployment(), engine("vllm", hw), max_len, max_seqs)
    cap = replica_capacity(rep, w)
    ideal, expected = cap.ideal.requests_per_s, cap.expected.requests_per_s
    assert 0 < expected <= ideal * 1.01  # expected never faster than ideal (1%: the window)
    assert ideal <= cap.bounds.compute_requests_per_s
    assert ideal <= cap.bounds.bandwidth_requests_per_s
    assert cap.expected.binding in ("compute", "KV capacity", "max-seqs", "API server")


def test_saturation_is_independent_of_rate_requests_duration_and_seed(m8):
    rep = _rep(m8)
    runs = [
        make_workload(1000, 200, rate=1.0, requests=1000),
        make_workload(1000, 200, rate=20.0, requests=300, seed=3),
        make_workload(1000, 200, rate=20.0, duration_s=60.0, seed=4),
        make_workload(1000, 200, rate=5.0, requests=5),
    ]
    sats = [replica_capacity(rep, w).expected.requests_per_s for w in runs]
    assert max(sats) == min(sats)  # the probe never looks at the arrivals or their count
    dist = [
        make_workload("lognormal:mean=1000,sigma=0.9", 200, rate=r, requests=n, seed=sd)
        for r, n, sd in ((1.0, 1000, 0), (20.0, 3000, 4))
    ]
    a, b = (replica_capacity(rep, w).expected.requests_per_s for w in dist)
    assert a == b


def test_saturation_of_a_kv_bound_replica_is_what_its_batch_decodes(m8):
    # 8 sequences at most: the replica decodes ~8 at a time, so saturation is at most
    # 8 / (199 decode steps of batch 8 + 8 prefills) and at least half of that
    rep = _rep(m8, 8)
    sat = saturation(rep, np.array([1000]), np.array([200]), ideal=True)
    assert sat.binding == "max-seqs" and sat.mean_running_batch <= 8.0
    step = float(rep.ideal.decode_span_s(np.full(8, 1100.0), 1))
    pre = float(rep.ideal.prefill_step_s(np.array([1000.0])))
    top = 8 / (199 * step + 8 * pre)
    assert 0.5 * top <= sat.requests_per_s <= top * 1.02


def test_steady_cost_does_not_depend_on_run_length(run):
    # the steady state at 20 req/s: $3.99/h / (20 × 200 tokens/s × 3,600 s) × 1e6 = $0.2771/Mtok
    want = 3.99 / (20 * 200 * 3600) * 1e6
    for extra in (["--requests", "300"], ["--requests", "3000"], ["--duration", "120s"]):
        e = run(*SERVE, "--rate", "20", "--no-saturation", *extra, "-f", "json").json()
        e = e["expected"]
        assert e["cost_per_million_output_tokens"] == pytest.approx(want, rel=0.03)
        assert e["goodput_requests_per_s"] == pytest.approx(20 * e["slo_attainment"])
        assert e["steady_state"] is True
    short = run(*SERVE, "--rate", "20", "--requests", "300", "-f", "json").json()["expected"]
    # the benchmark window (first send to last finish) includes the drain: below the offered rate
    assert short["benchmark_window"]["requests_per_s"] < 20


def test_past_saturation_throughput_is_the_saturation_rate(run):
    doc = run(*SERVE, "--rate", "200", "--requests", "400", "-f", "json").json()
    sat = doc["saturation_rate"]
    assert doc["expected"]["throughput"]["requests_per_s"] == pytest.approx(sat["expected"])
    assert sat["expected"] <= sat["ideal"] <= sat["compute_bound"]


def test_a_five_request_run_is_whole_and_flagged(run):
    r = run(*SERVE, "--rate", "5", "--requests", "5", "-f", "json")
    assert r.code == 0
    doc = json.loads(r.stdout)
    assert doc["expected"]["steady_state"] is False
    assert math.isfinite(doc["saturation_rate"]["expected"])


def test_an_error_leaves_nothing_on_stdout(monkeypatch, capsys):
    import typer

    from roofline.cli.app import guarded

    @guarded
    def half() -> None:
        print("a first line of results")
        raise InputError("bad input found late")

    with pytest.raises(typer.Exit) as exc:
        half()
    out = capsys.readouterr()
    assert exc.value.exit_code == 2
    assert out.out == "" and "bad input found late" in out.err


def test_a_broken_pipe_inside_a_command_is_not_a_reader_that_left():
    # stdout is held while a guarded command runs: a BrokenPipeError from its own work (a worker
    # pool's pipe) must not reach the handler that ends the process quietly with exit 0
    from roofline.cli.app import guarded

    @guarded
    def broken() -> None:
        print("results never shown")
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(RuntimeError, match="pipe of the command's own work broke"):
        broken()


def test_light_load_energy_is_below_full_board_power(run):
    e = run(*SERVE, "--rate", "5", "--no-saturation", "-f", "json").json()["expected"]
    tok_s = e["throughput"]["output_tokens_per_s"]
    full, idle = 700.0 / tok_s, 0.11 * 700.0 / tok_s  # H100 SXM: 700 W board power
    assert idle < e["joules_per_output_token"] < 0.6 * full


def test_slo_search_runs_fifty_requests_past_the_percentile():
    assert slo_requests(Slo(1.0, None, 99.0), 1000) == 5000
    assert slo_requests(Slo(1.0, None, 90.0), 1000) == 1000
    assert slo_requests(Slo(1.0, None, 99.9), 1000) == 50_000


def test_size_without_slos_sizes_on_saturation_with_headroom(run):
    doc = run(
        "size", "llama-3.1-8b", "--rate", "100", "--hardware", "h100", "--prompt", "1k",
        "--output", "200", "-f", "json",
    ).json()  # fmt: skip
    best = doc["best"]
    assert doc["inputs"]["headroom"] == 0.1 and best["sized_on"] == "saturation"
    per_replica = 100 / best["replicas"]
    assert per_replica <= 0.9 * best["saturation_rate_per_replica"] * (1 + 1e-9)
    assert best["replicas"] == math.ceil(100 / (0.9 * best["saturation_rate_per_replica"]))
    # never more work per GPU than peak FLOP/s allows: 57.1 req/s per H100 (test above)
    assert 100 / best["gpus"] <= 57.1


def test_serve_needs_a_capacity_for_steady_figures_of_an_open_loop(m8):
    rep = _rep(m8, 32)
    w = make_workload(500, 50, rate=2.0, requests=40)
    window = serve(rep, w, Slo(), capacity=None).expected
    steady = serve(rep, w, Slo(), capacity=replica_capacity(rep, w)).expected
    assert steady.requests_per_s == pytest.approx(2.0)
    assert window.requests_per_s == pytest.approx(window.benchmark_requests_per_s)
    assert window.requests_per_s < 2.0  # 40 requests: the drain weighs on the window


def test_a_rate_sweep_serves_each_offered_rate_against_one_capacity(m8):
    """serve's rate loop (serving.rates.serve_rates) on 2 replicas: 2 and 4 req/s of 500-token
    prompts are far below one replica's saturation, so in steady state the deployment completes
    what is offered, 2.0 and 4.0 req/s in all (1.0 and 2.0 per replica); the one capacity is the
    replica's at any rate (its probe never looks at the arrivals)."""
    rep = _rep(m8, 32)
    w = make_workload(500, 50, rate=2.0, requests=40)
    cap, points = serve_rates(rep, w, [2.0, 4.0], Slo(), replicas=2)
    assert [r for r, _ in points] == [2.0, 4.0]
    assert [res.expected.requests_per_s for _, res in points] == pytest.approx([2.0, 4.0])
    other = make_workload(500, 50, rate=4.0, requests=40)
    assert cap.expected.requests_per_s == replica_capacity(rep, other).expected.requests_per_s
    assert cap.expected.requests_per_s > 2.0  # below saturation: the premise


def test_check_max_ttft_is_one_request_and_batch_prefill_the_batch(run):
    a = run(
        "analyze", "llama-3.1-70b", "h100", "--tp", "4", "--weights", "fp8", "--kv-dtype", "fp8",
        "--prompt", "2k", "--output", "512", "--batch", "32", "-f", "json",
    ).json()["expected"]  # fmt: skip
    r = run("check", "--spec", "examples/deploy.yaml", "-f", "json")
    assert r.code == 0 and "max_batch_prefill" in r.stderr  # the one-line notice of the change
    rows = {c["name"]: c for c in r.json()["checks"] if c["deployment"] == "chat-70b"}
    assert rows["max_ttft"]["value"] == pytest.approx(a["ttft_s"])
    assert rows["max_batch_prefill"]["value"] == pytest.approx(a["batch_prefill_s"])
    assert a["ttft_s"] < 0.2 < 2.0 < a["batch_prefill_s"]


def test_context_sets_the_decode_step(run):
    base = ["analyze", "llama-3.1-8b", "h100", "--prompt", "2k", "--output", "512", "-f", "json"]
    plain = run(*base).json()
    at8k = run(*base, "--context", "8k").json()
    assert plain["inputs"]["decode_context_tokens_mean"] == 2000 + 512 / 2
    assert at8k["inputs"]["decode_context_tokens_mean"] == 8000
    assert at8k["expected"]["tpot_s"] > plain["expected"]["tpot_s"]
    edge = ["edge", "llama-3.1-8b", "m4-max", "-f", "json"]
    slow = run(*edge, "--context", "32k").json()["rows"][0]["decode_tokens_per_s"]
    fast = run(*edge).json()["rows"][0]["decode_tokens_per_s"]
    assert slow < fast


def test_disagg_ideal_under_load_differs_and_pools_stay_under_their_saturation(run):
    base = [
        "disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--prompt", "2k",
        "--output", "200", "--rate", "10", "--slo-ttft", "1s", "--slo-tpot", "40ms",
        "--slo-pct", "90", "-f", "json",
    ]  # fmt: skip
    exp = run(*base).json()["traffic"]
    ideal = run(*base, "--ideal").json()["traffic"]
    assert ideal["step_times"] == "ideal" and exp["step_times"] == "expected"
    assert ideal["colocated"]["max_rate_per_unit"] > exp["colocated"]["max_rate_per_unit"]


def test_workers_keep_order_and_raise_what_a_worker_raised(monkeypatch):
    from roofline.serving.workers import parallel_map

    monkeypatch.setenv("ROOFLINE_JOBS", "2")
    assert parallel_map(lambda x: x * x, list(range(7))) == [0, 1, 4, 9, 16, 25, 36]

    def bad(x: int) -> int:
        if x == 3:
            raise InputError("three is refused")
        return x

    with pytest.raises(InputError, match="three"):
        parallel_map(bad, [1, 2, 3])
    monkeypatch.setenv("ROOFLINE_JOBS", "1")  # in this process
    assert parallel_map(str, [1, 2]) == ["1", "2"]


def test_disagg_kv_warning_counts_each_attention_dp_rank_once(run):
    # DeepSeek-R1: 70,272 B of MLA latent per token; batch 1024 of 3,000 tokens over 8 attention-DP
    # ranks holds 70,272 x 3,000 x 128 = 27.0 GB per decode GPU, under H200's ~37 GB budget
    base = [
        "disagg", "deepseek-r1", "--prefill", "h200", "--decode", "h200", "--prefill-tp", "8",
        "--prefill-ep", "8", "--decode-tp", "8", "--decode-ep", "8", "--weights", "fp8",
        "--batch", "1024", "--prompt", "1k", "--output", "2k", "-f", "json",
    ]  # fmt: skip
    adp = ["--prefill-attention-dp", "8", "--decode-attention-dp", "8"]
    assert "KV per decode GPU" not in run(*base, *adp).stderr
    assert "216 GB of KV per decode GPU" in run(*base).stderr  # replicated on every TP rank


def test_disagg_takes_a_pool_split(run):
    base = [
        "disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--prompt", "2k",
        "--output", "200", "--rate", "10", "--slo-ttft", "1s", "--slo-tpot", "40ms",
        "--slo-pct", "90", "-f", "json",
    ]  # fmt: skip
    d = run(*base, "--pools", "3:1").json()["traffic"]["disaggregated"]
    assert (d["prefill_replicas"], d["decode_replicas"], d["gpus_per_unit"]) == (3, 1, 4)
    assert run(*base[:-2], "--pools", "3-1").code == 2


def test_bursty_arrivals_raise_the_tail_not_the_throughput(run):
    # vLLM's --burstiness: gamma gaps of shape 0.25 (CV 2) at the same rate, below saturation
    base = [*SERVE, "--rate", "15", "--requests", "2000", "--no-saturation", "-f", "json"]
    poisson = run(*base).json()["expected"]
    bursty = run(*base, "--burstiness", "0.25").json()
    assert "CV 2" in bursty["inputs"]["arrivals"]
    bursty = bursty["expected"]
    assert bursty["ttft_s"]["p99"] > 1.5 * poisson["ttft_s"]["p99"]
    steady = bursty["throughput"]["requests_per_s"] / poisson["throughput"]["requests_per_s"]
    assert steady == pytest.approx(1.0, abs=0.03)
    assert run(*SERVE, "--rate", "5", "--burstiness", "0").code == 2


def test_unit_gaps_have_mean_one_and_the_stated_spread():
    from roofline.serving.workload import unit_gaps

    rng = np.random.default_rng(0)
    for b in (0.25, 1.0, 4.0):
        g = unit_gaps(rng, 200_000, b)[1:]
        assert g.mean() == pytest.approx(1.0, rel=0.02)
        assert g.std() / g.mean() == pytest.approx(1 / math.sqrt(b), rel=0.03)  # CV


def test_disagg_colocated_row_is_serve_dp_of_its_units(run):
    """disagg's colocated row simulated one replica at rate / N where serve --dp N routes the
    whole stream over N replicas (Llama-3.1-8B 4k/500 on H100 at 40 req/s: p99 TTFT 281 against
    183 ms). It is now that fleet, so the two pages give one p99; the pools likewise run as
    `units` x (P, D) replicas at the whole rate, never above their summed saturation."""
    args = ["--prompt", "4k", "--output", "500", "--rate", "40", "--slo-ttft", "1s",
            "--slo-tpot", "30ms", "--slo-pct", "90", "--requests", "400", "-f", "json"]  # fmt: skip
    tr = run("disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", *args).json()
    colo = tr["traffic"]["colocated"]
    n = colo["units"]
    assert n >= 2 and colo["gpus"] == n  # TP1 replicas: one GPU a unit
    serve = run("serve", "llama-3.1-8b", "h100", "--dp", str(n), *args).json()["expected"]
    for k in ("ttft_s", "tpot_s"):
        assert colo["metrics"][k]["p99"] == serve[k]["p99"]
    dis = tr["traffic"]["disaggregated"]
    assert dis["units"] * dis["gpus_per_unit"] == dis["gpus"]
    assert dis["metrics"]["meets_slo"] is True  # its units carry 40 req/s within the SLOs

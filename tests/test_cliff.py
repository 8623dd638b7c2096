"""The reasoning cliff simulator: conservation, no preemption below the cliff, recompute cost."""

import numpy as np
import pytest

from roofline.domain.layout import Layout
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS
from roofline.engines.engine import ENGINES
from roofline.serving.cliff import simulate
from roofline.serving.sim.steps import StepModel, kv_budget_blocks
from roofline.step.memory import plan_memory
from roofline.step.ops import Deployment

DEP = Deployment(weights=WEIGHT_FORMATS["fp8"], kv=KV_FORMATS["fp8"], layout=Layout(tp=8))


@pytest.fixture(scope="module")
def setup(cat):
    m, hw = cat.model("llama-3.1-405b"), cat.accelerator("h100")
    eng = ENGINES["vllm"]
    plan = plan_memory(m, hw, DEP, eng)
    blk = eng.block_tokens
    budget_blocks = kv_budget_blocks(plan, m, DEP, blk)
    # the same budget by hand: 32,256 B per token per GPU (fp8 KV, TP8) × 16-token blocks
    assert budget_blocks == int(plan.kv_budget_bytes // (32_256 * 16))
    return m, hw, StepModel(m, hw, DEP, 256, 17_000, ideal=False), budget_blocks, blk


def test_below_the_cliff_no_preemption(setup):
    _, _, steps, budget_blocks, blk = setup
    s, o = 1000, 16000
    cliff = budget_blocks // int(np.ceil((s + o) / blk))  # whole traces that fit, in blocks
    n = 4 * cliff
    p = simulate(steps, np.full(n, s), np.full(n, o), cliff, budget_blocks, blk)
    assert p.preemptions == 0 and p.recomputed_tokens == 0
    past = simulate(steps, np.full(n, s), np.full(n, o), 3 * cliff, budget_blocks, blk)
    assert past.preemptions > 0
    assert past.tpot_mean_s > 1.3 * p.tpot_mean_s  # TPOT rises steeply past the cliff
    assert past.output_tokens_per_s < 1.5 * p.output_tokens_per_s  # throughput stops improving
    assert past.ttft_mean_s < p.ttft_mean_s  # while TTFT falls a little


def test_every_request_finishes_with_its_tokens(setup):
    _, _, steps, budget_blocks, blk = setup
    rng = np.random.default_rng(1)
    prompts, outputs = rng.integers(10, 3000, 40), rng.integers(1, 20000, 40)
    p = simulate(steps, prompts, outputs, 64, budget_blocks, blk)
    assert p.finished == 40
    assert p.output_tokens_per_s * p.makespan_s == pytest.approx(outputs.sum())


def test_recompute_cost_is_prefill_of_prompt_plus_generated(setup):
    _, _, steps, _, blk = setup
    # a budget of 10 blocks (160 tokens): two sequences of 50 prompt tokens and 60 outputs each
    # need 7 blocks each at the end, so the second is preempted and recomputed once
    p = simulate(steps, np.array([50, 50]), np.array([60, 60]), 2, 10, blk)
    assert p.preemptions >= 1
    # every recompute re-prefills prompt + the tokens generated so far: more than the prompt
    assert p.recomputed_tokens > 50 * p.preemptions
    assert p.finished == 2


def test_swap_changes_the_curve(setup, cat):
    _, _, steps, budget_blocks, blk = setup
    n, s, o = 256, 1000, 16000
    recompute = simulate(steps, np.full(n, s), np.full(n, o), 96, budget_blocks, blk)
    swap = simulate(
        steps, np.full(n, s), np.full(n, o), 96, budget_blocks, blk, "swap", cat.tier("nvlink-c2c")
    )
    assert swap.recomputed_tokens == 0 and swap.swapped_bytes > 0
    assert swap.output_tokens_per_s != pytest.approx(recompute.output_tokens_per_s)


def test_cliff_cli_json(run):
    doc = run(
        "cliff",
        "llama-3.1-405b",
        "h100",
        "--tp",
        "8",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--prompt",
        "1k",
        "--output",
        "16k",
        "--max-seqs",
        "16,32,64,96",
        "--format",
        "json",
    ).json()
    # budget / (32,256 B per token × 17,008 tokens rounded to blocks) by the same rule
    assert 30 < doc["cliff_batch"] < 60
    keys = {
        "batch",
        "output_tokens_per_s",
        "ttft_mean_s",
        "ttft_p99_s",
        "tpot_mean_s",
        "tpot_p99_s",
        "preemptions",
        "recomputed_tokens",
        "decode_time_fraction",
    }
    for p in doc["points"]:
        assert keys <= set(p)
        if p["batch"] <= doc["cliff_batch"]:
            assert p["preemptions"] == 0


def test_cliff_bad_batch_spec(run):
    r = run("cliff", "llama-3.1-8b", "h100", "--max-seqs", "1..x")
    assert r.code == 2 and "--max-seqs" in r.stderr and r.stdout == ""


class StubSteps(StepModel):
    """Hand-checkable step times: decode step d(B) = 1 + 0.5·B s, prefill p(L) = 0.1·L s."""

    def __init__(self) -> None:
        self.base_s = np.array([1.5, 2.0])
        self.groups = []
        self.kv_bytes_per_token = 1.0

    def prefill_step_s(self, lengths, cached=None):
        # StepModel's signature; whole fresh prompts here (the recompute pass re-prefills its
        # prompt and tokens from scratch), so nothing before any of them is attended
        assert not any(cached or [])
        return float(0.1 * np.sum(lengths))


def test_hand_worked_schedule():
    # Two requests, prompt 4, output 8; blocks of 4 tokens, a budget of 5 blocks (20 tokens).
    # t=0     admit both (each needs ceil((4+1)/4) = 2 blocks; 4 <= 5); one prefill of 4 + 4
    #         tokens: 0.8 s; each samples its first token (context 5).
    # decode  both: 2·ceil((5+k)/4) <= 5 allows k = 3 steps at d(2) = 2.0 s: 6.0 s; context 8.
    # preempt the next step needs 2·ceil(9/4) = 6 > 5 blocks: the later request is preempted.
    # decode  the first alone: 4 steps to its 8th token at d(1) = 1.5 s: 6.0 s; it finishes.
    # recompute the second: prefill of 4 prompt + 4 generated = 8 tokens: 0.8 s (samples token 5)
    # decode  3 steps at d(1): 4.5 s. Makespan 0.8 + 6 + 6 + 0.8 + 4.5 = 18.1 s.
    p = simulate(StubSteps(), np.array([4, 4]), np.array([8, 8]), 2, 5, 4)
    assert p.makespan_s == pytest.approx(18.1)
    assert p.preemptions == 1 and p.recomputed_tokens == 8
    assert p.ttft_mean_s == pytest.approx(0.8)
    assert p.tpot_mean_s == pytest.approx(((6.0 + 6.0) / 7 + (6.0 + 6.0 + 0.8 + 4.5) / 7) / 2)
    assert p.output_tokens_per_s == pytest.approx(16 / 18.1)
    assert p.decode_time_fraction == pytest.approx(16.5 / 18.1)
    assert p.preemption_time_fraction == pytest.approx(0.8 / 18.1)


def test_cliff_swap_reports_the_difference_and_drawn_lengths(run):
    doc = run(
        "cliff",
        "llama-3.1-405b",
        "h100",
        "--tp",
        "8",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--max-seqs",
        "16,160",
        "--preemption",
        "swap",
        "--swap-tier",
        "cxl2-x16",
        "--output-dist",
        "lognormal:mean=16000,sigma=0.5",
        "--requests",
        "320",
        "--format",
        "json",
    ).json()
    assert "lognormal" in doc["inputs"]["output_lengths"]
    below, past = doc["points"]
    assert below["throughput_vs_recompute"] == pytest.approx(1.0)  # nothing to swap below
    assert past["swapped_bytes"] > 0 and past["recomputed_tokens"] == 0
    assert past["throughput_vs_recompute"] != pytest.approx(1.0)


def test_windowed_model_no_preemption_at_its_cliff(run):
    # gpt-oss-120b: half its layers keep only a 128-token window, so a trace holds far less KV
    # than tokens × all layers; the simulator counts blocks the same way as the cliff formula
    doc = run(
        "cliff",
        "gpt-oss-120b",
        "h100",
        "--weights",
        "mxfp4",
        "--max-seqs",
        "4,8,16",
        "--requests",
        "48",
        "--output",
        "16k",
        "--format",
        "json",
    ).json()
    cliff = doc["cliff_batch"]
    for p in doc["points"]:
        if p["batch"] <= cliff:
            assert p["preemptions"] == 0, p


class GridSteps(StepModel):
    """Hand-checkable step model: non-attention time lin(n) = 0.05 + 1e-5·(n − 1) s for a step of
    n tokens (0.05 s is the weight read), causal prefill attention A(S) = 0.5·S/1000 s."""

    def __init__(self) -> None:
        self.token_grid = np.array([1.0, 4096.0])
        self.lin_s = np.array([0.05, 0.05 + 4095e-5])
        self.base_s = np.array([0.05 + b * 1e-5 for b in range(8)])  # lin(B), B = 1..8
        self.grid = np.array([1.0, 1000.0])
        self.attn_cum_s = np.array([0.0005, 0.5])
        self.groups = []


def test_batched_prefill_reads_the_weights_once():
    steps = GridSteps()
    # one prompt of 1000: lin(1000) + A(1000) = 0.05 + 0.00999 + 0.5
    assert steps.prefill_step_s(np.array([1000.0])) == pytest.approx(0.55999)
    # two prompts in one step: lin(2000) + 2·A(1000) = 0.05 + 0.01999 + 1.0 (one weight read,
    # where the old model summed two separate prefills: 2 × 0.55999)
    assert steps.prefill_step_s(np.array([1000.0, 1000.0])) == pytest.approx(1.06999)


def test_chunked_prefill_rides_on_decode_steps():
    steps = GridSteps()
    # 4 sequences decoding (no attention cost in this stub) and a 1000-token prompt split over
    # 2 steps: 2 × lin(4 + 500) + A(1000) − A(0) = 2 × (0.05 + 503e-5) + 0.5
    t = steps.mixed_span_s(np.full(4, 10.0), 2, np.array([0.0]), np.array([1000.0]))
    assert t == pytest.approx(0.61006)
    # the prefill's share: 0.51 s on top of the 2 decode steps 2 × lin(4) = 0.10006 s, with no
    # second weight read
    assert t - steps.decode_span_s(np.full(4, 10.0), 2) == pytest.approx(0.51)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_cliff_is_serve_burst_without_the_api_server(run, engine):
    """A closed batch is serve's closed loop of as many users as requests (all sent at t = 0)
    without its API server: the same replica (serve's make_replica at each --max-seqs: the
    engine's chunking, token budget, admission and host costs), the same run. Two faults this
    once hid: step tables that stopped at max-seqs + the longest request (prefill tokens past it
    free: 6,775 tok/s for vLLM here, against serve's 6,146 at the same budget), and vLLM's
    admission for every engine (TensorRT-LLM's GUARANTEED_NO_EVICT never preempts)."""
    common = ("llama-3.1-8b", "h100", "--prompt", "128", "--output", "128", "--max-seqs", "64",
              "--requests", "256", "--engine", engine, "--format", "json")  # fmt: skip
    c = run("cliff", *common).json()["points"][0]
    s = run("serve", *common, "--concurrency", "256", "--frontend", "none", "--no-saturation")
    s = s.json()["expected"]
    assert c["output_tokens_per_s"] == pytest.approx(s["throughput"]["output_tokens_per_s"], 1e-9)
    assert c["makespan_s"] == pytest.approx(s["benchmark_window"]["window_s"], 1e-9)


def test_cliff_under_trtllm_never_preempts(run):
    """TensorRT-LLM admits a request only when its whole sequence's KV fits beside the running
    ones' (GUARANTEED_NO_EVICT, engines.scheduler.output_reserve 1): past the KV cliff of
    Llama-3.1-8B 1k/1k on one H100 (225 sequences), vLLM preempts and recomputes where
    TensorRT-LLM keeps the rest waiting."""
    args = ("llama-3.1-8b", "h100", "--max-seqs", "256", "--requests", "512", "-f", "json")
    vllm = run("cliff", *args).json()
    trt = run("cliff", *args, "--engine", "trtllm").json()
    assert vllm["points"][0]["preemptions"] > 0 and vllm["points"][0]["past_cliff"]
    assert trt["points"][0]["preemptions"] == 0 and trt["inputs"]["engine"] == "trtllm"

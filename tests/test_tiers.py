"""KV spilled to a memory tier: capacity gained, the per-step read, the tier's bandwidth shared
by several GPUs and below nominal, the reload of a cached prefix, by hand."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.engines.engine import ENGINES
from roofline.levers.offload import link_efficiency
from roofline.levers.tiers import max_batch_with_tier, reload_prefix, spill, tier_bandwidth
from roofline.step.memory import kv_bytes_per_sequence, plan_memory
from roofline.step.ops import Deployment


def test_spill_by_hand(cat):
    m, hw, tier = cat.model("llama-3.1-8b"), cat.accelerator("h100"), cat.tier("cxl2-x16")
    dep = Deployment()
    plan = plan_memory(m, hw, dep, ENGINES["vllm"])
    per_seq = 32768 * 131_072  # 32k tokens (whole blocks of 16) × 131,072 B
    assert kv_bytes_per_sequence(m, dep, 32768, 16) == per_seq
    assert (
        max_batch_with_tier(plan, m, dep, 32768, 256e9) == (plan.kv_budget_bytes + 256e9) // per_seq
    )
    r = spill(m, hw, dep, plan, tier, 40, 32768)
    spilled = 40 * per_seq - plan.kv_budget_bytes
    assert r.spilled_bytes == pytest.approx(spilled)
    # CXL 2.0 x16 = 64 GB/s per direction, the H100's PCIe Gen5 x16 host link also 64 GB/s
    assert tier_bandwidth(hw, tier) == 64e9
    # expected reads run at the link's protocol efficiency, 0.83 × 64 = 53.12 GB/s
    assert r.t_tier_s == pytest.approx(spilled / 53.12e9)
    assert r.t_step_hbm_s <= r.t_step_overlap_s <= r.t_step_serial_s
    ideal = spill(m, hw, dep, plan, tier, 40, 32768, ideal=True)
    assert ideal.t_tier_s == pytest.approx(spilled / 64e9)


def test_shared_tier_bandwidth_by_hand(cat):
    hw, socket = cat.accelerator("h100"), cat.tier("ddr5-socket-spr")
    # eight GPUs on one 307.2 GB/s socket: 38.4 GB/s each, below the 64 GB/s PCIe link
    assert tier_bandwidth(hw, socket, sharing=8) == pytest.approx(38.4e9)
    # four: 76.8 GB/s each, so the link (64 × 0.83 = 53.12 GB/s) is the limit
    assert tier_bandwidth(hw, socket, sharing=4, link_eff=0.83) == pytest.approx(53.12e9)


@given(sharing=st.integers(1, 64))
def test_more_sharers_never_more_bandwidth(sharing):
    from roofline.levers.offload import shared_bandwidth

    one = float(shared_bandwidth(307.2e9, 64e9, sharing))
    more = float(shared_bandwidth(307.2e9, 64e9, sharing + 1))
    assert more <= one <= 64e9


def test_link_efficiency_by_hand():
    # a copy of B·t_setup = 64e9 × 10 µs = 640 kB spends half its time in set-up: 0.83 × 0.5
    assert float(link_efficiency(640_000, 64e9)) == pytest.approx(0.415)
    assert float(link_efficiency(1e12, 64e9)) == pytest.approx(0.83, rel=1e-5)


def test_tier_read_capped_by_host_link(cat):
    # an A100 reaches host memory over PCIe Gen4 x16 (32 GB/s), below a DDR5 socket's 460.8 GB/s
    assert tier_bandwidth(cat.accelerator("a100"), cat.tier("ddr5-socket-genoa")) == 32e9


def test_nothing_spills_within_hbm(cat):
    m, hw, tier = cat.model("llama-3.1-8b"), cat.accelerator("h100"), cat.tier("nvme-gen5")
    plan = plan_memory(m, hw, Deployment(), ENGINES["vllm"])
    r = spill(m, hw, Deployment(), plan, tier, 4, 8192)
    assert r.spilled_bytes == 0 and r.t_tier_s == 0


def test_reload_prefix_by_hand(cat):
    m, hw, tier = cat.model("llama-3.1-8b"), cat.accelerator("h100"), cat.tier("cxl2-x16")
    r = reload_prefix(m, hw, Deployment(), tier, 32768, 500, dma_tokens=256)
    # KV per token per layer 2·8·128·2 = 4096 B; a copy of 256 tokens = 1,048,576 B:
    # η = 0.83 · 1,048,576 / (1,048,576 + 640,000) = 0.51542 -> 32.987 GB/s
    assert r.link_efficiency == pytest.approx(0.83 * 1_048_576 / 1_688_576)
    kv = 32768 * 32 * 4096  # 4.295 GB
    assert r.kv_bytes == kv
    assert r.t_reload_s == pytest.approx(kv / (64e9 * 0.83 * 1_048_576 / 1_688_576))  # 130 ms
    assert r.ttft_overlap_s <= r.ttft_serial_s
    assert r.t_recompute_s > r.t_prefill_new_s  # recomputing 33k tokens costs more than 500


def test_cli_tiers(run):
    doc = run(
        "tiers",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "4",
        "--tier",
        "cxl2-x16",
        "--tier-capacity",
        "256GB",
        "--format",
        "json",
    ).json()
    assert doc["max_batch_with_tier"] > doc["max_batch_hbm"]
    hbm, tier = doc["rows"]
    assert hbm["spilled_bytes_per_gpu"] == 0 and tier["spilled_bytes_per_gpu"] > 0
    assert tier["tpot_serial_s"] > hbm["tpot_serial_s"]
    r = run("tiers", "llama-3.1-8b", "h100", "--tier", "cxl2-x16")
    assert r.code == 2 and "--tier-capacity" in r.stderr


def test_cli_tiers_shared_socket_and_reload(run):
    doc = run(
        "tiers",
        "llama-3.1-70b",
        "h100",
        "--tp",
        "8",
        "--tier",
        "ddr5-socket-spr",
        "--tier-capacity",
        "64GB",
        "--prefix",
        "32k",
        "--format",
        "json",
    ).json()
    # eight GPUs of the TP group share the socket by default: 307.2 / 8 = 38.4 GB/s each
    assert doc["inputs"]["tier_bandwidth_bytes_per_s"] == pytest.approx(38.4e9)
    assert doc["reload"]["prefix_tokens"] == 32000
    assert doc["reload"]["ttft_overlap_s"] < doc["reload"]["ttft_recompute_s"]

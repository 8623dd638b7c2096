"""KV spilled to a memory tier: capacity gained and the per-step read, by hand."""

import pytest

from roofline.memory import ENGINES, kv_bytes_per_sequence, plan_memory
from roofline.ops import Deployment
from roofline.tiers import max_batch_with_tier, spill, tier_bandwidth


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
    assert r.t_tier_s == pytest.approx(spilled / 64e9)
    assert r.t_step_hbm_s <= r.t_step_overlap_s <= r.t_step_serial_s


def test_nothing_spills_within_hbm(cat):
    m, hw, tier = cat.model("llama-3.1-8b"), cat.accelerator("h100"), cat.tier("nvme-gen5")
    plan = plan_memory(m, hw, Deployment(), ENGINES["vllm"])
    r = spill(m, hw, Deployment(), plan, tier, 4, 8192)
    assert r.spilled_bytes == 0 and r.t_tier_s == 0


def test_tier_read_capped_by_host_link(cat):
    # an A100 reaches host memory over PCIe Gen4 x16 (32 GB/s), below a DDR5 socket's 460.8 GB/s
    assert tier_bandwidth(cat.accelerator("a100"), cat.tier("ddr5-socket-genoa")) == 32e9


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

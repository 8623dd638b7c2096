"""Sharing GPUs in a fleet (issue 39 item 3): LoRA adapter bytes by hand, the batched LoRA
kernels' cost (Punica's 2 ms per token), host-link load and wake times, co-location;
per-model traffic from a workload file or an arrival log; the catalog's spot prices."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from roofline.catalog.load import load_catalog, load_prices
from roofline.domain.deployment import Deployment
from roofline.domain.errors import InputError
from roofline.domain.layout import Layout
from roofline.domain.precision import WEIGHT_FORMATS
from roofline.engines.engine import engine
from roofline.fleet.build import pools
from roofline.fleet.fleetfile import read_fleet
from roofline.fleet.sharing import (
    lora_capacity_factor,
    no_sleep_reason,
    slot_hit_share,
    transfer_s,
)
from roofline.fleet.sources import log_hourly
from roofline.step.lora import adapter_bytes_per_gpu as adapter_bytes
from roofline.step.memory import plan_memory

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "model, rank, expected",
    [
        # Qwen3-32B: d 5120, 64 heads x 128, 8 KV heads, FFN 25600, 64 layers. Per layer (in + out):
        # q 5120+8192, k 5120+1024, v 5120+1024, o 8192+5120, gate/up 5120+25600, down 25600+5120
        # = 13312 + 6144 + 6144 + 13312 + 3 x 30720 = 131072; x 16 x 64 layers x 2 B = 256 MiB
        ("qwen3-32b", 16, 268_435_456),
        # Llama-3.1-8B: d 4096, 32 x 128, 8 KV, FFN 14336, 32 layers: 2 x 8192 + 2 x 5120 +
        # 3 x 18432 = 81920; x 8 x 32 x 2 = 41,943,040
        ("llama-3.1-8b", 8, 41_943_040),
        # DeepSeek-R1 (MLA, MoE: attention only): q_a 7168+1536, q_b 1536+128x192, kv_a
        # 7168+576, kv_b 512+128x256, o 128x128+7168 = 99392; x 16 x 61 x 2 = 194,013,184
        ("deepseek-r1", 16, 194_013_184),
    ],
)
def test_adapter_bytes_by_hand(model, rank, expected):
    assert adapter_bytes(load_catalog().model(model), rank) == expected


@pytest.mark.parametrize(
    "model, tp, pp, expected",
    [
        # Llama-3.1-8B at rank 16 (d 4096, 32 x 128, 8 KV heads, FFN 14336, 32 layers). vLLM keeps
        # A whole and splits B over TP in column-parallel q, k, v, gate, up (in + out / TP), and
        # splits A in row-parallel o, down (in / TP + out). TP 1: 81920 per layer (above).
        # TP 2: q 4096+2048, k, v 4096+512, o 2048+4096, gate, up 4096+7168, down 7168+4096
        # = 2 x 6144 + 2 x 4608 + 3 x 11264 = 55296; x 16 x 32 x 2 = 56,623,104
        ("llama-3.1-8b", 2, 1, 56_623_104),
        # TP 4: q 4096+1024, k, v 4096+256, o 1024+4096, gate, up 4096+3584, down 3584+4096
        # = 2 x 5120 + 2 x 4352 + 3 x 7680 = 41984; x 1024 = 42,991,616
        ("llama-3.1-8b", 4, 1, 42_991_616),
        # PP 2 at TP 1: a GPU holds 16 of the 32 layers: 81920 x 16 x 16 x 2 = 41,943,040
        ("llama-3.1-8b", 1, 2, 41_943_040),
        # DeepSeek-R1 at TP 8: q_a 7168+1536 and kv_a 7168+576 whole (TP disabled), q_b
        # 1536+24576/8, kv_b 512+32768/8, o 16384/8+7168 = 8704+4608+7744+4608+9216 = 34880;
        # x 16 x 61 x 2 = 68,085,760
        ("deepseek-r1", 8, 1, 68_085_760),
    ],
)
def test_adapter_slots_sharded_as_vllm_shards_them(model, tp, pp, expected):
    m = load_catalog().model(model)
    dep = Deployment(weights=WEIGHT_FORMATS["fp8"], layout=Layout(tp=tp, pp=pp))
    assert adapter_bytes(m, 16, dep) == expected
    # 20 slots of them come out of each GPU's KV budget (vLLM allocates them before the KV)
    hw = load_catalog().accelerator("h200")
    bare = plan_memory(m, hw, dep, engine("vllm", hw)).kv_budget_bytes
    held = plan_memory(m, hw, replace(dep, lora_slots=20, lora_rank=16), engine("vllm", hw))
    assert bare > 20 * expected and bare - held.kv_budget_bytes == pytest.approx(20 * expected)


@given(st.sampled_from(["llama-3.1-8b", "qwen3-32b", "deepseek-r1"]), st.integers(0, 3))
def test_a_gpu_holds_no_more_than_one_adapter_and_the_group_at_least_one(name, k):
    # each A and B is either whole or split in TP parts: one GPU's share is at most the whole
    # adapter and shrinks as TP grows; the TP group's shares together hold at least the whole
    m = load_catalog().model(name)
    whole = adapter_bytes(m, 8)
    tp = 2**k
    one = adapter_bytes(m, 8, Deployment(layout=Layout(tp=tp)))
    assert one <= whole and tp * one >= whole * (1 - 1e-12)
    assert adapter_bytes(m, 8, Deployment(layout=Layout(tp=2 * tp))) <= one


@given(st.floats(1e-4, 1.0))
def test_lora_kernels_keep_a_share_below_one(tpot_s):
    f = lora_capacity_factor(tpot_s)
    assert 0 < f < 1
    # a step of t + 2 ms serves what a step of t did: capacity x (t + 2 ms) = t
    assert f * (tpot_s + 0.002) == pytest.approx(tpot_s)


def test_slot_hits_by_hand():
    # 8 slots for 20 adapters: uniform, 8 / 20 of the requests; Zipf (share of the i-th
    # proportional to 1 / i), 4 slots: H(4) / H(20) = (25 / 12) / 3.597740 = 0.579063
    assert slot_hit_share(20, 8, "uniform") == pytest.approx(0.4)
    assert slot_hit_share(20, 4, "zipf") == pytest.approx(2.0833333 / 3.5977397, abs=1e-6)
    assert slot_hit_share(20, 20, "zipf") == slot_hit_share(20, 30, "uniform") == 1.0


@given(st.integers(1, 300), st.integers(0, 300))
def test_slot_hits_grow_with_slots_and_favour_a_skewed_popularity(n, k):
    u, z = slot_hit_share(n, k, "uniform"), slot_hit_share(n, k, "zipf")
    # the k most requested of decreasing shares carry at least k / n of the requests
    assert 0.0 <= u <= z + 1e-12 <= 1.0 + 1e-12
    assert slot_hit_share(n, k + 1, "zipf") >= z


def test_a_model_that_does_not_sleep_says_why():
    # vLLM sleeps (its sleep mode, level 1); SGLang's release/resume has no published resume
    # time for serving; an engine with no sleep mode says so
    assert no_sleep_reason("vllm") == ""
    assert "no published resume time" in no_sleep_reason("sglang")
    assert no_sleep_reason("trtllm") == "not slept: no sleep mode known for trtllm"


def test_lora_cost_and_transfers_by_hand():
    assert lora_capacity_factor(0.030) == pytest.approx(0.9375)  # 30 / 32 ms
    assert transfer_s(8e9, 64e9) == pytest.approx(0.125)  # 8 GB over PCIe Gen5 x16
    assert transfer_s(8e9, None) is None


def test_arrival_log_hourly_rates_by_hand():
    # an arrival every 10 s for two hours: 0.1 req/s in hours 0 and 1, nothing after
    r = log_hourly(np.arange(0.0, 7200.1, 10.0))
    assert r[0] == pytest.approx(0.1) and r[1] == pytest.approx(0.1) and r[2:] == (0.0,) * 22
    # a log inside one hour: its gaps over its span, 4 arrivals in 3 s -> 1 req/s
    assert log_hourly(np.array([0.0, 1.0, 2.0, 3.0]))[0] == pytest.approx(1.0)


def test_fleet_file_reads_a_workload_file_and_a_log(tmp_path):
    f = tmp_path / "f.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "models": [
                    {"name": "w", "model": "llama-3.1-8b",
                     "workload": str(ROOT / "examples/workloads/chat-batch.yaml")},
                    {"name": "log", "model": "llama-3.1-8b", "prompt": 500,
                     "arrivals": str(ROOT / "examples/arrivals/azure_sample.csv"), "speedup": 40},
                ],
                "hardware": {"rent": [{"type": "h100"}]},
            }
        )
    )  # fmt: skip
    spec = read_fleet(f)
    w, log = spec.models
    # chat-batch.yaml: 40 arrivals/s, 70% chat (1000 in, 200 out, TTFT 1 s), 30% batch (4000,
    # 500, TTFT 60 s): 0.7 x 1000 + 0.3 x 4000 = 1900 in, 0.7 x 200 + 0.3 x 500 = 290 out
    assert w.hourly == (40.0,) * 24 and (w.prompt, w.output) == (1900, 290)
    assert w.slo_ttft_s == 1.0 and w.slo_tpot_s is None
    # the Azure sample: 24 requests, 23 gaps, replayed 40x faster all in hour 0
    assert log.prompt == 500 and log.hourly[1:] == (0.0,) * 23 and log.hourly[0] > 0


def test_speedup_without_a_log_is_one_line(run_main, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(
        "models: [{model: llama-3.1-8b, rate: 1, speedup: 2}]\nhardware: {rent: [{type: h100}]}"
    )
    r = run_main("fleet", str(f))
    assert r.code == 2 and r.stdout == "" and "speedup: only with arrivals" in r.stderr


def test_catalog_spot_prices_are_their_offers_median():
    raw = yaml.safe_load((ROOT / "hardware/prices.yaml").read_text())["prices"]
    prices = load_prices()
    spots = [e for e in raw if "spot" in e]
    assert {e["id"] for e in spots} >= {"nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-b200-hgx",
                                         "amd-mi300x"}  # fmt: skip
    for e in spots:
        med = statistics.median(o["usd_per_gpu_hour"] for o in e["spot"]["offers"])
        assert e["spot"]["usd_per_gpu_hour"] == pytest.approx(med, abs=0.005)
        assert all(o["source"] for o in e["spot"]["offers"]) and e["spot"]["preemption_source"]
        p = prices[e["id"]]
        assert p.spot_usd_per_gpu_hour == e["spot"]["usd_per_gpu_hour"]
        assert 0 <= (p.spot_preemptions_per_hour or 0) < 1


def test_spot_catalog_pools(tmp_path):
    f = tmp_path / "f.yaml"
    f.write_text(
        "models: [{model: llama-3.1-8b, rate: 1}]\n"
        "hardware: {rent: [{type: h200, spot: catalog}, {type: a100, spot: catalog}]}"
    )
    spec = read_fleet(f)
    prices = load_prices()
    h200, a100 = "nvidia-h200-sxm", "nvidia-a100-80gb-sxm"
    ids = {"h200": h200, "a100": a100}
    od = {h200: 4.5, a100: 2.79}
    with pytest.raises(InputError, match="no catalog spot price"):
        pools(spec, ids, od, prices)
    spec2 = read_fleet(
        f.write_text(f.read_text().replace(", {type: a100, spot: catalog}", "")) and f
    )
    spot = [p for p in pools(spec2, ids, od, prices) if p.kind == "spot"]
    assert [(p.chip, p.price) for p in spot] == [(h200, prices[h200].spot_usd_per_gpu_hour)]
    assert spot[0].preemptions_per_hour == prices[h200].spot_preemptions_per_hour


LORA = """requests: 100
models:
  - name: chat
    model: llama-3.1-8b
    weights: fp8
    prompt: 1k
    output: 200
    slo: {ttft: 1s, tpot: 50ms, percentile: 90}
    rate: 30
    lora: {adapters: 20, rank: 8}
hardware:
  rent: [{type: h100}]
"""


def test_fleet_shows_lora_and_sleep(run, tmp_path):
    f = tmp_path / "lora.yaml"
    f.write_text(LORA)
    r = run("fleet", str(f), "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    (lo,) = doc["sharing"]["lora"]
    assert lo["adapter_bytes"] == 41_943_040  # by hand above (rank 8)
    assert lo["tp"] == 1 and lo["slots_bytes_per_gpu"] == 20 * 41_943_040
    # the 20 slots come out of each GPU's KV budget (vLLM allocates them before the KV cache)
    assert lo["kv_budget_bytes"] - lo["kv_budget_bytes_with_slots"] == pytest.approx(
        20 * 41_943_040
    )
    # one adapter over the H100's PCIe Gen5 x16 (64 GB/s, hardware/nvidia-h100-sxm.yaml)
    assert lo["load_from_host_s"] == pytest.approx(41_943_040 / 64e9)
    t = lo["tpot_mean_s"]
    assert lo["capacity_kept"] == pytest.approx(t / (t + 0.002))
    d = doc["models"][0]["deployment"]
    # the placement gives a replica size's capacity (headroom spent) x the kept share: 30 req/s
    # takes ceil(30 / that) replicas every hour
    n = doc["hours"][0]["placements"][0]["replicas"]
    assert n == math.ceil(30 / (d["planned_rate_per_replica"] * lo["capacity_kept"]))
    (z,) = doc["sharing"]["sleep"]
    assert z["wake_s"] == pytest.approx(z["weight_bytes_per_gpu"] / 64e9)
    assert z["wake_s"] < z["cold_start_s"]
    assert doc["sharing"]["applied"]["colocation"].startswith("applied")
    assert doc["sharing"]["colocation"] == []  # one model: no pair
    (pool,) = doc["inputs"]["pools"]  # the on-demand price's source: the catalog's offers
    assert pool["price_source"].startswith("prices.yaml: median of")


def test_a_model_only_on_owned_chips_is_short_apart_not_an_error():
    # one model that runs only on the 4 owned H100s (10 req/s a replica), 5 req/s all day: the
    # fleet places 1 owned replica; apart (rentable pools only) it has nowhere to run
    from roofline.fleet.day import Problem, apart, plan
    from roofline.fleet.placement import Pool

    pools_ = (Pool("h100", "owned", 0.0, 4), Pool("h200", "on-demand", 4.5, 8))
    p = Problem(
        ("m",), np.full((1, 24), 5.0), np.ones(1, dtype=int), np.array([[10.0, 0.0]]),
        np.ones((1, 2)), np.zeros((1, 2)), 0.1, pools_, (1.97,),
    )  # fmt: skip
    assert plan(p).hours[0].replicas == ((1, 0),)
    sep = apart(p)
    assert sep.cost is None and sep.per_model == (None,)


def test_fleet_sharing_in_table_and_html(run, tmp_path):
    f = tmp_path / "lora.yaml"
    f.write_text(LORA)
    r = run("fleet", str(f), env={"COLUMNS": "80"})
    assert r.code == 0 and max(len(x) for x in r.stdout.splitlines()) <= 80
    text = " ".join(r.stdout.split())
    assert "LoRA adapters on one base (applied" in text and "Sleep/wake (applied" in text
    assert "Co-location (applied" in text
    html = run("fleet", str(f), "--format", "html").stdout
    assert "LoRA adapters on one base" in html and "Sleep/wake against cold start" in html


def test_a_bad_spot_block_is_a_catalog_error(tmp_path):
    from roofline.domain.errors import CatalogError

    bad = tmp_path / "prices.yaml"
    bad.write_text(
        "prices:\n- {id: x, usd_per_gpu_hour: 1, offers: [], board_power_w: 1, power_source: s,"
        " spot: {usd_per_gpu_hour: 0.5, offers: [], preemptions_per_hour: 2,"
        " preemption_source: s}}\n"
    )
    with pytest.raises(CatalogError, match="preemptions_per_hour must be from 0 to 1"):
        load_prices(bad)

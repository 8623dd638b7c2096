"""Parallelism plans: the splits are complete, DP strands KV capacity, results are ranked."""

from roofline.memory import ENGINES, weight_bytes_total
from roofline.ops import Deployment
from roofline.planner import plans
from roofline.precision import WEIGHT_FORMATS

FP8 = Deployment(weights=WEIGHT_FORMATS["fp8"])


def test_every_split_is_listed_once(cat):
    m, hw = cat.model("llama-3.1-70b"), cat.accelerator("h100")
    ps = plans(m, hw, FP8, ENGINES["vllm"], 8, 1000, 1000)
    assert sorted((p.tp, p.pp, p.dp) for p in ps) == sorted(
        (tp, pp, 8 // (tp * pp))
        for tp in (1, 2, 4, 8)
        for pp in (1, 2, 4, 8)
        if tp * pp <= 8 and 8 % (tp * pp) == 0
    )
    for p in ps:  # weights are split over TP × PP and replicated over DP
        assert p.weights_bytes_per_gpu == weight_bytes_total(m, FP8) / (p.tp * p.pp)


def test_data_parallelism_strands_kv_capacity(cat):
    # 405B on 16 H100: TP8 × DP2 holds two full copies of the weights (51 GB per GPU); TP8 × PP2
    # holds one (26 GB per GPU), leaving more HBM for KV: more sequences in flight
    m, hw = cat.model("llama-3.1-405b"), cat.accelerator("h100")
    by = {(p.tp, p.pp, p.dp): p for p in plans(m, hw, FP8, ENGINES["vllm"], 16, 1000, 16000)}
    assert by[(8, 2, 1)].concurrency > by[(8, 1, 2)].concurrency
    assert not by[(1, 1, 16)].fits  # 405 GB of fp8 weights do not fit one 80 GB GPU


def test_cli_plan_ranked_and_slo(run):
    doc = run(
        "plan",
        "llama-3.1-70b",
        "h100",
        "--gpus",
        "8",
        "--weights",
        "fp8",
        "--max-tpot",
        "40ms",
        "--format",
        "json",
    ).json()
    ok = [p for p in doc["plans"] if p["meets_slo"]]
    assert ok and all(p["tpot_s"] <= 0.04 for p in ok)
    tput = [p["output_tokens_per_s"] for p in ok]
    assert tput == sorted(tput, reverse=True)
    assert doc["best"] == ok[0]

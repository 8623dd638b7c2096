"""Launch lines over several nodes and for disaggregated pools (issue 24): every flag of every
command is in hardware/engine_flags.yaml with its source, and the node ranks, data-parallel
ranks and pool roles follow the engines' multi-node and disaggregation docs (by hand)."""

import io

import pytest
from rich.console import Console

from roofline.catalog.engine_flags import engine_flags
from roofline.engines.launch import LAUNCH_ENGINES, LaunchSetup, launch, launch_json, launch_pools
from roofline.render.sizing import size_table

R1 = "deepseek-ai/DeepSeek-R1"
# decode as DeepSeek serves R1 (attention-DP, experts over every GPU), cut to 2 nodes of 8
ADP16 = LaunchSetup(R1, 16, 1, 16, 16, 0, 128, 8192, 3000, 0.9, "fp8", "fp8", 2)
TP16 = LaunchSetup(R1, 16, 1, 1, 1, 0, None, None, 3000, 0.9, "fp8", "fp8", 2)
PRE = LaunchSetup(R1, 8, 1, 8, 1, 0, None, 8192, 3000, 0.9, "fp8", "fp8", 1)


def flags(argv) -> set[str]:
    return {a for a in argv if a.startswith("--")}


def commands(x) -> list[tuple[str, ...]]:
    return [x.argv] + [a for _, a in x.steps]


@pytest.mark.parametrize("name", LAUNCH_ENGINES)
def test_every_flag_of_every_command_is_listed(name):
    t = engine_flags()[name]
    listed = {f["flag"] for f in t["flags"]}
    keys = {f["key"] for f in t.get("options", [])}
    for spec in (ADP16, TP16):
        for cmd in commands(launch(engine_flags(), name, spec)):
            assert flags(cmd) <= listed, flags(cmd) - listed
    x = launch_pools(engine_flags(), name, PRE, ADP16, 3, 1)
    for pool in (x.prefill, x.decode):
        for cmd in commands(pool):
            assert flags(cmd) <= listed, flags(cmd) - listed

        def dotted(d, prefix=""):
            for k, v in d.items():
                yield from dotted(v, f"{prefix}{k}.") if isinstance(v, dict) else [prefix + k]

        assert set(dotted(pool.options)) <= keys
    assert flags(x.router) <= listed


def test_vllm_attention_dp_over_two_nodes_by_hand():
    x = launch(engine_flags(), "vllm", ADP16)
    # 16 DP ranks of attention-TP 1, 8 a node; the second node headless from rank 8 (vLLM's
    # data-parallel deployment docs)
    (w0, n0), (w1, n1) = x.steps
    assert (w0, w1) == ("node 0", "node 1") and x.argv == n0
    s0, s1 = " ".join(n0), " ".join(n1)
    assert "--data-parallel-size 16 " in s0 and "--data-parallel-size-local 8 " in s0
    assert "--data-parallel-address HEAD_IP --data-parallel-rpc-port 13345" in s0
    assert "--headless" not in s0 and s1.endswith("--data-parallel-start-rank 8 --headless")


def test_vllm_tp_across_nodes_runs_on_ray():
    x = launch(engine_flags(), "vllm", TP16)
    where = [w for w, _ in x.steps]
    assert where == ["node 0", "node 1", "node 0"]  # Ray head, Ray worker, then the server
    assert x.steps[0][1] == ("ray", "start", "--block", "--head", "--port", "6379")
    assert x.steps[1][1] == ("ray", "start", "--block", "--address", "HEAD_IP:6379")
    assert x.argv[-2:] == ("--distributed-executor-backend", "ray")
    assert "--tensor-parallel-size 16 " in " ".join(x.argv)


def test_sglang_and_trtllm_over_two_nodes_by_hand():
    x = launch(engine_flags(), "sglang", ADP16)
    for k, (_, argv) in enumerate(x.steps):
        assert " ".join(argv).endswith(f"--nnodes 2 --node-rank {k} --dist-init-addr HEAD_IP:5000")
    # one Slurm step: 16 tasks (one a GPU), 8 a node, through trtllm-llmapi-launch
    t = launch(engine_flags(), "trtllm", ADP16)
    ((_, srun),) = t.steps
    assert srun[:10] == ("srun", "-N", "2", "--ntasks", "16", "--ntasks-per-node", "8",
                         "--mpi", "pmix", "trtllm-llmapi-launch")  # fmt: skip
    assert srun[10:] == t.argv and t.options["enable_attention_dp"] is True


def test_pools_take_their_roles():
    v = launch_pools(engine_flags(), "vllm", PRE, ADP16, 3, 1)
    assert '"kv_role":"kv_producer"' in " ".join(v.prefill.argv)
    assert '"kv_role":"kv_consumer"' in " ".join(v.decode.argv)
    assert "--tensor-parallel-size 8 " in " ".join(v.prefill.argv)  # each pool its own layout
    assert "--tensor-parallel-size 1 " in " ".join(v.decode.argv)
    assert v.router.count("PREFILL_2") == 1 and "DECODE_0" in v.router
    s = launch_pools(engine_flags(), "sglang", PRE, ADP16, 3, 1)
    assert "--disaggregation-mode prefill" in " ".join(s.prefill.argv)
    assert "--disaggregation-mode decode" in " ".join(s.decode.argv)
    assert s.router.count("--prefill") == 3 and s.router.count("--decode") == 1
    t = launch_pools(engine_flags(), "trtllm", PRE, ADP16, 3, 1)
    assert t.prefill.options["disable_overlap_scheduler"] is True
    assert "disable_overlap_scheduler" not in t.decode.options
    assert t.decode.options["cache_transceiver_config"] == {"backend": "NIXL"}
    assert t.router_config["context_servers"]["num_instances"] == 3
    assert t.router_config["generation_servers"]["num_instances"] == 1
    doc = launch_json(engine_flags(), "vllm", ADP16, (PRE, 3, 1))
    assert doc is not None and doc["decode"]["nodes"][1]["where"] == "node 1"
    assert doc["prefill"]["nodes"] is None and doc["router"][0] == "python"


def test_size_disagg_searches_each_pools_layout(run):
    args = ("size", "llama-3.1-8b", "--hardware", "h100", "--rate", "20", "--prompt", "2k",
            "--output", "200", "--slo-ttft", "1s", "--slo-tpot", "40ms", "--disagg",
            "--requests", "200", "--slo-pct", "50")  # fmt: skip
    # p50: the SLO search's runs hold max(200, 50 / (1 - 0.5)) = 200 requests, not the 5,000
    # p99 needs (slosearch.slo_requests); the pools' layouts and GPU count do not depend on it
    doc = run(*args, "--format", "json").json()
    rows = [d for d in doc["deployments"] if d["meets_slo"]]
    pooled = [d for d in rows if d["prefill_replicas"]]
    mixed = [d for d in pooled if d["prefill_pool"]["layout"] != d["layout"]]
    assert mixed  # a prefill pool in one layout, the decode pool in another
    for d in pooled:
        pre = d["prefill_pool"]
        # GPUs: units x (P prefill replicas of TP x PP + D decode replicas of TP x PP)
        unit = (
            d["prefill_replicas"] * pre["tp"] * pre["pp"] + d["decode_replicas"] * d["tp"] * d["pp"]
        )
        assert d["gpus"] == d["replicas"] * unit
        assert (
            "prefill replicas bound by" in d["constraint"]
            and "decode replicas by" in d["constraint"]
        )
    out = io.StringIO()
    size_table.__wrapped__(doc, Console(file=out, width=80))  # the table without stdout
    lines = out.getvalue().splitlines()
    assert all(len(x) <= 80 for x in lines)
    assert any(x.lstrip().startswith("+ ") and "D TP" in x for x in lines)  # the decode pool's line


def test_disagg_prints_each_pools_launch_line(run):
    args = ("disagg", "deepseek-r1", "--prefill", "h200", "--decode", "h200", "--prefill-tp", "8",
            "--prefill-ep", "8", "--decode-tp", "16", "--decode-ep", "16",
            "--decode-attention-dp", "16", "--weights", "fp8", "--batch", "1024", "--prompt", "1k",
            "--output", "2k")  # fmt: skip
    launch = run(*args, "--format", "json").json()["launch"]
    # the decode pool spans 2 nodes of 8 H200: 16 DP ranks of 64 sequences (1,024 / 16)
    assert [n["where"] for n in launch["decode"]["nodes"]] == ["node 0", "node 1"]
    assert "--max-num-seqs 64 " in " ".join(launch["decode"]["argv"])
    assert launch["prefill"]["nodes"] is None and "kv_producer" in " ".join(
        launch["prefill"]["argv"]
    )
    lines = run(*args, env={"COLUMNS": "80"}).stdout.splitlines()
    assert all(len(x) <= 80 for x in lines) and "  router:" in lines


def test_vllm_says_when_its_connector_refuses_the_pools_tp():
    # NixlConnector: tp_ratio = decode TP / prefill TP must be a whole number of at least 1
    assert (
        "multiple of the prefill" in launch_pools(engine_flags(), "vllm", PRE, ADP16, 1, 1).note
    )  # 8 -> 1
    assert "multiple" not in launch_pools(engine_flags(), "vllm", ADP16, PRE, 1, 1).note  # 1 -> 8

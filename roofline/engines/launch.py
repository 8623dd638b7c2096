"""Launch lines: the command that starts a sized replica on a serving engine (vLLM, SGLang,
TensorRT-LLM), built only from flags listed in hardware/engine_flags.yaml, each read from the
engine's own argument definitions at a stated commit (`source:` per flag, the engine version
per engine).

How a layout maps to each engine (their argument docs, quoted in the data file):
- vLLM: --tensor-parallel-size is the attention TP group (TP / attention-DP); attention-DP is
  --data-parallel-size with --enable-expert-parallel (the experts then span TP x DP GPUs, EP =
  TP); EP = TP without attention-DP is --enable-expert-parallel alone. Scheduler limits are per
  engine core, so per attention-DP rank. Redundant expert slots: --enable-eplb with
  --eplb-config {"num_redundant_experts": R}.
- SGLang: --tp-size is every GPU of a stage, --dp-size with --enable-dp-attention the
  attention-DP groups, --ep-size the EP degree, --ep-num-redundant-experts R.
- TensorRT-LLM (trtllm-serve): --tp_size, --pp_size, --ep_size; attention-DP and the KV dtype are
  keys of the --extra_llm_api_options YAML file; the weight format comes from the checkpoint.
An EP degree the engine cannot express (vLLM: EP other than 1 or TP x DP) gives no line.
The checkpoint is the one served (`served`: the catalog's repo in the weight format, a
pre-quantized one without a quantization flag); the drafter's flags are in draft_launch.py;
N replicas run as the engine runs them (`_replicas`: vLLM's data-parallel ranks on one node,
SGLang's router, docs/serving/data_parallel_deployment.md and advanced_features/router.md).

A replica spanning nodes (`nodes` > 1) gets one command per node, in the order to run them, as
each engine's multi-node docs give them (sources in the data file):
- vLLM with attention-DP: every node runs `vllm serve` with --data-parallel-size-local (its DP
  ranks), --data-parallel-address and --data-parallel-rpc-port of the head node; the others add
  --headless and --data-parallel-start-rank (docs/serving/data_parallel_deployment.md,
  expert_parallel_deployment.md). Without attention-DP (TP or PP across nodes), a Ray cluster
  (`ray start --block --head --port 6379` on the head, `ray start --block --address HEAD:6379`
  on the others, examples/online_serving/run_cluster.sh) and one `vllm serve` on the head with
  --distributed-executor-backend ray (docs/serving/distributed_serving.md).
- SGLang: every node runs the same server with --nnodes, --node-rank and --dist-init-addr
  (docs/advanced_features/pd_disaggregation.md, "DeepSeek Multi-Node").
- TensorRT-LLM: one Slurm step over the nodes, `srun -N <nodes> --ntasks <GPUs>
  --ntasks-per-node <GPUs a node> --mpi pmix trtllm-llmapi-launch trtllm-serve ...`
  (docs/source/commands/trtllm-serve/trtllm-serve.rst, "Multi-node Serving with Slurm").
Disaggregated pools (`launch_pools`): one server per pool with its own layout, and the router:
vLLM --kv-transfer-config with NixlConnector (kv_producer for prefill, kv_consumer for decode;
docs/features/nixl_connector_usage.md), routed by a proxy; SGLang --disaggregation-mode
prefill|decode with --disaggregation-transfer-backend nixl, routed by sglang_router
--pd-disaggregation; TensorRT-LLM context and generation servers whose options file holds
cache_transceiver_config (and disable_overlap_scheduler on the context servers), routed by
`trtllm-serve disaggregated -c` over a config listing both (examples/disaggregated/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.domain.errors import CatalogError, InputError
from roofline.engines.draft_launch import (
    DRAFTER_WEIGHTS,
    NO_WEIGHTS,
    DraftLaunch,
    draft_args,
    draft_options,
)

LAUNCH_ENGINES = ("vllm", "sglang", "trtllm")  # the engines with launch flags
# hardware/engine_flags.yaml by engine id, as roofline.catalog.engine_flags reads it
Flags = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class LaunchSetup:
    """What a launch line states, in roofline's terms (per replica; scheduler limits per
    attention-DP rank, as the engines take them)."""

    model_path: str
    tp: int
    pp: int = 1
    ep: int = 1
    attention_dp: int = 1
    redundant_experts: int = 0
    max_seqs: int | None = None  # per attention-DP rank
    max_batched_tokens: int | None = None  # per attention-DP rank
    max_model_len: int | None = None
    memory_fraction: float | None = None
    weights: str = "bf16"
    kv_dtype: str = "bf16"
    nodes: int = 1
    prequantized: bool = False  # the checkpoint ships in `weights`: no quantization flag
    draft: DraftLaunch | None = None  # the drafter the replica runs (speculative decoding)
    replicas: int = 1
    dp_replicas: bool = False  # the replicas fit one node as independent vLLM DP ranks

    @property
    def attention_tp(self) -> int:
        """The TP group attention runs in: tp / attention_dp (as Layout.attention_tp)."""
        return self.tp // self.attention_dp


HEAD = "HEAD_IP"  # the address a multi-node command names for its first node
DP_RPC_PORT = 13345  # vLLM's DP RPC port in its docs' examples
DIST_INIT_PORT = 5000  # SGLang's --dist-init-addr port in its docs' examples
RAY_PORT = 6379  # Ray's head port in vLLM's run_cluster.sh


@dataclass(frozen=True)
class Launch:
    engine: str
    version: str
    argv: tuple[str, ...]  # the server's command (on the first node when it spans several)
    options: dict[str, Any] = field(default_factory=dict)  # an options file's keys (TRT-LLM)
    note: str = ""
    # spanning nodes: every command in the order to run them, each with where it runs
    steps: tuple[tuple[str, tuple[str, ...]], ...] = ()
    role: str = ""  # disaggregated: "prefill" or "decode"
    router: tuple[str, ...] = ()  # the command in front of N replicas' servers (SGLang)


def _flag(table: dict[str, Any], means: str) -> str:
    """The engine's flag for one thing roofline states (the first listed)."""
    for f in table["flags"]:
        if f["means"] == means:
            return f["flag"]
    raise CatalogError(f"engine_flags.yaml: {table['id']} has no flag for {means}")


def _value(table: dict[str, Any], kind: str, fmt: str) -> str | None:
    return (table.get("values") or {}).get(kind, {}).get(fmt)


def launch(
    flags: Flags, engine: str, setup: LaunchSetup, role: str = "", head: str = HEAD
) -> Launch:
    """The launch line for `spec` on `engine` (module docstring; `flags` the engine flags table);
    `role` "prefill" or "decode" for a pool of disaggregated serving; `head` the first node's
    address when it spans nodes."""
    if engine not in LAUNCH_ENGINES:
        raise InputError(f"no launch line for engine '{engine}': vllm, sglang or trtllm")
    t = flags[engine]
    argv = [setup.model_path if a == "MODEL" else a for a in t["command"]]
    notes = []

    def add(means: str, value: object | None = None, when: bool = True) -> None:
        if not when:
            return
        argv.append(_flag(t, means))
        if value is not None:
            argv.append(str(value))

    atp = setup.attention_tp
    adp = setup.attention_dp > 1
    if engine == "vllm":
        if setup.ep not in (1, setup.tp):
            return Launch(engine, t["version"], (), {}, "vLLM runs EP over TP x DP only")
        add("attention_tp", atp)
        add("pp", setup.pp, setup.pp > 1)
        add("attention_dp", setup.attention_dp, adp)
        add("ep", None, setup.ep > 1)
        if setup.redundant_experts:
            argv += ["--enable-eplb", "--eplb-config"]
            argv.append(f'{{"num_redundant_experts": {setup.redundant_experts}}}')
    elif engine == "sglang":
        add("tp", setup.tp)
        add("pp", setup.pp, setup.pp > 1)
        add("ep", setup.ep, setup.ep > 1)
        if adp:
            argv += [_flag(t, "attention_dp"), str(setup.attention_dp), "--enable-dp-attention"]
        add("redundant_experts", setup.redundant_experts, setup.redundant_experts > 0)
    else:
        add("tp", setup.tp)
        add("pp", setup.pp, setup.pp > 1)
        add("ep", setup.ep, setup.ep > 1)
        if setup.redundant_experts:
            notes.append(f"{setup.redundant_experts} redundant expert slots: not set by a flag")
    seqs = setup.max_seqs
    if engine == "sglang" and seqs is not None:
        seqs *= setup.attention_dp  # SGLang's cap is the server's, shared by its DP ranks
    add("max_seqs", seqs, seqs is not None)
    add("max_batched_tokens", setup.max_batched_tokens, setup.max_batched_tokens is not None)
    add("max_model_len", setup.max_model_len, setup.max_model_len is not None)
    if setup.memory_fraction is not None:
        add("memory_fraction", f"{setup.memory_fraction:g}")
    router = _replicas(t, engine, setup, add, notes) if not role else ()
    options: dict[str, Any] = {}
    if engine == "trtllm":
        if adp:
            options["enable_attention_dp"] = True
        kv = _value(t, "kv_dtype", setup.kv_dtype)
        if kv:
            options["kv_cache_config"] = {"dtype": kv}
        if setup.draft is not None:
            options["speculative_config"], said = draft_options(t, setup.draft)
            notes += said
        if role:  # the KV cache transceiver; the context servers run without the overlap
            options["cache_transceiver_config"] = {"backend": _value(t, "kv_transfer", "nixl")}
            if role == "prefill":
                options["disable_overlap_scheduler"] = True
        if options:
            add("options_file", f"{role or 'extra'}_llm_api_options.yaml")
        add("port", t.get("disagg_port"), bool(role))
        notes.append(t.get("notes", ""))
    else:
        q = None if setup.prequantized else _value(t, "quantization", setup.weights)
        add("quantization", q, q is not None)
        kv = _value(t, "kv_dtype", setup.kv_dtype)
        add("kv_dtype", kv, kv is not None)
        if setup.draft is not None:
            more, said = draft_args(t, engine, setup.draft)
            argv += more
            notes += said
        add("port", t.get("disagg_port"), bool(role))
        if role and engine == "vllm":
            producer = "kv_producer" if role == "prefill" else "kv_consumer"
            add("kv_transfer", f'{{"kv_connector":"NixlConnector","kv_role":"{producer}"}}')
        elif role:
            add("disagg_mode", role)
            add("kv_transfer", _value(t, "kv_transfer", "nixl"))
    steps: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if setup.nodes > 1:
        steps = _nodes(engine, t, setup, tuple(argv), head)
        if not steps:
            notes.append(f"spans {setup.nodes} nodes: no multi-node line for this layout")
        else:  # the server's command as the first node runs it
            first = next((a for _, a in steps if a[: len(argv)] == tuple(argv)), tuple(argv))
            argv = list(first)
            if any(head in " ".join(a) for _, a in steps):
                notes.append(f"{head}: the first node's address")
    if setup.prequantized:
        notes.append(f"{setup.model_path} ships in {setup.weights}: loaded as published")
    note = "; ".join(n for n in notes if n)
    return Launch(engine, t["version"], tuple(argv), options, note, steps, role, router)


def _replicas(t: dict[str, Any], engine: str, setup: LaunchSetup, add, notes: list[str]):
    """N replicas as the engine runs them: vLLM's data-parallel ranks behind one endpoint when
    they fit one node and stay independent (a dense model, no attention-DP: `dp_replicas`);
    SGLang's router over one server a replica; else one server a replica behind a balancer of
    yours. Returns the router's command (SGLang) or ()."""
    n = setup.replicas
    if n <= 1:
        return ()
    if engine == "vllm" and setup.dp_replicas:
        add("replicas", n)
        notes.append(f"{n} replicas: vLLM's data-parallel ranks on one node, one endpoint")
        return ()
    if engine == "sglang":
        port = t["server_port"]
        urls = [f"http://REPLICA_{i}:{port}" for i in range(n)]
        notes.append(f"{n} replicas: this server on each (REPLICA_i), the router in front")
        return (*t["replica_router"], _flag(t, "replica_router"), *urls)
    notes.append(f"{n} replicas: this server on each, behind your load balancer")
    return ()


def _nodes(
    engine: str, t: dict[str, Any], setup: LaunchSetup, argv: tuple[str, ...], head: str
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The commands of a replica over spec.nodes nodes, in order (module docstring); () when
    the layout does not split into whole nodes the engine's way."""
    n, gpus = setup.nodes, setup.tp * setup.pp
    if gpus % n:
        return ()
    per_node = gpus // n
    out: list[tuple[str, tuple[str, ...]]] = []
    if engine == "vllm" and setup.attention_dp > 1:
        if setup.pp > 1 or setup.attention_dp % n:
            return ()
        local = setup.attention_dp // n
        for k in range(n):
            extra = [_flag(t, "dp_local"), str(local), _flag(t, "dp_address"), head,
                     _flag(t, "dp_rpc_port"), str(DP_RPC_PORT)]  # fmt: skip
            if k:
                extra += [_flag(t, "dp_start_rank"), str(k * local), _flag(t, "headless")]
            out.append((f"node {k}", argv + tuple(extra)))
    elif engine == "vllm":
        ray = ("ray", "start", _flag(t, "ray_block"))
        out.append(("node 0", (*ray, _flag(t, "ray_head"), _flag(t, "ray_port"), str(RAY_PORT))))
        for k in range(1, n):
            out.append((f"node {k}", (*ray, _flag(t, "ray_address"), f"{head}:{RAY_PORT}")))
        out.append(("node 0", (*argv, _flag(t, "executor"), "ray")))
    elif engine == "sglang":
        for k in range(n):
            ranks = (_flag(t, "nnodes"), str(n), _flag(t, "node_rank"), str(k),
                     _flag(t, "dist_init_addr"), f"{head}:{DIST_INIT_PORT}")  # fmt: skip
            out.append((f"node {k}", argv + ranks))
    else:
        srun = ("srun", _flag(t, "slurm_nodes"), str(n), _flag(t, "slurm_tasks"), str(gpus),
                _flag(t, "slurm_tasks_per_node"), str(per_node), _flag(t, "slurm_mpi"), "pmix",
                "trtllm-llmapi-launch")  # fmt: skip
        out.append((f"Slurm, {n} nodes", srun + argv))
    return tuple(out)


@dataclass(frozen=True)
class PoolsLaunch:
    """Disaggregated serving's commands: each pool's server and the router in front."""

    engine: str
    version: str
    prefill: Launch
    decode: Launch
    router: tuple[str, ...]
    router_config: dict[str, Any] = field(default_factory=dict)  # TRT-LLM's disagg_config
    note: str = ""


def launch_pools(
    flags: Flags,
    engine: str,
    pre: LaunchSetup,
    dec: LaunchSetup,
    prefill_replicas: int,
    decode_replicas: int,
) -> PoolsLaunch:
    """One server line per pool, each in its own layout (module docstring), and the router
    over `prefill_replicas` + `decode_replicas` servers."""
    p = launch(flags, engine, pre, "prefill", "PREFILL_HEAD_IP")
    d = launch(flags, engine, dec, "decode", "DECODE_HEAD_IP")
    t = flags[engine]
    port = t["disagg_port"]
    pre_hosts = [f"PREFILL_{i}" for i in range(prefill_replicas)]
    dec_hosts = [f"DECODE_{i}" for i in range(decode_replicas)]
    cfg: dict[str, Any] = {}
    router = [*t["router"]]
    if engine == "vllm":
        router += [_flag(t, "router_prefill_hosts"), *pre_hosts]
        router += [_flag(t, "router_prefill_ports"), *[str(port)] * prefill_replicas]
        router += [_flag(t, "router_decode_hosts"), *dec_hosts]
        router += [_flag(t, "router_decode_ports"), *[str(port)] * decode_replicas]
    elif engine == "sglang":
        for h in pre_hosts:
            router += [_flag(t, "router_prefill"), f"http://{h}:{port}"]
        for h in dec_hosts:
            router += [_flag(t, "router_decode"), f"http://{h}:{port}"]
    else:
        cfg = {
            "port": 8000,
            "backend": "pytorch",
            "context_servers": {"num_instances": prefill_replicas,
                                "urls": [f"{h}:{port}" for h in pre_hosts]},
            "generation_servers": {"num_instances": decode_replicas,
                                   "urls": [f"{h}:{port}" for h in dec_hosts]},
        }  # fmt: skip
    note = f"PREFILL_i, DECODE_i: the first node of each pool's servers (port {port})"
    if t.get("router_note"):
        note += "; " + t["router_note"]
    refusal = pools_refusal(flags, engine, pre.attention_tp, dec.attention_tp)
    if refusal:
        note += "; " + refusal
    return PoolsLaunch(engine, t["version"], p, d, tuple(router), cfg, note)


def pools_refusal(
    flags: Flags, engine: str, prefill_attention_tp: int, decode_attention_tp: int
) -> str | None:
    """Why `engine` cannot pair a prefill pool of this attention TP with a decode pool of that
    one, or None when it can: vLLM's NixlConnector divides the decode TP by the prefill TP and
    asserts it whole (hardware/engine_flags.yaml, `pool_tp_multiple`, with its source); SGLang
    and TensorRT-LLM (and engines without launch flags) pair any two."""
    t = flags.get(engine) if engine in LAUNCH_ENGINES else None
    if t and t.get("pool_tp_multiple") and decode_attention_tp % prefill_attention_tp:
        return str(t["pool_tp_note"])
    return None


def launch_setup(
    m: Any,
    row: dict[str, Any],
    max_model_len: int,
    memory_fraction: float,
    weights: str,
    kv_dtype: str,
    draft: DraftLaunch | None = None,
    node_gpus: int = 0,
) -> LaunchSetup:
    """The setup of one sized deployment of model `m` (a ModelArch; a row of size's JSON: tp,
    pp, ep, attention_dp, redundant_experts, max_seqs, max_batched_tokens per rank, nodes,
    replicas): the checkpoint served (`served`), the drafter, and whether the replicas run as
    vLLM's data-parallel ranks (a dense model, no attention-DP, all on one node of `node_gpus`)."""
    path, prequantized = served(m, weights)
    replicas = int(row.get("replicas") or 1)
    per_replica = row["tp"] * row["pp"]
    dense = not getattr(m, "n_routed_experts", 0)
    one_node = 0 < replicas * per_replica <= node_gpus and row["nodes"] == 1
    return LaunchSetup(
        path,
        row["tp"],
        row["pp"],
        row["ep"],
        row["attention_dp"],
        row["redundant_experts"],
        row["max_seqs"] or None,
        row["max_batched_tokens"] or None,
        max_model_len,
        memory_fraction,
        weights,
        kv_dtype,
        row["nodes"],
        prequantized,
        draft,
        replicas,
        dense and row["attention_dp"] == 1 and one_node,
    )


def served(m: Any, weights: str) -> tuple[str, bool]:
    """(the repo a launch line serves, whether it ships in `weights`): the catalog checkpoint
    in `weights` (a pre-quantized one when weights is not bf16/fp16: the engine reads its
    format from the checkpoint, and vLLM refuses a --quantization that differs from it), else
    the bf16 checkpoint quantized on the fly, else the repo opening the entry's `source`."""
    cps = getattr(m, "checkpoints", ())
    own = next((c for c in cps if c.weights == weights), None)
    if own is not None:
        return own.repo, weights not in ("bf16", "fp16")
    bf16 = next((c for c in cps if c.weights in ("bf16", "fp16")), None)
    if bf16 is not None:
        return bf16.repo, False
    native = getattr(m, "native_weights", None) == weights and weights not in ("bf16", "fp16")
    return model_path(m.id, m.source), native


def drafter_launch(m: Any, drafter: str, draft: Any, draft_weights: str, gamma: int,
                   tree_tokens: int | None, topk: int) -> DraftLaunch:  # fmt: skip
    """The drafter of a launch line: `drafter` (a kind) with `draft` (a separate draft
    ModelArch in `draft_weights`, or None), γ and the tree the replica was sized with
    (None or 0: a chain)."""
    if drafter in NO_WEIGHTS:
        weights = ""
    elif draft is not None:
        weights = served(draft, draft_weights)[0]
    else:
        heads = getattr(m, "drafter_heads", ())
        weights = next((h.repo for h in heads if h.drafter == drafter), DRAFTER_WEIGHTS)
    return DraftLaunch(drafter, weights, gamma, tree_tokens or 0, topk)


def model_len(max_positions: int | None, longest: int, fixed: bool) -> int:
    """--max-model-len: with fixed prompt and output lengths (a stand-in for real prompts,
    which vary) the model's own maximum positions, as the engine would default; with drawn
    lengths (a distribution, an arrival log) the longest request the workload holds; never
    below the longest request. The engine refuses to start when one sequence of this length
    does not fit its KV cache: lower it to what the line's memory holds."""
    if fixed and max_positions:
        return max(max_positions, longest)
    return longest


def launch_json(
    flags: Flags, engine: str, setup: LaunchSetup, pools: tuple[LaunchSetup, int, int] | None = None
) -> dict | None:
    """size's `launch`: {engine, version, argv, options_file, note, nodes} (nodes: each
    command with where it runs when the replica spans nodes); for a disaggregated deployment
    (`pools` = the prefill pool's spec, prefill and decode replicas; `spec` the decode pool's)
    {engine, version, prefill, decode (each as above), router, router_config, note}; None for
    an engine without launch flags."""
    if engine not in LAUNCH_ENGINES:
        return None
    if pools is not None:
        x = launch_pools(flags, engine, pools[0], setup, pools[1], pools[2])
        return {
            "engine": x.engine,
            "version": x.version,
            "prefill": _one_json(x.prefill),
            "decode": _one_json(x.decode),
            "router": list(x.router) or None,
            "router_config": x.router_config or None,
            "note": x.note,
        }
    return _one_json(launch(flags, engine, setup))


def _one_json(x: Launch) -> dict[str, Any]:
    return {
        "engine": x.engine,
        "version": x.version,
        "argv": list(x.argv) or None,
        "options_file": x.options or None,
        "note": x.note,
        "nodes": [{"where": w, "argv": list(a)} for w, a in x.steps] or None,
        "router": list(x.router) or None,
    }


def model_path(model_id: str, source: str) -> str:
    """The checkpoint a launch line names: the Hugging Face repository that opens the catalog
    entry's `source` (e.g. "deepseek-ai/DeepSeek-R1 config.json"), else the catalog id."""
    first = source.split()[0] if source.split() else ""
    if first.count("/") == 1 and not first.startswith(("http", "/")):
        return first
    return model_id

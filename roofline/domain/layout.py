"""One validated parallel layout, used by every command: TP, PP, EP, DP, attention-DP,
microbatches, nodes, and the link each collective runs over.

Vocabulary (vLLM / SGLang / Megatron-LM):
- a replica is TP x PP GPUs holding one copy of the weights; DP replicas serve independent
  requests, so GPUs = TP x PP x DP;
- a pipeline stage is TP GPUs holding a contiguous range of layers (vLLM's get_pp_indices: L // PP
  each, the remainder one apiece to the stages before the last, which holds the head);
- attention-DP (SGLang --enable-dp-attention, vLLM DP+EP; the DeepSeek-V3 / Kimi-K2 serving layout)
  splits a stage's TP GPUs into `attention_dp` groups of TP / attention_dp: each group runs the
  attention (and holds the MLA latent) of its own sequences only; the experts stay spread over
  the stage (EP = TP), reached by an all-to-all dispatch and combine;
- EP spreads the routed experts over EP ranks of a stage (each expert then split over TP / EP).

Validation raises InputError with one line: heads must split over the attention TP group (query
heads divisible by it; KV heads divisible by it, or it a multiple of the KV heads, which are then
replicated), EP divides TP and is at most the routed experts, PP <= layers, and every all-reduce
group sits inside one node (scale-up domain, or a PCIe server) unless cross-node TP is asked for.
An EP degree that does not divide the routed experts runs with redundant expert slots (DeepSeek's
EPLB: expert_slots).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.model import LayerGroup, ModelArch
from roofline.timing.roofline import FloatArray

MAX_DEGREE = 4096
# attention-DP schedulers (roofline.serving.attention_dp): serialised, the engines' default;
# balanced, TensorRT-LLM's attention_dp_config.enable_balance or SGLang's --enable-prefill-delayer
ADP_BALANCES = ("serialised", "balanced")


@dataclass(frozen=True)
class Links:
    """The link each collective of a layout runs over."""

    tp: Tier | None  # all-reduces of the attention / dense-FFN TP group
    ep: Tier | None  # all-to-all dispatch and combine of the EP group
    pp: Tier | None  # stage-to-stage activation sends
    gpus_per_node: int


@dataclass(frozen=True)
class Layout:
    """TP x PP GPUs per replica, DP replicas; EP and attention-DP inside a stage."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    attention_dp: int = 1
    microbatches: int | None = None  # None: the engine default (PP, vLLM's virtual engines)
    nodes: int | None = None  # None: as few as hold the GPUs
    cross_node_tp: bool = False
    scale_out: Tier | None = None  # the network between nodes (hardware/tiers, kind network)
    # how the engine schedules the attention-DP ranks' prompts (ADP_BALANCES): "serialised",
    # each rank taking its prompts at its own steps while the others wait, or "balanced", the
    # ranks' prompts held back until every rank has one and run in the same step
    attention_dp_balance: str = "serialised"

    def __post_init__(self) -> None:
        """The rules that need no model or node: whole degrees from 1 to MAX_DEGREE, EP and
        attention-DP dividing TP (the model's and the node's rules: check_shape, validate)."""
        for name in ("tp", "pp", "ep", "dp", "attention_dp"):
            check_degree(name.replace("_", "-"), getattr(self, name))
        if self.tp % self.ep:
            raise InputError(
                f"--ep {self.ep} must divide --tp {self.tp}: experts are spread over the "
                "tensor-parallel group"
            )
        if self.tp % self.attention_dp:
            raise InputError(f"--attention-dp {self.attention_dp} must divide --tp {self.tp}")
        if self.attention_dp_balance not in ADP_BALANCES:
            raise InputError(
                f"--attention-dp-balance must be one of {', '.join(ADP_BALANCES)}, "
                f"got {self.attention_dp_balance!r}"
            )

    def replica(self) -> Layout:
        """The parallel part of one replica (a Deployment's layout): these degrees, one replica,
        the placement (nodes, network) left to the links."""
        return Layout(
            self.tp,
            self.pp,
            self.ep,
            1,
            self.attention_dp,
            self.microbatches,
            attention_dp_balance=self.attention_dp_balance,
        )

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def attention_tp(self) -> int:
        """GPUs an attention layer (and a dense FFN) is split over."""
        return self.tp // self.attention_dp

    @property
    def pipeline_microbatches(self) -> int:
        return default_microbatches(self.pp) if self.microbatches is None else self.microbatches

    def describe(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"]
        if self.pp > 1:
            parts[-1] += f"×m{self.pipeline_microbatches}"
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.attention_dp > 1:
            parts.append(f"ADP{self.attention_dp}")
            if self.attention_dp_balance == "balanced":
                parts[-1] += " balanced"
        parts.append(f"DP{self.dp}")
        return " ".join(parts)


def expert_slots(n_experts: int, ep: int) -> int:
    """Routed-expert slots over `ep` ranks: the experts themselves when EP divides them, else
    the fewest that do, ceil(E / EP) per rank, the extra ones holding redundant copies of busy
    experts (DeepSeek-V3 report §3.4 and its EPLB: e.g. EP72 with 288 slots for 256 experts)."""
    if ep <= 1 or n_experts <= 0:
        return n_experts
    return -(-n_experts // ep) * ep


def default_microbatches(pp: int) -> int:
    """vLLM runs PP virtual engines (one scheduler per stage) so PP micro-batches are in flight."""
    return pp


def node_gpus(hw: Accelerator) -> int:
    """GPUs one node connects without the network: the scale-up domain (8 in an HGX box, 72 in
    an NVL72 rack), or the GPUs of a PCIe server when that is larger; 1 without either."""
    domains = [t.domain_gpus for t in (hw.scale_up, hw.host_link) if t is not None]
    return max([d for d in domains if d] or [1])


def stage_layer_counts(layers: int, pp: int) -> tuple[int, ...]:
    """Layers per stage as vLLM splits them (vllm/distributed/utils.py get_pp_indices): L // PP
    each, the remainder one apiece to the stages just before the last (the last holds the head)."""
    counts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        counts[-i] += 1
    return tuple(counts)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: a contiguous range of layers; the first holds the embedding, the last
    the final norm and the head."""

    index: int
    groups: tuple[LayerGroup, ...]
    first: bool
    last: bool

    @property
    def layers(self) -> int:
        return sum(g.count for g in self.groups)


@lru_cache(maxsize=512)
def stages(model: ModelArch, pp: int) -> tuple[Stage, ...]:
    """The PP stages of a model, layers split as vLLM splits them (layout.stage_layer_counts)."""
    out, start = [], 0
    for i, count in enumerate(stage_layer_counts(model.num_hidden_layers, pp)):
        keys = [(model.layer_window(j), model.layer_is_moe(j)) for j in range(start, start + count)]
        counts = Counter(keys)
        groups = tuple(LayerGroup(counts[k], k[0], k[1]) for k in dict.fromkeys(keys))
        out.append(Stage(i, groups, i == 0, i == pp - 1))
        start += count
    return tuple(out)


def distinct_stages(model: ModelArch, pp: int) -> tuple[Stage, ...]:
    """The stages whose time can be the slowest: one per distinct make-up (layer groups,
    embedding, head), leaving out any stage another one dominates (the same kinds of layers, no
    fewer of each, and the embedding and head wherever it has them)."""
    seen: dict[tuple, Stage] = {}
    for st in stages(model, pp):
        seen.setdefault((st.groups, st.first, st.last), st)
    found = list(seen.values())

    def counts(st: Stage) -> dict[tuple, int]:
        return {(g.window, g.moe): g.count for g in st.groups}

    def dominated(a: Stage, b: Stage) -> bool:
        ca, cb = counts(a), counts(b)
        return (
            a is not b
            and all(cb.get(k, 0) >= v for k, v in ca.items())
            and (b.first or not a.first)
            and (b.last or not a.last)
        )

    return tuple(a for a in found if not any(dominated(a, b) for b in found))


def check_degree(name: str, value: int) -> None:
    """A layout degree (or node count) given as --NAME: a whole number from 1 to MAX_DEGREE."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEGREE:
        raise InputError(f"--{name} must be a whole number from 1 to {MAX_DEGREE}, got {value}")


def check_shape(model: ModelArch, layout: Layout) -> None:
    """The model-only rules, checked wherever a step is built (every command): heads split over
    the attention TP group, KV heads divide it or are divided by it, PP <= layers, EP at most the
    routed experts (redundant slots where it does not divide them); the degrees themselves are
    checked when the Layout is made."""
    if layout.pp > model.num_hidden_layers:
        raise InputError(
            f"--pp {layout.pp} exceeds {model.id}'s {model.num_hidden_layers} layers: every "
            "stage needs at least one layer"
        )
    atp, n, k = layout.attention_tp, model.num_attention_heads, model.n_kv_heads
    what = "TP" if layout.attention_dp == 1 else f"attention TP (TP / attention-DP = {atp})"
    if n % atp:
        raise InputError(
            f"{what} {atp} does not divide {model.id}'s {n} query heads: each GPU would hold "
            f"{n / atp:.2f} heads; use a divisor of {n}"
        )
    if not model.is_mla and k % atp and atp % k:
        raise InputError(
            f"{what} {atp} and {model.id}'s {k} KV heads: TP must divide the KV heads or be a "
            f"multiple of them (each KV head then replicated on TP / {k} GPUs)"
        )
    if layout.ep > 1:
        if not model.is_moe:
            raise InputError(
                f"--ep {layout.ep} needs a mixture-of-experts model; {model.id} is dense"
            )
        if layout.ep > model.n_routed_experts:
            raise InputError(
                f"--ep {layout.ep} exceeds {model.id}'s {model.n_routed_experts} routed experts: "
                "every EP rank needs at least one"
            )


def validate(layout: Layout, model: ModelArch, hw: Accelerator) -> Layout:
    """The layout checked against the model and the hardware; `nodes` resolved. One clear line
    per problem (InputError, exit 2)."""
    if layout.microbatches is not None:
        check_degree("microbatches", layout.microbatches)
        if layout.pp == 1 and layout.microbatches > 1:
            raise InputError(
                "--microbatches splits a batch between pipeline stages: it needs --pp > 1"
            )
    check_shape(model, layout)
    if layout.attention_dp > 1:
        if not model.is_moe:
            raise InputError("--attention-dp needs a mixture-of-experts model (EP on the experts)")
        if layout.ep != layout.tp:
            raise InputError(
                f"--attention-dp {layout.attention_dp} runs the experts expert-parallel over the "
                f"stage: set --ep {layout.tp} (= --tp)"
            )
    per_node = node_gpus(hw)
    nodes = layout.nodes
    if nodes is not None:
        check_degree("nodes", nodes)
        if layout.gpus % nodes:
            raise InputError(f"--nodes {nodes} must divide the {layout.gpus} GPUs")
        if layout.gpus // nodes > per_node:
            raise InputError(
                f"{layout.gpus // nodes} GPUs per node exceed {hw.id}'s node of {per_node} "
                "(scale_up.domain_gpus in the catalog)"
            )
        per_node = layout.gpus // nodes
    else:
        nodes = math.ceil(layout.gpus / per_node)
    if nodes > 1 and layout.scale_out is None:
        raise InputError(
            f"{layout.gpus} GPUs span {nodes} nodes of {per_node} {hw.id}: give a network with "
            "--scale-out (e.g. infiniband-ndr)"
        )
    atp = layout.attention_tp
    what = "TP" if layout.attention_dp == 1 else f"attention TP (TP / attention-DP = {atp})"
    if atp > per_node and not layout.cross_node_tp:
        raise InputError(
            f"{what} {atp} spans more than one node of {per_node} {hw.id} (its scale-up domain): "
            "lower it, add --attention-dp, or pass --cross-node-tp to all-reduce over the network"
        )
    return replace(layout, nodes=nodes)


def links(layout: Layout, hw: Accelerator) -> Links:
    """The link of each collective: inside a node the scale-up link (or PCIe where a GPU has
    none); a group spanning nodes the scale-out network, for an all-to-all at the effective rate
    of its off-node share (`alltoall_link`); nodes, when not given, as few as hold the GPUs. A
    group wider than the scale-up domain runs over the host link: on a box of NVLink-bridged
    pairs (A100 PCIe, H100 NVL) a TP4 ring crosses PCIe between the pairs, and a ring step waits
    for its slowest hop, so the PCIe link times the whole collective (NCCL rings: one chunk per
    step around the ring; Thakur, Rabenseifner & Gropp 2005). A group wider than a node takes
    `scale_out` (None: no network named, so no link)."""
    per_node = node_gpus(hw)
    if layout.nodes:
        per_node = min(per_node, max(layout.gpus // layout.nodes, 1))
    inside = hw.scale_up or hw.host_link
    out = layout.scale_out

    def within(group: int) -> Tier | None:
        if hw.scale_up is not None and group <= (hw.scale_up.domain_gpus or 1):
            return hw.scale_up
        return hw.host_link or hw.scale_up

    tp_link = within(layout.attention_tp) if layout.attention_tp <= per_node else out
    if layout.ep <= per_node:
        ep_link = within(layout.ep)
    else:
        ep_link = alltoall_link(inside, out, layout.ep, per_node)
    pp_link = within(layout.gpus_per_replica) if layout.gpus_per_replica <= per_node else out
    return Links(tp_link, ep_link, pp_link, per_node)


def alltoall_link(inside: Tier | None, out: Tier | None, ranks: int, per_node: int) -> Tier | None:
    """An all-to-all over `ranks` GPUs, `per_node` per node, as one link: of the (n−1)/n of its
    message a rank sends away, (n−g)/n leaves the node over the network while (g−1)/n moves
    over the faster scale-up link at the same time (DeepEP's internode kernels), so the network
    share sets the time: bandwidth_eff = W_out · (n−1)/(n−g), latency of the network."""
    if out is None or inside is None or ranks <= per_node:
        return inside
    n, g = ranks, per_node
    return replace(
        out,
        name=f"{out.name} (all-to-all over {n} GPUs, {n - g} of {n - 1} peers off-node)",
        bandwidth_bytes_per_s=out.bandwidth_bytes_per_s * (n - 1) / (n - g),
    )


def bubble_fraction(pp: int, microbatches: ArrayLike) -> FloatArray:
    """Fill/drain bubble of a pipeline flushed once per batch (GPipe, Huang et al. 2019):
    (pp − 1) / (m + pp − 1) of the step is idle."""
    m = np.asarray(microbatches, dtype=float)
    return (pp - 1.0) / (m + pp - 1.0)


def pipeline_time_s(t_stage_s: ArrayLike, pp: int, microbatches: ArrayLike, rounds=1) -> FloatArray:
    """Time for `rounds` dependent passes of m micro-batches through pp stages, each stage
    taking t_stage per micro-batch (the slowest stage sets the pace):
        (rounds · max(m, pp) + min(m, pp) − 1) · t_stage.
    One round is GPipe's (m + pp − 1)·t_stage (prefill, or a decode step that flushes). Over
    many decode rounds a micro-batch re-enters the first stage once its last token is out, so
    with m >= pp the stages stay busy (m·t_stage a round; vLLM's PP virtual engines) and with
    m < pp a round waits pp·t_stage for its token to cross every stage."""
    m = np.asarray(microbatches, dtype=float)
    n = np.asarray(rounds, dtype=float)
    return (n * np.maximum(m, pp) + np.minimum(m, pp) - 1.0) * np.asarray(t_stage_s, dtype=float)


def expert_load_imbalance(tokens: ArrayLike, top_k: int, n_experts: int, ep: int) -> FloatArray:
    """Expected busiest-rank load over the mean load, for t tokens routed top-k over E experts
    spread evenly over `ep` ranks (uniform routing).
    A token sends Hypergeometric(E, E/ep, k) of its k picks to a rank: mean k/ep, variance
    k·(1/ep)(1 − 1/ep)(E − k)/(E − 1); over t independent tokens the load has mean μ = t·k/ep
    and σ² = t times that. The expected maximum of ep such loads is taken as μ + σ·√(2 ln ep)
    (the Gaussian bound on the expected maximum of n variables, e.g. Boucheron, Lugosi &
    Massart, "Concentration Inequalities", §2.5), capped by the most a rank can receive,
    t·min(k, E/ep). Returns max / μ (1 for ep = 1)."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1e-12)
    if ep <= 1 or n_experts <= 1:
        return np.ones_like(t)
    p = 1.0 / ep
    var = top_k * p * (1 - p) * (n_experts - top_k) / max(n_experts - 1, 1)
    mu = t * top_k * p
    peak = mu + np.sqrt(t * var) * math.sqrt(2.0 * math.log(ep))
    peak = np.minimum(peak, t * min(top_k, n_experts / ep))
    return np.maximum(peak / mu, 1.0)


# ---- the one enumerator: plan searches it whole, size a filter of it -------------------------
def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(
    model: ModelArch,
    hw: Accelerator,
    gpus: int,
    scale_out: Tier | None = None,
    nodes: int | None = None,
    cross_node_tp: bool = False,
    max_tp: int | None = None,
    microbatch_factors: tuple[int, ...] = (1, 2),
    every_degree: bool = False,
    dp: int | None = None,
) -> list[Layout]:
    """Every layout of `gpus` GPUs the rules accept: TP x PP x DP = gpus; for MoE models EP off
    or over the whole stage (vLLM's --enable-expert-parallel, SGLang's --ep-size = --tp), with
    redundant expert slots where it does not divide the routed experts (expert_slots), and
    attention-DP (with EP = TP) off or one group per GPU (DeepSeek-V3's layout); micro-batches
    m = factor x PP under PP. `every_degree`: also EP over every divisor of TP and attention-DP
    over every divisor of TP (attention TP groups of several GPUs). `dp`: only layouts of that
    many replicas (size searches one replica, dp = 1)."""
    out = []
    e = model.n_routed_experts if model.is_moe else 0
    for tp in divisors(gpus):
        if max_tp is not None and tp > max_tp:
            continue
        for pp in divisors(gpus // tp):
            if dp is not None and gpus // (tp * pp) != dp:
                continue
            if e and tp > 1:
                eps = [d for d in divisors(tp) if d > 1] if every_degree else [tp]
                eps = [1] + [d for d in eps if d <= e]
            else:
                eps = [1]
            for ep in eps:
                adps = (divisors(tp) if every_degree else [1, tp]) if ep == tp > 1 else [1]
                for adp in adps:
                    factors = microbatch_factors if pp > 1 else (1,)
                    for f in dict.fromkeys(factors):
                        lay = Layout(
                            tp, pp, ep, gpus // (tp * pp), adp, f * pp if pp > 1 else None,
                            nodes, cross_node_tp, scale_out,
                        )  # fmt: skip
                        try:
                            out.append(validate(lay, model, hw))
                        except InputError:
                            continue
    return out

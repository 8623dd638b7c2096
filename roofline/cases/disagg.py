"""Published measurements of disaggregated serving (validation/disagg_cases.yaml) as `roofline
validate` cases: a case of the public schema plus a `disagg:` mapping.

- pool: prefill (metric prefill_tokens_per_s_per_gpu): the case's layout is the prefill pool's,
  `batch` the prompts one prefill step runs; input tokens/s per GPU = B·S / t_prefill(B, S) / GPUs.
  The pool's ranks all run prompts at once (no attention-DP serialization: the point of it).
- pool: decode (metric decode_tokens_per_s_per_gpu): the case's layout is the decode pool's,
  `batch` the sequences it decodes at once (per replica), at the mean decode context
  prompt + output / 2; output tokens/s per GPU = B / t_decode / GPUs.
- pool: pair (metrics output_tokens_per_s_per_gpu, ttft_ms, tpot_ms, kv_transfer_ms): the case's
  layout is the decode pool's, `prefill_*` keys give the prefill pool's (same accelerator), `link`
  the KV's tier; roofline.serving.disagg.disaggregate rate-matches the pools.

Ideal: the same formula at η = 1 and no overhead (an upper bound on speed); expected: calibrated.

Collectives run over the scale-up link, as in every `validate` case; `scale_out: <network tier>`
places them as `analyze` does for a pool spanning nodes (roofline.domain.layout: NVLink inside a
node, the network between nodes). Not used by the shipped cases yet: the all-to-all's bytes
(roofline.step.ops) count every top-k copy in the activation dtype, where DeepEP sends a token once
per node (group-limited routing, at most 4 nodes) with FP8 dispatch, so across nodes its ideal comes
out slower than SGLang's measured EP32 prefill. `two_batch_overlap: true` (DeepSeek's profile-data
design, SGLang's TBO): the step is split into two micro-batches whose all-to-all runs while the
other computes, so a step lasts max(compute, all-to-all) plus the other collectives and the host
overhead, instead of their sum (fill and drain over ~60 layers neglected).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline.cases.case import Case
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Efficiency, Tier
from roofline.domain.layout import links, validate
from roofline.domain.model import ModelArch
from roofline.serving.disagg import disaggregate
from roofline.serving.kvtransfer import KvLink
from roofline.step.ops import Deployment
from roofline.step.phases import PhaseResult, decode, prefill

POOL_METRICS = {
    "prefill": ("prefill_tokens_per_s_per_gpu",),
    "decode": ("decode_tokens_per_s_per_gpu",),
    "pair": ("output_tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "kv_transfer_ms"),
}


def check_disagg(where: str, d: dict[str, Any], metric: str) -> None:
    """The pool/metric pairing of a case's `disagg:` mapping (its keys and types are checked
    where the case file is read, roofline.cases.casefiles)."""
    pool = d["pool"]
    if pool not in POOL_METRICS:
        raise InputError(f"{where}: disagg pool must be one of {', '.join(POOL_METRICS)}")
    if metric not in POOL_METRICS[pool]:
        raise InputError(
            f"{where}: a {pool} case measures {' or '.join(POOL_METRICS[pool])}, not {metric}"
        )


def evaluate_disagg(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    engine_name: str,
    catalog: Any,
) -> tuple[str, int, float, float]:
    """(regime, batch, ideal, expected) of a disaggregated-serving case's metric (`catalog`: the
    links and networks it names)."""
    where = f"case '{case.id}'"
    d = dict(case.disagg or {})
    check_disagg(where, d, case.metric)
    if case.batch is None:
        raise InputError(f"{where}: disaggregation cases need a batch")
    b, s = case.batch, max(case.prompt, 1)
    pool = d["pool"]
    if "scale_out" in d:
        dep = with_links(model, hw, dep, catalog.tier(d["scale_out"]))
    tbo = bool(d.get("two_batch_overlap", False))
    if pool == "prefill":
        p = prefill(model, hw, dep, b, s, eff, engine_name)
        per = b * s / dep.gpus_per_replica
        return "prefill", b, per / step_s(p, True, tbo), per / step_s(p, False, tbo)
    if pool == "decode":
        steps = max(case.output - 1, 1)
        r = decode(model, hw, dep, b, case.prompt + 1, steps, eff, engine=engine_name)
        per = b / dep.gpus_per_replica
        return "decode", b, per / step_s(r, True, tbo), per / step_s(r, False, tbo)
    return _pair(case, d, model, hw, dep, b, s, catalog.tier(d.get("link", "infiniband-ndr")))


def with_links(model: ModelArch, hw: Accelerator, dep: Deployment, net: Tier) -> Deployment:
    """The deployment with each collective on its link: NVLink inside a node, the `net` network
    between nodes, on as few nodes as hold the GPUs (roofline.domain.layout)."""
    if net.kind != "network":
        raise InputError(f"scale_out {net.id} is a {net.kind} tier, not a network")
    lay = replace(dep.layout, microbatches=None, scale_out=net)
    return replace(dep, links=links(validate(lay, model, hw), hw))


def step_s(r: PhaseResult, ideal: bool, two_batch_overlap: bool = False) -> float:
    """A step's time; with two-batch overlap, max(compute, all-to-all) + the rest (module
    docstring) instead of the sum."""
    t = float(r.t_ideal_s if ideal else r.t_expected_s)
    if not two_batch_overlap:
        return t

    def part(kinds: tuple[str, ...], inside: bool) -> float:
        return sum(
            float(o.t_ideal_s if ideal else o.t_expected_s)
            for o in r.ops
            if (o.op.kind in kinds) == inside
        )

    a2a = part(("alltoall",), True)
    compute = part(("alltoall", "allreduce", "p2p", "bubble"), False)
    return t - a2a - compute + max(a2a, compute)


def _pair(case, d, model, hw, dep, b, s, tier: Tier) -> tuple[str, int, float, float]:
    eta = d.get("link_efficiency")
    link = KvLink(tier, None if eta is None else float(eta), d.get("transfer_overhead_ms", 0) / 1e3)
    p_dep = dep.with_layout(
        tp=d.get("prefill_tp", dep.tp),
        ep=d.get("prefill_ep", 1),
        attention_dp=d.get("prefill_attention_dp", 1),
    )
    pb = d.get("prefill_batch", 1)
    out = {}
    for name in ("ideal", "expected"):
        ideal = name == "ideal"
        k = KvLink(tier, 1.0) if ideal else link  # the speed of light: the nominal link
        r = disaggregate(model, hw, hw, p_dep, dep, k, b, s, case.output, ideal, pb)
        out[name] = {
            "output_tokens_per_s_per_gpu": r.disaggregated.output_tokens_per_s_per_gpu,
            "ttft_ms": r.disaggregated.ttft_s * 1e3,
            "tpot_ms": r.disaggregated.tpot_s * 1e3,
            "kv_transfer_ms": r.kv_transfer_s * 1e3,
        }[case.metric]
    regime = "transfer" if case.metric == "kv_transfer_ms" else "disaggregated"
    return regime, b, out["ideal"], out["expected"]

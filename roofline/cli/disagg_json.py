"""The JSON of disagg: the closed-form comparison of colocated and disaggregated serving and,
under --rate, the comparison under traffic. Keys as in docs/METRICS.md."""

from __future__ import annotations

from typing import Any

from roofline import render
from roofline.catalog.engine_flags import engine_flags
from roofline.cli import convert
from roofline.cli.traffic_json import metrics_json
from roofline.domain.hardware import Accelerator, Tier
from roofline.domain.layout import node_gpus
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.engines.launch import LaunchSetup, launch_json, launch_setup
from roofline.serving.disagg import Disaggregation, TrafficMode
from roofline.serving.kvtransfer import KvLink, kv_shares
from roofline.serving.metrics import Slo
from roofline.serving.search import slo_requests
from roofline.serving.size import redundant_experts
from roofline.serving.workload import Workload
from roofline.step.ops import Deployment


def disagg_doc(
    m: ModelArch,
    p_hw: Accelerator,
    d_hw: Accelerator,
    p_dep: Deployment,
    d_dep: Deployment,
    tier: Tier,
    kv_link: KvLink,
    prefill_batch: int,
    tokens: tuple[int, int, int],
    eng: Engine,
    ideal: bool,
    r: Disaggregation,
) -> dict[str, Any]:
    """disagg's document: every assumption, both ways of serving (TTFT, TPOT, tokens/s per GPU)
    and the pools' figures; `tokens` = (batch, prompt tokens, output tokens)."""
    b, s, o = tokens
    shares = kv_shares(m, p_dep, d_dep, d_dep.kv.bits)  # each GPU's bytes of one prompt's KV
    serving = {
        name: {
            "ttft_s": x.ttft_s,
            "tpot_s": x.tpot_s,
            "output_tokens_per_s_per_gpu": x.output_tokens_per_s_per_gpu,
            "gpus_per_decode_replica": x.gpus,
        }
        for name, x in (("colocated", r.colocated), ("disaggregated", r.disaggregated))
    }
    inputs = {
        "model": m.id,
        "prefill_hardware": p_hw.id,
        "decode_hardware": d_hw.id,
        "prefill_tp": p_dep.tp,
        "decode_tp": d_dep.tp,
        "prefill_pp": p_dep.pp,
        "decode_pp": d_dep.pp,
        "prefill_ep": p_dep.ep,
        "decode_ep": d_dep.ep,
        "prefill_attention_dp": p_dep.attention_dp,
        "decode_attention_dp": d_dep.attention_dp,
        "prefill_batch": prefill_batch,
        "link_efficiency": kv_link.eta,
        "transfer_overhead_s": kv_link.fixed_s,
        **convert.formats_json(p_dep),
        "link": tier.id,
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "engine": eng.name,
        "step_times": "ideal" if ideal else "expected",
    }
    return render.document(
        "disagg",
        inputs,
        **serving,
        **convert.named(r, "prefill_s", "decode_step_s", "kv_transfer_s", "kv_bytes_per_request"),
        kv_sending_gpus=shares.senders,
        kv_bytes_per_sending_gpu=shares.sent_per_gpu * s,
        kv_receiving_gpus=shares.receivers,
        kv_bytes_per_receiving_gpu=shares.received_per_gpu * s,
        **convert.named(
            r,
            "prefill_replicas_per_decode_replica",
            "prefill_tokens_per_s_per_gpu",
            "decode_tokens_per_s_per_gpu",
        ),
    )


def traffic_json(
    rate: float,
    w: Workload,
    slo: Slo,
    link: KvLink,
    ideal: bool,
    modes: tuple[TrafficMode, TrafficMode],
) -> dict[str, Any]:
    """The colocated/disaggregated comparison under traffic at `rate`: each mode's unit, its
    highest rate within the SLOs, capacity per GPU, units and GPUs, metrics; the better one."""
    out: dict[str, Any] = {
        "rate": rate,
        "requests": w.n,
        "prompt_lengths": w.description.get("prompt_lengths"),
        "output_lengths": w.description.get("output_lengths"),
        "slo_ttft_s": slo.ttft_s,
        "slo_tpot_s": slo.tpot_s,
        "slo_pct": slo.pct,
        "link_efficiency": link.eta,
        "transfer_overhead_s": link.fixed_s,
        "layerwise": link.layerwise,
        "step_times": "ideal" if ideal else "expected",
        "search_requests": slo_requests(slo, w.n),
    }
    for x in modes:
        out[x.name] = {
            "prefill_replicas": x.prefill_replicas,
            "decode_replicas": x.decode_replicas,
            "gpus_per_unit": x.gpus_per_unit,
            "max_rate_per_unit": x.max_rate_per_unit,
            "capacity_per_gpu": x.capacity_per_gpu,
            "units": x.units,
            "gpus": x.gpus,
            "metrics": metrics_json(x.metrics, None, x.gpus) if x.metrics else None,
        }
    better = max(modes, key=lambda x: x.capacity_per_gpu)
    out["better"] = better.name if better.capacity_per_gpu > 0 else None
    return out


def pools_launch(
    m: ModelArch,
    pools: tuple[tuple[Accelerator, Deployment], tuple[Accelerator, Deployment]],
    eng: Engine,
    split: tuple[int, int],
    batch: int,
    max_len: int,
    traffic: TrafficMode | None = None,
) -> dict[str, Any] | None:
    """The launch lines of the two pools (roofline.engines.launch.launch_json: one server line per
    pool in its own layout, the router over `split` = (prefill, decode) servers) on `eng`; the
    decode servers' sequence cap is --batch (per attention-DP rank), or under `traffic` what the
    simulated replicas ran (the decode engine's running sequences, the prefill replicas' token
    budget); None for an engine without flags."""
    (p_hw, p_dep), (d_hw, d_dep) = pools

    def setup(
        hw: Accelerator, dep: Deployment, seqs: int | None, tokens: int | None
    ) -> LaunchSetup:
        row = {
            "tp": dep.tp, "pp": dep.pp, "ep": dep.ep, "attention_dp": dep.attention_dp,
            "redundant_experts": redundant_experts(m, dep), "max_seqs": seqs,
            "max_batched_tokens": tokens, "nodes": -(-dep.gpus_per_replica // node_gpus(hw)),
        }  # fmt: skip
        return launch_setup(m, row, max_len, eng.memory_fraction, dep.weights.name, dep.kv.name)

    seqs, tokens = -(-batch // d_dep.attention_dp), None
    if traffic is not None and traffic.decode_max_seqs:
        seqs, tokens = traffic.decode_max_seqs, traffic.prefill_batched_tokens or None
    dec = setup(d_hw, d_dep, seqs, None)
    return launch_json(engine_flags(), eng.name, dec, (setup(p_hw, p_dep, None, tokens), *split))


def pool_split(r: Disaggregation, traffic: TrafficMode | None) -> tuple[int, int]:
    """Prefill and decode servers a unit: the split found under traffic, else the nearest to
    the closed-form ratio with at most 8 of each that keeps the decode servers fed (at least
    the ratio; the smallest such on a tie)."""
    if traffic is not None and traffic.prefill_replicas:
        return traffic.prefill_replicas, traffic.decode_replicas
    ratio = r.prefill_replicas_per_decode_replica
    shapes = [(p, d) for d in range(1, 9) for p in range(1, 9)]
    fed = [x for x in shapes if x[0] / x[1] >= ratio * (1 - 1e-9)] or shapes
    return min(fed, key=lambda x: (abs(x[0] / x[1] - ratio), x[0] + x[1]))

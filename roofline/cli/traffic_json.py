"""The JSON of serve and size (and disagg's traffic): serving metrics with cost and energy, the
prefix cache's figures, the saturation rate. Keys as in docs/METRICS.md."""

from __future__ import annotations

from typing import Any

from roofline.cli.convert import bands_json
from roofline.hardware import Price
from roofline.serving.cost import (
    cost_per_hour,
    cost_per_million_output_tokens,
    joules_per_output_token,
)
from roofline.serving.serve import ServeMetrics
from roofline.serving.size import Sized

# the bands of serve's and size's expected figures (roofline/bands.py): band -> the keys it
# applies to (under each point's or deployment's "expected", or the document's)
SERVE_BANDS = {
    "ttft_p50": ["ttft_s.p50"],
    "ttft_p99": ["ttft_s.p99"],
    "tpot_p50": ["tpot_s.p50"],
    "tpot_p99": ["tpot_s.p99"],
    "e2e_p50": ["e2e_s.p50"],
    "throughput": [
        "throughput.requests_per_s",
        "throughput.output_tokens_per_s",
        "throughput.output_tokens_per_s_per_gpu",
    ],
    "saturation": ["saturation_rate.expected", "saturation_rate_per_replica"],
    "cost_per_million_output_tokens": ["cost_per_million_output_tokens"],
}


def _pcts(p) -> dict[str, float]:
    return {"p50": p.p50, "p90": p.p90, "p99": p.p99, "mean": p.mean}


def metrics_json(m: ServeMetrics, price, gpus: int | None = None) -> dict[str, Any]:
    """One set of serve metrics with cost and energy, keys as in docs/METRICS.md."""
    gpus = m.gpus if gpus is None else gpus
    usd = cost_per_hour(price, gpus)
    out = {
        "ttft_s": _pcts(m.ttft_s),
        "tpot_s": _pcts(m.tpot_s),
        "itl_s": _pcts(m.itl_s),
        "e2e_s": _pcts(m.e2e_s),
        "queue_s": _pcts(m.queue_s),
        "throughput": {
            "requests_per_s": m.requests_per_s,
            "output_tokens_per_s": m.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": m.output_tokens_per_s_per_gpu,
            "output_tokens_per_s_per_user": m.output_tokens_per_s_per_user,
        },
        "benchmark_window": {
            "requests_per_s": m.benchmark_requests_per_s,
            "output_tokens_per_s": m.benchmark_output_tokens_per_s,
            "window_s": m.window_s,
        },
        "steady_state": m.steady,
        "goodput_requests_per_s": m.goodput_requests_per_s,
        "slo_attainment": m.slo_attainment,
        "meets_slo": m.meets_slo,
        "mean_running_batch": m.mean_running_batch,
        "mean_queue_length": m.mean_queue_length,
        "mean_in_system": m.mean_in_system,
        "kv_occupancy": m.kv_occupancy,
        "utilisation": m.utilisation,
        "preemptions": m.preemptions,
        "requests": m.requests,
        "gpus": gpus,
        "cost_per_hour": usd,
        "cost_per_million_output_tokens": cost_per_million_output_tokens(
            usd, m.output_tokens_per_s
        ),
        "joules_per_output_token": joules_per_output_token(
            price, gpus, m.power_share, m.output_tokens_per_s
        ),
        "compute_share": m.compute_share,
        "power_share": m.power_share,
    }
    if m.prefix is not None:
        out["prefix_cache"] = prefix_json(m.prefix)
    return out


def prefix_json(p) -> dict[str, Any]:
    """The prefix cache's figures (serving.prefixcache.PrefixReport) and, when evictions cost
    hits, why."""
    lost = p.possible_hit_rate - p.hit_rate
    why = None
    if lost > 0.005:
        why = (
            f"LRU evicted {p.evicted_blocks:,.0f} cached blocks of {p.block_tokens} tokens before"
            f" they were reused: the KV budget cannot hold the idle prefixes next to the running"
            f" sequences (hit rate {p.hit_rate:.1%} of a possible {p.possible_hit_rate:.1%});"
            " more --memory, fewer or shorter prefixes, or a shorter --think-time keep them"
        )
    return {
        "hit_rate": p.hit_rate,
        "possible_hit_rate": p.possible_hit_rate,
        "prefill_tokens_received": p.prefill_tokens_received,
        "prefill_tokens_computed": p.prefill_tokens_computed,
        "cached_share_by_turn": list(p.cached_share_by_turn),
        "cache_kv_blocks": p.cache_kv_blocks,
        "evicted_blocks": p.evicted_blocks,
        "block_tokens": p.block_tokens,
        "hits_lost_to_eviction": why,
    }


def saturation_json(cap, replicas: int) -> dict[str, Any]:
    """The saturation rate of `replicas` replicas (ideal and expected), per GPU, what binds it,
    and the compute and bandwidth bounds it must stay under."""
    b, e, i = cap.bounds, cap.expected, cap.ideal
    gpus = b.gpus * replicas
    return {
        "ideal": i.requests_per_s * replicas,
        "expected": e.requests_per_s * replicas,
        "ideal_per_gpu": i.requests_per_s * replicas / gpus,
        "expected_per_gpu": e.requests_per_s * replicas / gpus,
        "output_tokens_per_s": {
            "ideal": i.output_tokens_per_s * replicas,
            "expected": e.output_tokens_per_s * replicas,
        },
        "binding": {"ideal": i.binding, "expected": e.binding},
        "mean_running_batch": {"ideal": i.mean_running_batch, "expected": e.mean_running_batch},
        "confirmed": {"ideal": i.confirmed, "expected": e.confirmed},
        "compute_bound": b.compute_requests_per_s * replicas,
        "bandwidth_bound": b.bandwidth_requests_per_s * replicas,
        "flops_per_request": b.flops_per_request,
        "method": "closed loop never idle, completions after warm-up and before the drain;"
        " confirmed by a Poisson run at 0.95x",
    }


def sized_json(d: Sized, p: Price | None, family: str, drafted: bool) -> dict[str, Any]:
    """One deployment of `size` (its launch line is the answer's, set by the caller)."""
    return {
        "hardware": d.hardware,
        "tp": d.tp,
        "pp": d.pp,
        "ep": d.ep,
        "dp": d.replicas,
        "replicas": d.replicas,
        "prefill_replicas": d.prefill_replicas,
        "decode_replicas": d.decode_replicas,
        "gpus": d.gpus,
        "meets_slo": d.meets_slo,
        "best": d.best,
        "frontier": d.frontier,
        "max_rate_per_replica": d.max_rate_per_replica,
        "saturation_rate_per_replica": d.saturation_rate_per_replica,
        "sized_on": d.basis,
        "binding": d.binding,
        "attention_dp": d.attention_dp,
        "layout": d.layout,
        "nodes": d.nodes,
        "max_seqs": d.max_seqs,
        "max_batched_tokens": d.max_batched_tokens,
        "redundant_experts": d.redundant_experts,
        "constraint": d.constraint,
        "launch": None,
        "cost_per_hour": d.cost_per_hour,
        "cost_per_million_output_tokens": d.cost_per_million_output_tokens,
        "joules_per_output_token": d.joules_per_output_token,
        "price_usd_per_gpu_hour": p.usd_per_gpu_hour if p else None,
        "note": d.note,
        **({"speculation": d.speculation} if drafted else {}),
        "expected": metrics_json(d.expected, p) if d.expected else None,
        "ideal": metrics_json(d.ideal, p) if d.ideal else None,
        "bands": bands_json(family, SERVE_BANDS),
    }

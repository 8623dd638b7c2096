"""The JSON of serve and size (and disagg's traffic): serving metrics with cost and energy, the
prefix cache's figures, the saturation rate. Keys as in docs/METRICS.md."""

from __future__ import annotations

import math
from typing import Any

from roofline import render
from roofline.catalog.engine_flags import engine_flags
from roofline.cli import convert
from roofline.cli.convert import bands_json, deployment_inputs, efficiency_json, finite
from roofline.cli.layout_options import layout_json
from roofline.cli.loadbands import load_bands_json
from roofline.domain.hardware import Price
from roofline.domain.layout import node_gpus
from roofline.engines.launch import drafter_launch, launch_json, launch_setup, model_len
from roofline.serving.cost import (
    ENERGY_ASSUMPTION,
    cost_per_hour,
    cost_per_million_output_tokens,
    joules_per_output_token,
)
from roofline.serving.metrics import ServeMetrics
from roofline.serving.router import DEFAULT_ROUTER, ROUTER_SOURCE
from roofline.serving.search import slo_requests
from roofline.serving.serve import ServeResult
from roofline.serving.size import REPLAY_TRIES, Sized

# the bands of serve's and size's expected figures (roofline/catalog/bands.py): band -> the keys it
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
    "joules_per_output_token": ["joules_per_output_token"],
}


def _pcts(p) -> dict[str, float | None]:
    """Percentiles; an unbounded one (past saturation, ServeMetrics.unbounded says why) null."""
    vals = {"p50": p.p50, "p90": p.p90, "p99": p.p99, "mean": p.mean}
    return {k: v if math.isfinite(v) else None for k, v in vals.items()}


def transient_json(m: ServeMetrics) -> dict[str, Any]:
    """A run past saturation as simulated: figures of a growing queue, which depend on how long
    it ran (more requests, longer waits), labelled as such."""
    return {
        "note": f"the first {m.requests:,} requests of a queue growing without bound: these"
        " figures grow with the run's length and are not the deployment's",
        "ttft_s": _pcts(m.ttft_s),
        "queue_s": _pcts(m.queue_s),
        "e2e_s": _pcts(m.e2e_s),
        "slo_attainment": m.slo_attainment,
        "meets_slo": m.meets_slo,
        "window_s": m.window_s,
        "requests": m.requests,
    }


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
        "mean_queue_length": finite(m.mean_queue_length),
        "mean_in_system": finite(m.mean_in_system),
        "kv_occupancy": m.kv_occupancy,
        "utilisation": m.utilisation,
        "step_share": m.step_share,
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
        "unbounded": m.unbounded or None,
    }
    if m.transient is not None:
        out["transient"] = transient_json(m.transient)
    if m.per_replica:  # each replica's own figures: a router's stranding shows here
        out["per_replica"] = [
            {
                "requests": r.requests,
                "ttft_p99_s": r.ttft_p99_s,
                "tpot_p99_s": r.tpot_p99_s,
                "kv_occupancy": r.kv_occupancy,
                "step_share": r.step_share,
            }
            for r in m.per_replica
        ]
    if m.prefix is not None:
        out["prefix_cache"] = prefix_json(m.prefix)
    if m.per_class:  # a workload file's classes (roofline.serving.classes)
        from roofline.cli.workload import classes_json

        out["classes"] = classes_json(m.per_class)
    return out


def prefix_json(p) -> dict[str, Any]:
    """The prefix cache's figures (serving.sim.prefixcache.PrefixReport) and, when evictions cost
    hits, why."""
    lost = p.possible_hit_rate - p.hit_rate
    why = None
    if lost > 0.005 and p.evicted_blocks < 1:  # not LRU: the retention policy or a tier's overflow
        why = (
            f"hit rate {p.hit_rate:.1%} of a possible {p.possible_hit_rate:.1%}: KV cached once"
            " was not kept between turns (--retention drop, or past the last --kv-offload tier)"
        )
    elif lost > 0.005:
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
        "hbm_hit_rate": p.hbm_hit_rate,
        "tier_hit_rates": list(p.tier_hit_rates),  # inputs.kv_tiers's order
        "tier_load_s": p.tier_load_s,
    }


def kv_tiers_json(kv) -> dict[str, Any]:
    """The tiers below HBM and the retention (serving.sim.kvtiers.KvHierarchy), if any."""
    if kv is None:
        return {}
    tiers = [
        {
            "label": t.label,
            "tier": t.tier_id,
            "capacity_bytes": t.capacity_bytes,
            "bandwidth_bytes_per_s_per_gpu": t.bandwidth_bytes_per_s,
            "source": t.source,
        }
        for t in kv.tiers
    ]
    return {"kv_retention": kv.retention, "kv_tiers": tiers}


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
        "kv_occupancy": {"ideal": i.kv_occupancy, "expected": e.kv_occupancy},
        "confirmed": {"ideal": i.confirmed, "expected": e.confirmed},
        "compute_bound": b.compute_requests_per_s * replicas,
        "bandwidth_bound": b.bandwidth_requests_per_s * replicas,
        "flops_per_request": b.flops_per_request,
        "method": "closed loop never idle, completions after warm-up and before the drain;"
        " confirmed by a Poisson run at 0.95x",
    }


def sized_json(
    d: Sized, p: Price | None, family: str, drafted: bool, engine: str | None = None
) -> dict[str, Any]:
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
        "router": d.router or None,
        "prefill_pool": d.prefill_pool,
        "launch": None,
        "cost_per_hour": d.cost_per_hour,
        "cost_per_million_output_tokens": d.cost_per_million_output_tokens,
        "joules_per_output_token": d.joules_per_output_token,
        "price_usd_per_gpu_hour": p.usd_per_gpu_hour if p else None,
        "note": d.note,
        "confidence": _confidence_json(d),
        **({"speculation": d.speculation} if drafted else {}),
        "expected": metrics_json(d.expected, p) if d.expected else None,
        "ideal": metrics_json(d.ideal, p) if d.ideal else None,
        "bands": bands_json(family, SERVE_BANDS, engine),
        "load_bands": load_bands_json(d.load_bands or {}),
    }


def _confidence_json(d: Sized) -> dict[str, Any]:
    """What a deployment was sized to (serving.confidence): the level, the replicas and GPUs
    the expected figures alone need, and the band edges (null at expected)."""
    e = d.edges
    return {
        "level": d.confidence,
        "replicas_expected": d.replicas_expected or d.replicas,
        "gpus_expected": d.gpus_expected or d.gpus,
        "edges": None
        if e is None or e.neutral
        else {"capacity": e.capacity, "ttft": e.ttft, "tpot": e.tpot},
    }


def slo_json(slo) -> dict[str, Any]:
    return {"slo_ttft_s": slo.ttft_s, "slo_tpot_s": slo.tpot_s, "slo_pct": slo.pct}


def _replay_rule(w) -> str:
    """size's stated rule for an arrival log (issue 33 item 4), from serving.size."""
    if not w.replay:
        return ""
    return (
        "; an arrival log: N from a replica's capacity at the log's mean rate, then the whole"
        f" fleet replayed on the log at N + 1, N + 2, ... up to N + {REPLAY_TRIES} while it"
        " misses the SLOs, or, met at N, at N - 1, N - 2, ... while it still meets them (the"
        " fewest replicas the replay needs)"
    )


def _swept(base, rates) -> dict[str, Any]:
    """A sweep's arrival process named at each of its rates, not the first one's alone (the
    base workload is drawn at the first)."""
    from roofline.serving.workload import arrivals_text

    if len(rates or []) < 2 or base.rate is None or base.replay or base.mix_retime is not None:
        return {}
    return {"arrivals": arrivals_text([float(r) for r in rates], base.burstiness)}


def serve_doc(
    m, hw, dep, lay, laid, gpus: int, replicas: int, base, rates, concurrency, slo, eng, rep,
    chunked_prefill: bool, tokenizer: str, preemption: str, cap, saturation: bool, price,
    speculation: dict[str, Any] | None, results: list[tuple[float | None, ServeResult]],
) -> dict[str, Any]:  # fmt: skip
    """serve's document: every assumption, one point per rate (ideal and expected metrics; the
    first point's also at the top when there is one rate), the saturation rate (`saturation`)."""
    points = [
        {
            "rate": r,
            "concurrency": concurrency,
            "ideal": metrics_json(res.ideal, price),
            "expected": metrics_json(res.expected, price),
        }
        for r, res in results
    ]
    sat = saturation_json(cap, replicas) if saturation else None
    inputs = {
        **deployment_inputs(m, hw, dep),
        "dp": replicas,
        "gpus": gpus,
        **layout_json(lay, laid),
        **convert.formats_json(dep),
        **base.description,
        **_swept(base, rates),
        "rates": rates,
        "concurrency": concurrency,
        **slo_json(slo),
        "engine": eng.name,
        **({"engine_profile": eng.profile} if eng.profile else {}),
        "frontend": eng.frontend,
        "max_seqs": rep.rules.max_seqs,
        "max_batched_tokens": rep.rules.max_batched_tokens,
        "chunked_prefill": chunked_prefill,
        "request_latency_s": rep.frontend.latency_s if rep.frontend else 0.0,
        "tokenizer": tokenizer,
        "api_token_s": rep.frontend.token_s if rep.frontend else 0.0,
        "preemption": preemption,
        "reserve_output": rep.rules.reserve_output,
        "block_tokens": rep.rules.block_tokens,
        "kv_budget_blocks": rep.rules.budget_blocks,
        "router": results[0][1].router or None,
        "router_model": ROUTER_SOURCE.get(results[0][1].router),
        **kv_tiers_json(rep.kv),
        "saturation_probe_requests": cap.expected.requests if sat else None,
        "price_usd_per_gpu_hour": price.usd_per_gpu_hour if price else None,
        "price_source": price.source if price else None,
        "energy_assumption": ENERGY_ASSUMPTION,
        "efficiency": efficiency_json(hw.efficiency),
    }
    if speculation is not None:
        inputs["speculation"] = speculation
    extra = {"ideal": points[0]["ideal"], "expected": points[0]["expected"]}
    return render.document(
        "serve",
        inputs,
        **(extra if len(points) == 1 else {}),
        saturation_rate=sat,
        points=points,
        bands=bands_json(hw.efficiency.family, SERVE_BANDS, eng.profile_id),
    )


def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as one row: keys joined by "_"."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}_"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def sized_list(
    rows: list[Sized], prices, accelerators, drafted: bool, engine: str | None = None
) -> list[dict[str, Any]]:
    """size's deployments as JSON, best first; `engine` the profile they run under (bands).
    Only fleets (a layout with no fleet is in unsized_json's lists, never a 0-GPU row)."""
    family = {h.id: h.efficiency.family for h in accelerators}
    return [
        sized_json(d, prices.get(d.hardware), family[d.hardware], drafted, engine)
        for d in rows
        if d.gpus
    ]


def size_doc(
    m, accelerators, rate: float, base, w, slo, eng, minimize: str, link, headroom: float, net,
    pools: str | None, prices, deployments: list[dict[str, Any]], day_inputs: dict[str, Any],
    extra: dict[str, Any], drafting=None, router: str = DEFAULT_ROUTER,
    per_hardware: list[dict[str, Any]] | None = None,
    unsized: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], []),
    confidence: str = "expected",
) -> dict[str, Any]:  # fmt: skip
    """size's document: every assumption (`link` the KV tier with --disagg, else None; a day's
    `day_inputs`), the best deployment with the engine's launch line (`drafting` the drafter
    options, serving.sim.drafting.DraftConfig), each accelerator's answer (`per_hardware`),
    every deployment (fleets only) and the layouts with none (`unsized`: not searched, ruled
    out)."""
    not_searched, ruled_out = unsized
    ids = [h.id for h in accelerators]
    inputs = {
        "model": m.id,
        "hardware": ids,
        "rate": rate,
        **convert.formats_json(base),
        **w.description,
        **slo_json(slo),
        "engine": eng.name,
        "frontend": eng.frontend,
        "attention_dp_balance": base.layout.attention_dp_balance,
        "minimize": minimize,
        "disaggregated": link is not None,
        "link": link.id if link is not None else None,
        "headroom": headroom,
        "scale_out": net.id,
        "pools": pools,
        "router": router,
        "router_model": ROUTER_SOURCE[router],
        "confidence": confidence,
        "sized_on": "SLO capacity" if slo.ttft_s or slo.tpot_s else "saturation",
        "search": "per layout: saturation (closed loop never idle, after warm-up); with SLOs the"
        " highest rate whose p-th percentile TTFT/TPOT meet them (bisection to 3%, at least"
        f" {slo_requests(slo, w.n):,} requests a run); replicas = ceil(rate / (capacity x"
        " (1 - headroom))); the fleet then evaluated whole as serve --dp N evaluates it, on"
        f" {w.n:,} requests (--requests: the figures printed), a replica added while it misses"
        " the SLOs" + _replay_rule(w),
        "prices": {k: v.usd_per_gpu_hour for k, v in prices.items() if k in ids},
        "energy_assumption": ENERGY_ASSUMPTION,
        **day_inputs,
    }
    best = next((d for d in deployments if d["best"]), None)
    if best is not None:  # the answer's launch line (its row is the answer; null elsewhere)
        fixed = bool(w.prompts.min() == w.prompts.max() and w.outputs.min() == w.outputs.max())
        max_len = model_len(m.max_position_embeddings, w.max_len,
                            fixed)  # fmt: skip
        hw = next(h for h in accelerators if h.id == best["hardware"])
        draft = _draft_launch(m, drafting, best.get("speculation"))

        def setup(row: dict[str, Any]):
            return launch_setup(m, row, max_len, eng.memory_fraction, base.weights.name,
                                base.kv.name, draft, node_gpus(hw))  # fmt: skip

        pre = best.get("prefill_pool")
        split = None
        if best["prefill_replicas"] and pre is not None:
            n_p, n_d = best["prefill_replicas"], best["decode_replicas"]
            split = (setup({**pre, "max_seqs": 0}), n_p, n_d)
        best["launch"] = launch_json(engine_flags(), eng.name, setup(best), split)
    return render.document(
        "size", inputs, best=best, per_hardware=per_hardware, deployments=deployments,
        not_searched=not_searched, ruled_out=ruled_out, **extra,
    )  # fmt: skip


def _draft_launch(m, drafting, speculation: dict[str, Any] | None):
    """The drafter of the best deployment's launch line: its round (`speculation`: drafter,
    γ, tree tokens) with the drafter options' draft model and top-k; None when it decodes
    plainly."""
    if drafting is None or not speculation:
        return None
    dw = drafting.draft_dep.weights.name if drafting.draft_dep is not None else ""
    return drafter_launch(m, speculation["drafter"], drafting.draft, dw, speculation["gamma"],
                          speculation["tree_tokens"], drafting.topk)  # fmt: skip


def size_rows(deployments: list[dict[str, Any]], day: bool) -> list[dict[str, Any]]:
    """size's deployments as flat rows (csv, table): p99 TTFT/TPOT, tokens/s per GPU, bands and,
    with a day (`day`), its figures."""
    skip = ("expected", "ideal", "bands", "load_bands", "day", "launch", "confidence")
    rows = [{k: v for k, v in d.items() if k not in skip} for d in deployments]
    for f, d in zip(rows, deployments, strict=True):
        c = d["confidence"]
        f["confidence"], f["gpus_expected"] = c["level"], c["gpus_expected"]
        e = d["expected"] or {}
        f["ttft_p99_s"] = (e.get("ttft_s") or {}).get("p99")
        f["tpot_p99_s"] = (e.get("tpot_s") or {}).get("p99")
        f["output_tokens_per_s_per_gpu"] = (e.get("throughput") or {}).get(
            "output_tokens_per_s_per_gpu"
        )
        for name, b in d["bands"].items():
            f[f"band_{name}"] = b["rel"]
            f[f"band_{name}_low"], f[f"band_{name}_high"] = b["low"], b["high"]
        for name, b in (d.get("load_bands") or {}).items():  # the table's: at the rate
            f[f"load_band_{name}_low"], f[f"load_band_{name}_high"] = b["low"], b["high"]
        if day:
            from roofline.cli.day import flat_day

            f.update(flat_day(d.get("day")))
    return rows

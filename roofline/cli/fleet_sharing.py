"""The fleet's sharing section (roofline.fleet.sharing): each LoRA model's adapters, each
model's sleep/wake time against its cold start, and the co-location candidates, each saying
whether it is applied to the placement or only listed."""

from __future__ import annotations

from roofline.fleet.fleetfile import FleetSpec
from roofline.fleet.sharing import (
    LORA_SOURCE,
    WAKE_SOURCE,
    adapter_bytes,
    colocation,
    lora_capacity_factor,
    transfer_s,
)
from roofline.fleet.sizing import Option, deployment
from roofline.step.memory import weight_bytes_per_gpu, weight_bytes_total

APPLIED = {
    "lora": "applied: a LoRA model's replica capacity is derated by its kernels' cost",
    "sleep": "listed, not applied: the autoscaler still pays the cold start to scale up",
    "colocation": "listed, not applied: the placement gives each replica its own GPUs",
}


def _host(hw) -> float | None:
    return hw.host_link.bandwidth_bytes_per_s if hw.host_link is not None else None


def sharing_json(cat, spec: FleetSpec, models: dict, options: list[Option], rows: list[dict]):
    """The `sharing` section of the fleet document (module docstring). `rows`: the document's
    models (their main deployment)."""
    main = {r["name"]: (r["deployment"] or {}).get("hardware") for r in rows}
    by = {(o.name, o.chip): o for o in options}
    lora, sleep = [], []
    for ms in spec.models:
        m = models[ms.name]
        chip = main.get(ms.name)
        o = by.get((ms.name, chip)) if chip else None
        if o is None or o.sized is None:
            continue
        hw = cat.accelerator(chip)
        dep = deployment(ms, m).with_layout(tp=o.sized.tp, pp=o.sized.pp, ep=o.sized.ep)
        per_gpu = weight_bytes_per_gpu(m, dep)
        ok = ms.engine == "vllm"  # sleep mode: vLLM's (CUDA and ROCm, its docs); others unknown
        sleep.append(
            {
                "name": ms.name,
                "hardware": chip,
                "idle_hours": sum(1 for r in ms.hourly if r <= 0),
                "weight_bytes_per_gpu": per_gpu,
                "wake_s": transfer_s(per_gpu, _host(hw)) if ok else None,
                "cold_start_s": o.delay_s,
                "note": "" if ok else f"no sleep mode known for {ms.engine}",
            }
        )
        if ms.lora is None:
            continue
        one = adapter_bytes(m, ms.lora.rank)
        mem = o.gpus_per_replica * hw.memory_capacity_bytes
        e = o.sized.expected
        tpot = e.tpot_s.mean if e is not None else 0.0
        given = ms.lora.throughput_cost
        lora.append(
            {
                "name": ms.name,
                "hardware": chip,
                "adapters": ms.lora.adapters,
                "rank": ms.lora.rank,
                "popularity": ms.lora.popularity,
                "adapter_bytes": one,
                "gpu_slots": ms.lora.adapters,
                "slots_bytes_per_replica": one * ms.lora.adapters,
                "slots_share_of_replica_memory": one * ms.lora.adapters / mem,
                "load_from_host_s": transfer_s(one / o.gpus_per_replica, _host(hw)),
                "tpot_mean_s": tpot,
                "capacity_kept": (1.0 - given) if given is not None else lora_capacity_factor(tpot),
                "throughput_source": ms.lora.source if given is not None else LORA_SOURCE,
                "moe_base": m.n_routed_experts > 0,
                "note": "a MoE base borrows the dense figure" if m.n_routed_experts > 0 else "",
            }
        )
    pairs = []  # each model on the chip it is placed on most (its deployment)
    for o in options:
        if o.sized is None or main.get(o.name) != o.chip:
            continue
        ms = next(s for s in spec.models if s.name == o.name)
        m = models[o.name]
        hw = cat.accelerator(o.chip)
        pairs.append(
            (
                o.name,
                o.chip,
                max(ms.hourly),
                o.sized.max_rate_per_replica,
                weight_bytes_total(m, deployment(ms, m)),
                o.gpus_per_replica * hw.memory_capacity_bytes,
            )
        )
    cands = [
        {
            "models": [c.a, c.b],
            "hardware": c.chip,
            "weight_share": c.weight_share,
            "load_share": c.load_share,
        }
        for c in colocation(pairs)
    ]
    return {
        "lora": lora,
        "sleep": sleep,
        "colocation": cands,
        "applied": APPLIED,
        "sources": {"lora_throughput": LORA_SOURCE, "wake": WAKE_SOURCE},
    }

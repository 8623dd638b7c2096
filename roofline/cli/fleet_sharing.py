"""The fleet's sharing section (roofline.fleet.sharing): each LoRA model's adapters (their slots
taken from the KV budget), each model's sleep/wake time against its cold start and the hours it
slept, and the pairs that may share a GPU with the shared replicas the placement used, each
saying how it is applied."""

from __future__ import annotations

from dataclasses import replace

from roofline.domain.errors import RooflineError
from roofline.engines.engine import engine
from roofline.fleet.day import DayPlan, Problem, shared_arrays
from roofline.fleet.fleetfile import FleetSpec
from roofline.fleet.sharing import (
    COLOCATE_SOURCE,
    LORA_SLOTS_SOURCE,
    LORA_SOURCE,
    SLEEP_ENGINES,
    WAKE_SOURCE,
    lora_capacity_factor,
    no_sleep_reason,
    slot_hit_share,
    transfer_s,
)
from roofline.fleet.sizing import Option, deployment
from roofline.step.lora import adapter_bytes_per_gpu, lora_slot_bytes_per_gpu
from roofline.step.memory import plan_memory, weight_bytes_per_gpu

APPLIED = {
    "lora": "applied: the adapter slots come out of the KV budget, and a LoRA model's replica"
    " capacity is derated by its kernels' cost",
    "sleep": "applied: a vLLM model sleeps in its hours of rate 0 (no GPU held) and wakes on the"
    " owned GPUs it slept on in the wake time instead of a cold start",
    "colocation": "applied: two models sized on half of one GPU may share a replica's GPUs,"
    " their time shares summing to at most 1",
}


def _host(hw) -> float | None:
    return hw.host_link.bandwidth_bytes_per_s if hw.host_link is not None else None


def sharing_json(
    cat,
    spec: FleetSpec,
    models: dict,
    options: list[Option],
    rows: list[dict],
    prob: Problem,
    day: DayPlan,
    half: list[Option],
):
    """The `sharing` section of the fleet document (module docstring). `rows`: the document's
    models (their main deployment); `half`: the half-GPU options (co-location)."""
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
        ok = ms.engine in SLEEP_ENGINES  # vLLM's (CUDA and ROCm, its docs); others: why not
        i = prob.names.index(ms.name)
        prof = (hw.efficiency.engines or {}).get(ms.engine)
        load = prof.load_bytes_per_s if prof is not None and prof.load_bytes_per_s > 0 else None
        note = no_sleep_reason(ms.engine)
        sleep.append(
            {
                "name": ms.name,
                "hardware": chip,
                "idle_hours": sum(1 for r in ms.hourly if r <= 0),
                "asleep_hours": int(day.asleep_hours[i]) if day.asleep_hours is not None else 0,
                "woken_replicas": int(day.wakes[i]) if day.wakes is not None else 0,
                "weight_bytes_per_gpu": per_gpu,
                "wake_s": transfer_s(per_gpu, _host(hw)) if ok else None,
                "wake_level2_s": transfer_s(per_gpu * o.gpus_per_replica, load) if ok else None,
                "cold_start_s": o.delay_s,
                "note": note if ms.sleep else "sleep: false in the fleet file",
            }
        )
        if ms.lora is None:
            continue
        one = adapter_bytes_per_gpu(m, ms.lora.rank)  # the whole adapter
        slots = lora_slot_bytes_per_gpu(m, dep)  # on each GPU of the placed layout
        e = o.sized.expected
        tpot = e.tpot_s.mean if e is not None else 0.0
        given = ms.lora.throughput_cost
        # each GPU loads its shard over its own host link; a request waits for it on a miss
        load_s = transfer_s(adapter_bytes_per_gpu(m, ms.lora.rank, dep), _host(hw))
        hit = slot_hit_share(ms.lora.adapters, ms.lora.gpu_slots, ms.lora.popularity)
        bare = replace(dep, lora_slots=0)  # the placed layout's KV budget without, with slots
        kv0: float | None
        kv1: float | None
        try:
            kv0 = plan_memory(m, hw, bare, engine(ms.engine, hw)).kv_budget_bytes
            kv1 = plan_memory(m, hw, dep, engine(ms.engine, hw)).kv_budget_bytes
        except RooflineError:
            kv0 = kv1 = None
        lora.append(
            {
                "name": ms.name,
                "hardware": chip,
                "adapters": ms.lora.adapters,
                "rank": ms.lora.rank,
                "popularity": ms.lora.popularity,
                "adapter_bytes": one,
                "gpu_slots": ms.lora.gpu_slots,
                "tp": dep.tp,
                "slots_bytes_per_gpu": slots,
                "slots_share_of_gpu_memory": slots / hw.memory_capacity_bytes,
                "kv_budget_bytes": kv0,
                "kv_budget_bytes_with_slots": kv1,
                "slots_source": LORA_SLOTS_SOURCE,
                "load_from_host_s": load_s,
                "slot_hit_share": hit,
                "miss_wait_mean_s": None if load_s is None else (1.0 - hit) * load_s,
                "tpot_mean_s": tpot,
                "capacity_kept": (1.0 - given) if given is not None else lora_capacity_factor(tpot),
                "throughput_source": ms.lora.source if given is not None else LORA_SOURCE,
                "moe_base": m.n_routed_experts > 0,
                "note": "a MoE base borrows the dense figure" if m.n_routed_experts > 0 else "",
            }
        )
    z, ua, ub = shared_arrays(prob, day.hours)
    hb = {(o.name, o.chip): o for o in half}
    cands = []
    for k, sh in enumerate(prob.shared):
        a, b = prob.names[sh.a], prob.names[sh.b]
        chips = sorted({prob.pools[j].chip for j in range(len(prob.pools)) if sh.ok()[j]})
        cands.append(
            {
                "models": [a, b],
                "hardware": chips,
                "capacity_on_half": {
                    c: [hb[(a, c)].capacity, hb[(b, c)].capacity]
                    for c in chips
                    if (a, c) in hb and (b, c) in hb
                },
                "replica_hours": float(z[:, k].sum()),
                "gpu_hours": float((z[:, k] * sh.gpus[None]).sum()),
                "requests": [float(ua[:, k].sum() * 3600.0), float(ub[:, k].sum() * 3600.0)],
            }
        )
    return {
        "lora": lora,
        "sleep": sleep,
        "colocation": cands,
        "applied": APPLIED,
        "sources": {
            "lora_throughput": LORA_SOURCE,
            "lora_slots": LORA_SLOTS_SOURCE,
            "wake": WAKE_SOURCE,
            "colocation": COLOCATE_SOURCE,
        },
    }

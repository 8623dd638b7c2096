"""From a fleet file and its sized options to the day's problem (roofline.fleet.day.Problem):
the pools (each owned type; each rentable type on demand and on spot), and per model and pool a
replica's requests/s, GPUs and scale-up delay. Chip names are resolved by the caller (ids).
A LoRA model's replica capacity is derated by its batched LoRA kernels (roofline.fleet.sharing:
Punica's 2 ms per decoded token) unless the fleet file gives lora.throughput_cost with a source
(then roofline.fleet.sizing applies that instead).
The pairs that may share a replica's GPUs (roofline.fleet.placement.Share) are every two models
sized on half of one GPU of the same chip (roofline.fleet.sizing), their kappa' derated on spot
and by LoRA kernels as kappa is; the models that sleep are those whose engine has a sleep mode
(roofline.fleet.sharing.SLEEP_ENGINES) and that do not say `sleep: false`."""

from __future__ import annotations

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.hardware import Price
from roofline.fleet.day import HOURS, Problem
from roofline.fleet.fleetfile import FleetSpec, ModelSpec
from roofline.fleet.placement import Pool, Share
from roofline.fleet.sharing import SLEEP_ENGINES, lora_capacity_factor
from roofline.fleet.sizing import Option


def pools(
    spec: FleetSpec,
    ids: dict[str, str],
    on_demand: dict[str, float],
    prices: dict[str, Price] | None = None,
) -> list[Pool]:
    """Owned pools first (marginal cost 0), then each rentable type on demand and on spot.
    `ids`: chip name as written -> accelerator id; `on_demand`: id -> $/GPU-hour where the file
    gives none (hardware/prices.yaml); `prices`: the catalog's, for `spot: catalog` and a spot
    preemption rate the file leaves out (0 where the catalog has none)."""
    out = [Pool(ids[o.type], "owned", 0.0, o.count) for o in spec.owned]
    for r in spec.rent:
        chip = ids[r.type]
        od = r.on_demand if r.on_demand is not None else on_demand[chip]
        out.append(Pool(chip, "on-demand", od, r.limit))
        if r.spot is None:
            continue
        cat = (prices or {}).get(chip)
        if isinstance(r.spot, str):  # "catalog"
            spot = cat.spot_usd_per_gpu_hour if cat is not None else None
            if spot is None:
                raise InputError(
                    f"{spec.path}: hardware.rent ({r.type}).spot: no catalog spot price: give one"
                )
        else:
            spot = r.spot
        pre = r.spot_preemptions_per_hour
        if pre is None:
            pre = (cat.spot_preemptions_per_hour if cat is not None else None) or 0.0
        out.append(Pool(chip, "spot", float(spot), r.limit, pre))
    return out


def price_sources(spec: FleetSpec, ids: dict[str, str], prices: dict[str, Price]) -> dict[str, str]:
    """Pool label -> where its price (and, on spot, its preemption rate) came from."""
    out = {f"{ids[o.type]} owned": "fleet file (usd_per_gpu_hour)" for o in spec.owned}
    for r in spec.rent:
        chip, cat = ids[r.type], prices.get(ids[r.type])
        od = "fleet file" if r.on_demand is not None else (cat.source if cat else "")
        out[f"{chip} on-demand"] = od
        if r.spot is None:
            continue
        price = cat.spot_source if r.spot == "catalog" and cat else "fleet file"
        pre = "fleet file" if r.spot_preemptions_per_hour is not None else (
            cat.spot_source if cat and cat.spot_preemptions_per_hour is not None else "none: 0"
        )  # fmt: skip
        out[f"{chip} spot"] = price if price == pre else f"price: {price}; preemptions: {pre}"
    return out


def lora_factor(m: ModelSpec, o: Option) -> float:
    """A LoRA model's replica capacity kept with batched LoRA kernels (module docstring): 1
    without adapters or where the fleet file gives its own throughput cost."""
    if m.lora is None or m.lora.throughput_cost is not None or o.sized is None:
        return 1.0
    e = o.sized.expected
    return lora_capacity_factor(e.tpot_s.mean) if e is not None else 1.0


def _kappa(spec_m: ModelSpec, o: Option, pl: Pool) -> float:
    """A replica's requests/s on pool `pl`: spot x (1 - preemptions per hour x the delay in
    hours), the expected share a replica is up; x the LoRA kernels' factor."""
    up = 1.0
    if pl.kind == "spot":
        up = max(0.0, 1.0 - pl.preemptions_per_hour * o.delay_s / 3600.0)
    return o.capacity * up * lora_factor(spec_m, o)


def shares(spec: FleetSpec, half: list[Option], pool_list: list[Pool]) -> tuple[Share, ...]:
    """Every two models sized on half of one GPU of a chip, a shared replica on its pools."""
    names = [m.name for m in spec.models]
    specs = {m.name: m for m in spec.models}
    by = {(o.name, o.chip): o for o in half if o.capacity > 0}
    out = []
    for ia, a in enumerate(names):
        for ib in range(ia + 1, len(names)):
            b = names[ib]
            ka, kb, g = (np.zeros(len(pool_list)) for _ in range(3))
            for j, pl in enumerate(pool_list):
                oa, ob = by.get((a, pl.chip)), by.get((b, pl.chip))
                if oa is None or ob is None or oa.gpus_per_replica != ob.gpus_per_replica:
                    continue
                ka[j], kb[j] = _kappa(specs[a], oa, pl), _kappa(specs[b], ob, pl)
                g[j] = oa.gpus_per_replica
            if (ka > 0).any():
                out.append(Share(ia, ib, ka, kb, g))
    return tuple(out)


def problem(
    spec: FleetSpec,
    options: list[Option],
    pool_list: list[Pool],
    half: list[Option] | None = None,
    wake: dict[tuple[str, str], float] | None = None,
) -> Problem:
    """The day's numbers: kappa, GPUs and delay per model and pool (0 where the model cannot
    run: not sized there, nothing met the SLOs, or not in its `hardware`); spot capacity x
    (1 - preemptions per hour x the delay in hours), the expected share a replica is up; the
    pairs that may share a GPU (`half`: the half-GPU options) and each sleeping model's wake
    time per pool (`wake`: (model, chip) -> s)."""
    names = tuple(m.name for m in spec.models)
    by = {(o.name, o.chip): o for o in options}
    specs = {m.name: m for m in spec.models}
    n_m, n_p = len(names), len(pool_list)
    kappa, gpus, delay = np.zeros((n_m, n_p)), np.zeros((n_m, n_p)), np.zeros((n_m, n_p))
    wake_s = np.full((n_m, n_p), np.nan)
    for i, name in enumerate(names):
        for j, pl in enumerate(pool_list):
            o = by.get((name, pl.chip))
            if o is None or o.capacity <= 0:
                continue
            kappa[i, j] = _kappa(specs[name], o, pl)
            gpus[i, j] = o.gpus_per_replica
            delay[i, j] = o.delay_s
            w = (wake or {}).get((name, pl.chip))
            if w is not None and pl.kind == "owned":
                wake_s[i, j] = w
    rates = np.array([m.hourly for m in spec.models], dtype=float).reshape(n_m, HOURS)
    sleeps = tuple(m.sleep and m.engine in SLEEP_ENGINES for m in spec.models)
    return Problem(
        names,
        rates,
        np.array([m.min_replicas for m in spec.models]),
        kappa,
        gpus,
        delay,
        spec.headroom,
        tuple(pool_list),
        tuple(o.usd_per_gpu_hour or 0.0 for o in spec.owned),
        spec.policy,
        spec.scale_down_delay_s,
        shares(spec, half or [], pool_list),
        sleeps if wake is not None else (),
        wake_s if wake is not None else None,
    )

"""Sizing a fleet's models once per chip: each (model, chip) pair is `size`'s search
(roofline.serving.size.size) on that one chip at the model's peak hourly rate, so the fleet's
replicas are the ones `size` would deploy; every hour reuses it (no search per hour).

A work item is a plain tuple of values (the model's ModelSpec, a chip id, the fleet's requests,
seed and headroom): it pickles, and a worker resolves the catalog itself. The pairs run over
roofline.serving.workers.parallel_map. Each pair's answer is kept in the user cache
(roofline.catalog.cache: off with ROOFLINE_NO_CACHE=1), keyed by the item's values, the
modules of the rooms it rests on (timing to serving, and this module) and every catalog file
(path, modification time, size), so a second run of the same fleet file, or of one that changes
only its hours, prices or pools, sizes nothing again.

Capacity per replica used by the placement (requests/s a replica is given, headroom spent):
kappa = capacity within the SLOs x (1 - headroom), or, where `size` had to add replicas to the
peak's fleet (its tail missed the SLOs), the peak rate / the replicas it deployed; x (1 - the LoRA
kernels' throughput cost) where the fleet file gives one with its source.

A LoRA model is sized with its GPU adapter slots taken from the KV budget, sharded as each
layout shards them (roofline.step.lora: vLLM allocates max_loras x max_lora_rank adapters
before the KV cache).
A small model that may share a GPU (roofline.fleet.sharing, co-location: one 1-GPU replica holds
its peak on that chip, and its weights fit half of one GPU's engine memory) is sized a second
time on each chip where another small model is: the engine's memory fraction halved, one GPU
per replica, its capacity kappa' the one the placement gives each of its engines on a shared
GPU."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

from roofline.catalog.cache import CODE, files_key, load_snapshot, save_snapshot, tree_key
from roofline.catalog.load import dirs_in_use, load_catalog, load_prices
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.hardware import Price
from roofline.domain.layout import Layout
from roofline.domain.precision import activation_format, kv_format, weight_format
from roofline.engines.engine import engine
from roofline.fleet.fleetfile import ModelSpec
from roofline.fleet.sharing import (
    SHARE_ENGINES,
    SLEEP_ENGINES,
    half_memory,
    transfer_s,
)
from roofline.serving.daysize import delay_for
from roofline.serving.metrics import Slo
from roofline.serving.size import Sized, size
from roofline.serving.workers import parallel_map
from roofline.serving.workload import make_workload
from roofline.step.memory import plan_memory, weight_bytes_per_gpu
from roofline.step.ops import Deployment

# the rooms a sizing depends on (its cache key: their modules' paths, times and sizes)
CORE_ROOMS = ("timing", "domain", "engines", "catalog", "step", "levers", "serving")


@dataclass(frozen=True)
class Option:
    """One model on one chip type as `size` deploys it at the model's peak rate."""

    name: str  # the fleet's model name
    chip: str  # accelerator id
    sized: Sized | None  # size's best row on this chip (None: nothing meets the SLOs)
    peak_rate: float  # the rate it was sized at
    capacity: float  # kappa: requests/s the placement gives one replica (module docstring)
    gpus_per_replica: int
    delay_s: float  # scale-up delay: weights / load bandwidth + engine start
    delay_from: str
    note: str = ""


def deployment(spec: ModelSpec, model) -> Deployment:
    """The fleet model's base deployment (weights, KV and activations, its LoRA adapter slots at
    their rank: plan_memory takes them from the KV budget as each layout shards them,
    roofline.step.lora; layouts are searched)."""
    w = spec.weights if spec.weights != "auto" else (model.native_weights or "bf16")
    return Deployment(
        weights=weight_format(w),
        dense_weights=None,
        kv=kv_format(spec.kv_dtype),
        activations=activation_format("bf16"),
        layout=Layout(),
        lora_slots=spec.lora.gpu_slots if spec.lora is not None else 0,
        lora_rank=spec.lora.rank if spec.lora is not None else 0,
    )


def fits_half(spec: ModelSpec, model, hw) -> bool:
    """Could the model run on half of one GPU (co-location): its engine shares memory per
    instance (sharing.SHARE_ENGINES), and its weights on one GPU plus the engine's overhead (and
    adapter slots) leave a KV budget in half the engine's memory (plan_memory's rule)."""
    if not spec.share or spec.engine not in SHARE_ENGINES:
        return False
    eng = half_memory(engine(spec.engine, hw))
    try:
        return plan_memory(model, hw, deployment(spec, model), eng).kv_budget_bytes > 0
    except RooflineError:
        return False


def size_one(item: tuple[ModelSpec, str, int, int, float, float | None, bool, tuple]) -> Option:
    """`size` on one chip for one model (a work item: values only); `half`: on half of one GPU
    (co-location, module docstring: one GPU per replica, the engine's memory fraction halved)."""
    spec, chip, requests, seed, headroom, delay, half, catalog_dirs = item
    cat = load_catalog(list(catalog_dirs))
    model, hw = cat.model(spec.model), cat.accelerator(chip)
    base = deployment(spec, model)
    eng = engine(spec.engine, hw)
    if half:
        eng = half_memory(eng)
    peak = max(spec.hourly)
    if peak <= 0:  # a model idle all day still needs its replicas sized for min_replicas
        peak = 1.0
    w = make_workload(spec.prompt, spec.output, peak, None, requests, None, seed)
    slo = Slo(spec.slo_ttft_s, spec.slo_tpot_s, spec.slo_pct)
    price = load_prices().get(hw.id) or Price(hw.id, 1.0, None, "placeholder: one chip")
    rows = size(model, [hw], base, eng, w, slo, {hw.id: price}, seed=seed, headroom=headroom)
    if half:  # one GPU per replica: the cheapest such row that meets the SLOs
        ones = [r for r in rows if r.meets_slo and r.gpus == r.replicas and r.replicas > 0]
        rows = [replace(ones[0], best=True)] if ones else []
    best = next((r for r in rows if r.best), None)
    if best is None:
        note = next((r.note for r in rows if r.note), "no layout meets the SLOs")
        return Option(spec.name, hw.id, None, peak, 0.0, 0, 0.0, "", note)
    r_cap = best.max_rate_per_replica * (1.0 - headroom)
    plain = math.ceil(peak / r_cap * (1 - 1e-12))
    kappa = r_cap if best.replicas <= plain else peak / best.replicas * (1 - 1e-12)
    if spec.lora is not None and spec.lora.throughput_cost is not None:
        kappa *= 1.0 - spec.lora.throughput_cost
    dep = base.with_layout(tp=best.tp, pp=best.pp, ep=best.ep)
    try:
        d, how = delay_for(model, hw, dep, eng, delay)
    except InputError:
        d, how = 0.0, f"no sourced load bandwidth for {eng.name}: 0 s (give scale_up_delay)"
    return Option(spec.name, hw.id, best, peak, kappa, best.gpus // max(best.replicas, 1), d, how)


def _key(item: tuple) -> tuple | None:
    """What a cached sizing of `item` is valid for: its values, the code, the catalogs."""
    pkg = CODE  # the package's directory
    code = tree_key([pkg / room for room in CORE_ROOMS], (".py",))
    own = files_key([pkg / "fleet/sizing.py", pkg / "fleet/fleetfile.py", pkg / "fleet/sharing.py"])
    if code is None or own is None:
        return None
    code = code + own
    cats = tree_key(dirs_in_use(list(item[-1])), (".yaml", ".yml", ".json"))  # bands.json too
    if code is None or cats is None:
        return None
    return (repr(item), code, cats)


def _kind(item: tuple) -> str:
    """One cache file per item (its values' checksum)."""
    return f"fleetsize{zlib.crc32(repr(item).encode()):08x}"


def cached_size_one(item: tuple) -> Option:
    """size_one, from the user cache when the same item was sized by the same code on the same
    catalogs (module docstring)."""
    key = _key(item)
    hit = load_snapshot(_kind(item), key)
    if isinstance(hit, Option):
        return hit
    out = size_one(item)
    save_snapshot(_kind(item), key, out)
    return out


def sizing_spec(m: ModelSpec) -> ModelSpec:
    """The values of a model that its sizing depends on, nothing else: its model and formats,
    lengths, SLOs, engine, LoRA slots and rank, and its peak rate (the hours below the peak,
    its name, allowed chips and minimum do not change `size`'s answer). Two models with the
    same sizing spec share one sizing, and a fleet file whose curves change below their peaks
    sizes nothing again (the cache key is the item's values)."""
    peak = max(m.hourly)
    lo = m.lora
    if lo is not None:
        lo = replace(lo, adapters=lo.gpu_slots, popularity="", source="", slots=lo.gpu_slots)
    return replace(
        m, name="", hourly=(peak,) * len(m.hourly), traffic="", min_replicas=0, hardware=(),
        lora=lo, sleep=True, share=True,
    )  # fmt: skip


def _cost_rank(item: tuple) -> float:
    """A sizing's expected cost, to hand the longest out first (wall time on a pool): the
    steps a request simulates, a decode step per output token, prefill in chunks (a guess)."""
    spec = item[0]
    return float(spec.prompt + 4 * spec.output)


def _map_unique(items: list[tuple]) -> list[Option]:
    """cached_size_one over the distinct items (equal items are one sizing), the longest
    first, back in the items' order."""
    uniq = list(dict.fromkeys(items))
    order = sorted(range(len(uniq)), key=lambda i: -_cost_rank(uniq[i]))
    done = parallel_map(cached_size_one, [uniq[i] for i in order])
    by = {uniq[i]: o for i, o in zip(order, done, strict=True)}
    return [by[it] for it in items]


def size_fleet(
    models: tuple[ModelSpec, ...],
    chips: dict[str, tuple[str, ...]],
    requests: int,
    seed: int,
    headroom: float,
    delay: float | None,
    catalog_dirs: tuple[str, ...] = (),
) -> tuple[list[Option], list[Option]]:
    """Every (model, chip) pair sized (chips: model name -> chip ids it may run on), and, on half
    of one GPU, each small model on a chip where another small model may share a GPU with it
    (module docstring): (options, half-GPU options). Small on a chip: one replica there holds its
    peak (peak rate < kappa, a whole GPU per replica) and its weights fit half the GPU's engine
    memory (fits_half); only those are sized again, so a fleet of large models sizes nothing
    more. Each item is the model's sizing spec (sizing_spec): equal ones are sized once."""

    def items(pairs: list[tuple[ModelSpec, str]], half: bool) -> list[tuple]:
        return [
            (sizing_spec(m), c, requests, seed, headroom, delay, half, catalog_dirs)
            for m, c in pairs
        ]

    full = [(m, c) for m in models for c in chips[m.name]]
    options = [
        replace(o, name=m.name)
        for o, (m, _) in zip(_map_unique(items(full, False)), full, strict=True)
    ]
    cat = load_catalog(list(catalog_dirs))
    specs = {m.name: m for m in models}
    small: dict[str, list[ModelSpec]] = {}  # chip -> the small models there
    for o in options:
        m = specs[o.name]
        if o.capacity <= 0 or o.gpus_per_replica != 1 or max(m.hourly) >= o.capacity:
            continue
        if fits_half(m, cat.model(m.model), cat.accelerator(o.chip)):
            small.setdefault(o.chip, []).append(m)
    pairs = [(m, c) for c, ms in small.items() if len(ms) >= 2 for m in ms]  # with a partner
    if not pairs:
        return options, []
    half = _map_unique(items(pairs, True))
    return options, [replace(o, name=m.name) for o, (m, _) in zip(half, pairs, strict=True)]


def wake_times(
    models: tuple[ModelSpec, ...], options: list[Option], catalog_dirs: tuple[str, ...] = ()
) -> dict[tuple[str, str], float]:
    """(model, chip) -> the level-1 wake time of a replica of a model that sleeps
    (roofline.fleet.sharing): its weight bytes per GPU / the chip's host link bandwidth."""
    cat = load_catalog(list(catalog_dirs))
    specs = {m.name: m for m in models}
    out = {}
    for o in options:
        spec = specs[o.name]
        if o.sized is None or not spec.sleep or spec.engine not in SLEEP_ENGINES:
            continue
        model, hw = cat.model(spec.model), cat.accelerator(o.chip)
        dep = deployment(spec, model).with_layout(tp=o.sized.tp, pp=o.sized.pp, ep=o.sized.ep)
        host = hw.host_link.bandwidth_bytes_per_s if hw.host_link is not None else None
        t = transfer_s(weight_bytes_per_gpu(model, dep), host)
        if t is not None:
            out[(o.name, o.chip)] = t
    return out

"""Reading a fleet file (`roofline fleet FLEET.yaml`) into plain values: ids, numbers and
hourly rates, nothing live, so a work item built from them pickles (issue 40 runs them on other
processes). A mistake is one InputError naming the file, the entry and the key.

    headroom: 0.1                       # share of each replica's capacity left unused
    autoscaling: {policy: predictive, scale_down_delay: 10min, scale_up_delay: null}
    models:
      - name: chat-8b                   # unique; the model id when `model` is absent
        model: llama-3.1-8b             # a catalog id or alias
        rate: 20                        # requests/s all day, or
        traffic_curve: curves/day.csv   # a day's curve (roofline.serving.dayfile), or
        hourly: [5, 5, ..., 20]         # 24 rates, one per hour, or
        workload: workloads/chat.yaml   # a workload file: its rate all day (fleet/sources.py), or
        arrivals: arrivals/log.csv      # an arrival log: its hourly rates (speedup: 40 replays it
                                        # 40x faster; fleet/sources.py)
        scale: 1.0                      # multiplies the curve
        prompt: 1k
        output: 300
        slo: {ttft: 1s, tpot: 50ms, percentile: 99}
        weights: fp8                    # bf16 when absent
        kv_dtype: fp8
        engine: vllm
        min_replicas: 1
        hardware: [h100, b200]          # the chips it may run on (default: every pool's)
        lora: {adapters: 20, rank: 16, popularity: zipf, throughput_cost: 0.2, source: "...",
               slots: 20}               # GPU adapter slots (vLLM --max-loras; default: adapters)
        sleep: true                     # idle hours asleep (vLLM sleep mode; default: true)
        share: true                     # may share a GPU with another small model (default: true)
    hardware:
      owned:  [{type: h100, count: 16, usd_per_gpu_hour: 2.0}]   # or null: sunk
      rent:   [{type: h200, on_demand: 4.5, spot: 2.4, spot_preemptions_per_hour: 0.05,
               limit: 32}]   # on_demand default: hardware/prices.yaml; spot: a price, or
                             # `catalog` for hardware/prices.yaml's spot median (no spot key:
                             # no spot pool); spot_preemptions_per_hour default: the catalog's

A curve file's path is relative to the fleet file; each hour's rate is the highest of the curve's
intervals that overlap it (the placement is hourly)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from roofline.catalog.files import read_yaml
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.units import parse_count, parse_seconds
from roofline.serving.dayfile import read_day

HOURS = 24
TOP = {"headroom", "autoscaling", "models", "hardware", "requests", "seed"}
MODEL_KEYS = {
    "name", "model", "rate", "traffic_curve", "hourly", "scale", "prompt", "output", "slo",
    "weights", "kv_dtype", "engine", "min_replicas", "hardware", "lora", "workload", "arrivals",
    "sleep", "share",
    "speedup",
}  # fmt: skip
TRAFFIC_KEYS = ("rate", "traffic_curve", "hourly", "workload", "arrivals")
SLO_KEYS = {"ttft", "tpot", "percentile"}
LORA_KEYS = {"adapters", "rank", "popularity", "throughput_cost", "source", "slots"}
OWNED_KEYS = {"type", "count", "usd_per_gpu_hour"}
RENT_KEYS = {"type", "on_demand", "spot", "spot_preemptions_per_hour", "limit"}
SCALING_KEYS = {"policy", "scale_down_delay", "scale_up_delay"}
POLICIES = ("predictive", "reactive")
POPULARITY = ("uniform", "zipf")  # the adapters' request shares (roofline.fleet.sharing)


@dataclass(frozen=True)
class Lora:
    adapters: int
    rank: int
    popularity: str
    throughput_cost: float | None  # share of a replica's capacity the batched LoRA kernels cost
    source: str
    slots: int = 0  # adapters held on the GPU (vLLM --max-loras); 0: every adapter (= adapters)

    @property
    def gpu_slots(self) -> int:
        """The engine's adapter slots on the GPU: `slots`, else one per adapter."""
        return self.slots or self.adapters


@dataclass(frozen=True)
class ModelSpec:
    """One model's traffic and service terms: values only."""

    name: str
    model: str  # catalog id or alias as written
    hourly: tuple[float, ...]  # requests/s, 24 values
    traffic: str  # how the hourly rates were read (echoed)
    prompt: int
    output: int
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    slo_pct: float
    weights: str
    kv_dtype: str
    engine: str
    min_replicas: int
    hardware: tuple[str, ...]  # allowed chip ids or aliases as written ( (): any )
    lora: Lora | None
    sleep: bool = True  # idle hours asleep where the engine has a sleep mode (fleet/sharing.py)
    share: bool = True  # may share a GPU with another small model (fleet/sharing.py)


@dataclass(frozen=True)
class Owned:
    type: str
    count: int
    usd_per_gpu_hour: float | None


@dataclass(frozen=True)
class Rentable:
    type: str
    on_demand: float | None  # None: hardware/prices.yaml
    spot: float | str | None  # "catalog": hardware/prices.yaml's spot median; None: no spot pool
    spot_preemptions_per_hour: float | None  # None: the catalog's (else 0)
    limit: int | None


@dataclass(frozen=True)
class FleetSpec:
    path: str
    models: tuple[ModelSpec, ...]
    owned: tuple[Owned, ...]
    rent: tuple[Rentable, ...]
    headroom: float
    policy: str
    scale_down_delay_s: float
    scale_up_delay_s: float | None  # None: derived per model and chip
    requests: int
    seed: int


def _keys(d: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise InputError(f"{where}: expected a mapping, got {type(d).__name__}")
    bad = sorted(set(map(str, d)) - allowed)
    if bad:
        raise InputError(f"{where}: unknown key '{bad[0]}' (known: {', '.join(sorted(allowed))})")
    return d


def _num(v: Any, where: str, lo: float = 0.0, hi: float = math.inf, integer: bool = False):
    if isinstance(v, bool) or v is None:
        raise InputError(f"{where}: expected a number, got {v!r}")
    try:
        x = parse_count(v, where) if isinstance(v, str) else float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: expected a number, got {v!r}") from None
    if not (math.isfinite(x) and lo <= x <= hi):
        raise InputError(f"{where}: must be from {lo:g} to {hi:g}, got {v!r}")
    if integer:
        if x != int(x):
            raise InputError(f"{where}: must be a whole number, got {v!r}")
        return int(x)
    return x


def _secs(v: Any, where: str) -> float:
    t = parse_seconds(str(v), where)
    if not (math.isfinite(t) and 0 <= t <= 86_400):
        raise InputError(f"{where}: must be from 0 to 24h, got {v!r}")
    return t


def hourly_peaks(start_s: np.ndarray, duration_s: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Each hour's highest rate among the intervals overlapping it (the curve's span scaled to a
    day, as the day planner scales it)."""
    span = float(duration_s.sum())
    k = 86_400.0 / span
    a, b = start_s * k, (start_s + duration_s) * k
    out = np.zeros(HOURS)
    for h in range(HOURS):
        hit = (a < (h + 1) * 3600.0 - 1e-9) & (b > h * 3600.0 + 1e-9)
        out[h] = float(rate[hit].max()) if hit.any() else 0.0
    return out


def _named(where: str, key: str, read):
    """read(), its file's error named by the fleet entry and key it came from."""
    try:
        return read()
    except RooflineError as exc:
        if str(exc).startswith(where):
            raise
        raise InputError(f"{where}.{key}: {exc}", hint=exc.hint) from None


def _traffic(m: dict[str, Any], where: str, base: Path) -> tuple[tuple[float, ...], str, Any]:
    """(hourly rates, how they were read, the file's traffic or None: fleet.sources)."""
    given = [k for k in TRAFFIC_KEYS if k in m]
    if len(given) != 1:
        raise InputError(f"{where}: give one of {', '.join(TRAFFIC_KEYS)}")
    scale = _num(m.get("scale", 1.0), f"{where}.scale", 0.0, 1e6)
    key = given[0]
    if "speedup" in m and key != "arrivals":
        raise InputError(f"{where}.speedup: only with arrivals")
    if key in ("workload", "arrivals"):
        from roofline.fleet.sources import file_traffic

        speedup = _num(m.get("speedup", 1.0), f"{where}.speedup", 1e-6, 1e6)
        ft = _named(where, key, lambda: file_traffic(key, str(m[key]), base, speedup, scale, where))
        return ft.hourly, ft.how, ft
    if key == "rate":
        r = _num(m["rate"], f"{where}.rate", 0.0, 1e6) * scale
        return (r,) * HOURS, f"{r:g} requests/s all day", None
    if key == "hourly":
        v = m["hourly"]
        if not isinstance(v, list) or len(v) != HOURS:
            raise InputError(f"{where}.hourly: expected a list of {HOURS} rates (requests/s)")
        rates = tuple(_num(x, f"{where}.hourly[{i}]", 0.0, 1e6) * scale for i, x in enumerate(v))
        return rates, f"24 hourly rates{'' if scale == 1 else f' x {scale:g}'}", None
    p = Path(str(m["traffic_curve"]))
    path = p if p.is_absolute() else base / p
    c = _named(where, "traffic_curve", lambda: read_day(path))
    peaks = hourly_peaks(c.start_s, c.duration_s, c.rate) * scale
    how = f"{m['traffic_curve']}: {c.description}; hourly peaks" + (
        "" if scale == 1 else f" x {scale:g}"
    )
    return tuple(float(x) for x in peaks), how, None


def _model(m: Any, i: int, name: str, base: Path) -> ModelSpec:
    where0 = f"{name}: models[{i}]"
    if isinstance(m, dict) and (m.get("name") or m.get("model")):
        where0 += f" ({m.get('name') or m.get('model')})"
    m = _keys(m, MODEL_KEYS, where0)
    if "model" not in m and "name" not in m:
        raise InputError(f"{where0}: missing key 'model'")
    label = str(m.get("name") or m["model"])
    where = f"{name}: models[{i}] ({label})"
    hourly, how, ft = _traffic(m, where, base)
    slo = _keys(m.get("slo") or {}, SLO_KEYS, f"{where}.slo")
    ttft = _secs(slo["ttft"], f"{where}.slo.ttft") if slo.get("ttft") is not None else None
    tpot = _secs(slo["tpot"], f"{where}.slo.tpot") if slo.get("tpot") is not None else None
    if ft is not None and not slo:  # a workload file's tightest class SLOs
        ttft, tpot = ft.slo_ttft_s, ft.slo_tpot_s
    prompt0 = m.get("prompt", ft.prompt if ft is not None and ft.prompt else 1000)
    output0 = m.get("output", ft.output if ft is not None and ft.output else 200)
    pct = _num(slo.get("percentile", 99), f"{where}.slo.percentile", 50, 100)
    hw = m.get("hardware") or []
    if isinstance(hw, str):
        hw = [h.strip() for h in hw.split(",") if h.strip()]
    if not isinstance(hw, list) or not all(isinstance(h, str) for h in hw):
        raise InputError(f"{where}.hardware: expected a list of chip ids")
    lora = None
    if m.get("lora") is not None:
        lo = _keys(m["lora"], LORA_KEYS, f"{where}.lora")
        cost = lo.get("throughput_cost")
        if cost is not None and not lo.get("source"):
            raise InputError(f"{where}.lora.throughput_cost: give its source (lora.source)")
        pop = str(lo.get("popularity", "uniform"))
        if pop not in POPULARITY:
            raise InputError(
                f"{where}.lora.popularity: one of {', '.join(POPULARITY)}, got {pop!r}"
            )
        lora = Lora(
            _num(lo.get("adapters", 1), f"{where}.lora.adapters", 1, 100_000, True),
            _num(lo.get("rank", 16), f"{where}.lora.rank", 1, 4096, True),
            pop,
            None if cost is None else _num(cost, f"{where}.lora.throughput_cost", 0.0, 0.9),
            str(lo.get("source") or ""),
            _num(lo.get("slots", 0), f"{where}.lora.slots", 0, 100_000, True),
        )
    return ModelSpec(
        label,
        str(m.get("model") or label),
        hourly,
        how,
        _num(prompt0, f"{where}.prompt", 1, 2_000_000, True),
        _num(output0, f"{where}.output", 1, 2_000_000, True),
        ttft,
        tpot,
        pct,
        str(m.get("weights", "bf16")),
        str(m.get("kv_dtype", "bf16")),
        str(m.get("engine", "vllm")),
        _num(m.get("min_replicas", 1), f"{where}.min_replicas", 0, 4096, True),
        tuple(hw),
        lora,
        _flag(m.get("sleep", True), f"{where}.sleep"),
        _flag(m.get("share", True), f"{where}.share"),
    )


def _flag(v, where: str) -> bool:
    if not isinstance(v, bool):
        raise InputError(f"{where}: expected true or false, got {v!r}")
    return v


def read_fleet(path: str | Path) -> FleetSpec:
    """The fleet file (module docstring)."""
    name = str(path)
    d = _keys(read_yaml(path), TOP, name)
    base = Path(path).parent
    models = d.get("models")
    if not isinstance(models, list) or not models:
        raise InputError(f"{name}: models: expected a list of at least one model")
    specs = tuple(_model(m, i, name, base) for i, m in enumerate(models))
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise InputError(f"{name}: models: '{s.name}' twice (give each a distinct name)")
        seen.add(s.name)
    hw = _keys(d.get("hardware") or {}, {"owned", "rent"}, f"{name}: hardware")
    owned = []
    for i, o in enumerate(hw.get("owned") or []):
        where = f"{name}: hardware.owned[{i}]"
        o = _keys(o, OWNED_KEYS, where)
        if "type" not in o:
            raise InputError(f"{where}: missing key 'type'")
        usd = o.get("usd_per_gpu_hour")
        owned.append(
            Owned(
                str(o["type"]),
                _num(o.get("count"), f"{where}.count", 1, 100_000, True),
                None if usd is None else _num(usd, f"{where}.usd_per_gpu_hour", 0.0, 1e4),
            )
        )
    rent = []
    for i, r in enumerate(hw.get("rent") or []):
        where = f"{name}: hardware.rent[{i}]"
        r = _keys(r, RENT_KEYS, where)
        if "type" not in r:
            raise InputError(f"{where}: missing key 'type'")
        od, sp, lim = r.get("on_demand"), r.get("spot"), r.get("limit")
        pre = r.get("spot_preemptions_per_hour")
        rent.append(
            Rentable(
                str(r["type"]),
                None if od is None else _num(od, f"{where}.on_demand", 1e-6, 1e4),
                None
                if sp is None
                else "catalog"
                if sp == "catalog"
                else _num(sp, f"{where}.spot", 1e-6, 1e4),
                None if pre is None else _num(pre, f"{where}.spot_preemptions_per_hour", 0, 1),
                None if lim is None else _num(lim, f"{where}.limit", 0, 1_000_000, True),
            )
        )
    if not owned and not rent:
        raise InputError(f"{name}: hardware: give owned and/or rent chips")
    sc = _keys(d.get("autoscaling") or {}, SCALING_KEYS, f"{name}: autoscaling")
    policy = str(sc.get("policy", "predictive"))
    if policy not in POLICIES:
        raise InputError(f"{name}: autoscaling.policy must be predictive or reactive, got {policy}")
    up = sc.get("scale_up_delay")
    return FleetSpec(
        name,
        specs,
        tuple(owned),
        tuple(rent),
        _num(d.get("headroom", 0.1), f"{name}: headroom", 0.0, 0.95),
        policy,
        _secs(sc.get("scale_down_delay", "0s"), f"{name}: autoscaling.scale_down_delay"),
        None if up is None else _secs(up, f"{name}: autoscaling.scale_up_delay"),
        _num(d.get("requests", 200), f"{name}: requests", 20, 100_000, True),
        _num(d.get("seed", 0), f"{name}: seed", 0, 2**31, True),
    )

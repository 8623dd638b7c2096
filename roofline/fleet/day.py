"""A fleet's day: the placement of every hour (roofline.fleet.placement), what the autoscaler
pays and loses between hours, and the figures the fleet reports, each defined here once.

- GPU-hours per model: its replicas x GPUs per replica over the 24 hours.
- $/day: rented GPU-hours x their price, plus the owned GPUs' hourly cost x their count x 24
  (owned GPUs are paid whether busy or idle; a model is charged its owned GPU-hours at that
  cost, the idle rest is the fleet's), plus what the autoscaler adds between hours (below).
- Autoscaling between hours (the scale-up delay d of a model on a chip: weights / load bandwidth
  + engine start, roofline.serving.daysize.delay_for):
  predictive (the curve is known, so replicas for hour h are ordered d before it starts: no SLO
  lost to a ramp, each added rented replica paid d earlier); reactive (ordered at the hour's
  start: until d has passed only the replicas kept from the hour before serve, and the requests
  of those d seconds are lost to the SLO when the rate exceeds them). A removed replica is kept,
  and paid, for the scale-down delay. min_replicas per model.
- SLO attainment per model: the share of the day's requests arriving while the ready replicas'
  capacity (within the SLOs, the headroom spent) covers the rate; an hour the pools cannot hold
  (a shortfall) is lost whole. Spot: its capacity derated by the expected preempted share.
- Owned utilisation: owned GPUs placed / owned GPUs, per hour and over the day.
- Pooling gain = sized apart $/day - the fleet's $/day, where "sized apart" is each model
  placed alone on the rentable pools (same prices, spot, limits and autoscaling; owned GPUs
  still paid, idle); and against static peak: each model apart at its peak hour's replicas
  all day. A fleet's placement never costs more per hour than apart (apart is one of its
  feasible placements while the limits hold all models' apart replicas at once).
- Owned first: in no hour does a rented replica of a model run while the idle owned GPUs of a
  type the model runs on could hold the replicas that serve its work at a marginal cost of 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.fleet.placement import Hour, Pool, place

HOURS = 24


@dataclass(frozen=True)
class Problem:
    """A fleet's day as numbers: per model (rows) and pool (columns)."""

    names: tuple[str, ...]
    rates: np.ndarray  # [model, hour] requests/s
    min_replicas: np.ndarray  # [model]
    kappa: np.ndarray  # [model, pool] requests/s per replica (0: cannot run there)
    gpus: np.ndarray  # [model, pool] GPUs per replica
    delay_s: np.ndarray  # [model, pool] scale-up delay
    headroom: float
    pools: tuple[Pool, ...]
    owned_usd_per_gpu_hour: tuple[float, ...]  # per owned pool (0 where none given)
    policy: str = "predictive"
    scale_down_s: float = 0.0


@dataclass(frozen=True)
class DayPlan:
    hours: tuple[Hour, ...]
    gpu_hours: np.ndarray  # [model]
    cost: np.ndarray  # [model] $/day (rented + ramps + owned GPU-hours at the owned cost)
    rented_cost: float
    ramp_cost: float  # predictive pre-starts and scale-down tails, $
    owned_cost: float  # owned GPUs x 24 h x their cost
    total_cost: float
    slo_attainment: np.ndarray  # [model]
    owned_used: np.ndarray  # [hour, owned pool] GPUs placed
    short_hours: np.ndarray  # [model] hours with a shortfall
    preemptions: float  # expected spot preemptions in the day


def owned_fixed(p: Problem) -> float:
    return sum(
        (pl.limit or 0) * usd * HOURS
        for pl, usd in zip(
            [q for q in p.pools if q.kind == "owned"], p.owned_usd_per_gpu_hour, strict=True
        )
    )


def plan(p: Problem) -> DayPlan:
    """Every hour placed, then the day's figures (module docstring)."""
    n_m, n_p = p.kappa.shape
    solved: dict[tuple[float, ...], Hour] = {}  # hours of equal rates share one solve
    for h in range(HOURS):
        key = tuple(p.rates[:, h].tolist())
        if key not in solved:
            solved[key] = place(p.rates[:, h], p.min_replicas, p.kappa, p.gpus, list(p.pools))
    hours = tuple(solved[tuple(p.rates[:, h].tolist())] for h in range(HOURS))
    x = np.array([h.replicas for h in hours], dtype=float).reshape(HOURS, n_m, n_p)
    price = np.array([pl.price for pl in p.pools])
    gpu_h = (x * p.gpus[None]).sum(axis=(0, 2))
    rented = (x * p.gpus[None] * price[None, None]).sum(axis=(0, 2))
    prev = np.roll(x, 1, axis=0)  # the day repeats: hour 0 follows hour 23
    up = np.maximum(x - prev, 0.0)
    down = np.maximum(prev - x, 0.0)
    tail = min(p.scale_down_s, 3600.0) / 3600.0
    ramp = (down * p.gpus[None] * price[None, None] * tail).sum(axis=(0, 2))
    if p.policy == "predictive":
        lead = np.minimum(p.delay_s, 3600.0) / 3600.0
        ramp = ramp + (up * p.gpus[None] * price[None, None] * lead[None]).sum(axis=(0, 2))
    owned_cols = [j for j, pl in enumerate(p.pools) if pl.kind == "owned"]
    owned_rate = np.zeros(n_p)
    for j, usd in zip(owned_cols, p.owned_usd_per_gpu_hour, strict=True):
        owned_rate[j] = usd
    owned_charge = (x * p.gpus[None] * owned_rate[None, None]).sum(axis=(0, 2))
    # SLO attainment: capacity within the SLOs (headroom spent) = kappa / (1 - headroom)
    full = p.kappa / (1.0 - p.headroom)
    cap = (x * full[None]).sum(axis=2)  # [hour, model]
    kept = (np.minimum(x, prev) * full[None]).sum(axis=2)
    wait = np.where(up > 0, p.delay_s[None], 0.0).max(axis=2)  # longest start in the hour
    rate = p.rates.T  # [hour, model]
    short = np.array([h.short for h in hours])
    lost = np.where(rate > cap * (1 + 1e-9), 3600.0, 0.0)
    if p.policy == "reactive":
        ramp_lost = np.where(rate > kept * (1 + 1e-9), np.minimum(wait, 3600.0), 0.0)
        lost = np.maximum(lost, ramp_lost)
    lost = np.where(short > 0, 3600.0, lost)
    req = (rate * 3600.0).sum(axis=0)
    bad = (rate * lost).sum(axis=0)
    attain = np.where(req > 0, 1.0 - bad / np.where(req > 0, req, 1.0), 1.0)
    used = np.array([[(x[h, :, j] * p.gpus[:, j]).sum() for j in owned_cols] for h in range(HOURS)])
    lam = np.array([pl.preemptions_per_hour for pl in p.pools])
    pre = float((x * lam[None, None]).sum())  # replica-hours x preemptions per hour
    owned_cost = owned_fixed(p)
    cost = rented + ramp + owned_charge
    return DayPlan(
        hours,
        gpu_h,
        cost,
        float(rented.sum()),
        float(ramp.sum()),
        owned_cost,
        float(rented.sum() + ramp.sum()) + owned_cost,
        attain,
        used.reshape(HOURS, len(owned_cols)),
        (short > 0).sum(axis=0),
        pre,
    )


def alone(p: Problem, m: int, static: bool = False) -> Problem:
    """Model m by itself on the rentable pools (owned pools kept as columns, with nothing to
    give: count 0); `static`: its peak hour's rate all day."""
    pools = tuple(
        Pool(pl.chip, pl.kind, pl.price, 0, pl.preemptions_per_hour) if pl.kind == "owned" else pl
        for pl in p.pools
    )
    rates = p.rates[m : m + 1].copy()
    if static:
        rates[:] = rates.max()
    # a model that runs only on owned chips has no pool apart: its minimum cannot be met, so
    # it is dropped and the model's hours show as short (apart: None), not an infeasible program
    can = any(p.kappa[m, j] > 0 and pl.limit != 0 for j, pl in enumerate(pools))
    least = p.min_replicas[m : m + 1] if can else np.zeros(1, dtype=int)
    return Problem(
        (p.names[m],), rates, least, p.kappa[m : m + 1], p.gpus[m : m + 1],
        p.delay_s[m : m + 1], p.headroom, pools, tuple(0.0 for _ in p.owned_usd_per_gpu_hour),
        p.policy, p.scale_down_s,
    )  # fmt: skip


@dataclass(frozen=True)
class Apart:
    cost: float | None  # $/day, owned GPUs' cost included (None: a model cannot be served apart)
    static_cost: float | None
    per_model: tuple[float | None, ...]
    static_per_model: tuple[float | None, ...]


def apart(p: Problem) -> Apart:
    """Each model sized alone, autoscaled and at its static peak (module docstring)."""
    per, stat = [], []
    for m in range(len(p.names)):
        a = plan(alone(p, m))
        s = plan(alone(p, m, static=True))
        per.append(None if a.short_hours.any() else a.total_cost)
        stat.append(None if s.short_hours.any() else s.total_cost)
    fixed = owned_fixed(p)
    tot = None if None in per else fixed + sum(c for c in per if c is not None)
    st = None if None in stat else fixed + sum(c for c in stat if c is not None)
    return Apart(tot, st, tuple(per), tuple(stat))


def owned_first_violations(p: Problem, hour: Hour, h: int) -> list[str]:
    """Rented replicas whose work idle owned GPUs could take at a marginal cost of 0 (module
    docstring): for each rented replica of model m, an owned pool j it runs on with idle GPUs
    >= the GPUs of the owned replicas that serve as much (ceil(kappa_rented / kappa_owned))."""
    x = np.array(hour.replicas)
    out = []
    owned = [j for j, pl in enumerate(p.pools) if pl.kind == "owned"]
    for j in owned:
        idle = (p.pools[j].limit or 0) - float((x[:, j] * p.gpus[:, j]).sum())
        for m in range(len(p.names)):
            if p.kappa[m, j] <= 0:
                continue
            for k, pl in enumerate(p.pools):
                if pl.kind == "owned" or x[m, k] == 0 or pl.price <= 0:
                    continue
                served = p.kappa[m, k]
                need = np.ceil(served / p.kappa[m, j] * (1 - 1e-9)) * p.gpus[m, j]
                if need <= idle:
                    out.append(f"hour {h}: {p.names[m]} rents {pl.label} while {idle:g} owned "
                               f"{p.pools[j].chip} GPUs idle")  # fmt: skip
    return out

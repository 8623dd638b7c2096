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
- Shared replicas (co-location, roofline.fleet.placement): a shared replica's GPU-hours and $
  are split between its two models by their shares of its time (u / kappa'; half each when
  both are 0), its ramps half each; the capacity it gives a model within the SLOs is what the
  other leaves, (z - u_b / kappa'_b) x kappa'_a / (1 - headroom).
- Sleep (roofline.fleet.sharing): a model that sleeps holds no minimum in an hour of rate 0;
  a replica woken on an owned pool it slept on (up to its replicas there in its last busy hour)
  starts in the wake time instead of the scale-up delay (predictive: ordered that long before,
  reactive: the wake's requests lost to the SLO in the hour it wakes in).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.fleet.placement import Hour, Pool, Share, place

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
    shared: tuple[Share, ...] = ()  # the pairs that may share a replica's GPUs
    sleeps: tuple[bool, ...] = ()  # per model: asleep in its hours of rate 0 (empty: none)
    wake_s: np.ndarray | None = None  # [model, pool] level-1 wake time (nan: none)


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
    asleep_hours: np.ndarray | None = None  # [model] hours asleep
    wakes: np.ndarray | None = None  # [model] replicas woken from sleep (not cold-started)
    shared_gpu_hours: np.ndarray | None = None  # [model] its share of shared replicas' GPU-h


def owned_fixed(p: Problem) -> float:
    return sum(
        (pl.limit or 0) * usd * HOURS
        for pl, usd in zip(
            [q for q in p.pools if q.kind == "owned"], p.owned_usd_per_gpu_hour, strict=True
        )
    )


def minimums(p: Problem) -> np.ndarray:
    """[hour, model] the replicas each model must keep: its min_replicas, 0 while asleep."""
    mins = np.repeat(np.asarray(p.min_replicas)[None, :], HOURS, axis=0)
    if p.sleeps:
        asleep = np.array(p.sleeps, dtype=bool)[None, :] & (p.rates.T <= 0)
        mins = np.where(asleep, 0, mins)
    return mins


def shared_arrays(p: Problem, hours: tuple[Hour, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """z [hour, pair, pool] shared replicas, and the rates of a and of b they serve."""
    n_k, n_p = len(p.shared), len(p.pools)
    z = np.zeros((HOURS, n_k, n_p))
    ua, ub = np.zeros_like(z), np.zeros_like(z)
    for h, hr in enumerate(hours):
        if n_k:
            z[h] = np.array(hr.shared, dtype=float).reshape(n_k, n_p)
            u = np.array(hr.shared_rates, dtype=float).reshape(n_k, n_p, 2)
            ua[h], ub[h] = u[..., 0], u[..., 1]
    return z, ua, ub


def shared_split(p: Problem, z: np.ndarray, ua: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """[hour, model, pool] each model's share of the shared replicas (replica units) by its
    share of their time (u / kappa'), half each where neither is served (module docstring)."""
    out = np.zeros((HOURS, len(p.names), len(p.pools)))
    for k, sh in enumerate(p.shared):
        ta = np.divide(
            ua[:, k], sh.kappa_a[None], out=np.zeros_like(ua[:, k]), where=sh.kappa_a[None] > 0
        )
        tb = np.divide(
            ub[:, k], sh.kappa_b[None], out=np.zeros_like(ub[:, k]), where=sh.kappa_b[None] > 0
        )
        tot = ta + tb
        fa = np.where(tot > 0, ta / np.where(tot > 0, tot, 1.0), 0.5)
        out[:, sh.a] += z[:, k] * fa
        out[:, sh.b] += z[:, k] * (1.0 - fa)
    return out


def capacity(p: Problem, hours: tuple[Hour, ...], factor: np.ndarray | None = None) -> np.ndarray:
    """[hour, model] capacity within the SLOs the placed replicas give (headroom spent; shared
    replicas: what the other model leaves); `factor` [pool] scales each pool's capacity."""
    n_m, n_p = p.kappa.shape
    f = np.ones(n_p) if factor is None else factor
    x = np.array([h.replicas for h in hours], dtype=float).reshape(HOURS, n_m, n_p)
    cap = (x * (p.kappa / (1.0 - p.headroom) * f[None])[None]).sum(axis=2)
    z, ua, ub = shared_arrays(p, hours)
    for k, sh in enumerate(p.shared):
        cap[:, sh.a] += _left(z[:, k], ub[:, k], sh.kappa_b, sh.kappa_a * f, p.headroom)
        cap[:, sh.b] += _left(z[:, k], ua[:, k], sh.kappa_a, sh.kappa_b * f, p.headroom)
    return cap


def _left(z, u_other, k_other, k_mine, headroom: float) -> np.ndarray:
    """A shared replica's capacity left to one model: (z - u_other / kappa'_other) x kappa'."""
    used = np.divide(u_other, k_other[None], out=np.zeros_like(u_other), where=k_other[None] > 0)
    return (np.maximum(z - used, 0.0) * k_mine[None] / (1.0 - headroom)).sum(axis=1)


def gpus_per_hour(p: Problem, hours: tuple[Hour, ...]) -> np.ndarray:
    """[hour] GPUs placed, shared replicas counted once."""
    n_m, n_p = p.kappa.shape
    x = np.array([h.replicas for h in hours], dtype=float).reshape(HOURS, n_m, n_p)
    out = (x * p.gpus[None]).sum(axis=(1, 2))
    z, _, _ = shared_arrays(p, hours)
    for k, sh in enumerate(p.shared):
        out += (z[:, k] * sh.gpus[None]).sum(axis=1)
    return out


def plan(p: Problem) -> DayPlan:
    """Every hour placed, then the day's figures (module docstring)."""
    n_m, n_p = p.kappa.shape
    mins = minimums(p)
    solved: dict[tuple, Hour] = {}  # hours of equal rates and minimums share one solve
    keys = [(tuple(p.rates[:, h].tolist()), tuple(mins[h].tolist())) for h in range(HOURS)]
    for h, key in enumerate(keys):
        if key not in solved:
            solved[key] = place(p.rates[:, h], mins[h], p.kappa, p.gpus, list(p.pools), p.shared)
    hours = tuple(solved[k] for k in keys)
    x = np.array([h.replicas for h in hours], dtype=float).reshape(HOURS, n_m, n_p)
    z, ua, ub = shared_arrays(p, hours)
    xs = shared_split(p, z, ua, ub)  # [hour, model, pool] shared replicas, split
    g_sh = np.zeros((n_m, n_p))  # GPUs of a shared replica each model's share is of
    for sh in p.shared:
        g_sh[sh.a] = np.maximum(g_sh[sh.a], sh.gpus)
        g_sh[sh.b] = np.maximum(g_sh[sh.b], sh.gpus)
    price = np.array([pl.price for pl in p.pools])
    own_gpu = x * p.gpus[None] + xs * g_sh[None]  # [hour, model, pool] GPUs charged to each
    gpu_h = own_gpu.sum(axis=(0, 2))
    rented = (own_gpu * price[None, None]).sum(axis=(0, 2))
    prev = np.roll(x, 1, axis=0)  # the day repeats: hour 0 follows hour 23
    up = np.maximum(x - prev, 0.0)
    down = np.maximum(prev - x, 0.0)
    delay = np.repeat(p.delay_s[None], HOURS, axis=0)  # [hour, model, pool]
    woken = np.zeros((HOURS, n_m, n_p))
    if p.sleeps and p.wake_s is not None:
        delay, woken = _wake(p, x, up, delay)
    tail = min(p.scale_down_s, 3600.0) / 3600.0
    ramp = (down * p.gpus[None] * price[None, None] * tail).sum(axis=(0, 2))
    zprev = np.roll(z, 1, axis=0)
    zup, zdown = np.maximum(z - zprev, 0.0), np.maximum(zprev - z, 0.0)
    z_delay = np.zeros((HOURS, len(p.shared), n_p))
    for k, sh in enumerate(p.shared):
        z_delay[:, k] = np.maximum(p.delay_s[sh.a], p.delay_s[sh.b])[None]
        half = (zdown[:, k] * sh.gpus[None] * price[None] * tail).sum() / 2
        ramp[sh.a] += half
        ramp[sh.b] += half
    if p.policy == "predictive":
        lead = np.minimum(delay, 3600.0) / 3600.0
        ramp = ramp + (up * p.gpus[None] * price[None, None] * lead).sum(axis=(0, 2))
        for k, sh in enumerate(p.shared):
            z_lead = np.minimum(z_delay[:, k], 3600.0) / 3600.0
            half = (zup[:, k] * sh.gpus[None] * price[None] * z_lead).sum() / 2
            ramp[sh.a] += half
            ramp[sh.b] += half
    owned_cols = [j for j, pl in enumerate(p.pools) if pl.kind == "owned"]
    owned_rate = np.zeros(n_p)
    for j, usd in zip(owned_cols, p.owned_usd_per_gpu_hour, strict=True):
        owned_rate[j] = usd
    owned_charge = (own_gpu * owned_rate[None, None]).sum(axis=(0, 2))
    # SLO attainment: capacity within the SLOs (headroom spent) = kappa / (1 - headroom)
    full = p.kappa / (1.0 - p.headroom)
    cap = capacity(p, hours)  # [hour, model]
    kept = (np.minimum(x, prev) * full[None]).sum(axis=2)
    for k, sh in enumerate(p.shared):  # the shared replicas kept from the hour before
        keep = np.divide(np.minimum(z[:, k], zprev[:, k]), z[:, k], out=np.zeros_like(z[:, k]),
                         where=z[:, k] > 0)  # fmt: skip
        kept[:, sh.a] += _left(z[:, k] * keep, ub[:, k] * keep, sh.kappa_b, sh.kappa_a, p.headroom)
        kept[:, sh.b] += _left(z[:, k] * keep, ua[:, k] * keep, sh.kappa_a, sh.kappa_b, p.headroom)
    wait = np.where(up > 0, delay, 0.0).max(axis=2)  # longest start in the hour
    for k, sh in enumerate(p.shared):
        zw = np.where(zup[:, k] > 0, z_delay[:, k], 0.0).max(axis=1)
        wait[:, sh.a] = np.maximum(wait[:, sh.a], zw)
        wait[:, sh.b] = np.maximum(wait[:, sh.b], zw)
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
    for k, sh in enumerate(p.shared):
        used += z[:, k][:, owned_cols] * sh.gpus[owned_cols][None]
    lam = np.array([pl.preemptions_per_hour for pl in p.pools])
    pre = float((x * lam[None, None]).sum()) + float((z * lam[None, None]).sum())
    owned_cost = owned_fixed(p)
    cost = rented + ramp + owned_charge
    asleep = np.zeros_like(rate, dtype=bool)
    if p.sleeps:
        asleep = np.array(p.sleeps, dtype=bool)[None, :] & (rate <= 0)
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
        asleep.sum(axis=0),
        woken.sum(axis=(0, 2)),
        (xs * g_sh[None]).sum(axis=(0, 2)),
    )


def _wake(
    p: Problem, x: np.ndarray, up: np.ndarray, delay: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The delay of each hour's added replicas with sleep (module docstring): a sleeping model's
    replicas added on an owned pool it slept on, up to its replicas there in its last busy
    hour, start in the wake time. Returns (delay [hour, model, pool], replicas woken)."""
    assert p.wake_s is not None
    n_m = p.kappa.shape[0]
    owned = np.array([pl.kind == "owned" for pl in p.pools])
    delay = delay.copy()
    woken = np.zeros_like(x)
    for m in range(n_m):
        if not p.sleeps[m]:
            continue
        busy = [h for h in range(HOURS) if p.rates[m, h] > 0]
        if not busy:
            continue
        for h in range(HOURS):
            if p.rates[m, h - 1] > 0 or p.rates[m, h] <= 0:  # h - 1: the day repeats
                continue
            last = max((b for b in busy if b < h), default=max(busy))  # its last busy hour
            slept = np.where(owned, x[last, m], 0.0)
            ok = (up[h, m] > 0) & (up[h, m] <= slept) & np.isfinite(p.wake_s[m])
            delay[h, m] = np.where(ok, p.wake_s[m], delay[h, m])
            woken[h, m] = np.where(ok, up[h, m], 0.0)
    return delay, woken


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
        p.policy, p.scale_down_s, (), p.sleeps[m : m + 1],
        None if p.wake_s is None else p.wake_s[m : m + 1],
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
        for k, sh in enumerate(p.shared):  # shared replicas hold their GPUs too
            idle -= float(hour.shared[k][j] * sh.gpus[j]) if hour.shared else 0.0
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

"""A fleet over many days (issue 40 item 1): a Monte-Carlo of days around the fleet file's one
day, reported as percentiles over days. Each day d draws, from its own seed
(numpy SeedSequence([seed, d]): a day's figures do not depend on the order, the worker or the
backend that computes it):

- a rate multiplier m = exp(SIGMA_RATE * z), z ~ N(0, 1): lognormal, median 1. SIGMA_RATE = 0.15
  is an assumption (stated in the output), not a measurement: replace it with the spread of
  your own daily volumes (the standard deviation of log(day's requests / typical day's));
- its arrivals: each model's requests in each hour ~ Poisson(m x the file's rate x 3600) (Poisson
  arrivals within an hour, as `serve`'s workloads draw them; Kingman & others), the hour's
  rate = that count / 3600;
- an accuracy draw per chip: the realised capacity of a replica = the expected one x f,
  f = exp(s z) with median 1 and s = ln(high / low) / (2 x 1.645), so that f's 5th-95th
  percentile interval spans the throughput error band's width (roofline/catalog/bands.py:
  measured / expected in [low, high] for 90% of the published points) on the chip's family.

The day is placed on its realised rates (every hour, the same MILP as the one-day fleet:
roofline.fleet.day.plan; sizing is reused: a replica's capacity within the SLOs does not depend
on the rate, so the file's sizing serves every day), with the capacities the model expects; the
SLO attainment is then counted with the realised capacities (kappa x f): a day where the model
was optimistic loses the hours its replicas cannot carry (per model, the larger of that loss and
the one-day count with the expected capacities, which holds the reactive ramps). Per day: peak
GPUs (the most placed in any hour), GPU-hours, $/day, the fleet's SLO attainment
(requests-weighted over its models) and its worst model's. Percentiles over days: numpy's
linear interpolation (the default method).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from roofline.fleet.day import Problem, capacity, gpus_per_hour, plan

SIGMA_RATE = 0.15  # assumption: the spread of log(daily volume); see the module docstring
Z95 = 1.6448536269514722  # the standard normal's 95th percentile (scipy.stats.norm.ppf(0.95))
PERCENTILES = (10, 50, 90)
RATE_ASSUMPTION = (
    f"each day's rates = the file's x m, m lognormal with median 1 and sigma {SIGMA_RATE}"
    " (an assumption, not a measurement), then Poisson arrivals per hour"
)
ACCURACY = (
    "each day, per chip, a replica's realised capacity = expected x f, f lognormal with median 1"
    " whose 5th-95th percentiles span the chip family's throughput error band"
    " (hardware/bands.json); placements use the expected capacity, attainment the realised"
)


@dataclass(frozen=True)
class Shared:
    """What every day shares, as values: the fleet's day problem, the chip of each pool and
    the catalogs (a worker resolves the bands itself, once)."""

    problem: Problem
    seed: int
    catalog_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Day:
    day: int
    rate_multiplier: float
    peak_gpus: int
    gpu_hours: float
    cost: float
    slo_attainment: float  # requests-weighted over the fleet's models
    slo_attainment_min: float  # the worst model's


@cache
def chip_sigma(chip: str, catalog_dirs: tuple[str, ...]) -> float:
    """s of the chip's accuracy draw (module docstring); 0 where no band stands behind it."""
    from roofline.catalog.bands import band
    from roofline.catalog.load import load_catalog

    family = load_catalog(list(catalog_dirs)).accelerator(chip).efficiency.family
    b = band("throughput", family)
    if b is None or b.low <= 0 or b.high <= b.low:
        return 0.0
    return math.log(b.high / b.low) / (2.0 * Z95)


def prepare(shared: Shared) -> tuple[Shared, dict[str, float]]:
    """A worker's state: the shared values and each chip's sigma (the catalog loaded once)."""
    chips = dict.fromkeys(pl.chip for pl in shared.problem.pools)
    return shared, {c: chip_sigma(c, shared.catalog_dirs) for c in chips}


def draw(
    p: Problem, seed: int, day: int, sigma: dict[str, float]
) -> tuple[float, np.ndarray, np.ndarray]:
    """Day `day`'s draws from its own seed: the rate multiplier, the hours' rates [model, hour]
    and each pool's capacity factor (module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, day]))
    m = math.exp(SIGMA_RATE * float(rng.standard_normal()))
    rates = rng.poisson(p.rates * m * 3600.0) / 3600.0
    chips = list(sigma)
    z = rng.standard_normal(len(chips))
    f_chip = {c: math.exp(sigma[c] * float(z[k])) for k, c in enumerate(chips)}
    return m, rates, np.array([f_chip[pl.chip] for pl in p.pools])


def one_day(state: tuple[Shared, dict[str, float]], day: int) -> Day:
    """Day `day` drawn from its own seed, placed and counted (module docstring)."""
    shared, sigma = state
    p = shared.problem
    m, rates, factor = draw(p, shared.seed, day, sigma)
    dp = plan(replace(p, rates=rates))
    gpus_hour = gpus_per_hour(p, dp.hours)  # shared replicas counted once
    real = capacity(p, dp.hours, factor)  # [hour, model]
    r = rates.T
    short = np.array([h.short for h in dp.hours]) > 0
    lost = np.where((r > real * (1 + 1e-9)) | short, 3600.0, 0.0)
    req = (r * 3600.0).sum(axis=0)  # [model]
    planned = (1.0 - dp.slo_attainment) * req  # the one-day count (reactive ramps included)
    bad = np.minimum(np.maximum((r * lost).sum(axis=0), planned), req)
    per = np.where(req > 0, 1.0 - bad / np.where(req > 0, req, 1.0), 1.0)
    fleet = 1.0 - float(bad.sum()) / float(req.sum()) if req.sum() > 0 else 1.0
    return Day(
        day, m, int(gpus_hour.max()), float(dp.gpu_hours.sum()), dp.total_cost, fleet,
        float(per.min()) if len(per) else 1.0,
    )  # fmt: skip


def percentiles(days: list[Day]) -> dict[str, dict[str, float]]:
    """p10, p50, p90 over days of each figure (numpy's linear interpolation)."""
    out = {}
    for key in ("peak_gpus", "gpu_hours", "cost", "slo_attainment", "slo_attainment_min"):
        v = np.array([getattr(d, key) for d in days], dtype=float)
        out[key] = {f"p{q}": float(np.percentile(v, q)) for q in PERCENTILES}
    return out

"""Placement of one hour: how many replicas of each model on each pool of GPUs, at the least
marginal cost, as a mixed-integer program solved by scipy's MILP (HiGHS).

Why a solver and not a greedy fill: the two properties the fleet promises are statements about
an optimum. "Owned first" (no rented GPU while owned ones that could serve the same work at a
lower marginal cost sit idle) and "pooling never costs more than sizing apart" both hold at an
exact optimum (any cheaper move is a better feasible solution), while a greedy fill by cost per
request needs a repair pass and still loses up to one replica per model and pool (a gap bound,
not an optimum). The programs are small (models x pools integers, 24 per day) and HiGHS solves
each in milliseconds; scipy is a well-kept dependency with HiGHS inside its wheel.

Pools: each owned chip type (marginal cost 0: owned GPUs are paid whether they run or not), each
rentable type on demand and, where it has a spot price, on spot (spot and on-demand of a type
share the type's limit). kappa[m,p] is a replica's requests/s (roofline.fleet.sizing); on spot
the caller derates it by the share of time a replica is down, preemptions per hour x its
replacement time (the scale-up delay), so the placement holds the rate in expectation.

Variables, per hour: x[m,p] replicas of model m on pool p (integer >= 0), y[m,t] = 1 when model
m uses rented type t (binary; at most one rented type per model and hour, so a model of one
fleet deploys as `size` deploys it: one chip type, topped up from owned pools where it has some),
s[m] >= 0 the rate it is short of (requests/s).

    minimise   sum x[m,p] gpus[m,p] price[p] + EPS sum x[m,p] gpus[m,p] + SHORT sum s[m]
    subject to sum_p x[m,p] kappa[m,p] + s[m] >= rate[m]       (each model's rate served)
               sum_p x[m,p] >= min_replicas[m]
               sum_m x[m,p] gpus[m,p] <= owned count of p       (each owned pool)
               sum_m (x[m,od] + x[m,spot]) gpus[m,t] <= limit[t] (each rented type)
               x[m,p] <= BIG y[m,t(p)],  sum_t y[m,t] <= 1       (one rented type per model)

Shared replicas (co-location, roofline.fleet.sharing): for each pair k = (a, b) of models that
may share one replica's GPUs, z[k,p] shared replicas on pool p (integer >= 0, g[k,p] GPUs each)
and the rates u_a[k,p], u_b[k,p] >= 0 they serve of a and of b, with

               u_a[k,p] / kappa'_a[k,p] + u_b[k,p] / kappa'_b[k,p] <= z[k,p]   (time shared)

(kappa': each model's capacity on its half of the GPU); u enters each model's rate row, z its
minimum (a shared replica runs an engine of each), the pools' GPU counts and limits, and the
rented-type links of both models; it costs z g (price + EPS). z = 0 is the placement without
sharing, so sharing never costs more (an exact optimum of a wider program).

EPS prefers fewer GPUs among equal costs (size's tie-break): 1e-4 $ per GPU-hour, above HiGHS's
absolute MIP gap (1e-6, which scipy does not expose: at EPS 1e-6 an all-owned hour, whose
objective is EPS x GPUs, stopped at any placement within a GPU or two of the fewest, so sharing
an owned GPU was chosen or not by the solver's path) and far below any price step (100 GPUs x
EPS = $0.01); SHORT makes a shortfall the last resort: of the rate (reported in `short`) or of a
model's min_replicas (`below_min`: a minimum the pools cannot hold, not an infeasible program);
it appears only when the pools cannot hold them, and is reported, never hidden."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-4  # $ per GPU-hour: fewer GPUs among equal costs (module docstring)
SHORT = 1e7  # $ per (request/s) short: above any placement's cost
MIN_SHORT = 1e4  # $ per replica below a minimum: above any hour's cost, below a rate short


@dataclass(frozen=True)
class Pool:
    """GPUs of one chip type bought one way: owned, on demand or spot."""

    chip: str
    kind: str  # "owned", "on-demand" or "spot"
    price: float  # marginal $ per GPU-hour (owned: 0)
    limit: int | None  # GPUs (owned: the count; rented: the type's limit, shared od + spot)
    preemptions_per_hour: float = 0.0  # spot: a replica's expected preemptions per hour

    @property
    def label(self) -> str:
        return f"{self.chip} {self.kind}"


@dataclass(frozen=True, eq=False)
class Share:
    """Two models that may share one replica's GPUs (module docstring): per pool, each one's
    capacity on its half (kappa', 0: not there) and the GPUs of a shared replica."""

    a: int
    b: int
    kappa_a: np.ndarray  # [pool] requests/s
    kappa_b: np.ndarray  # [pool]
    gpus: np.ndarray  # [pool]

    def ok(self) -> np.ndarray:
        return (self.kappa_a > 0) & (self.kappa_b > 0) & (self.gpus > 0)


@dataclass(frozen=True)
class Hour:
    """One hour's placement: replicas[m][p], the rate each model is short of, the cost; shared
    replicas z[k][p] of each pair k and the rates (u_a, u_b) they serve on each pool."""

    replicas: tuple[tuple[int, ...], ...]
    short: tuple[float, ...]
    cost: float  # $ for the hour (marginal: rented GPUs only)
    shared: tuple[tuple[int, ...], ...] = ()
    shared_rates: tuple[tuple[tuple[float, float], ...], ...] = ()
    below_min: tuple[int, ...] = ()  # replicas short of each model's minimum (pools full)


def place(
    rates: np.ndarray,
    min_replicas: np.ndarray,
    kappa: np.ndarray,
    gpus: np.ndarray,
    pools: list[Pool],
    shared: tuple[Share, ...] = (),
) -> Hour:
    """One hour (module docstring). rates, min_replicas: per model; kappa[m,p], gpus[m,p]: a
    replica's requests/s (0: model m cannot run on pool p) and GPUs; pools: the columns;
    shared: the pairs that may share a replica's GPUs."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n_m, n_p = kappa.shape
    types = sorted({p.chip for p in pools if p.kind != "owned"})
    n_t, n_k = len(types), len(shared)
    nx, ny = n_m * n_p, n_m * n_t
    nz = n_k * n_p
    o_s, o_z = nx + ny, nx + ny + n_m  # offsets: shortfalls, shared replicas,
    o_a, o_b = o_z + nz, o_z + 2 * nz  # the rates of a and of b they serve
    o_m = o_z + 3 * nz  # replicas each model is below its minimum (the pools cannot hold it)
    n = o_m + n_m
    ok = kappa > 0
    price = np.array([p.price for p in pools])
    c = np.zeros(n)
    c[:nx] = (gpus * (price[None, :] + EPS)).ravel()
    c[o_s:o_z] = SHORT
    c[o_m:] = MIN_SHORT
    for k, sh in enumerate(shared):
        c[o_z + k * n_p : o_z + (k + 1) * n_p] = sh.gpus * (price + EPS)
    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(row: np.ndarray, a: float, b: float) -> None:
        rows.append(row)
        lo.append(a)
        hi.append(b)

    for m in range(n_m):
        r = np.zeros(n)
        r[m * n_p : (m + 1) * n_p] = kappa[m]
        r[o_s + m] = 1.0
        for k, sh in enumerate(shared):
            if sh.a == m:
                r[o_a + k * n_p : o_a + (k + 1) * n_p] = 1.0
            if sh.b == m:
                r[o_b + k * n_p : o_b + (k + 1) * n_p] = 1.0
        add(r, float(rates[m]), np.inf)
        if min_replicas[m] > 0:
            r = np.zeros(n)
            r[m * n_p : (m + 1) * n_p] = ok[m]
            for k, sh in enumerate(shared):
                if m in (sh.a, sh.b):
                    r[o_z + k * n_p : o_z + (k + 1) * n_p] = sh.ok()
            r[o_m + m] = 1.0
            add(r, float(min_replicas[m]), np.inf)
    for k, sh in enumerate(shared):  # time shared: u_a / kappa'_a + u_b / kappa'_b <= z
        for jj in np.flatnonzero(sh.ok()):
            r = np.zeros(n)
            r[o_a + k * n_p + jj] = 1.0 / sh.kappa_a[jj]
            r[o_b + k * n_p + jj] = 1.0 / sh.kappa_b[jj]
            r[o_z + k * n_p + jj] = -1.0
            add(r, -np.inf, 0.0)
    for j, p in enumerate(pools):
        if p.kind == "owned" and p.limit is not None:
            r = np.zeros(n)
            r[j:nx:n_p] = gpus[:, j]
            for k, sh in enumerate(shared):
                r[o_z + k * n_p + j] = sh.gpus[j]
            add(r, -np.inf, float(p.limit))
    big = np.zeros(nx)
    big_z = np.zeros(nz)
    for t_i, t in enumerate(types):
        cols = [j for j, p in enumerate(pools) if p.chip == t and p.kind != "owned"]
        limit = next((pools[j].limit for j in cols if pools[j].limit is not None), None)
        if limit is not None:
            r = np.zeros(n)
            for j in cols:
                r[j:nx:n_p] = gpus[:, j]
                for k, sh in enumerate(shared):
                    r[o_z + k * n_p + j] = sh.gpus[j]
            add(r, -np.inf, float(limit))
        for m in range(n_m):
            for j in cols:
                if not ok[m, j]:
                    continue
                # enough replicas for the rate (or the minimum) on this pool alone
                need = max(rates[m] / kappa[m, j], min_replicas[m]) + 1
                bound = float(np.ceil(need))
                if limit is not None:
                    bound = min(bound, limit // max(int(gpus[m, j]), 1))
                big[m * n_p + j] = bound
                r = np.zeros(n)
                r[m * n_p + j] = 1.0
                r[nx + m * n_t + t_i] = -bound
                add(r, -np.inf, 0.0)
        for k, sh in enumerate(shared):  # a shared replica on a rented type: both models' type
            for j in cols:
                if not sh.ok()[j]:
                    continue
                need = rates[sh.a] / sh.kappa_a[j] + rates[sh.b] / sh.kappa_b[j]
                need = max(need, min_replicas[sh.a], min_replicas[sh.b]) + 1
                bound = float(np.ceil(need))
                if limit is not None:
                    bound = min(bound, limit // max(int(sh.gpus[j]), 1))
                big_z[k * n_p + j] = bound
                for m in (sh.a, sh.b):
                    r = np.zeros(n)
                    r[o_z + k * n_p + j] = 1.0
                    r[nx + m * n_t + t_i] = -bound
                    add(r, -np.inf, 0.0)
    for m in range(n_m):
        if n_t:
            r = np.zeros(n)
            r[nx + m * n_t : nx + (m + 1) * n_t] = 1.0
            add(r, -np.inf, 1.0)
    upper = np.full(n, np.inf)
    upper[:nx] = np.where(ok.ravel(), np.inf, 0.0)
    for m in range(n_m):  # owned pools: at most what the pool holds
        for j, p in enumerate(pools):
            if p.kind == "owned" and ok[m, j] and p.limit is not None:
                upper[m * n_p + j] = p.limit // max(int(gpus[m, j]), 1)
            elif p.kind != "owned" and ok[m, j]:
                upper[m * n_p + j] = big[m * n_p + j]
    upper[nx : nx + ny] = 1.0
    for k, sh in enumerate(shared):
        can = sh.ok()
        for j, p in enumerate(pools):
            q = k * n_p + j
            if not can[j]:
                upper[o_z + q] = upper[o_a + q] = upper[o_b + q] = 0.0
            elif p.kind == "owned" and p.limit is not None:
                upper[o_z + q] = p.limit // max(int(sh.gpus[j]), 1)
            elif p.kind != "owned":
                upper[o_z + q] = big_z[q]
    integrality = np.ones(n)
    integrality[o_s:o_z] = 0
    integrality[o_a:o_m] = 0
    cons = LinearConstraint(np.array(rows), np.array(lo), np.array(hi)) if rows else ()
    res = milp(
        c,
        integrality=integrality,
        bounds=Bounds(np.zeros(n), upper),
        constraints=cons,
        options={"mip_rel_gap": 1e-9, "time_limit": 30.0},
    )
    if res.x is None:  # cannot happen (the shortfall keeps it feasible): say so loudly
        raise RuntimeError(f"placement: HiGHS found no solution ({res.message})")
    x = np.rint(res.x[:nx]).astype(int).reshape(n_m, n_p)
    z = np.rint(res.x[o_z:o_a]).astype(int).reshape(n_k, n_p)
    ua = np.where(z > 0, res.x[o_a:o_b].reshape(n_k, n_p), 0.0)
    ub = np.where(z > 0, res.x[o_b:o_m].reshape(n_k, n_p), 0.0)
    below = np.rint(res.x[o_m:]).astype(int)
    served = (x * kappa).sum(axis=1)
    for k, sh in enumerate(shared):
        served[sh.a] += ua[k].sum()
        served[sh.b] += ub[k].sum()
    short = np.maximum(0.0, rates - served)
    cost = float((x * gpus * price[None, :]).sum())
    for k, sh in enumerate(shared):
        cost += float((z[k] * sh.gpus * price).sum())
    return Hour(
        tuple(tuple(int(v) for v in row) for row in x),
        tuple(_small(s, r) for s, r in zip(short, rates, strict=True)),
        cost,
        tuple(tuple(int(v) for v in row) for row in z),
        tuple(
            tuple((float(a), float(b)) for a, b in zip(ua[k], ub[k], strict=True))
            for k in range(n_k)
        ),
        tuple(int(v) for v in below),
    )


def _small(short: float, rate: float) -> float:
    """A shortfall within rounding of the rate is none: HiGHS's primal feasibility tolerance
    (1e-7, on rows scaled by 1 / kappa' where a shared replica serves) leaves served rates a few
    1e-6 of a request/s short of exact."""
    return float(short) if short > 1e-5 * max(1.0, float(rate)) else 0.0

"""Fit one chip's kernel shares and one engine's host costs on it to a user's own benchmark runs,
and write them as a user-catalog calibration (roofline/catalog/calibrations.py; the shipped
catalog never changes).

The serving model's step (roofline/timing/host.py, roofline/step/phases.py) is the kernels' time
plus the engine's host costs, and a request's TTFT adds the API server's path
(roofline/engines/scheduler.py Frontend). Five figures are what a cluster's own kernels, software
and host CPU set:

    compute              the chip's compute share (prefill GEMMs and attention; with kernel
                         curves, every curve's plateau scaled by fitted / family share),
    memory               the chip's bandwidth share (decode's weight and KV reads, likewise),
    cpu_step_us          per step, every step (TPOT and TTFT),
    cpu_per_seq_us       per running sequence per step, for the chip's family,
    request_latency_us   per request, outside the steps (TTFT only).

A slower kernel and a slower host are not told apart by one load at one length: decode's weight
read and cpu_step are both constant in the batch. They separate across runs: a compute-bound
prefill's time grows with the prompt at the compute share while cpu_step and request_latency do
not; TPOT's growth with the batch's context (the KV read, at the bandwidth share) differs from its
growth with the batch's count (cpu_per_seq). So the fit is regularised (a maximum a posteriori
estimate: Tarantola 2005, "Inverse Problem Theory", §3.2, least squares with a Gaussian prior):

    minimise  Σ_runs,metrics (ln(expected / measured) / σ_data)²  +  Σ_params z²

with each parameter's offset from the catalog's value z in units of its prior width: a share as
catalog · exp(σ_share · z), σ_share = the family's out-of-sample median |error| (hardware/
families.yaml error_band, LOSO) / 0.6745 (the median of |N(0, σ)| is 0.6745 σ); a host cost as
catalog + σ_host · z, σ_host = the largest figure of that cost the catalog holds for any engine and
family, at least this chip's (a weak prior: one standard deviation is the widest cost known).
σ_data = 0.05 is the spread of one benchmark figure between repeated runs (vllm-project/vllm PR
#7062: three runs of benchmark_serving, p90 TTFT 333 / 319 / 341 ms, p90 TPOT 303 / 357 / 349 ms)
[uncertain]. The metrics are TTFT p50 and TPOT p50 and p99 (smooth in the parameters; a TTFT
tail and a window's throughput are set by a few requests' queueing and the last completions).

Minimised by Levenberg–Marquardt on the simulator itself (Levenberg 1944, Marquardt 1963:
Gauss–Newton with a damped diagonal; each iteration also tries the undamped step, which can cross
a jump the damped one lands on), shares kept in (0, 1] and costs non-negative; the Jacobian by
forward differences of 0.4 prior widths (a run's p50 jumps by a per cent or so as the arrivals'
phase against the steps shifts: narrow differences would follow the jumps), carried between
steps by Broyden's update (1965). Simulations are deterministic (one seed). When the runs hold
more figures than there are parameters, their own misfit then sets their weight (the residual
variance, at least 0.01 [uncertain], and each figure's jitter, its largest departure from the
linear prediction under three moves of 0.1 prior widths, added in quadrature) and the fit is
refined: runs the model fits closely pull harder than the prior, runs it fits badly leave the
prior more say. The uncertainty is the posterior's (Jᵀ J + I)⁻¹ at the optimum (Tarantola
§3.2.3), in prior widths; a parameter is identified when the runs narrow its prior to half its
width or less, else it stays near the catalog's, held by the prior. The jumps can still stall the
search short of the optimum: of ten draws of the tests' synthetic runs, nine came back within 7%
of the figures they were served with and one left cpu_step 11% off.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from roofline.cases.benchfiles import BenchRun
from roofline.catalog.calibrations import HOST_US, SHARES, ChipCalibration, calibrated
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.units import US

PARAMS = (*SHARES, *HOST_US)
FIT_METRICS = ("ttft_p50_ms", "tpot_p50_ms", "tpot_p99_ms")
SIGMA_DATA = 0.05  # ln units: one benchmark figure's spread between runs (module docstring)
SIGMA_FLOOR = 0.01  # ln units: the serving model's own jitter in a p50 (module docstring)
MEDIAN_ABS_NORMAL = 0.6745  # median of |N(0, 1)|
DEFAULT_BAND = 0.2  # a family without an error band: a share's median |error| [uncertain]
IDENTIFIED = 0.5  # identified: the posterior's σ at most this share of the prior's
STEP_Z = 0.4  # forward-difference step, in prior widths
JITTER_Z = 0.1  # the moves that show a figure's jitter, in prior widths
_MAX_ITER = 40
_TRIES = 3  # damping increases tried before the Jacobian is taken afresh
_TOL = 1e-3  # stop when the cost falls by less than this share

Simulate = Callable[[Accelerator, BenchRun], dict[str, float]]


@dataclass(frozen=True)
class Param:
    """One fitted figure: shares as shares of peak, host costs in µs."""

    name: str
    catalog: float
    fitted: float
    sigma: float  # the posterior's standard deviation, in the figure's units
    prior_sigma: float  # the prior's, likewise (a share's: at the catalog value)
    identified: bool  # the runs narrowed the prior to IDENTIFIED of its width or less


@dataclass(frozen=True)
class BenchFit:
    engine: str
    hardware: str
    family: str
    params: tuple[Param, ...]
    runs: int
    rms_log_error_before: float
    rms_log_error_after: float
    sigma_data: float  # the σ_data the uncertainties use (raised to the rms error, if larger)
    iterations: int

    @property
    def fitted(self) -> dict[str, float]:
        return {p.name: p.fitted for p in self.params}

    @property
    def catalog(self) -> dict[str, float]:
        return {p.name: p.catalog for p in self.params}


def catalog_values(hw: Accelerator, engine_name: str) -> dict[str, float]:
    """The catalog's shares of the chip and host costs (µs) of the engine on it."""
    prof = _profile(hw, engine_name)
    eff = hw.efficiency
    return {
        "compute": eff.compute,
        "memory": eff.memory,
        "cpu_step_us": prof.cpu_step_s / US,
        "cpu_per_seq_us": dict(prof.cpu_per_seq_s).get(eff.family, 0.0) / US,
        "request_latency_us": prof.request_latency_s / US,
    }


def _profile(hw: Accelerator, engine_name: str):
    engines = hw.efficiency.engines or {}
    if engine_name not in engines:
        raise InputError(f"engine '{engine_name}' has no host costs in the catalog for {hw.id}")
    return engines[engine_name]


def with_values(hw: Accelerator, engine_name: str, values: dict[str, float]) -> Accelerator:
    """The chip as a calibration with these values leaves it (catalog_calibration.calibrated: the
    catalog applies a written calibration the same way); a new object, so identity caches stay
    correct."""
    _profile(hw, engine_name)
    cal = ChipCalibration("fit", hw.id, engine_name, values, hw.efficiency.source)
    return replace(hw, efficiency=calibrated(hw.efficiency, cal))


def prior_sigmas(hw: Accelerator, start: dict[str, float]) -> dict[str, float]:
    """Each parameter's prior width (module docstring): ln units for a share, µs for a cost."""
    band = hw.efficiency.error_band
    share = (band if band else DEFAULT_BAND) / MEDIAN_ABS_NORMAL
    engines = hw.efficiency.engines.values()
    widest = {
        "cpu_step_us": max(e.cpu_step_s for e in engines) / US,
        "cpu_per_seq_us": max((v for e in engines for _, v in e.cpu_per_seq_s), default=0) / US,
        "request_latency_us": max(e.request_latency_s for e in engines) / US,
    }
    out = dict.fromkeys(SHARES, share)
    for k in HOST_US:
        out[k] = max(widest[k], start[k])
        if out[k] <= 0:
            raise InputError(f"the catalog holds no {k} to set its prior width from")
    return out


class _Space:
    """Parameters from their prior offsets z (module docstring) and back: bounds in z."""

    def __init__(self, start: dict[str, float], sigma: dict[str, float]) -> None:
        self.start, self.sigma = start, sigma
        self.hi = np.array(
            [math.log(1.0 / start[k]) / sigma[k] if k in SHARES else np.inf for k in PARAMS]
        )
        self.lo = np.array([-np.inf if k in SHARES else -start[k] / sigma[k] for k in PARAMS])

    def values(self, z: np.ndarray) -> dict[str, float]:
        out = {}
        for k, zk in zip(PARAMS, np.clip(z, self.lo, self.hi), strict=True):
            s, c = self.sigma[k], self.start[k]
            out[k] = min(c * math.exp(s * zk), 1.0) if k in SHARES else max(c + s * zk, 0.0)
        return out


def _log_errors(hw, engine_name, runs, simulate, values) -> np.ndarray:
    trial = with_values(hw, engine_name, values)
    out: list[float] = []
    for run in runs:
        pred = simulate(trial, run)
        out.extend(
            math.log(max(pred[m], 1e-12) / run.measured[m])
            for m in FIT_METRICS
            if m in run.measured
        )
    return np.asarray(out)


def fit_runs(
    runs: Sequence[BenchRun], hw: Accelerator, engine_name: str, simulate: Simulate
) -> BenchFit:
    """The maximum a posteriori shares and host costs for the runs (module docstring)."""
    if not runs:
        raise InputError("--calibrate needs at least one benchmark run")
    start = catalog_values(hw, engine_name)
    sigma = prior_sigmas(hw, start)
    space = _Space(start, sigma)

    def logs(z: np.ndarray) -> np.ndarray:
        return _log_errors(hw, engine_name, runs, simulate, space.values(z))

    z = np.zeros(len(PARAMS))
    e = e0 = logs(z)
    if not len(e):
        raise InputError("--calibrate needs runs that measured TTFT or TPOT p50 or p99")
    n = len(e)
    common = SIGMA_DATA
    s_data: float | np.ndarray = common
    z, e, jac, iterations = _minimise(logs, z, e, space, s_data)
    if n > len(PARAMS):  # the runs' own misfit sets their weight, then the fit is refined
        common = max(math.sqrt(_dot(e, e) / (n - len(PARAMS))), SIGMA_FLOOR)
        jac = _jacobian(logs, z, e, space)
        s_data = np.sqrt(common**2 + _jitter(logs, z, e, jac) ** 2)
        z, e, jac, it = _minimise(logs, z, e, space, s_data, jac)
        iterations += it
    rms_after = math.sqrt(_dot(e, e) / n)
    jac = _jacobian(logs, z, e, space)  # afresh, for the uncertainties
    w = jac / np.broadcast_to(s_data, e.shape)[:, None]
    post = _solve(_gram(w) + np.eye(len(z)), np.eye(len(z)))  # z units; prior: I
    fitted = space.values(z)
    params = []
    for i, k in enumerate(PARAMS):
        sz = math.sqrt(max(post[i, i], 0.0))
        scale = fitted[k] * sigma[k] if k in SHARES else sigma[k]  # d value / dz
        prior = start[k] * sigma[k] if k in SHARES else sigma[k]
        params.append(Param(k, start[k], fitted[k], scale * sz, prior, sz <= IDENTIFIED))
    return BenchFit(
        engine_name,
        hw.id,
        hw.efficiency.family,
        tuple(params),
        len(runs),
        math.sqrt(_dot(e0, e0) / n),
        rms_after,
        common,
        iterations,
    )


def _minimise(logs, z: np.ndarray, e: np.ndarray, space: _Space, s_data, jac=None):
    """Levenberg–Marquardt from z with the data's σ s_data: (z, log errors, Jacobian at z,
    iterations). The Jacobian is taken by differences (_jacobian), then carried by
    Broyden's rank-one update after each accepted step (Broyden 1965) and taken afresh only
    when a step fails on the carried one: one simulation per step instead of one per
    parameter."""
    sd = np.broadcast_to(s_data, e.shape)

    def cost_of(e: np.ndarray, z: np.ndarray) -> float:
        r = np.concatenate([e / sd, z])
        return _dot(r, r)

    cost = cost_of(e, z)
    lam, it, fresh = 1e-2, 0, jac is None
    if jac is None:
        jac = _jacobian(logs, z, e, space)
    while it < _MAX_ITER:
        it += 1
        full = np.vstack([jac / sd[:, None], np.eye(len(z))])
        jtj, g = _gram(full), _matvec(full.T, np.concatenate([e / sd, z]))
        accepted = None
        # the damped step, then the undamped one (the whole Gauss–Newton step can cross a
        # jump the shorter one lands on), then more damping
        for damping in (lam, 0.0, *(lam * 4.0**k for k in range(1, _TRIES))):
            step = _solve(jtj + damping * np.diag(np.diag(jtj)), -g[:, None])[:, 0]
            zn = np.clip(z + step, space.lo, space.hi)
            en = logs(zn)
            cn = cost_of(en, zn)
            if cn < cost:
                accepted = zn, en, cn
                lam = max(damping / 4.0, 1e-6)
                break
        else:
            lam *= 4.0**_TRIES
        if accepted is None:
            if fresh:
                break
            jac, fresh = _jacobian(logs, z, e, space), True
            continue
        zn, en, cn = accepted
        dz = zn - z
        if _dot(dz, dz) > 0:  # Broyden: the secant through the two points
            jac = jac + np.outer(en - e - _matvec(jac, dz), dz) / _dot(dz, dz)
        drop = (cost - cn) / max(cost, 1e-30)
        z, e, cost, fresh = zn, en, cn, False
        if drop < _TOL:
            break
    return z, e, jac, it


# The fit's linear algebra, in plain floats (a few rows by five parameters): BLAS picks its
# kernels by the CPU (OpenBLAS's Haswell, Zen and SkylakeX kernels sum in different orders), and a
# last-bit difference in one step moves where the jump-prone search stops (cpu_step 2,497 µs on
# one machine, 2,518 µs on another, from the same runs); correctly rounded sums (math.fsum) and
# elimination in Python floats give every machine the same fit.


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return math.fsum((np.asarray(a, float) * np.asarray(b, float)).tolist())


def _matvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.array([_dot(row, v) for row in a])


def _gram(a: np.ndarray) -> np.ndarray:
    """aᵀ a."""
    return np.array(
        [[_dot(a[:, i], a[:, j]) for j in range(a.shape[1])] for i in range(a.shape[1])]
    )


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b (b: one column or several), Gauss–Jordan elimination with partial pivoting."""
    n = len(a)
    m = [[*map(float, a[i]), *map(float, b[i])] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if m[p][c] == 0.0:
            raise np.linalg.LinAlgError("singular matrix")
        m[c], m[p] = m[p], m[c]
        pivot = m[c]
        for r in range(n):
            if r != c and m[r][c] != 0.0:
                f = m[r][c] / pivot[c]
                m[r] = [x - f * y for x, y in zip(m[r], pivot, strict=True)]
    return np.array([[x / m[i][i] for x in m[i][n:]] for i in range(n)])


def _jitter(
    logs, z: np.ndarray, e: np.ndarray, jac: np.ndarray, dz: float = JITTER_Z
) -> np.ndarray:
    """Each metric's own roughness in the serving model: its largest departure from the linear
    prediction under three small moves of every parameter (a p50 jumps between requests as the
    arrivals' phase against the steps shifts)."""
    dev = []
    for signs in ((1, -1, 1, -1, 1), (1, 1, -1, -1, -1), (-1, 1, 1, -1, 1)):
        u = dz * np.asarray(signs[: len(z)], dtype=float)
        dev.append(logs(z + u) - e - _matvec(jac, u))
    return np.max(np.abs(dev), axis=0)


def _jacobian(
    logs, z: np.ndarray, e: np.ndarray, space: _Space, step: float = STEP_Z
) -> np.ndarray:
    """d ln(expected / measured) / dz by forward differences (backward at an upper bound), over
    steps wide enough to average the p50s' jumps between requests."""
    jac = np.empty((len(e), len(z)))
    for j in range(len(z)):
        h = step if z[j] + step <= space.hi[j] else -step
        zh = z.copy()
        zh[j] += h
        jac[:, j] = (logs(zh) - e) / h
    return jac


def calibration_id(engine_name: str, hw_id: str) -> str:
    return f"{engine_name}-{hw_id}"


def calibration_filename(engine_name: str, hw_id: str) -> str:
    return f"calibration-{calibration_id(engine_name, hw_id)}.yaml"


def calibration_text(fit: BenchFit, sources: Sequence[str], today: _dt.date | None = None) -> str:
    """The `calibrations:` entry of the fit (catalog_calibration.py) as YAML (JSON-quoted strings
    are YAML), for a user catalog directory."""
    day = (today or _dt.date.today()).isoformat()
    ident = [p.name for p in fit.params if p.identified]
    held = [p.name for p in fit.params if not p.identified]
    src = (
        f"calibrated by roofline validate --calibrate on {day} from {fit.runs} benchmark "
        f"run(s) of {fit.engine} on {fit.hardware} ({', '.join(sources)}): maximum a "
        f"posteriori fit of the chip's shares and the engine's host costs to the runs' TTFT "
        f"p50 and TPOT p50/p99 (roofline/cases/fit.py), rms log error "
        f"{fit.rms_log_error_before:.3f} with the catalog's figures, "
        f"{fit.rms_log_error_after:.3f} fitted; identified by the runs: "
        f"{', '.join(ident) or 'none'}; near the catalog's, held by its prior: "
        f"{', '.join(held) or 'none'}"
    )
    notes = "; ".join(
        f"{p.name} {p.fitted:.6g} +/- {p.sigma:.2g} (catalog {p.catalog:.6g}, "
        f"{'identified' if p.identified else 'prior'})"
        for p in fit.params
    )
    lines = [
        "# Written by `roofline validate --calibrate`; read with --catalog DIR. The shares apply",
        f"# to {fit.hardware} under every engine (the model's kernel curves are the chip's); the",
        f"# host costs to {fit.engine} on {fit.hardware} only. The shipped catalog is unchanged.",
        "calibrations:",
        f"- id: {calibration_id(fit.engine, fit.hardware)}",
        f"  hardware: {fit.hardware}",
        f"  engine: {fit.engine}",
        *(f"  {p.name}: {p.fitted:.6g}" for p in fit.params),
        f"  source: {json.dumps(src)}",
        f"  notes: {json.dumps(notes)}",
    ]
    return "\n".join(lines) + "\n"

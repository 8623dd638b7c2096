"""The case-level fit and its honest (out-of-sample) accuracy.

What the published end-to-end cases fit (everything else comes from kernel measurements,
hardware/kernels.yaml, and is never tuned on a case):
- per engine, its CPU time per step `cpu_step` (hardware/engines.yaml), from the decode-regime
  cases that ran on it;
- per hardware family without kernel curves (Apple M-series, ...), the scalar shares η_m (decode,
  16-bit/FP8 weights), η_m for weight-only weights, η_c (TTFT cases of plain GEMMs) and η_c for
  weight-only weights (TTFT cases whose matmuls dequantise: llama.cpp's GGUF kernels, whose
  share of the int8 or FP16 peak is not a plain GEMM's; precision.engine_weight_format).
Throughput cases are never fitted: they check the combination.

The fit minimises the mean squared log(expected / measured) by grid search. Each case is evaluated
once with cpu_step = 0 at the catalog's shares; a candidate's prediction is then exact arithmetic:
t_step = t₀ + cpu_step for a family with kernel curves, t_step = t₀·η₀/η + cpu_step without (a
family without curves runs its decode memory-bound and its prefill compute-bound at one share).

Out of sample: leave-one-source-out — all cases citing the same source table (a case whose source
is "notes of <id>" belongs to <id>'s table) leave together, the fit is redone on the rest, and the
left-out cases are predicted. An engine with no training case takes the median of the fitted
engines; a family share with no training case takes the median of the kernel groups' 16-bit GEMM
shares (η_max, η_mem) — borrowed from microbenchmarks of other GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.cases.case import METRICS, SCALE_OUT, Case, case_engine
from roofline.cases.evaluate import evaluate
from roofline.cases.static import base_times, metric_value
from roofline.domain.hardware import Accelerator, Efficiency
from roofline.domain.model import ModelArch
from roofline.domain.precision import engine_weight_format, weight_format
from roofline.timing.gemv import gemv_alu_time_s
from roofline.timing.roofline import op_time_s

CPU_GRID_S = np.arange(0.0, 4001e-6, 25e-6)
SEQ_GRID_S = np.arange(0.0, 200.1e-6, 5e-6)  # per-sequence host cost per step (timing/host.py)
ETA_GRID = np.round(np.arange(0.20, 0.901, 0.01), 2)  # no family streams above 90% of its datasheet
# dequantising GEMMs may reach a small share of the int8 tensor peak (llama.cpp's MMQ on GB10
# reaches about an eighth: its inner loop unpacks blocks and scales on the ALUs)
ETA_GRID_OF = {
    "memory_weight_only": ETA_GRID,
    "compute": ETA_GRID,
    "compute_weight_only": np.round(np.arange(0.05, 0.901, 0.01), 2),
    "alu_weight_only": np.round(np.arange(0.05, 1.001, 0.01), 2),
}


@dataclass(frozen=True)
class Base:
    """One case evaluated once at the catalog's shares with no per-step CPU time."""

    case: Case
    group: str
    family: str
    engine: str
    regime: str
    curves: bool  # True: the accelerator has kernel curves (measured or borrowed)
    weight_only: bool
    replicas: int
    batch: int
    t_prefill0_s: float
    t_decode0_s: float
    eta_compute0: float
    eta_memory0: float
    ideal: float
    catalog_expected: float  # the expected metric under the catalog as shipped (the full fit)
    compute_dtype: str = ""  # the dtype its matmuls run in (int8 for llama.cpp's MMQ)
    block_kernels: bool = False  # its weights run through GGUF block kernels (compute share)
    # decode: its block linears' expected time, their memory roofline and mat-vec ALU time at
    # η = 1 (roofline/timing/gemv.py); predict() takes max(memory / η_m, ALU / η_alu) for them
    t_block0_s: float = 0.0
    t_block_mem0_s: float = 0.0
    t_block_alu0_s: float = 0.0


def source_group(case: Case, by_id: dict[str, Case]) -> str:
    """The source table a case comes from: "notes of <id>" follows <id>; else the source up to its
    first parenthesis or comma."""
    ref = _referenced(case, by_id)
    if ref is not None:
        return source_group(ref, by_id)
    return case.source.strip().split(" (")[0].split(",")[0].strip()


def _no_cpu(eff: Efficiency) -> Efficiency:
    def bare(v):
        return replace(v, cpu_step_s=0.0, cpu_per_seq_s=())

    return replace(eff, engines={k: bare(v) for k, v in eff.engines.items()})


def make_bases(
    cases: Iterable[Case], lookup: Callable[[Case], tuple[ModelArch, Accelerator]], catalog: Any
) -> list[Base]:
    """Evaluate every case once (cpu_step = 0); `lookup` gives a case's model and accelerator,
    `catalog` the networks and draft models cases name."""
    cases = list(cases)
    by_id = {c.id: c for c in cases}
    out = []
    for c in cases:
        model, hw = lookup(c)
        ref = _referenced(c, by_id)
        name = case_engine(c, None if ref is None else f"{c.source} {ref.source}")
        shipped = evaluate(c, model, hw, engine_name=name, catalog=catalog).expected
        eff = _no_cpu(hw.efficiency)
        if eff.kernels is None:  # the scalar shares are fitted: evaluate at 1, scale by 1/η
            eff = replace(
                eff,
                compute=1.0,
                memory=1.0,
                memory_weight_only=1.0,
                compute_weight_only=1.0,
                alu_weight_only=1.0,
            )
        net = catalog.tier(SCALE_OUT)
        dep, replicas, batch, p, d = base_times(c, model, hw, net, eff, name)
        peaks = hw.peak_flops_per_s  # as phases.engine_deployment: curves keep 16-bit compute
        if hw.efficiency.kernels is not None:
            peaks = {k: v for k, v in peaks.items() if k != "int8"}
        fmt = engine_weight_format(weight_format(c.weights), name, hw.vendor, peaks)
        wo, blocks = fmt.weight_only, fmt.block_kernels
        t_blk = t_mem = t_alu = 0.0
        if eff.kernels is None and fmt.alu_flops > 0:
            w, peak32 = hw.memory_bandwidth_bytes_per_s, hw.peak_flops_per_s.get("fp32", 0.0)
            for r in d.ops:
                o = r.op
                if not o.quantized or o.is_collective:
                    continue
                bpv = dep.linear_bits / 8.0
                a = gemv_alu_time_s(o.flops, o.weight_bytes, bpv, fmt.alu_flops, peak32)
                t_alu += float(np.mean(a))
                t_mem += float(np.mean(op_time_s(o.flops, o.bytes, hw.peak(p.compute_dtype), w)))
                t_blk += float(np.mean(r.t_expected_s))
        regime = METRICS[c.metric][0]
        ideal = metric_value(c, float(p.t_ideal_s), float(d.t_ideal_s), replicas, batch)
        out.append(
            Base(
                c,
                source_group(c, by_id),
                hw.family,
                name,
                regime,
                eff.kernels is not None,
                wo,
                replicas,
                batch,
                float(p.t_expected_s),
                float(d.t_expected_s),
                eff.compute_dequant if blocks else eff.compute,
                eff.memory_dequant if wo else eff.memory,
                ideal,
                shipped,
                p.compute_dtype,
                blocks,
                t_blk,
                t_mem,
                t_alu,
            )
        )
    return out


def _referenced(c: Case, by_id: dict[str, Case]) -> Case | None:
    """The case whose notes a "notes of <id>" source cites, if it is among the cases."""
    if not c.source.startswith("notes of "):
        return None
    ref = by_id.get(c.source[len("notes of ") :].split()[0])
    return None if ref is None or ref.id == c.id else ref


def predict(b: Base, params: dict[str, float]) -> float:
    """The case's expected metric under fitted parameters (see the module docstring)."""
    cpu = params.get(f"cpu:{b.engine}", params.get("cpu:*", 0.0))
    cpu = cpu + params.get(f"seq:{b.engine}:{b.family}", 0.0) * b.batch
    if b.curves:
        t_p, t_d = b.t_prefill0_s + cpu, b.t_decode0_s + cpu
    else:
        ckey = "compute_weight_only" if b.block_kernels else "compute"
        eta_c = params.get(f"{ckey}:{b.family}", b.eta_compute0)
        key = "memory_weight_only" if b.weight_only else "memory"
        eta_m = params.get(f"{key}:{b.family}", b.eta_memory0)
        eta_a = params.get(f"alu_weight_only:{b.family}", 1.0)
        t_p = b.t_prefill0_s * b.eta_compute0 / eta_c + cpu
        scale = b.eta_memory0 / eta_m
        t_blk = max(b.t_block_mem0_s * scale, b.t_block_alu0_s / eta_a)
        t_d = (b.t_decode0_s - b.t_block0_s) * scale + t_blk + cpu
    return metric_value(b.case, t_p, t_d, b.replicas, b.batch)


def _loss(bases: list[Base], params: dict[str, float]) -> float:
    errs = [np.log(predict(b, params) / b.case.measured) for b in bases]
    return float(np.mean(np.square(errs))) if errs else 0.0


def fit(bases: list[Base], fallback: dict[str, float]) -> dict[str, float]:
    """Fitted parameters from the training cases (see the module docstring). `fallback` holds the
    shares a family without training cases borrows ("compute", "memory")."""
    params: dict[str, float] = {}
    decode = [b for b in bases if b.regime == "decode" and not b.weight_only]
    for engine in sorted({b.engine for b in decode}):
        params.update(_fit_engine(engine, [b for b in decode if b.engine == engine]))
    fitted = [v for k, v in params.items() if k.startswith("cpu:")]
    params["cpu:*"] = float(np.median(fitted)) if fitted else 0.0
    for fam in sorted({b.family for b in bases if not b.curves}):
        params.setdefault(f"memory:{fam}", fallback["memory"])
        for key, pick in (
            ("memory_weight_only", lambda b: b.regime == "decode" and b.weight_only),
            ("compute", lambda b: b.regime == "ttft" and not b.block_kernels),
            ("compute_weight_only", lambda b: b.regime == "ttft" and b.block_kernels),
        ):
            fb = [b for b in bases if b.family == fam and pick(b)]
            if fb:
                params[f"{key}:{fam}"] = min(
                    (_loss(fb, {**params, f"{key}:{fam}": e}), e) for e in ETA_GRID_OF[key]
                )[1]
            else:  # no case: the plain share (weight-only keys), else the borrowed one
                plain = {"memory_weight_only": "memory", "compute_weight_only": "compute"}
                default = params[f"{plain[key]}:{fam}"] if key in plain else fallback["compute"]
                params[f"{key}:{fam}"] = default
    _fit_alu(bases, params)
    _borrow_dequant_compute(bases, params)
    return params


def _grid_fit(fb: list[Base], params: dict[str, float], key: str, prefer: float) -> float:
    """The share of `key` on its grid minimising the loss of `fb`; ties (the share does not bind)
    go to the value nearest `prefer`."""
    return min(
        (round(_loss(fb, {**params, key: e}), 12), abs(e - prefer), e)
        for e in ETA_GRID_OF[key.split(":")[0]]
    )[2]


def _fit_alu(bases: list[Base], params: dict[str, float]) -> None:
    """η_alu of llama.cpp's block mat-vec kernels per family, on its GGUF decode cases, by
    coordinate descent with the weight-only memory share fitted on the same cases (ties: the
    ALU share that does not bind, the memory share nearest the plain one); families without
    such cases borrow the median fitted for the same backend (compute dtype: int8 = CUDA MMQ,
    fp16 = Metal), else keep the plain compute share."""
    fitted: dict[str, list[float]] = {}
    for fam in sorted({b.family for b in bases if not b.curves}):
        fb = [b for b in bases if b.family == fam and b.regime == "decode" and b.block_kernels]
        if not fb:
            continue
        ka, km = f"alu_weight_only:{fam}", f"memory_weight_only:{fam}"
        params[ka] = 1.0
        for _ in range(3):
            params[ka] = _grid_fit(fb, params, ka, 1.0)
            mine = [b for b in bases if b.family == fam and b.regime == "decode" and b.weight_only]
            params[km] = _grid_fit(mine, params, km, params[f"memory:{fam}"])
        fitted.setdefault(fb[0].compute_dtype, []).append(params[ka])
    for dtype, shares in fitted.items():
        params[f"alu_weight_only@{dtype}"] = float(np.median(shares))
    for fam in sorted({b.family for b in bases if not b.curves}):
        if f"alu_weight_only:{fam}" in params:
            continue
        dtypes = {b.compute_dtype for b in bases if b.family == fam and b.block_kernels}
        shares = [
            params[f"alu_weight_only@{d}"] for d in dtypes if f"alu_weight_only@{d}" in params
        ]
        plain = params.get(f"compute:{fam}", 1.0)
        params[f"alu_weight_only:{fam}"] = float(np.median(shares)) if shares else plain


def slope_evidence(mine: list[Base]) -> bool:
    """Whether a family's training cases of an engine can tell a per-sequence cost from the
    fixed one: they ran at two or more batch sizes (else cpu_per_seq · B folds into cpu_step)."""
    return len({b.batch for b in mine}) > 1


def _grid_metric(b: Base, host_s: np.ndarray, eta_m: np.ndarray | float = 1.0) -> np.ndarray:
    """predict() over arrays: host_s the step's host time (cpu_step + cpu_per_seq · B) and, for a
    family without curves, eta_m its memory share (broadcast against each other)."""
    if b.curves:
        t_p, t_d = b.t_prefill0_s + host_s, b.t_decode0_s + host_s
    else:
        t_p = b.t_prefill0_s + host_s
        t_d = b.t_decode0_s * b.eta_memory0 / eta_m + host_s
    return np.asarray(metric_value(b.case, t_p, t_d, b.replicas, b.batch), dtype=float)


def _fit_engine(engine: str, mine: list[Base]) -> dict[str, float]:
    """An engine's cpu_step and, per hardware family, its cpu_per_seq, on grids: cpu_step
    minimises the sum over families of each family's mean squared log error (every family
    weighs the same: the engine's host cost is not set by whichever family has the most rows),
    each family at its own best cpu_per_seq (0 without slope_evidence) and, without curves, its
    best memory share."""
    total = np.zeros(len(CPU_GRID_S))
    picks: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for fam in sorted({b.family for b in mine}):
        fb = [b for b in mine if b.family == fam]
        seq_grid = SEQ_GRID_S if slope_evidence(fb) else np.zeros(1)
        curves = fb[0].curves
        eta = ETA_GRID[None, None, :] if not curves else np.ones((1, 1, 1))
        sq = np.zeros((len(seq_grid), len(CPU_GRID_S), eta.shape[2]))
        for b in fb:
            h = CPU_GRID_S[None, :, None] + seq_grid[:, None, None] * b.batch
            sq = sq + np.square(np.log(_grid_metric(b, h, eta) / b.case.measured))
        sq = sq.reshape(len(seq_grid), len(CPU_GRID_S) * eta.shape[2]) / len(fb)
        best = np.argmin(sq, axis=0)  # the family's best cpu_per_seq at each (cpu, eta)
        lo = sq[best, np.arange(sq.shape[1])].reshape(len(CPU_GRID_S), eta.shape[2])
        e_at = np.argmin(lo, axis=1)  # its best memory share at each cpu
        total += lo[np.arange(len(CPU_GRID_S)), e_at]
        seq_at = seq_grid[
            best.reshape(len(CPU_GRID_S), eta.shape[2])[np.arange(len(CPU_GRID_S)), e_at]
        ]
        picks[fam] = (seq_at, None if curves else ETA_GRID[e_at])
    j = int(np.argmin(total))
    out = {f"cpu:{engine}": float(CPU_GRID_S[j])}
    for fam, (seq_at, eta_at) in picks.items():
        if seq_at[j] > 0:
            out[f"seq:{engine}:{fam}"] = float(seq_at[j])
        if eta_at is not None:
            out[f"memory:{fam}"] = float(eta_at[j])
    return out


def _borrow_dequant_compute(bases: list[Base], params: dict[str, float]) -> None:
    """A family whose weight-only matmuls run in a dtype (int8: llama.cpp's MMQ) but that has no
    weight-only TTFT case of its own borrows the median η_c fitted for that dtype's weight-only
    GEMMs on the families that have one: the share belongs to the kernel, which the plain GEMM
    share misstates (MMQ reaches 0.1-0.2 of the int8 peak where a 16-bit GEMM reaches ~0.8)."""
    fitted: dict[str, list[float]] = {}
    for fam in sorted({b.family for b in bases if not b.curves}):
        mine = [b for b in bases if b.family == fam and b.block_kernels and b.regime == "ttft"]
        for dtype in {b.compute_dtype for b in mine}:
            fitted.setdefault(dtype, []).append(params[f"compute_weight_only:{fam}"])
    for dtype, shares in fitted.items():
        params[f"compute_weight_only@{dtype}"] = float(np.median(shares))
    for fam in sorted({b.family for b in bases if not b.curves}):
        wo = [b for b in bases if b.family == fam and b.block_kernels]
        if any(b.regime == "ttft" for b in wo) or not wo:
            continue
        shares = fitted.get(wo[0].compute_dtype)
        if shares:
            params[f"compute_weight_only:{fam}"] = float(np.median(shares))


def _fill_absent(
    params: dict[str, float], left_out: list[Base], fallback: dict[str, float]
) -> dict[str, float]:
    """Shares for the left-out cases' families that no training case is left to fit (a family
    whose cases all come from the left-out table): the borrowed ones, as a family without any
    case gets (the kernel groups' median shares; the weight-only compute share fitted for the same
    dtype on other families, else the plain one)."""
    out = dict(params)
    for b in left_out:
        if b.curves or f"memory:{b.family}" in out:
            continue
        fam = b.family
        out[f"memory:{fam}"] = out[f"memory_weight_only:{fam}"] = fallback["memory"]
        out[f"compute:{fam}"] = fallback["compute"]
        dtypes = {c.compute_dtype for c in left_out if c.family == fam and c.block_kernels}
        shares = [
            out[f"compute_weight_only@{d}"] for d in dtypes if f"compute_weight_only@{d}" in out
        ]
        out[f"compute_weight_only:{fam}"] = (
            float(np.median(shares)) if shares else fallback["compute"]
        )
        alu = [out[f"alu_weight_only@{d}"] for d in dtypes if f"alu_weight_only@{d}" in out]
        out[f"alu_weight_only:{fam}"] = float(np.median(alu)) if alu else fallback["compute"]
    return out


@dataclass(frozen=True)
class CrossResult:
    base: Base
    in_sample: float  # expected under the shipped catalog (which holds the fit on every case)
    out_of_sample: float  # expected with the fit on the cases of the other source tables

    @property
    def error_in(self) -> float:
        return self.in_sample / self.base.case.measured - 1.0

    @property
    def error_out(self) -> float:
        return self.out_of_sample / self.base.case.measured - 1.0

    @property
    def speed_ratio_ideal(self) -> float:
        kind = METRICS[self.base.case.metric][1]
        m, i = self.base.case.measured, self.base.ideal
        return i / m if kind == "time" else m / i


def cross_validate(
    bases: list[Base], fallback: dict[str, float], held_out: Iterable[Base] = ()
) -> tuple[dict[str, float], list[CrossResult], list[CrossResult]]:
    """(fit on all, leave-one-source-out results, results on cases never fitted)."""
    full = fit(bases, fallback)
    out = []
    for group in dict.fromkeys(b.group for b in bases):
        train = [b for b in bases if b.group != group]
        params = _fill_absent(
            fit(train, fallback), [b for b in bases if b.group == group], fallback
        )
        out += [
            CrossResult(b, b.catalog_expected, predict(b, params))
            for b in bases
            if b.group == group
        ]
    order = {b.case.id: i for i, b in enumerate(bases)}
    out.sort(key=lambda r: order[r.base.case.id])
    never = [CrossResult(b, b.catalog_expected, b.catalog_expected) for b in held_out]
    return full, out, never


def family_bands(results: list[CrossResult]) -> dict[str, tuple[int, float]]:
    """Per family: (cases, median |out-of-sample error|)."""
    fams: dict[str, list[float]] = {}
    for r in results:
        fams.setdefault(r.base.family, []).append(abs(r.error_out))
    return {f: (len(e), float(np.median(e))) for f, e in fams.items()}

"""Grid sweeps through the vectorized core: categorical axes (model, hardware, formats, TP) loop,
numeric axes (batch, prompt, output) broadcast in one call per combination."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.domain.errors import RooflineError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import Layout
from roofline.domain.model import ModelArch
from roofline.domain.precision import kv_format, weight_format
from roofline.engines.engine import engine
from roofline.step.memory import kv_bytes_per_sequence, max_batch, plan_memory
from roofline.step.ops import Deployment
from roofline.step.phases import request

COLUMNS = (
    "model",
    "hardware",
    "tp",
    "weights",
    "kv_dtype",
    "batch",
    "prompt_tokens",
    "output_tokens",
    "batch_prefill_s",
    "tpot_s",
    "e2e_s",
    "output_tokens_per_s",
    "decode_time_fraction",
    "batch_prefill_ideal_s",
    "tpot_ideal_s",
    "output_tokens_per_s_ideal",
    "decode_arithmetic_intensity",
    "decode_bound",
    "weights_bytes_per_gpu",
    "kv_budget_bytes",
    "max_batch",
    "fits",
    "error",
)
# the columns of a combination (Grid.combos' order); every metric of a point that cannot run is null
_COMBO = ("model", "hardware", "weights", "kv_dtype", "tp")


@dataclass(frozen=True)
class Grid:
    models: Sequence[ModelArch]
    hardware: Sequence[Accelerator]
    weights: Sequence[str]
    kv_dtypes: Sequence[str]
    tps: Sequence[int]
    batches: Sequence[int]
    prompts: Sequence[int]
    outputs: Sequence[int]

    @property
    def combos(self) -> list[tuple]:
        return list(
            itertools.product(self.models, self.hardware, self.weights, self.kv_dtypes, self.tps)
        )

    @property
    def points(self) -> int:
        return len(self.combos) * len(self.batches) * len(self.prompts) * len(self.outputs)


CHUNK_POINTS = 1 << 16  # points per chunk: memory stays flat however large the grid
_UNPRICED = object()


def chunk_count(grid: Grid, chunk_points: int = CHUNK_POINTS) -> int:
    """How many chunks sweep_chunks yields (for a progress bar)."""
    per_combo = len(grid.batches) * len(grid.prompts) * len(grid.outputs)
    return len(grid.combos) * -(-per_combo // max(1, int(chunk_points)))


def sweep_chunks(
    grid: Grid,
    engine_name: str,
    chunk_points: int = CHUNK_POINTS,
    usd_per_gpu_hour: Mapping[str, float | None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Evaluate the grid in chunks of at most `chunk_points` points, in COLUMNS order (plus
    `cost_per_million_output_tokens` when `usd_per_gpu_hour` maps accelerator ids to prices; NaN
    where an accelerator has none). Each chunk maps a column to a numpy array with one entry per
    point, or to one scalar shared by every point of the chunk (model, hardware, formats, TP,
    weight bytes, KV budget). Numeric axes are laid out batch-major, then prompt, then output, as
    `np.meshgrid(..., indexing="ij")` ravels them; the per-point physics is the vectorized core's
    `request`, called once per chunk."""
    batches = np.asarray(grid.batches, dtype=float)
    prompts = np.asarray(grid.prompts, dtype=float)
    outputs = np.asarray(grid.outputs, dtype=float)
    n_s, n_o = prompts.size, outputs.size
    per_combo = batches.size * n_s * n_o
    step = max(1, int(chunk_points))
    for m, hw, w, kv, tp in grid.combos:
        usd = _UNPRICED if usd_per_gpu_hour is None else usd_per_gpu_hour.get(hw.id)
        error: str | None = None
        try:
            dep = Deployment(weights=weight_format(w), kv=kv_format(kv), layout=Layout(tp=tp))
            eng = engine(engine_name, hw)
            plan = plan_memory(m, hw, dep, eng)
        except RooflineError as exc:  # a point that cannot run (TP 3 of 32 heads): its own row
            error = str(exc)
        for start in range(0, per_combo, step):
            idx = np.arange(start, min(start + step, per_combo))
            b = batches[idx // (n_s * n_o)]
            s = prompts[(idx // n_o) % n_s]
            o = outputs[idx % n_o]
            names = (m.id, hw.id, w, kv, tp)
            if error is None:
                try:
                    yield _chunk(m, hw, dep, eng, plan, (w, kv, tp), b, s, o, usd)
                    continue
                except RooflineError as exc:
                    error = str(exc)
            yield _error_chunk(names, b, s, o, error, usd is not _UNPRICED)


def _error_chunk(names: tuple, b, s, o, error: str, priced: bool) -> dict[str, Any]:
    """The points of a combination that cannot run: their axes, null metrics and the error."""
    cols: dict[str, Any] = dict.fromkeys(COLUMNS)
    cols.update(zip(_COMBO, names, strict=True))
    cols.update(batch=b.astype(np.int64), prompt_tokens=s.astype(np.int64))
    cols.update(output_tokens=o.astype(np.int64), error=error)
    if priced:
        cols["cost_per_million_output_tokens"] = None
    return cols


def _chunk(m, hw, dep, eng, plan, names, b, s, o, usd) -> dict[str, Any]:
    """One chunk's columns (see sweep_chunks)."""
    w, kv, tp = names
    n = b.size
    r = request(m, hw, dep, b, s, o)
    ctx = s + o
    if plan.weights_fit:
        mb = np.broadcast_to(np.asarray(max_batch(plan, m, dep, ctx)), (n,)).astype(np.int64)
    else:
        mb = np.zeros(n, dtype=np.int64)
    kv_need = kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens) * b
    fits = (kv_need <= plan.kv_budget_bytes) & plan.weights_fit
    e, i = r.expected, r.ideal

    def full(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x), (n,))

    cols: dict[str, Any] = {
        "model": m.id,
        "hardware": hw.id,
        "tp": int(tp),
        "weights": w,
        "kv_dtype": kv,
        "batch": b.astype(np.int64),
        "prompt_tokens": s.astype(np.int64),
        "output_tokens": o.astype(np.int64),
        "batch_prefill_s": full(e.batch_prefill_s),
        "tpot_s": full(e.tpot_s),
        "e2e_s": full(e.e2e_s),
        "output_tokens_per_s": full(e.output_tokens_per_s),
        "decode_time_fraction": full(e.decode_time_fraction),
        "batch_prefill_ideal_s": full(i.batch_prefill_s),
        "tpot_ideal_s": full(i.tpot_s),
        "output_tokens_per_s_ideal": full(i.output_tokens_per_s),
        "decode_arithmetic_intensity": full(r.decode.arithmetic_intensity),
        "decode_bound": full(r.decode.bound),
        "weights_bytes_per_gpu": float(plan.weights_bytes),
        "kv_budget_bytes": float(plan.kv_budget_bytes),
        "max_batch": mb,
        "fits": full(fits).astype(bool),
        "error": None,
    }
    if usd is not _UNPRICED:  # $/h of one replica of TP GPUs over its tokens/s, per million
        tok = cols["output_tokens_per_s"].astype(float)
        per_hour = np.nan if usd is None else float(usd) * tp
        with np.errstate(divide="ignore", invalid="ignore"):
            cost = per_hour / (tok * 3600.0) * 1e6
        cols["cost_per_million_output_tokens"] = np.where(np.isfinite(cost), cost, np.nan)
    return cols


def run_sweep(
    grid: Grid, engine_name: str, progress: Callable[[Iterable], Iterable] = lambda x: x
) -> dict[str, list]:
    """Evaluate every grid point; returns columns (lists), one entry per point, in COLUMNS order."""
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for chunk in progress(sweep_chunks(grid, engine_name)):
        n = chunk["batch"].size
        for key in COLUMNS:
            v = chunk[key]
            cols[key].extend([v] * n if np.ndim(v) == 0 else v.tolist())
    return cols

"""Grid sweeps through the vectorized core: categorical axes (model, hardware, formats, TP) loop,
numeric axes (batch, prompt, output) broadcast in one call per combination."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.hardware import Accelerator
from roofline.memory import engine, kv_bytes_per_sequence, max_batch, plan_memory
from roofline.model import ModelArch
from roofline.ops import Deployment
from roofline.phases import request
from roofline.precision import kv_format, weight_format

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
)


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


def run_sweep(
    grid: Grid, engine_name: str, progress: Callable[[Iterable], Iterable] = lambda x: x
) -> dict[str, list]:
    """Evaluate every grid point; returns columns (lists), one entry per point, in COLUMNS order."""
    b, s, o = (
        a.ravel()
        for a in np.meshgrid(
            np.asarray(grid.batches, dtype=float),
            np.asarray(grid.prompts, dtype=float),
            np.asarray(grid.outputs, dtype=float),
            indexing="ij",
        )
    )
    n = b.size
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for m, hw, w, kv, tp in progress(grid.combos):
        dep = Deployment(weights=weight_format(w), kv=kv_format(kv), tp=tp)
        r = request(m, hw, dep, b, s, o)
        eng = engine(engine_name, hw)
        plan = plan_memory(m, hw, dep, eng)
        ctx = s + o
        mb = max_batch(plan, m, dep, ctx) if plan.weights_fit else np.zeros(n)
        kv_need = kv_bytes_per_sequence(m, dep, ctx, eng.block_tokens) * b
        fits = (kv_need <= plan.kv_budget_bytes) & plan.weights_fit
        e, i = r.expected, r.ideal

        def full(x: Any) -> list:
            return np.broadcast_to(np.asarray(x), (n,)).tolist()

        for key, values in (
            ("model", [m.id] * n),
            ("hardware", [hw.id] * n),
            ("tp", [tp] * n),
            ("weights", [w] * n),
            ("kv_dtype", [kv] * n),
            ("batch", b.astype(int).tolist()),
            ("prompt_tokens", s.astype(int).tolist()),
            ("output_tokens", o.astype(int).tolist()),
            ("batch_prefill_s", full(e.ttft_s)),
            ("tpot_s", full(e.tpot_s)),
            ("e2e_s", full(e.e2e_s)),
            ("output_tokens_per_s", full(e.output_tokens_per_s)),
            ("decode_time_fraction", full(e.decode_time_fraction)),
            ("batch_prefill_ideal_s", full(i.ttft_s)),
            ("tpot_ideal_s", full(i.tpot_s)),
            ("output_tokens_per_s_ideal", full(i.output_tokens_per_s)),
            ("decode_arithmetic_intensity", full(r.decode.arithmetic_intensity)),
            ("decode_bound", full(r.decode.bound)),
            ("weights_bytes_per_gpu", [plan.weights_bytes] * n),
            ("kv_budget_bytes", [plan.kv_budget_bytes] * n),
            ("max_batch", full(np.asarray(mb).astype(int))),
            ("fits", full(fits)),
        ):
            cols[key].extend(values)
    return cols

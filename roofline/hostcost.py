"""The per-sequence part of an engine's host cost per step, per hardware platform.

An engine's step pays, besides the fixed `cpu_step` (roofline/efficiency.py step_time_s), work
for every running sequence that the kernel curves do not carry: the scheduler's per-request
loop, every worker's per-request input preparation and state update (block tables, positions,
slot mappings), the sampled token's bookkeeping (stop checks, output objects) and hand-off.
vLLM's own profiling names these per-request loops (vLLM v0.6.0 performance blog, Sep 2024,
"Performance Diagnosis": scheduling 29% of the execution time of Llama 3 8B on one H100, input
and output processing besides; vllm-project/vllm PR #46112: Scheduler.update_from_output alone
0.142 ms at batch 128, 0.287 ms at batch 256, linear in the batch). It is linear in the
sequences the step carries:

    t_host_seq = cpu_per_seq[engine, family] · B

kept per engine AND hardware family (hardware/engines.yaml `cpu_per_seq_us`, a mapping from
family to µs; a family not named pays 0): the engine's platform build differs (vLLM on ROCm runs
its own attention metadata builders, AITER and HIP-graph paths) and the one table that shows the
slope (AMD's vLLM latency table on 8x MI300X) also carries per-sequence device work its kernel
curve misses. Fitted by validation/calibrate.py with cpu_step (roofline/crossval.py) for a family
that ran the engine at two or more batch sizes. Never part of the ideal figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from roofline.efficiency import EngineProfile


@dataclass(frozen=True)
class EngineHost(EngineProfile):
    """An engine profile with its per-sequence host cost per step."""

    # host time per running sequence per step, by hardware family: (family, s) pairs (absent: 0)
    cpu_per_seq_s: tuple[tuple[str, float], ...] = ()


def per_seq_host_s(
    profile: EngineProfile | None, seqs: ArrayLike, family: str = ""
) -> np.ndarray | float:
    """Host time a step of `seqs` sequences adds beyond the fixed cpu_step on a chip of `family`:
    cpu_per_seq[family] · B (module docstring); 0 for an engine without the figure there."""
    per = dict(getattr(profile, "cpu_per_seq_s", ()) if profile is not None else ())
    c = float(per.get(family, 0.0))
    if c == 0.0:
        return 0.0
    if np.ndim(seqs) == 0:
        return c * float(seqs)  # type: ignore[arg-type]
    return c * np.asarray(seqs, dtype=float)

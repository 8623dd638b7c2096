"""One-point twins of the kernel-time functions, in Python floats: the GEMM's of efficiency.py,
the fused attention's of attention_kernels.py and the engine step's of hostcost.py.

For one point every op quantity is one number; numpy's per-call overhead (about a microsecond a
ufunc) then costs far more than the arithmetic. These functions take and return Python floats and
do the same IEEE operations in the same order as their array originals, with numpy's semantics
for the few non-arithmetic steps (np.maximum/np.minimum keep NaN, np.ceil/np.floor keep ±inf and
NaN), so every value is bit for bit the array function's on a 0-d array
(tests/test_point_path.py). A change to a formula in those modules must be made here too;
that test fails until it is.
"""

from __future__ import annotations

from roofline.hostcost import EngineProfile
from roofline.timing.roofline import maximum


def step_time_one(t_gpu_s: float, layers: int, engine: EngineProfile | None, phase: str) -> float:
    """hostcost.step_time_s for one point; see its docstring for the formula."""
    if engine is None:
        return t_gpu_s
    n_k = engine.kernels_per_layer * layers
    graphs = engine.graphs_decode if phase == "decode" else engine.graphs_prefill
    launch = 0.0 if graphs else engine.launch_s
    return maximum(t_gpu_s + n_k * engine.gap_s, n_k * launch) + engine.cpu_step_s

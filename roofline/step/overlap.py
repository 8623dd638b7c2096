"""Ops an engine runs side by side on two CUDA streams, and the time that hides.

TensorRT-LLM's DeepSeek-V3 MoE layer runs the shared expert on an auxiliary stream beside the
routed path (router, the all-to-all dispatch, the routed experts, the combine):
Deepseekv3MoE.forward calls maybe_execute_in_parallel(_compute_routed_output,
_compute_shared_output, ..., aux_stream) (tensorrt_llm/_torch/models/modeling_deepseekv3.py at
NVIDIA/TensorRT-LLM@000561df0bd751d793257102bbe59cb4a64b2fd5), and maybe_execute_in_parallel uses
two streams only "when cuda graph is turned on because switch stream has extra host overhead"
(tensorrt_llm/_torch/modules/multi_stream_utils.py at
NVIDIA/TensorRT-LLM@05b58881e64f2c21a3d2dbfcc52fc1b8b0051114): in the decode steps the engine
captures in CUDA graphs, not in context (prefill) steps. aiconfigurator models the same
(generation_moe_overlap: OverlapOp of the routed and the shared groups, latency = the larger
group's; the context phase sequential; aiconfigurator-core 0.12.0 sdk/models/deepseek.py).

The two groups share the GPU's SMs and HBM, so the overlap hides only what one group leaves
idle: the pair takes

    t_pair = max(t_routed, t_shared, Σ t_ideal of their roofline ops)

(each group's expected time, and never less than the speed of light of all their FLOPs and bytes
on one GPU). The hidden time t_routed + t_shared − t_pair is a row of its own (kind "overlap",
negative expected time, zero ideal) so the rows still add up to the step and every other op keeps
its own verdict. Other engines: not modelled (SGLang's forward_normal_dual_stream needs the
shared experts unfused and no DeepEP; vLLM's shared-expert stream is version-dependent), so they
pay the shared expert after the routed ones.
"""

from __future__ import annotations

import numpy as np

from roofline.step.ops import Op
from roofline.step.optime import OpResult

ROUTED_OPS = ("moe.router", "moe.experts", "ep.alltoall")  # TensorRT-LLM's main stream
SHARED_OPS = ("moe.shared",)  # its auxiliary stream
OVERLAP_OP = "moe.overlap"
OVERLAP_ENGINES = ("trtllm",)  # engines with a cited two-stream shared expert (docstring)


def overlaps(engine_name: str | None, phase: str) -> bool:
    """Whether `engine_name`'s `phase` steps run the shared expert beside the routed path:
    TensorRT-LLM's decode (CUDA-graph) steps (module docstring)."""
    name = (engine_name or "").lower()
    return phase == "decode" and any(name.startswith(e) for e in OVERLAP_ENGINES)


def shared_expert_overlap(results: list[OpResult]) -> OpResult | None:
    """The row of time the two-stream shared expert hides (module docstring), or None when the
    step has no shared expert or nothing is hidden."""
    routed = [r for r in results if r.op.name in ROUTED_OPS]
    shared = [r for r in results if r.op.name in SHARED_OPS]
    if not routed or not shared:
        return None
    t_a = sum(r.t_expected_s for r in routed)
    t_b = sum(r.t_expected_s for r in shared)
    floor = sum(r.t_ideal_s for r in routed + shared if not r.op.is_collective)
    pair = np.maximum(np.maximum(t_a, t_b), floor)
    hidden = np.maximum(t_a + t_b - pair, 0.0)
    if not np.any(hidden > 0):
        return None
    zero = np.zeros_like(np.asarray(hidden, dtype=float))
    op = Op(OVERLAP_OP, "overlap", shared[0].op.layers, zero, zero, zero, zero)
    ridge = shared[0].ridge_flops_per_byte
    hidden_s = -hidden if np.ndim(hidden) else -float(hidden)
    return OpResult(op, zero, ridge, np.full(np.shape(zero), "overlap"), 0.0 * zero, hidden_s)

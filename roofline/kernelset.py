"""The kernel curves of one GPU generation, as hardware/kernels.yaml groups them (built by
roofline/catalog_kernels.py, attached to an accelerator's Efficiency in roofline/hardware.py):
GEMM, weight-only and MoE curves (roofline/efficiency.py), fused attention
(roofline/attention_kernels.py) and measured collectives (roofline/collectives.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline.collectives import LinkCurve
from roofline.timing.attention import AttentionCurve, PrefillAttentionCurve
from roofline.timing.gemm import GemmCurve, MoeCurve, WeightOnlyCurve


@dataclass(frozen=True)
class KernelSet:
    """The kernel curves of one GPU generation (hardware/kernels.yaml)."""

    id: str
    gemm: Mapping[str, GemmCurve]
    weight_only: Mapping[str, WeightOnlyCurve] = field(default_factory=dict)
    decode_attention: AttentionCurve | None = None
    allreduce: LinkCurve | None = None  # NCCL
    engine_allreduce: Mapping[str, LinkCurve] = field(default_factory=dict)  # engines' own
    alltoall: LinkCurve | None = None  # NCCL all-to-all (expert parallelism)
    prefill_attention: PrefillAttentionCurve | None = None
    source: str = ""
    borrowed: bool = False  # the accelerator has no data of its own: it uses this group's
    compute_ref: float = 1.0  # the family's scalar shares when the curves were attached: a
    memory_ref: float = 1.0  # different Efficiency.compute / .memory scales every curve
    moe: Mapping[str, MoeCurve] = field(default_factory=dict)  # fused MoE per dtype
    ep_alltoall: LinkCurve | None = None  # DeepEP dispatch / combine (expert parallelism)

    def gemm_curve(self, dtype: str) -> GemmCurve | None:
        """The curve for a compute dtype (fp16 and bf16 share one; fp8 falls back to bf16)."""
        for d in (dtype, "bf16" if dtype in ("fp16", "tf32", "fp32") else dtype, "bf16"):
            if d in self.gemm:
                return self.gemm[d]
        return None

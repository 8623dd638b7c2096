"""How a model runs: the Deployment (number formats, sparsity, KV eviction, and the parallel
layout of one replica as a roofline.domain.layout.Layout, which checks its own degrees).
roofline.step.ops builds a step's ops for it; roofline.domain.layout validates the layout against a
model and a node."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import Layout, Links
from roofline.domain.precision import (
    ACTIVATION_FORMATS,
    KV_FORMATS,
    OTHER_BITS,
    WEIGHT_FORMATS,
    Format,
    sparse_2_4_bits,
)


@dataclass(frozen=True)
class Deployment:
    """How a model runs: number formats, sparsity, KV eviction, and `layout`, the parallel layout
    of one replica (roofline.domain.layout.Layout with dp = 1: TP GPUs per stage, PP stages, EP and
    attention-DP inside a stage, micro-batches), with `links`, the link each of its collectives
    runs over once placed on a node. The degrees read through (dep.tp, dep.pp, ...)."""

    weights: Format = field(default_factory=lambda: WEIGHT_FORMATS["bf16"])
    kv: Format = field(default_factory=lambda: KV_FORMATS["bf16"])
    activations: Format = field(default_factory=lambda: ACTIVATION_FORMATS["bf16"])
    layout: Layout = field(default_factory=Layout)  # one replica's: dp 1, placement in `links`
    sparse_2_4: bool = False
    compute_dtype: str | None = None  # override the dtype matmuls run in
    kv_token_budget: int | None = None  # KV eviction (H2O, SnapKV, StreamingLLM): tokens kept
    links: Links | None = None  # the link of each collective (None: the GPU's scale-up link)
    # the non-expert linear layers (attention, dense FFN, shared experts) when a checkpoint
    # quantizes the routed experts only (gpt-oss: MXFP4 experts, BF16 elsewhere); None: `weights`
    dense_weights: Format | None = None
    # LoRA adapter slots the engine holds on the GPU (vLLM --max-loras) at --max-lora-rank:
    # taken from the KV budget (roofline.step.lora); 0: no LoRA
    lora_slots: int = 0
    lora_rank: int = 0

    def __post_init__(self) -> None:
        if self.kv_token_budget is not None and not 1 <= self.kv_token_budget <= 1e9:
            raise InputError(
                f"--kv-budget must be from 1 to 1e9 tokens, got {self.kv_token_budget}"
            )

    def with_layout(self, **degrees: Any) -> Deployment:
        """This deployment with some of its replica's degrees changed (tp=1, pp=1, ...)."""
        return replace(self, layout=replace(self.layout, **degrees))

    # the replica's degrees and micro-batches, read through: dep.tp is dep.layout.tp
    # (attention_tp: the GPUs one attention layer and a dense FFN are split over, TP/attention-DP)
    tp = property(attrgetter("layout.tp"))
    pp = property(attrgetter("layout.pp"))
    ep = property(attrgetter("layout.ep"))
    attention_dp = property(attrgetter("layout.attention_dp"))
    microbatches = property(attrgetter("layout.microbatches"))
    gpus_per_replica = property(attrgetter("layout.gpus_per_replica"))
    attention_tp = property(attrgetter("layout.attention_tp"))
    pipeline_microbatches = property(attrgetter("layout.pipeline_microbatches"))

    @property
    def linear_bits(self) -> float:
        """Bits per weight of the linear layers, with 2:4 sparsity's values + index if enabled."""
        return sparse_2_4_bits(self.weights.bits) if self.sparse_2_4 else self.weights.bits

    @property
    def dense_bits(self) -> float:
        """Bits per weight of the non-expert linear layers: dense_weights', else linear_bits."""
        if self.dense_weights is None:
            return self.linear_bits
        bits = self.dense_weights.bits
        return sparse_2_4_bits(bits) if self.sparse_2_4 else bits

    @property
    def other_bits(self) -> float:
        """Embedding, output head, router and norms: 16 bit (32 for an fp32 model), except in
        GGUF and MLX files, which quantise embedding and head too (precision.OTHER_BITS)."""
        if self.weights.name in OTHER_BITS:
            return OTHER_BITS[self.weights.name]
        return 32.0 if self.weights.name == "fp32" else 16.0

    def compute(self, hw: Accelerator) -> str:
        """The dtype the matmuls run in: --compute when given (a chip without it refuses), else
        the weight format's, through its fallbacks (precision.chip_weight_format)."""
        if self.compute_dtype and self.compute_dtype not in hw.peak_flops_per_s:
            raise InputError(
                f"--compute {self.compute_dtype}: {hw.id} has no {self.compute_dtype} compute",
                hint=f"its compute formats: {', '.join(hw.peak_flops_per_s)}",
            )
        return hw.resolve_compute(self.compute_dtype or self.weights.compute)

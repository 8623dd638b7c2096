"""How a model runs: the Deployment (number formats, sparsity, KV eviction and the parallel layout
of one replica), checked where it is made. roofline.ops builds a step's ops for it;
roofline.layout validates its layout against a model and a node."""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.errors import InputError
from roofline.hardware import Accelerator
from roofline.layout import (
    Links,
    default_microbatches,
)
from roofline.precision import (
    ACTIVATION_FORMATS,
    KV_FORMATS,
    OTHER_BITS,
    WEIGHT_FORMATS,
    Format,
    sparse_2_4_bits,
)


@dataclass(frozen=True)
class Deployment:
    """How a model runs: number formats, sparsity, and the parallel layout of one replica (TP GPUs
    per stage, PP stages, EP and attention-DP inside a stage, micro-batches, the links; see
    roofline.layout, which validates it)."""

    weights: Format = field(default_factory=lambda: WEIGHT_FORMATS["bf16"])
    kv: Format = field(default_factory=lambda: KV_FORMATS["bf16"])
    activations: Format = field(default_factory=lambda: ACTIVATION_FORMATS["bf16"])
    tp: int = 1
    pp: int = 1
    ep: int = 1
    sparse_2_4: bool = False
    compute_dtype: str | None = None  # override the dtype matmuls run in
    kv_token_budget: int | None = None  # KV eviction (H2O, SnapKV, StreamingLLM): tokens kept
    attention_dp: int = 1  # attention data-parallel groups inside a stage (EP on the experts)
    microbatches: int | None = None  # pipeline micro-batches (None: PP, vLLM's virtual engines)
    links: Links | None = None  # the link of each collective (None: the GPU's scale-up link)
    # the non-expert linear layers (attention, dense FFN, shared experts) when a checkpoint
    # quantizes the routed experts only (gpt-oss: MXFP4 experts, BF16 elsewhere); None: `weights`
    dense_weights: Format | None = None

    def __post_init__(self) -> None:
        if self.kv_token_budget is not None and not 1 <= self.kv_token_budget <= 1e9:
            raise InputError(
                f"--kv-budget must be from 1 to 1e9 tokens, got {self.kv_token_budget}"
            )
        for name in ("tp", "pp", "ep", "attention_dp"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= 4096:
                flag = name.replace("_", "-")
                raise InputError(f"--{flag} must be a whole number from 1 to 4096, got {value}")
        if self.tp % self.ep:
            raise InputError(
                f"--ep {self.ep} must divide --tp {self.tp}: experts are spread over the "
                "tensor-parallel group"
            )
        if self.tp % self.attention_dp:
            raise InputError(f"--attention-dp {self.attention_dp} must divide --tp {self.tp}")

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def attention_tp(self) -> int:
        """GPUs one attention layer (and a dense FFN) is split over: TP / attention-DP."""
        return self.tp // self.attention_dp

    @property
    def pipeline_microbatches(self) -> int:
        return default_microbatches(self.pp) if self.microbatches is None else self.microbatches

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

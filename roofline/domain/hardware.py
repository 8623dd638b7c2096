"""Accelerators, links and memory tiers. SI units inside; the catalog converts from datasheet
units."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline.domain.errors import InputError
from roofline.domain.precision import COMPUTE_FALLBACK
from roofline.domain.units import GiB
from roofline.timing.attention import AttentionCurve, PrefillAttentionCurve
from roofline.timing.collectives import LinkCurve, LinkSet
from roofline.timing.gemm import GemmCurve, MoeCurve, WeightOnlyCurve
from roofline.timing.host import EngineProfile


@dataclass(frozen=True)
class Tier:
    """A link or a memory/storage tier: one direction's bandwidth, start latency, optional capacity.

    Used for scale-up links (NVLink, xGMI, ICI), host links (PCIe), and tiers a KV cache or weights
    can live in (host DDR5, CXL expanders, NVMe).
    """

    id: str
    name: str
    kind: str  # "link" | "memory" | "storage" | "network"
    bandwidth_bytes_per_s: float  # per direction
    latency_s: float | None = None
    capacity_bytes: float | None = None
    aliases: tuple[str, ...] = ()
    domain_gpus: int | None = None  # GPUs one link domain connects (8 in an HGX box, 72 in NVL72)
    source: str = ""
    notes: str = ""


# the kernels.yaml GEMM key of FP8 GEMMs with fine-grained block scales (DeepSeek-V3's 128x128
# weights, 1x128 activations), where a group's per-tensor FP8 GEMMs run at another share
FP8_BLOCK = "fp8_block"


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
    # engines' own fused MoE per engine id, then dtype (EngineProfile.moe_kernel)
    engine_moe: Mapping[str, Mapping[str, MoeCurve]] = field(default_factory=dict)
    ep_alltoall: LinkCurve | None = None  # DeepEP dispatch / combine (expert parallelism)
    # DeepEP's high-throughput ("normal") kernels, the prefill's; ep_alltoall then the
    # low-latency ones, decode's (None: ep_alltoall times both)
    ep_alltoall_prefill: LinkCurve | None = None

    def gemm_curve(self, dtype: str, block_scaled: bool = False) -> GemmCurve | None:
        """The curve for a compute dtype (fp16 and bf16 share one; fp8 falls back to bf16);
        `block_scaled` FP8 (weights in fine-grained blocks) takes the group's block-scaled FP8
        GEMMs (key fp8_block) where it has them, else its FP8 curve."""
        if block_scaled and dtype == "fp8" and FP8_BLOCK in self.gemm:
            return self.gemm[FP8_BLOCK]
        for d in (dtype, "bf16" if dtype in ("fp16", "tf32", "fp32") else dtype, "bf16"):
            if d in self.gemm:
                return self.gemm[d]
        return None


@dataclass(frozen=True)
class Efficiency:
    """Share of peak a real kernel reaches, and a fixed cost per forward step.

    Without kernel curves: expected op time = max(F / (P·compute), Q / (W·memory)); a step adds
    step_overhead_s. With `kernels` (a GPU generation's measured curves, KernelSet)
    each op runs at its own shape-dependent efficiency, and the engine profile named at
    evaluation time (from `engines`) adds its per-step host costs.
    """

    compute: float = 1.0
    memory: float = 1.0
    step_overhead_s: float = 0.0
    source: str = "uncalibrated default (speed of light)"
    memory_weight_only: float | None = None  # matmuls on weight-only quantised weights (int4, q4_0)
    compute_weight_only: float | None = None  # compute share of GGUF block kernels (MMQ, Metal)
    alu_weight_only: float | None = None  # ALU share of GGUF mat-vec kernels (timing/gemv.py)
    # bandwidth share of weight-only matmuls NOT run by an engine's GGUF block kernels (MLX's
    # affine groups, AWQ/GPTQ int4): its own figure where the family has one, else memory_dequant
    memory_weight_only_affine: float | None = None
    kernels: KernelSet | None = None  # per-op curves of the accelerator's GPU generation
    engines: Mapping[str, EngineProfile] = field(default_factory=dict)  # per-step host costs
    family: str = ""  # the hardware family whose figures these are (set by the catalog)
    cases: int = 0  # public cases behind the case-fitted figures of the family
    error_band: float | None = None  # out-of-sample median |error| of the family (LOSO)
    links: tuple[LinkSet, ...] = ()  # measured collectives per link kind (hardware/links.yaml)

    @property
    def memory_dequant(self) -> float:
        """Bandwidth share of weight-only quantised matmuls (dequantise-in-kernel is slower)."""
        return self.memory if self.memory_weight_only is None else self.memory_weight_only

    @property
    def memory_affine(self) -> float:
        """Bandwidth share of weight-only matmuls outside GGUF block kernels (MLX's group
        quantisation on Metal): memory_weight_only_affine, else memory_dequant."""
        m = self.memory_weight_only_affine
        return self.memory_dequant if m is None else m

    @property
    def compute_dequant(self) -> float:
        """Compute share of matmuls an engine runs through its own block-dequantising kernels
        (precision.Format.block_kernels: llama.cpp's MMQ on CUDA, Metal's mul_mm on GGUF blocks),
        which unpack the weight blocks in their inner loop and reach another share of the tensor
        peak than plain GEMMs; the plain share when the family has no figure."""
        return self.compute if self.compute_weight_only is None else self.compute_weight_only

    @property
    def alu_dequant(self) -> float:
        """Share of the FP32 ALU peak llama.cpp's block-dequantising mat-vec kernels reach
        (roofline/timing/gemv.py); the plain compute share when the family has no figure."""
        return self.compute if self.alu_weight_only is None else self.alu_weight_only

    def __post_init__(self) -> None:
        for name in (
            "compute",
            "memory",
            "memory_dequant",
            "memory_affine",
            "compute_dequant",
            "alu_dequant",
        ):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise InputError(f"efficiency {name} must be in (0, 1], got {value}")
        if self.step_overhead_s < 0:
            raise InputError(f"step overhead must be >= 0, got {self.step_overhead_s}")


WIRED_SMALL_RAM_BYTES = 36 * GiB  # Apple sells RAM in binary units: a "36GB" Mac has 36 GiB


def default_wired_limit_bytes(ram_bytes: float) -> float:
    """What macOS lets Metal wire by default (MTLDevice.recommendedMaxWorkingSetSize): 2/3 of RAM
    up to 36 GiB, 3/4 above. Observed: 10,922.67 MiB on a 16 GiB M1 (= 2/3; llama-cpp-python
    issue #687 log), about 48 of 64 GiB on M1/M2 Max (llama.cpp issue #1870), about 36 of 48 GiB
    on an M5 Pro (osaurus PR #1958), 75% (GPUStack issue #1375). macOS 26 reports 107.52 of 128
    GiB (0.84, antirez/ds4 PR #893): newer releases may allow more [uncertain]. `sudo sysctl
    iogpu.wired_limit_mb=N` raises it (Metal then reports N MiB)."""
    return ram_bytes * (2.0 / 3.0 if ram_bytes <= WIRED_SMALL_RAM_BYTES * (1 + 1e-9) else 0.75)


# What macOS keeps when a user raises the GPU-wired limit: a 16 GB M2 Pro runs gpt-oss-20b's
# 12.1 GB of MXFP4 weights once `iogpu.wired_limit_mb` is raised, leaving "~3 GB for macOS and
# the KV-cache" (smeltcore.com/recipes/gpt-oss-20b-m2-pro, 2026-06-25, retrieved 2026-12-06)
MACOS_RESERVE_BYTES = 3 * GiB


def raised_wired_limit_bytes(ram_bytes: float) -> float:
    """The GPU-wired limit as users raise it for a model past the default
    (`sudo sysctl iogpu.wired_limit_mb=N`; mlx-lm README 'Large Models': N "larger than the size
    of the model in megabytes but smaller than the memory size of the machine"): the RAM less
    MACOS_RESERVE_BYTES for macOS, never below the default."""
    return max(ram_bytes - MACOS_RESERVE_BYTES, default_wired_limit_bytes(ram_bytes))


# Share of the unified-memory bandwidth the CPU cores reach: 243 of the M1 Max's 409.6 GB/s with
# the P and E cores together (204 with the P cores alone), AnandTech, 'Apple M1 Max performance
# review' (anandtech.com/show/17024, page 2, 2021-10-25) [uncertain: measured on M1 Max only].
# llama.cpp computes the weights it keeps in CPU buffers (its MoE experts past the GPU's limit,
# --n-cpu-moe) on these cores, reading the same RAM at this share.
APPLE_CPU_BANDWIDTH_SHARE = 243.0 / 409.6


# How the usable memory of a catalog entry was found (hardware show/list say which)
MEMORY_BASES = {
    "driver": "the driver's total (nvidia-smi / rocm-smi / hl-smi), sourced",
    "reserve": "the datasheet capacity less a stated reserve (no published driver figure)",
    "wired": "what macOS lets the GPU wire: 2/3 of RAM up to 36 GiB, 3/4 above",
    "share": "the catalog's share of unified RAM the GPU may use",
}


@dataclass(frozen=True)
class Accelerator:
    """One device (per GPU, per chip). Peaks are dense (no sparsity) FLOP/s per compute dtype."""

    id: str
    name: str
    vendor: str
    family: str
    memory_capacity_bytes: float  # what the runtime sees (nvidia-smi memory.total where known)
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]
    sparsity_2_4: bool = False
    scale_up: Tier | None = None
    host_link: Tier | None = None
    gpu_memory_fraction: float = 1.0  # unified memory: share of RAM the GPU may wire
    memory_type: str = ""
    memory_nominal_bytes: float | None = None  # the datasheet's capacity, binary (capacity_gib)
    memory_basis: str = "driver"  # how memory_capacity_bytes was found: a key of MEMORY_BASES
    # the CUDA runtime's total (cudaMemGetInfo), below the driver's: None when not published
    cuda_total_bytes: float | None = None
    efficiency: Efficiency = field(default_factory=Efficiency)
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    # share of the datasheet (boost-clock) peak the chip sustains under tensor load where its
    # power limit binds (72 W L4, 70 W T4): the expected time only, never the ideal
    sustained_compute_ratio: float = 1.0
    sustained_compute_source: str = ""

    @property
    def unified_memory(self) -> bool:
        return self.gpu_memory_fraction < 1.0 or self.memory_basis == "wired"

    @property
    def usable_memory_bytes(self) -> float:
        """Memory the accelerator may use: what the driver reports (or the capacity less its
        reserve), Metal's wired limit of an Apple chip's RAM, or the catalog's share of other
        unified RAM."""
        if self.memory_basis == "wired":
            return default_wired_limit_bytes(self.memory_capacity_bytes)
        return self.memory_capacity_bytes * self.gpu_memory_fraction

    def resolve_compute(self, preferred: str) -> str:
        """The dtype a matmul actually runs in: the preferred one, else the first fallback the chip
        has (FP8 weights on an A100 run through a 16-bit weight-only kernel)."""
        for dtype in COMPUTE_FALLBACK.get(preferred, (preferred,)):
            if dtype in self.peak_flops_per_s:
                return dtype
        raise InputError(f"{self.id} has no peak for {preferred} or any fallback")

    def peak(self, dtype: str, sparse: bool = False) -> float:
        """Peak FLOP/s for a compute dtype; ×2 for 2:4 sparse tensor math where supported."""
        base = self.peak_flops_per_s[dtype]
        return base * 2.0 if sparse and self.sparsity_2_4 and dtype != "fp32" else base

    def expected_peak(self, dtype: str, sparse: bool = False) -> float:
        """The peak the expected time runs against: the datasheet peak × sustained_compute_ratio.

        A board whose power limit binds under sustained tensor-core load clocks below the boost
        clock its datasheet peak is quoted at (NVIDIA: a 70 W T4 power-caps continuous GEMMs to
        ~24 of its 65 TFLOPS, forums.developer.nvidia.com/t/264462), so every compute-bound
        kernel runs that much slower; the memory clock, and so the bandwidth, stays. The kernel
        curves are shares of their measured chip's datasheet peak (hardware/kernels.yaml), so
        for a chip borrowing them the ratio is its sustained throughput over what the curves
        predict at full clock. The ideal keeps the datasheet peak (`peak`)."""
        return self.peak(dtype, sparse) * self.sustained_compute_ratio

    def ridge_flops_per_byte(self, dtype: str) -> float:
        """Ridge point I* = P / W (FLOP per byte): above it an op is compute-bound."""
        return self.peak_flops_per_s[dtype] / self.memory_bandwidth_bytes_per_s


@dataclass(frozen=True)
class Price:
    """What one accelerator costs to run: USD per GPU-hour (hardware/prices.yaml, the median of
    dated on-demand offers) and its board power (TDP), each with its source; where the file
    gives them, the spot price (median of dated spot offers) and the spot preemption rate with
    theirs."""

    hardware: str
    usd_per_gpu_hour: float | None
    board_power_w: float | None
    source: str
    spot_usd_per_gpu_hour: float | None = None  # median of dated spot/interruptible offers
    spot_preemptions_per_hour: float | None = None  # a spot GPU's expected reclaims per hour
    spot_source: str = ""

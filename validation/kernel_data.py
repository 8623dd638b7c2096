# ruff: noqa: C408
"""The measured kernel timings validation/calibrate_kernels.py fits: where they are in
aiconfigurator-core 0.12.0 (the `calibrate` extra), which chip, engine and version each kernel
group (a GPU generation) is measured on, and the byte sizes of the measured dtypes.
"""

from __future__ import annotations

from pathlib import Path

import aiconfigurator_core

from roofline.timing.gemm import VLLM_SM89_FP8

ROOT = Path(__file__).resolve().parent.parent
PKG = "aiconfigurator-core==0.12.0"
DATA = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
MIN_NK = 512  # fit shapes of LLM layers: N and K of a layer's GEMM are at least 512 after TP
MMA_ROWS = 16.0  # roofline/timing/gemm.py: a GEMV pads to the 16-row MMA tile

# kernel group -> (chip dir, catalog accelerator it is measured on, engine, version,
#                  members of the group, weight-only sources {dtype: (engine, version)})
GROUPS = {
    "nvidia-ampere": dict(
        chip="a100_sxm",
        hw="nvidia-a100-80gb-sxm",
        sms=(108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: 108 SMs"),
        gemm=("trtllm", "1.0.0"),
        attn=("vllm", "0.14.0"),
        nccl="2.27.3",
        members=[
            "nvidia-a100-80gb-sxm",
            "nvidia-a100-40gb-sxm",
            "nvidia-a100-80gb-pcie",
        ],
        borrowers=["nvidia-a10", "nvidia-t4", "nvidia-v100-sxm"],
    ),
    "nvidia-hopper": dict(
        chip="h100_sxm",
        hw="nvidia-h100-sxm",
        sms=(132, "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 2: 132 SMs"),
        gemm=("trtllm", "1.3.0rc20"),
        attn=("vllm", "0.24.0"),
        nccl="2.27.3",
        members=[
            "nvidia-h100-sxm",
            "nvidia-h200-sxm",
            "nvidia-h800-sxm",
            "nvidia-h100-pcie",
            "nvidia-h100-nvl",
            "nvidia-h200-nvl",
        ],
        borrowers=["nvidia-h20"],
        siblings=[("h200_sxm", "nvidia-h200-sxm")],
    ),
    "nvidia-blackwell": dict(
        chip="b200_sxm",
        hw="nvidia-b200-hgx",
        sms=(
            148,
            "Chips and Cheese, 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (2025): "
            "74 SMs enabled per die, 148 per GPU",
        ),
        gemm=("trtllm", "1.3.0rc20"),
        attn=("vllm", "0.24.0"),
        nccl="2.27.3",
        members=["nvidia-b200-hgx", "nvidia-b300-hgx", "nvidia-gb200"],
        siblings=[("b300_sxm", "nvidia-b300-hgx"), ("gb200", "nvidia-gb200")],
        borrowers=[],
    ),
    "nvidia-ada": dict(
        chip="l40s",
        hw="nvidia-l40s",
        sms=(142, "NVIDIA L40S datasheet (2023): 18,176 CUDA cores = 142 SMs × 128"),
        gemm=("vllm", "0.24.0"),
        attn=("vllm", "0.24.0"),
        nccl=None,
        members=["nvidia-l40s"],
        borrowers=["nvidia-l4"],
        # vLLM's CUTLASS FP8 GEMM picks its tile per shape (roofline/timing/gemm.py)
        tile_rules={"CutlassFP8ScaledMMLinearKernel": VLLM_SM89_FP8},
        l2=(
            96 * 2**20,
            "NVIDIA Ada Lovelace GPU architecture whitepaper (2023), AD102: 96 MB L2 [uncertain: "
            "the L40S's enabled share; the measured rows step from L2 to HBM speed between "
            "6 weight copies of 88 and 100 MB]",
        ),
    ),
}
# A FP8 GEMM behind vLLM's Fp8LinearMethod with a static activation scale (the collector's
# Fp8Config(activation_scheme="static")) quantises its bf16 input first, in a kernel of its own
# (CutlassFP8ScaledMMLinearKernel.apply_weights: QuantFP8 -> ops.scaled_fp8_quant, then
# ops.cutlass_scaled_mm): M·K values read in bf16 and written in fp8, 3 bytes each, timed with it.
QUANT_BYTES = {"CutlassFP8ScaledMMLinearKernel": 3.0}
# aiconfigurator's vLLM GEMM collector (collector/vllm/collect_gemm.py, run_gemm) times
# outside_loop_count = 6 Linear layers of distinct weights on one input, replayed in a CUDA
# graph: when the 6 weight copies and the input fit in L2 the weights stream from L2, not HBM.
HARNESS_COPIES = {"vllm": 6}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "sq": "int8"}
WEIGHT_ONLY = {"int8_wo": ("int8", 1.0), "int4_wo": ("int4", 0.5)}  # bytes per weight
ACT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5, "int8": 1.0}
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5625, "int8": 1.0}  # nvfp4: 4 bit + 1/16 scale


def data_path(chip: str, op: str, engine: str, version: str, name: str) -> Path:
    """A measurement file of aiconfigurator-core: <chip>/<op>/<engine>/<version>/<name>."""
    return DATA / chip / op / engine / version / name


def cite(p: Path) -> str:
    """The `source:` text of a measurement file: the package and its path inside it."""
    return f"{PKG}: aiconfigurator_core/systems/data/{p.relative_to(DATA)}"


# aiconfigurator's TensorRT-LLM GEMM collector builds its FP8 Linear without an input_scale, so
# TensorRT-LLM's FP8QDQ method runs its dynamic-quantization path and every timed fp8 GEMM
# carries a compute-scale (per-tensor amax) pass; aiconfigurator itself derives the static-scale
# GEMM at query time by subtracting that pass, timed on its own in the same release
# (collector/trtllm/collect_gemm.py run_gemm at ai-dynamo/aiconfigurator@095f58a5;
# quantize/trtllm/<version>/computescale_perf.parquet). A checkpoint with static activation
# scales (ModelOpt's and llm-compressor's FP8 exports) and vLLM's and SGLang's FP8 paths never
# run it: their own measured FP8 GEMMs (gemm/vllm/0.24.0, gemm/sglang/0.5.14: 4.7-5.3 us on
# H100 at M <= 128, N = K = 32) match TensorRT-LLM's fp8 minus the pass (12.2 - 7.2 us).
DYNAMIC_SCALE_PASS = {"trtllm": ("fp8", "torch_flow")}  # engine -> (raw dtype, kernel_source)


def static_scale_rows(df, chip: str, engine: str, version: str):
    """A GEMM table of `engine` with its fp8 torch_flow rows as static-scale GEMMs: each such
    latency less the compute-scale pass timed at its (m, k) (DYNAMIC_SCALE_PASS); every other
    row, and the whole table of another engine or of a release that timed no such pass,
    unchanged."""
    import pandas as pd

    raw, kernel = DYNAMIC_SCALE_PASS.get(engine, ("", ""))
    p = data_path(chip, "quantize", engine, version, "computescale_perf.parquet")
    hit = (df.gemm_dtype == raw) & (df.kernel_source == kernel)
    if not raw or not hit.any() or not p.exists():
        return df
    cs = pd.read_parquet(p)
    cs = cs[cs.quant_dtype == raw].groupby(["m", "k"]).latency.median()
    scale_pass = pd.Series(
        [cs.get((m, k), 0.0) for m, k in zip(df.m, df.k, strict=True)], index=df.index
    )
    out = df.copy()
    out.loc[hit, "latency"] = df.latency[hit] - scale_pass[hit]
    return out

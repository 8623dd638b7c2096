"""A serving engine's memory rule and frontend (the KV-budget rules are in
roofline/step/memory.py's docstring, with their sources), and the one table of engines by id."""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.domain.errors import InputError, did_you_mean
from roofline.domain.hardware import Accelerator
from roofline.domain.units import GB
from roofline.engines.versions import pick_profile, split_name


@dataclass(frozen=True)
class Engine:
    """A serving engine's memory rule, and the path requests take to it: `frontend` "api" (its
    OpenAI-compatible API server: HTTP, tokenization, streamed detokenization; the host costs
    of hardware/engines.yaml request_latency_us and api_*) or "none" (an offline harness that
    hands the engine token ids and reads tokens back in process: vLLM's LLM class and
    benchmark_throughput, trtllm-bench, MLPerf LoadGen's SUT; roofline.engines.scheduler)."""

    name: str
    memory_fraction: float
    rule: str  # "fraction_of_capacity" | "fraction_of_free" | "ideal"
    runtime_overhead_bytes: float  # CUDA context, graphs, communicator buffers
    profile_tokens: int  # tokens of the activation-profiling forward pass (0: none reserved)
    block_tokens: int
    source: str
    frontend: str = "api"
    # the hardware/engines.yaml profile whose host costs and scheduler defaults apply: a version
    # profile of the engine (roofline/engines/versions.py), "" for the engine's own
    profile: str = ""
    # the version asked for ("" when none: the current release), and whether memory_fraction was
    # given (a run's --gpu-memory-utilization / --mem-fraction-static) rather than the default,
    # which SGLang derives per device and layout (roofline.engines.scheduler.sglang_static_fraction)
    version: str = ""
    fraction_given: bool = False

    @property
    def profile_id(self) -> str:
        """The engines.yaml entry this engine runs under: its version profile or its own."""
        return self.profile or self.name


ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        "vllm",
        0.90,
        "fraction_of_capacity",
        1.0 * GB,
        8192,
        16,
        "vLLM docs: gpu_memory_utilization=0.9, block_size=16; profile run of "
        "max_num_batched_tokens (8192 for V0 here) and, from V1, the dummy sampler over "
        "max_num_seqs rows (roofline.step.memory.profile_peak_bytes); ~1 GB for CUDA context, "
        "graphs and NCCL buffers (vLLM start-up memory log; uncertain)",
    ),
    "sglang": Engine(
        "sglang",
        0.88,
        "fraction_of_capacity",
        0.0,
        0,
        1,
        "SGLang server args: mem_fraction_static from the TP size before 0.4.6 (0.88 at TP1 to "
        "0.81 at TP8), 0.88 from 0.4.6 to 0.5.4 (uncertain: other memory rules), from 0.5.5 "
        "derived per device and layout (roofline.engines.scheduler.sglang_static_fraction); "
        "token-granular KV pool (page size 1)",
    ),
    "trtllm": Engine(
        "trtllm",
        0.90,
        "fraction_of_free",
        1.0 * GB,
        8192,
        32,
        "TensorRT-LLM docs: kv_cache_free_gpu_mem_fraction=0.9 of the memory left after weights "
        "and activations, tokens_per_block=32, max_num_tokens=8192",
    ),
    "jetstream-pytorch": Engine(
        "jetstream-pytorch",
        1.0,
        "fraction_of_capacity",
        0.0,
        0,
        1,
        "JetStream-PyTorch: KV preallocated as --batch_size slots of --max_cache_length tokens "
        "(AI-Hypercomputer/jetstream-pytorch run_server.py); XLA owns the TPU's memory, so every "
        "byte beside the weights may hold it [uncertain: XLA's own buffers not reserved]",
    ),
    "tensorrt-edge-llm": Engine(
        "tensorrt-edge-llm",
        0.90,
        "fraction_of_free",
        1.0 * GB,
        8192,
        32,
        "TensorRT Edge-LLM: borrowed from TensorRT-LLM's rule (kv_cache_free_gpu_mem_fraction 0.9, "
        "32-token blocks) [borrowed: its documentation states no KV rule]",
    ),
    "llamacpp": Engine(
        "llamacpp",
        1.0,
        "fraction_of_capacity",
        0.0,
        512,
        1,
        "llama.cpp: the KV cache for n_ctx tokens and compute buffers for one n_ubatch (512) "
        "micro-batch in the memory the GPU may use (Metal's wired share on unified memory)",
    ),
    "mlx": Engine(
        "mlx",
        1.0,
        "fraction_of_capacity",
        0.0,
        2048,
        256,
        "mlx-lm: no preallocated pool, the KV cache grows in steps of 256 tokens "
        "(mlx_lm/models/cache.py KVCache.step) and a prompt is prefilled in chunks of 2,048 tokens "
        "(generate_step prefill_step_size) within the memory Metal lets the GPU wire [uncertain]",
    ),
    "ideal": Engine(
        "ideal",
        1.0,
        "ideal",
        0.0,
        0,
        1,
        "upper bound: every byte that is not a weight holds KV, no paging waste",
    ),
}


def engine(name: str, hw: Accelerator | None = None, version: object = None) -> Engine:
    """An engine by name; "auto" is llama.cpp on unified-memory chips and vLLM elsewhere. A
    version, given as `version` or in the name ("vllm@0.6"), picks the engine's version profile
    in hardware/engines.yaml (roofline.engines.versions.pick_profile; needs `hw`, whose catalog
    holds the profiles)."""
    name, at = split_name(name)
    if at is not None:
        if version is not None and str(version) != at:
            raise InputError(f"engine '{name}@{at}' and version '{version}' disagree")
        version = at
    key = name.lower()
    if key == "auto":
        key = "llamacpp" if hw is not None and hw.unified_memory else "vllm"
    if key not in ENGINES:
        hint = did_you_mean(key, list(ENGINES), f"choose auto or one of {', '.join(ENGINES)}")
        raise InputError(f"unknown engine '{name}'", hint=hint)
    eng = ENGINES[key]
    if version is None:
        return eng
    eng = replace(eng, version=str(version))
    if hw is None:
        return eng
    prof = pick_profile(key, version, hw.efficiency.engines or {})
    return eng if prof == key else replace(eng, profile=prof)

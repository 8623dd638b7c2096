"""The engine's scheduler policy: its limits (EngineRules) and their defaults per engine and device.

vLLM V1 (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, OpenAI API server context):
max_num_batched_tokens 8192 and max_num_seqs 1024 on devices of at least 70 GiB that are not an A100
(H100, H200, B200, MI300X; "setting large max_num_batched_tokens for A100 reduces throughput, see PR
#17885"), else 2048 and 256. Chunked prefill is always on in V1 (`_set_default_args_v1`). SGLang
(python/sglang/srt/server_args.py, _handle_gpu_memory_settings): chunked_prefill_size 2048 below 35
GB, 4096 below 60 GB, 8192 below 160 GB, 16384 above; its running requests are capped at clamp(KV
tokens / context length x 512, 2048, 4096) and at half the KV tokens
(python/sglang/srt/model_executor/model_runner.py _resolve_max_num_reqs; sglang_max_running); it
runs prompts first (issue 34 c): its scheduler's run_step tries get_new_batch_prefill before
anything else and decodes only when no prefill batch forms, mixing the running decodes into a
prefill batch only under --enable-mixed-chunk, off by default (sgl-project/sglang
python/sglang/srt/managers/scheduler.py at d51c1c21, server_args.py enable_mixed_chunk False), so a
prefill batch of up to chunked_prefill_size tokens stalls the decodes: the simulator's unchunked
mode with that budget (PREFILL_FIRST), each batch filled with a chunk of the next prompt and a
prompt longer than the budget run chunk by chunk, as SGLang's PrefillAdder does
(EngineRules.prefill_fill) [approximation: under attention DP every rank's decodes wait for one
rank's prefill batch, where SGLang's other ranks may decode beside it]; and its scheduler
(schedule_policy.py PrefillAdder) starts a request only while the KV
pool holds, beside what is in use, new_token_ratio of every running request's remaining output
tokens (SGLANG_INIT_NEW_TOKEN_RATIO 0.7, decaying towards 0.098 over 600 decode steps while nothing
is retracted): reserve_output 0.7 here [uncertain: the ratio's start; its decay admits more later, a
retraction raises it again; the decay, each newcomer's whole output and SGLang's ignore_eos check,
modelled on branch sglang-admission, fit worse out of sample: docs/ACCURACY.md, Not yet
explained]. TensorRT-LLM (tensorrt_llm/llmapi/llm_args.py BaseLlmArgs:
max_batch_size 2048, max_num_tokens 8192, the defaults trtllm-serve passes on,
tensorrt_llm/commands/serve.py get_llm_args) on every device; its capacity scheduler's default
policy GUARANTEED_NO_EVICT (tensorrt_llm/_torch/pyexecutor/scheduler.py BindCapacityScheduler;
TensorRT-LLM docs, "Useful Runtime Options") starts a request only when the KV blocks it needs to
its last token fit beside those every running request still needs to its own, so it never pauses
one: reserve_output 1 here, where vLLM admits on the KV a request holds now and preempts when it
runs out (0).
trtllm-serve leaves chunked prefill off but in-flight batching runs each context phase in the
same step as the generation phases, within max_num_tokens: the simulator's chunked mode (mixed
steps under the token budget) is the nearer
model [approximation: a prompt is not split across steps there].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.engines.versions import parse_version
from roofline.timing.host import EngineProfile

GIB = 1024**3
DEFAULT_MAX_SEQS = 256  # vLLM max_num_seqs below 70 GiB (and on A100)
DEFAULT_MAX_BATCHED_TOKENS = 2048  # vLLM V1 max_num_batched_tokens below 70 GiB (and on A100)


TRTLLM_MAX_BATCH_SIZE = 2048  # llm_args.py BaseLlmArgs.max_batch_size
TRTLLM_MAX_NUM_TOKENS = 8192  # llm_args.py BaseLlmArgs.max_num_tokens
# the share of each running request's remaining output the scheduler holds KV for before it starts
# another (module docstring): vLLM 0, SGLang's initial new_token_ratio, TensorRT-LLM's
# GUARANTEED_NO_EVICT all of it
RESERVE_OUTPUT = {"sglang": 0.7, "trtllm": 1.0}
# engines whose waiting requests preempt running ones of a worse priority, and by how much worse:
# SGLang's --priority-scheduling-preemption-threshold default (server_args.py; schedule_policy.py
# PrefillAdder.preempt_to_schedule); vLLM preempts only to fit its running requests
PRIORITY_PREEMPTION = {"sglang": 10}
SGLANG_MIN_RUNNING, SGLANG_MAX_RUNNING = 2048, 4096  # model_runner._resolve_max_num_reqs clamp


def batch_defaults(engine: str, hw: Accelerator) -> tuple[int, int]:
    """(max sequences, token budget per step) the engine picks on `hw` when not told: the rules
    in the module docstring; other engines take vLLM's small-device values."""
    if engine == "trtllm":
        return TRTLLM_MAX_BATCH_SIZE, TRTLLM_MAX_NUM_TOKENS
    mem = hw.memory_capacity_bytes
    if engine == "vllm":
        if mem >= 70 * GIB and "a100" not in hw.id.lower():
            return 1024, 8192
        return DEFAULT_MAX_SEQS, DEFAULT_MAX_BATCHED_TOKENS
    if engine == "sglang":
        mib = mem / 1024**2
        chunk = 2048 if mib < 35 * 1024 else 4096 if mib < 60 * 1024 else 8192
        return DEFAULT_MAX_SEQS, chunk if mib < 160 * 1024 else 16384
    return DEFAULT_MAX_SEQS, DEFAULT_MAX_BATCHED_TOKENS


# trtllm-bench throughput, when not given --max_batch_size and --max_num_tokens, picks its own
# (NVIDIA/TensorRT-LLM tensorrt_llm/bench/benchmark/utils/general.py get_settings, PyTorch
# backend; tensorrt_llm/bench/build/build.py get_benchmark_engine_settings for `trtllm-bench
# build --dataset`, the TensorRT engines of 0.x; both call tensorrt_llm/bench/build/tuning.py
# calc_engine_setting and finetune_setting, read at commits 04cba882 and 0171265e): the KV
# "bytes per token" 2 x layers x max(TP, num_key_value_heads) x head_size (HF head_dim, else
# hidden / heads: 56 for DeepSeek-V3's MLA, whose cache really holds 576 values per layer) x
# bytes per KV element (1 for FP8, else 2); the requests that fit in fraction x (GPUs x device
# memory - parameters x bytes per element) at the dataset's mean prompt + output; max_batch_size
# that count (at most 4,096, / PP) rounded up: to 32s (at least 64) below 256, 128s below 1,024,
# else 256s; max_num_tokens that count x (1 + mean prompt / mean output) (at most 32,768)
# rounded up to 256s (at least 2,048) below 4,096, 512s below 8,192, else 1,024s. The PyTorch
# path without chunked prefill raises max_num_tokens to the longest prompt + max_batch_size; the
# build path does not [uncertain: how 0.17's runtime ran a 5,000-token prompt in an engine built
# for 2,048 tokens with --enable_chunked_context off, as the perf-overview's command ran it: the
# simulator's mixed steps run it whole].
# Quantisations outside TUNED_QUANTS (NVFP4, FP8, FP8 block scales, none) keep BuildConfig's
# 2,048 and 8,192. The limits are per rank (the DeepSeek-R1 performance guide,
# docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md: "--max_batch_size: Max
# batch size in each rank"), as EngineRules takes them.
TRTLLM_BENCH_BYTES = {"fp8": 1.0, "nvfp4": 0.5, "bf16": 2.0, "fp16": 2.0}  # tuning.BYTES_PER_ELEM
TRTLLM_BENCH_HARNESSES = ("trtllm-bench", "trtllm-bench-build")
TRTLLM_BUILD_FRACTION = 0.95  # calc_engine_setting's kv_cache_gpu_mem_fraction default
NVFP4_BLOCK = 16  # elements per FP8 scale in an NVFP4 checkpoint (ModelOpt)


def _checkpoint_elements(model: ModelArch, weights: str) -> float:
    """The parameter count trtllm-bench reads from the checkpoint's safetensors headers
    (ModelConfig.get_param_count: every stored element, the MTP module included): an NVFP4
    checkpoint stores two 4-bit weights per uint8 element and one FP8 scale per 16 weights
    [approximation: every linear layer but the output head packed, as ModelOpt quantises them:
    391.8B for DeepSeek-R1, where nvidia/DeepSeek-R1-0528-NVFP4-v2 lists 393.6B]."""
    b = model.param_breakdown()
    total = float(b["total"] + b["mtp"])
    if weights != "nvfp4":
        return total
    packed = b["attention"] + b["mlp"] + b["experts_routed"] + b["experts_shared"]
    return total - packed + packed / 2 + packed / NVFP4_BLOCK


def trtllm_bench_limits(
    model: ModelArch,
    hw: Accelerator,
    tp: int,
    pp: int,
    weights: str,
    kv: str,
    lengths: tuple[float, float, int],
    fraction: float,
    harness: str = "trtllm-bench",
) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) per rank that `harness` (trtllm-bench, the PyTorch
    path; trtllm-bench-build, an engine built from the dataset) picks for `model` in `weights`
    with a `kv` cache on TP x PP `hw` devices, for a dataset of `lengths` (mean prompt, mean
    output, longest prompt) and the run's KV memory `fraction` (the build path's own 0.95 for
    trtllm-bench-build): the rules above."""
    if harness not in TRTLLM_BENCH_HARNESSES:
        raise InputError(f"harness must be {' or '.join(TRTLLM_BENCH_HARNESSES)}, got '{harness}'")
    isl, osl, max_isl = lengths
    if harness == "trtllm-bench-build":  # build.py passes no fraction: calc_engine_setting's
        fraction = TRTLLM_BUILD_FRACTION
    per_elem = TRTLLM_BENCH_BYTES.get(weights)
    if per_elem is None:  # not tuned: BuildConfig's defaults
        bs, tokens = TRTLLM_MAX_BATCH_SIZE, TRTLLM_MAX_NUM_TOKENS
    else:
        heads = max(tp, model.num_key_value_heads or model.num_attention_heads)
        head = model.head_dim or model.hidden_size // model.num_attention_heads
        kv_elem = 1.0 if kv == "fp8" else 2.0
        per_token = 2 * model.num_hidden_layers * heads * head * kv_elem / GIB
        engine = _checkpoint_elements(model, weights) * per_elem / GIB
        cache = (hw.memory_capacity_bytes / GIB * tp * pp - engine) * fraction
        requests = cache / (per_token * (isl + osl))
        if requests < 1:
            raise InputError("trtllm-bench finds no room for one request's KV at this layout")
        raw_bs = min(requests, 4096) / pp
        raw_tok = min(raw_bs * (1 + isl / osl), 32768)
        steps = (32, 128, 256)
        step = steps[0] if raw_bs < 256 else steps[1] if raw_bs < 1024 else steps[2]
        bs = step * math.ceil(raw_bs / step)
        bs = max(bs, 64) if raw_bs < 256 else bs
        q = 256 if raw_tok < 4096 else 512 if raw_tok < 8192 else 1024
        tokens = q * math.ceil(raw_tok / q)
        tokens = max(tokens, 2048) if raw_tok < 4096 else tokens
    if harness == "trtllm-bench":  # no chunked prefill: a whole prompt fits in one step
        tokens = max(tokens, max_isl + bs)
    return int(bs), int(tokens)


# engines whose scheduler runs a waiting prompt's prefill as a step of its own, ahead of the
# running decodes, instead of beside them (module docstring): SGLang; a case or caller that
# passes chunked_prefill True gets the mixed steps (SGLang's --enable-mixed-chunk)
PREFILL_FIRST = frozenset({"sglang"})
V0_MIN_BATCHED_TOKENS = 2048  # vllm/config.py SchedulerConfig (V0): max(max_model_len, 2048)
V0_CHUNK_TOKENS = 512  # the same, with chunked prefill, v0.5.x-0.6.3 (2048 from about 0.6.4)


def version_defaults(
    engine: str,
    hw: Accelerator,
    version: EngineProfile | None,
    max_len: int,
    chunked: bool | None,
) -> tuple[int, int, bool]:
    """(max sequences, token budget per step, chunked prefill) of `engine` on `hw` under its
    profile (hardware/engines.yaml `max_num_seqs`, `chunked_prefill`, e.g. a version profile;
    absent: the engine's current rules, batch_defaults, chunked unless told; "chunked" is the
    simulator's mixed steps, so a prefill-first engine, PREFILL_FIRST, is unchunked with its
    chunk as the prefill step's budget, as its scheduler runs them). `chunked` None
    takes the profile's default. A profile that does not chunk by default runs vLLM V0's
    scheduler budget (vllm/config.py SchedulerConfig, v0.5.x-0.6.x: max_num_batched_tokens =
    max(max_model_len, 2048) without chunked prefill, 512 with it, "the best balance between
    ITL and TTFT on A100"; 2048 with it by v0.6.6 [approximation for 0.6.4-0.7.x]): the longest
    request stands for max_model_len [approximation: the server's max_model_len is at least
    that]."""
    seqs, tokens = batch_defaults(engine, hw)
    mixed = engine not in PREFILL_FIRST  # the simulator's chunked mode: prompts in decode steps
    if version is None:
        return seqs, tokens, mixed if chunked is None else chunked
    seqs = version.max_num_seqs or seqs
    if version.chunked_prefill is None:
        return seqs, tokens, mixed if chunked is None else chunked
    chunk = version.chunked_prefill if chunked is None else chunked
    if not version.chunked_prefill:
        tokens = V0_CHUNK_TOKENS if chunk else max(max_len, V0_MIN_BATCHED_TOKENS)
    return seqs, tokens, chunk


def output_reserve(engine: str) -> float:
    """The share of the running requests' remaining output tokens whose KV the engine's scheduler
    keeps free before it starts another request (module docstring; 0 for the rest)."""
    return RESERVE_OUTPUT.get(engine, 0.0)


def sglang_max_running(kv_tokens: float, context_len: int) -> int:
    """SGLang's running-request cap: clamp(KV tokens / context length x 512, 2048, 4096), at most
    half the KV tokens (model_runner.py _resolve_max_num_reqs)."""
    est = min(
        max(int(kv_tokens / max(context_len, 1) * 512), SGLANG_MIN_RUNNING), SGLANG_MAX_RUNNING
    )
    return max(min(est, int(kv_tokens // 2)), 1)


# SGLang's default mem_fraction_static from the heuristic of sgl-project/sglang PR #10975
# (merged by 2025-09-30, when #11076, commit dda34c2f, set its constants): ServerArgs.
# _handle_gpu_memory_settings picks chunked_prefill_size and cuda_graph_max_bs by the device's
# memory (MiB: under 20 GiB 2,048 / 8; under 35 GiB 2,048 / 24, 80 at TP >= 4; under 60 GiB
# 4,096 / 32, 160; under 160 GiB 8,192 / 256, 512; else 16,384 / 512) and reserves, in MiB,
# 512 + 1.5 x max(chunk, 2,048) + 2 x cuda_graph_max_bs + TP x PP / 8 x 1,024 (+ 3 x max_bs x DP,
# and 1.5 x max_bs x DP more above 300, under attention DP), at least 10,240 above 60 GiB;
# fraction = (memory - reserved) / memory. Applied from 0.5.5 (GPUStack's runs, Nov 2025)
# [uncertain: 0.5.3 and 0.5.4 may already carry it]. sgl-project/sglang issue #29092 reads 0.828
# for Qwen3-32B on one H100 in a later release (0.835 by this rule).
# Before it, 0.3 to 0.4.5 set the fraction from the TP size alone (ServerArgs.__post_init__, read
# in the released wheels sglang 0.3.0, 0.4.0.post1, 0.4.3.post2, 0.4.4 and 0.4.5 on PyPI):
# 0.79 at TP >= 16, 0.81 at TP >= 8 (0.83 in 0.3.x), 0.85 at TP >= 4, 0.87 at TP >= 2, else 0.88,
# whatever the device [uncertain between 0.4.6 and 0.5.4: 0.4.6.post5 and 0.4.7 keep the TP rule
# only up to 81,920 MiB and raise it above 96 GiB, PR #7054 (2025-06-10) reserves 9.5-32 GiB by
# the device's memory; 0.88 here, as no case runs them at full load].
SGLANG_FRACTION_FROM = (0, 5, 5)
SGLANG_TP_RULE_BEFORE = (0, 4, 6)
_SGLANG_BUCKETS = (  # (below MiB, chunk, cuda_graph_max_bs at TP < 4, at TP >= 4)
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (160 * 1024, 8192, 256, 512),
    (math.inf, 16384, 512, 512),
)


def sglang_static_fraction(
    version: str, memory_bytes: float, tp: int, pp: int, dp: int
) -> float | None:
    """SGLang's default mem_fraction_static on a device of `memory_bytes` at TP x PP with `dp`
    attention-DP ranks (1: off), by the rules above: the TP size's before 0.4.6, the derived one
    from 0.5.5; None between them (or no version stated: the caller keeps its default)."""
    v = parse_version(version) if version else None
    if v is None:
        return None
    if v < SGLANG_TP_RULE_BEFORE:
        return sglang_tp_fraction(tp, early=v < (0, 4))
    if v < SGLANG_FRACTION_FROM:
        return None
    mib = memory_bytes / 1024**2
    _, chunk, small, large = next(b for b in _SGLANG_BUCKETS if mib < b[0])
    graph_bs = small if tp < 4 else large
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graph_bs + tp * pp / 8 * 1024
    if dp > 1:
        reserved += graph_bs * dp * 3 + (graph_bs * dp * 1.5 if graph_bs > 300 else 0)
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)


def sglang_tp_fraction(tp: int, early: bool = False) -> float:
    """SGLang 0.3-0.4.5's mem_fraction_static from the TP size alone (the comment above; `early`:
    0.3.x's 0.83 at TP8)."""
    if tp >= 16:
        return 0.79
    if tp >= 8:
        return 0.83 if early else 0.81
    return 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88


TOKENIZERS = ("fast", "slow")
FRONTENDS = ("api", "none")


def with_frontend(eng: Engine, frontend: str) -> Engine:
    """`eng` reached through `frontend`: "api" (its API server, the default) or "none" (an offline
    harness: no HTTP, tokenization or detokenization on the path;
    roofline.engines.engine.Engine)."""
    if frontend not in FRONTENDS:
        raise InputError(f"frontend must be api or none, got '{frontend}'")
    return replace(eng, frontend=frontend)


def frontend_costs(profile: EngineProfile | None, tokenizer: str = "fast") -> tuple[float, ...]:
    """(per request, per streamed token with `tokenizer`'s detokenizer, per token with the fast
    one) of the engine's API server, seconds: hardware/engines.yaml `api_request_us`,
    `api_token_fast_us`, `api_token_slow_us` (sourced there; zeros for an engine without them)."""
    if tokenizer not in TOKENIZERS:
        raise InputError(f"tokenizer must be fast or slow, got '{tokenizer}'")
    if profile is None:
        return 0.0, 0.0, 0.0
    fast, slow = profile.api_token_fast_s, profile.api_token_slow_s
    return profile.api_request_s, (slow if tokenizer == "slow" else fast), fast


@dataclass(frozen=True)
class EngineRules:
    """The scheduler's limits. `max_batched_tokens` None: a prefill step takes every admitted
    prompt (no token budget). `reserve_output` ρ: a request starts when the KV it holds now plus
    ρ of its remaining output fits beside the KV in use and ρ of every running request's
    remaining output: 0 admits on the KV held now (vLLM; preempted when the cache runs out), 1
    on the whole sequences (TensorRT-LLM's GUARANTEED_NO_EVICT; never preempted), SGLang's
    new_token_ratio between. `scheduler_steps` N: vLLM V0's multi-step scheduling
    (--num-scheduler-steps, roofline.serving.sim.multistep): the scheduler runs once every N decode
    steps; `stream_steps`: its outputs reach the client step by step (vLLM 0.6.3 and later), not
    in one bunch at the batch's end. `prefill_seqs`: the most prompts one non-chunked prefill
    step runs (0: as many as the token budget holds; 1: JetStream's one prefill at a time,
    engines.yaml prefill_requests_per_step). `prefill_fill`: a non-chunked prefill step fills its
    token budget with a chunk of the next prompt, its rest in the steps after, all ahead of the
    decodes (SGLang's prefill batches: PrefillAdder adds the prompt that does not fit as a chunked
    request, python/sglang/srt/managers/schedule_policy.py at d51c1c21; PREFILL_FIRST)."""

    max_seqs: int
    budget_blocks: int
    block_tokens: int
    max_batched_tokens: int | None = None
    chunked_prefill: bool = False
    preemption: str = "recompute"
    swap_bandwidth_bytes_per_s: float | None = None
    reserve_output: float = 0.0
    scheduler_steps: int = 1
    prefill_seqs: int = 0
    prefill_fill: bool = False
    stream_steps: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.max_seqs <= 65_536:
            raise InputError(f"max sequences must be from 1 to 65536, got {self.max_seqs}")
        if self.budget_blocks < 1:
            raise InputError("the KV budget holds no block: the model leaves no room for KV")
        if self.block_tokens < 1:
            raise InputError(f"block tokens must be at least 1, got {self.block_tokens}")
        if self.preemption not in ("recompute", "swap"):
            raise InputError(f"--preemption must be recompute or swap, got {self.preemption}")
        if not 0.0 <= self.reserve_output <= 1.0:
            raise InputError(
                f"the output share reserved must be from 0 to 1, got {self.reserve_output}"
            )
        if not 1 <= self.scheduler_steps <= 1024:
            raise InputError(f"scheduler steps must be from 1 to 1024, got {self.scheduler_steps}")
        if self.prefill_seqs < 0:
            raise InputError(
                f"prompts per prefill step must be non-negative, got {self.prefill_seqs}"
            )
        if self.chunked_prefill and self.max_batched_tokens is None:
            raise InputError("chunked prefill needs a token budget per step")
        if self.max_batched_tokens is not None and self.max_batched_tokens <= (
            self.max_seqs if self.chunked_prefill else 0
        ):
            raise InputError(
                f"the token budget per step ({self.max_batched_tokens}) must exceed max sequences "
                f"({self.max_seqs}) with chunked prefill"
            )


@dataclass(frozen=True)
class Frontend:
    """The API server between the benchmark client and the engine: every request and every
    token it streams back pass through it. `latency_s` is the fixed path a request adds outside
    the engine's steps (HTTP, the hand-off to the engine, the way back to the client): it adds to
    TTFT and E2E, and in a closed loop the next request leaves only when the client has seen the
    last one end. `request_s` and `token_s` are the API server's own CPU time per request
    (parsing, validation, tokenization, sending it to the engine) and per streamed output token
    (detokenization, the response object, the server-sent event): one Python event loop does
    both, first come first served, so they queue behind each other (scheduler: a new request
    reaches the engine after the work ahead of it, and a token reaches the client after the
    tokens of the steps before it). Host software, so never part of the ideal."""

    latency_s: float = 0.0
    request_s: float = 0.0
    token_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("latency_s", "request_s", "token_s"):
            v = getattr(self, name)
            if not (v >= 0 and v < 60):
                what = {"latency_s": "latency", "request_s": "time per request"}.get(
                    name, "time per token"
                )
                raise InputError(f"the front-end {what} must be from 0 to 60 s, got {v}")

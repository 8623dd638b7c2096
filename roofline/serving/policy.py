"""The engine's scheduler policy: its limits (EngineRules) and their defaults per engine and device.

vLLM V1 (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, OpenAI API server context):
max_num_batched_tokens 8192 and max_num_seqs 1024 on devices of at least 70 GiB that are not an
A100 (H100, H200, B200, MI300X; "setting large max_num_batched_tokens for A100 reduces
throughput, see PR #17885"), else 2048 and 256. Chunked prefill is always on in V1
(`_set_default_args_v1`). SGLang (python/sglang/srt/server_args.py,
_handle_gpu_memory_settings): chunked_prefill_size 2048 below 35 GB, 4096 below 60 GB, 8192
below 160 GB, 16384 above; its running-request cap comes from the KV pool, so the simulator's
sequence cap stays at vLLM's 256 for it [uncertain].
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import InputError
from roofline.hardware import Accelerator

GIB = 1024**3
DEFAULT_MAX_SEQS = 256  # vLLM max_num_seqs below 70 GiB (and on A100)
DEFAULT_MAX_BATCHED_TOKENS = 2048  # vLLM V1 max_num_batched_tokens below 70 GiB (and on A100)


def batch_defaults(engine: str, hw: Accelerator) -> tuple[int, int]:
    """(max sequences, token budget per step) the engine picks on `hw` when not told: the rules
    in the module docstring; other engines take vLLM's small-device values."""
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


# The API server's CPU time per request and per streamed output token (policy.Frontend), per
# engine and detokenizer path. vLLM V1 detokenizes in the API server process
# (vllm/v1/engine/output_processor.py, detokenizer.py): IncrementalDetokenizer.from_new_request
# takes FastIncrementalDetokenizer (the Rust tokenizers DecodeStream, a few us per token) for a
# PreTrainedTokenizerFast and SlowIncrementalDetokenizer (Python detokenize_incrementally:
# convert_ids_to_tokens + convert_tokens_to_string each token) for any other tokenizer, e.g.
# `--tokenizer-mode mistral`. Per token it also builds the request output and the OpenAI
# server-sent event, on the same event loop. "fast" 40 us [uncertain: host CPU]: at most ~85 us
# (vLLM PR #11636: a single API server streamed 56 req/s x 200 tokens = 11,200 tokens/s within 3%
# of the offline LLM class), and enough to bind a single API server in the tens of thousands of
# tokens/s (vLLM blog "gpt-oss performance optimization", Feb 2026: --stream-interval 10 gave
# 57% end to end at 1,024 concurrent requests of gpt-oss-20b on B200); V0 spent ~0.1 ms per
# sequence-step on its output processing (vLLM issue #6913: 3.4 ms at batch 32). "slow" 0.8 ms
# [uncertain: fitted to the median TTFT, 840 ms, of one public sweep at 48 users
# (mushfiqrahman.dev/?p=1668, vLLM --tokenizer-mode mistral, RTX 4090), where the sweep's
# output rate flattens at 975-1190 tokens/s; vLLM issue #1099 measured ~2 ms per
# convert_tokens_to_string call on the older full-prefix slow path]. Per request: 0 [no
# public figure; the ai.wmx.dev L4 sweep's TTFT grows with the number of 2048-token prefill
# chunks a round needs, not with the users queued at the API server]. Other engines: none
# modelled (SGLang detokenizes in its own process) [uncertain].
FRONTEND_COSTS_S: dict[str, dict[str, float]] = {
    "vllm": {"request": 0.0, "fast": 40e-6, "slow": 0.8e-3},
}
TOKENIZERS = ("fast", "slow")


def frontend_costs(engine: str, tokenizer: str = "fast") -> tuple[float, float, float]:
    """(per request, per streamed token with `tokenizer`'s detokenizer, per token with the fast
    one) of the engine's API server, seconds (FRONTEND_COSTS_S; zeros for other engines)."""
    if tokenizer not in TOKENIZERS:
        raise InputError(f"tokenizer must be fast or slow, got '{tokenizer}'")
    c = FRONTEND_COSTS_S.get(engine)
    if c is None:
        return 0.0, 0.0, 0.0
    return c["request"], c[tokenizer], c["fast"]


@dataclass(frozen=True)
class EngineRules:
    """The scheduler's limits. `max_batched_tokens` None: a prefill step takes every admitted
    prompt (no token budget)."""

    max_seqs: int
    budget_blocks: int
    block_tokens: int
    max_batched_tokens: int | None = None
    chunked_prefill: bool = False
    preemption: str = "recompute"
    swap_bandwidth_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.max_seqs <= 65_536:
            raise InputError(f"max sequences must be from 1 to 65536, got {self.max_seqs}")
        if self.budget_blocks < 1:
            raise InputError("the KV budget holds no block: the model leaves no room for KV")
        if self.block_tokens < 1:
            raise InputError(f"block tokens must be at least 1, got {self.block_tokens}")
        if self.preemption not in ("recompute", "swap"):
            raise InputError(f"--preemption must be recompute or swap, got {self.preemption}")
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

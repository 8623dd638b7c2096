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
    the engine's steps (HTTP, validation, tokenization and the hand-off to the engine; output
    processing, detokenization and streaming back): it adds to TTFT and E2E, and in a closed
    loop the next request leaves only when the client has seen the last one end. Host software,
    so never part of the ideal."""

    latency_s: float = 0.0

    def __post_init__(self) -> None:
        if not (self.latency_s >= 0 and self.latency_s < 60):
            raise InputError(f"the front-end latency must be from 0 to 60 s, got {self.latency_s}")

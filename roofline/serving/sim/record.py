"""What one simulation of the serving scheduler (roofline.serving.sim.scheduler) records: every
request's times and the time integrals of the engine's state, which metrics.metrics summarises."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.serving.sim.prefixcache import PrefixStats


@dataclass(frozen=True)
class RunRecord:
    """What happened to every request, and time integrals of the engine's state."""

    arrival_s: np.ndarray
    admitted_s: np.ndarray  # first admission (end of queueing)
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompts: np.ndarray
    outputs: np.ndarray
    itl_s: np.ndarray  # inter-token gaps (values)
    itl_weight: np.ndarray  # how many gaps have each value
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: float
    busy_s: float
    prefill_s: float
    decode_s: float
    preempt_s: float
    active_integral: float  # ∫ active sequences dt
    decoding_integral: float  # ∫ decoding sequences dt
    waiting_integral: float  # ∫ queued requests dt
    kv_block_integral: float  # ∫ KV blocks in use dt
    peak_blocks: float
    budget_blocks: int
    makespan_s: float
    sent_s: np.ndarray | None = None  # when the client sent each request (None: arrival_s)
    latency_s: float = 0.0  # the front end's fixed path from a token to the client
    first_wait_s: np.ndarray | None = None  # the first token's wait in the API server's queue
    finish_wait_s: np.ndarray | None = None  # the last token's wait there
    prefix: PrefixStats | None = None  # what the prefix cache did (None: no cache)
    klass: np.ndarray | None = None  # each request's class (a workload file's; None: one class)

    @property
    def client_sent_s(self) -> np.ndarray:
        """Send times as the client measures them (TTFT and E2E start here)."""
        return self.arrival_s if self.sent_s is None else self.sent_s

    @property
    def served(self) -> np.ndarray:
        """Requests that arrived (a closed loop stopped by a duration leaves the rest unsent)."""
        return np.isfinite(self.arrival_s)

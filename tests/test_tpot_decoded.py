"""TPOT percentiles over the requests that decode, as `vllm bench serve` reports them
(vllm/benchmarks/serve.py calculate_metrics: a request enters `tpots` only if its
output_len > 1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.serving.metrics import Slo, metrics
from roofline.serving.sim.record import RunRecord


def _record(first: list[float], finish: list[float], outputs: list[int]) -> RunRecord:
    n = len(outputs)
    z = np.zeros(n)
    return RunRecord(
        arrival_s=z.copy(),
        admitted_s=z.copy(),
        first_token_s=np.array(first, dtype=float),
        finish_s=np.array(finish, dtype=float),
        prompts=np.full(n, 10.0),
        outputs=np.array(outputs, dtype=float),
        itl_s=np.zeros(0),
        itl_weight=np.zeros(0),
        preemptions=0,
        recomputed_tokens=0,
        swapped_bytes=0.0,
        busy_s=1.0,
        prefill_s=0.0,
        decode_s=1.0,
        preempt_s=0.0,
        active_integral=0.0,
        decoding_integral=0.0,
        waiting_integral=0.0,
        kv_block_integral=0.0,
        peak_blocks=0.0,
        budget_blocks=1,
        makespan_s=max(finish),
    )


def test_one_token_requests_leave_tpot_percentiles() -> None:
    # Four requests: two of one output token (no TPOT in vllm bench serve), two that decode:
    # (1.1 - 0.1) / (11 - 1) = 0.1 s and (2.1 - 0.1) / (11 - 1) = 0.2 s. vLLM's median of
    # [0.1, 0.2] is 0.15 s and its mean 0.15 s; counting the one-token requests as 0 would give
    # a median of 0.05 s and a mean of 0.075 s.
    r = _record([0.1, 0.1, 0.1, 0.1], [0.1, 0.1, 1.1, 2.1], [1, 1, 11, 11])
    m = metrics([r], Slo(), gpus=1)
    assert abs(m.tpot_s.p50 - 0.15) < 1e-9
    assert abs(m.tpot_s.mean - 0.15) < 1e-9


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=30),
    st.floats(min_value=1e-3, max_value=0.5),
)
def test_tpot_percentiles_ignore_one_token_requests(outputs: list[int], gap: float) -> None:
    # Every decoding request runs at the same gap: its TPOT is that gap whatever the others do,
    # so the median is the gap whenever any request decodes (else 0: nothing decodes).
    first = [0.0] * len(outputs)
    finish = [gap * (o - 1) for o in outputs]
    m = metrics([_record(first, finish, outputs)], Slo(), gpus=1)
    want = gap if any(o > 1 for o in outputs) else 0.0
    assert abs(m.tpot_s.p50 - want) < 1e-9 * max(1.0, want)

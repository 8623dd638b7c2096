"""vLLM V0's multi-step scheduling (`--num-scheduler-steps N`, vLLM 0.6.0-0.7.x).

Sources: vLLM blog "vLLM v0.6.0: 2.7x Throughput Improvement and 75% Latency Reduction"
(2024-09-05: "multi-step scheduling ... performs scheduling and input preparation once and runs
the model for multiple consecutive steps ... the CPU overhead is amortized"), and the code of
v0.6.0 (vllm/engine/llm_engine.py step(): the scheduler is called only when the cached
multi-step state has no steps left; vllm/worker/multi_step_model_runner.py: the N steps run
back to back on the GPU, their sampled tokens are pythonized and handed to output processing
together; vllm/core/scheduler.py schedules with num_lookahead_slots = N - 1). So:

- scheduling, admission and prefill happen only at the boundary of an N-step decode batch: a
  request arriving inside one waits for its end (at light load half a batch, N/2 steps, on
  average);
- the engine's host cost per step (cpu_step and cpu_per_seq, timing.host) is spread over the N
  steps of a schedule: each decode step pays 1/N of it [approximation: the per-step
  pythonization that remains overlaps the GPU in 0.6.0];
- before 0.6.3 the tokens of a batch reach the client together at its end: a streaming
  benchmark's ITL is the gap between bunches (about N steps), while TPOT (E2E - TTFT over the
  tokens) stays the mean step; a sequence that ends inside a batch is seen at the batch end.
  From 0.6.3 each step's outputs stream as they are made (`--multi-step-stream-outputs`, True by
  default: vllm-project/vllm PR #8335 added it, 2024-09, "improves ITL by 7.8X" for a 6% TPOT
  cost; PR #9047 made it the default, 2024-10-03, "so we have good ITL metrics with
  multi-step"; vllm/config.py SchedulerConfig "If False, then multi-step will stream outputs at
  the end of all steps"): tokens and finishes reach the client at their own step
  (`streams_each_step`), and only admission waits for the batch's end [approximation: the 6%
  not charged].
"""

from __future__ import annotations

from dataclasses import replace

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator


def amortised(hw: Accelerator, profile_id: str, steps: int) -> Accelerator:
    """`hw` with its engine profile's host cost per step (cpu_step, cpu_per_seq) divided by the
    scheduler steps (module docstring); unchanged for one step."""
    if steps == 1:
        return hw
    engines = dict(hw.efficiency.engines or {})
    prof = engines.get(profile_id)
    if prof is None or not prof.versions or not prof.base.startswith("vllm"):
        raise InputError(
            "multi-step scheduling (--num-scheduler-steps) is vLLM V0's (0.6-0.7): pick a "
            f"vllm version below 0.8, not '{profile_id}'"
        )
    engines[profile_id] = replace(
        prof,
        cpu_step_s=prof.cpu_step_s / steps,
        cpu_per_seq_s=tuple((f, c / steps) for f, c in prof.cpu_per_seq_s),
    )
    return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


STREAM_FROM = ">=0.6.3"  # --multi-step-stream-outputs True by default (vllm PR #9047, v0.6.3)


def streams_each_step(version: str) -> bool:
    """Whether vLLM `version` streams a multi-step batch's outputs step by step (module
    docstring): from 0.6.3 on, and for a version not stated (the current release)."""
    from roofline.engines.versions import in_range, parse_version

    v = parse_version(version)
    return v is None or in_range(v, STREAM_FROM)

"""Priority scheduling in the serving simulator (roofline.serving.sim.scheduler._Sim), as the
engines implement it. A request's priority is an integer, lower served first (vLLM's convention;
SGLang's with --schedule-low-priority-values-first).

- The queue: vLLM's `--scheduling-policy priority` keeps waiting requests in a heap ordered by
  (priority, arrival time) (vllm/v1/core/sched/request_queue.py PriorityRequestQueue; a preempted
  request goes back into the same order); SGLang's `--enable-priority-scheduling` sorts its
  waiting queue by priority, then arrival (schedule_policy.py). Without priorities the queue is
  first come, first served (preempted requests first), as before.
- Preemption when the running requests' next step does not fit: vLLM preempts
  max(running, key=(priority, arrival_time)), the lowest-priority, latest-arrived request
  (vllm/v1/core/sched/scheduler.py schedule(), SchedulingPolicy.PRIORITY), instead of the last
  admitted; the same victim is taken for SGLang's retraction here.
- Preemption to admit: SGLang alone lets a waiting request that cannot get KV preempt running
  ones (PrefillAdder.preempt_to_schedule, schedule_policy.py): those whose priority is worse by
  more than --priority-scheduling-preemption-threshold (10 by default,
  roofline.engines.scheduler.PRIORITY_PREEMPTION), lowest priority first, and only when freeing
  them all would make room; vLLM never preempts a running request for a waiting one.
"""

from __future__ import annotations

from collections import deque


def order_waiting(waiting: deque[int], prio: list[int], arr: list[float]) -> None:
    """Sort the queue in place by (priority, arrival), stable."""
    if len(waiting) > 1:
        ranked = sorted(waiting, key=lambda r: (prio[r], arr[r]))
        waiting.clear()
        waiting.extend(ranked)


def victim(active: list[int], prio: list[int], arr: list[float]) -> int:
    """vLLM's victim under the priority policy: the largest (priority, arrival)."""
    return max(active, key=lambda r: (prio[r], arr[r]))


def preemptible(
    r: int, active: list[int], prio: list[int], arr: list[float], threshold: int
) -> list[int]:
    """SGLang's candidates to make room for waiting request r: running requests whose priority is
    worse than r's by more than `threshold`, the most preemptible (worst priority, latest
    arrival) first."""
    worse = [v for v in active if prio[v] - prio[r] > threshold]
    return sorted(worse, key=lambda v: (prio[v], arr[v]), reverse=True)

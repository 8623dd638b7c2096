"""The scheduler's arrivals (roofline.serving.sim.scheduler): requests that arrived during a span
join the waiting queue from their arrival time (the queue's time integral counts them from there),
and later turns released by their predecessors land from a heap of their arrival times."""

from __future__ import annotations

import math
from bisect import bisect_right
from heapq import heappop
from typing import Any


class ArrivalQueue:
    """Arrival methods of the scheduler's state (_Sim): the fields it reads are set there."""

    arr: list[float]
    arr_cum: list[float]
    n_in: int
    na: int
    waiting: Any
    later: list[tuple[float, int]]
    acc: dict[str, float]

    def arrive(self, na: int, end: float, wait: float) -> None:
        """Requests na… that arrived by `end` queue from their arrival (`wait`: the queue's time
        over the span so far)."""
        arr = self.arr
        j = bisect_right(arr, end, na, self.n_in)
        if j < len(self.arr_cum):
            wait += end * (j - na) - (self.arr_cum[j] - self.arr_cum[na])
        else:  # closed loop: released arrivals are not in the prefix sums
            wait += sum(end - a for a in arr[na:j])
        self.waiting.extend(range(na, j))  # they wait from now on
        self.na = j
        self.acc["wait"] += wait

    def land(self, end: float) -> None:
        """Later turns released by `end` queue from their arrival."""
        later = self.later
        while later and later[0][0] <= end:
            t, i = heappop(later)
            self.waiting.append(i)
            self.acc["wait"] += end - t

    def next_arrival(self) -> float:
        na = self.na
        t = self.arr[na] if na < self.n_in else math.inf
        return min(t, self.later[0][0]) if self.later else t

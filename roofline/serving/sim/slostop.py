"""Stopping a run whose SLO verdict is already known (the SLO search's failing runs).

A run at a rate past a replica's capacity under the SLOs misses them, and the search needs only
that verdict: once enough requests are over a limit, the percentile is over it whatever the
remaining requests do, so the run can stop there (SloStop), its verdict certain. TTFT is known
at a request's first token, TPOT at its finish.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline.serving.sim.apiserver import ApiQueue


class SloMissed(Exception):
    """A run stopped by its SloStop: the SLO is missed on `metric` ("TTFT" or "TPOT")."""

    def __init__(self, metric: str) -> None:
        super().__init__(metric)
        self.metric = metric


@dataclass(frozen=True)
class SloStop:
    """Stop a run once `over` of its requests have a TTFT above `ttft_s` (or a TPOT above
    `tpot_s`): its percentile of that metric is then above the limit whatever the rest do.
    With n requests, numpy's linear percentile at p reads the sorted values at and above index
    lo = floor(p/100 × (n − 1)), so n − lo values above the limit put it above; `over` is one
    more (a margin for the index's rounding), and a value counts as above only past the limit
    × (1 + 1e-9), so the interpolation's rounding cannot bring the percentile back under it.
    TTFT and TPOT are roofline.serving.metrics's, in the same floating-point operations (TTFT
    = ((first token + the API server's latency) + the token's wait) − the client's send; TPOT
    = (finish − first) / (O − 1), the finish likewise with its own wait). For runs in which
    every request is served (an open loop without a duration)."""

    ttft_s: float | None
    tpot_s: float | None
    over: int

    @staticmethod
    def of(ttft_s: float | None, tpot_s: float | None, pct: float, n: int) -> SloStop:
        lo = math.floor(pct / 100.0 * (n - 1))
        margin = 1.0 + 1e-9
        return SloStop(
            None if ttft_s is None else ttft_s * margin,
            None if tpot_s is None else tpot_s * margin,
            n - lo + 1,
        )


class SloWatch:
    """The simulation's (scheduler._Sim) count of requests over its SloStop's limits."""

    stop: SloStop | None
    over: list[int]
    sent: list[float]
    first_token_s: list[float]
    first_wait: list[float]
    outputs: list[int]
    api: ApiQueue

    def watch_first(self, r: int, now: float, wait: float) -> None:
        """Request r's first token at `now`, `wait` behind the API server's work."""
        stop = self.stop
        if stop is not None and stop.ttft_s is not None:
            lat = self.api.latency_s
            if ((now + lat) + wait) - self.sent[r] > stop.ttft_s:
                self._missed(0, "TTFT")

    def watch_finish(self, r: int, now: float, wait: float) -> None:
        """Request r's last token at `now`, `wait` behind the API server's work."""
        stop, o = self.stop, self.outputs[r]
        if stop is not None and stop.tpot_s is not None and o > 1:
            lat = self.api.latency_s
            first = (self.first_token_s[r] + lat) + self.first_wait[r]
            if (((now + lat) + wait) - first) / (o - 1) > stop.tpot_s:
                self._missed(1, "TPOT")

    def _missed(self, i: int, metric: str) -> None:
        self.over[i] += 1
        if self.stop is not None and self.over[i] >= self.stop.over:
            raise SloMissed(metric)

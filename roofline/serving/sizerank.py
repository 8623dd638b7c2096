"""The ranking of `size`'s rows (roofline.serving.size): the deployments that meet the SLOs best
first (least cost, or fewest GPUs), the Pareto frontier of output tokens/s per GPU against per
user marked, the first marked best."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

Sized = Any  # a size.Sized row (not imported: size imports this module)


def rank(rows: list[Sized], minimize: str) -> list[Sized]:
    """Best first among those that meet the SLOs, frontier and best marked afresh (ranked)."""
    return ranked([replace(r, frontier=False, best=False) for r in rows], minimize)


def ranked(rows: list[Sized], minimize: str) -> list[Sized]:
    """Those that meet the SLOs best first (least cost, or fewest GPUs), the Pareto frontier
    marked and the first marked best; then those that miss, by chip and layout."""
    ok = [r for r in rows if r.meets_slo]
    # Pareto frontier: no other deployment is at least as good on both axes and better on one
    pts = []
    for r in ok:
        assert r.expected is not None  # a deployment that meets the SLOs was simulated
        pts.append(
            (r.expected.output_tokens_per_s_per_gpu, r.expected.output_tokens_per_s_per_user)
        )
    front = set()
    for i, (a, b) in enumerate(pts):
        if not any(
            (c >= a and d >= b and (c > a or d > b)) for j, (c, d) in enumerate(pts) if j != i
        ):
            front.add(i)
    ok = [replace(r, frontier=i in front) for i, r in enumerate(ok)]
    inf = math.inf

    def key(r: Sized):
        cost = r.cost_per_hour if r.cost_per_hour is not None else inf
        return (cost, r.gpus) if minimize == "cost" else (r.gpus, cost)

    ok.sort(key=key)
    if ok:
        ok[0] = replace(ok[0], best=True)
    rest = sorted((r for r in rows if not r.meets_slo), key=lambda r: (r.hardware, r.tp, r.pp))
    return ok + rest

"""The order in which `size` searches its layouts (roofline.serving.size), and the workers that
run them.

The layouts go most promising first (by the fewest GPUs, or least cost, their rate bound allows):
one alone, to have a deployment to prune against, then `per_round` at a time, each given its
chip's best key found in the rounds before (`size` leaves a layout unsearched when even its
saturation rate needs no better); after each round the layouts whose rate bound needs no better
than their chip's best are left out. Every chip asked for gets its own answer: a layout is
pruned only against the best found on its own chip, never against another chip's.

The rounds fix the answer; the workers (roofline.serving.workers.Workers) only make it sooner. A
layout's run depends on the limit it is given only through the checks that leave it unsearched
(at its saturation rate; sized to a confidence, also at the bounds each step of its search
gives), so `run_one` returns the fewest GPUs the layout can need at each check beside its row,
and the row can be checked again against another limit (`recheck`). While a round's last layouts
run, an idle worker therefore runs the next layout the rounds would reach, given the best keys
of the rounds so far: a limit never tighter than the one the rounds will give it (a chip's best
only falls), so a layout it leaves unsearched the rounds leave unsearched too, and a row it
searched is checked again against the rounds' own limit when they reach it. A layout run ahead
that the rounds then prune costs CPU time, never a different answer: the rows and their order
are the rounds' alone, whatever the number of workers. No layout runs ahead on a chip that has a
layout in flight or run ahead: the limit it is given, its chip's best with this round's rows
done, is then the one the rounds give it (a chip's best falls only by its own layouts, and one
of its layouts before this one not pruned would have been taken first), so a check whose point
depends on the limit (size's at the band edges) gives the rounds' row too; nor one whose rate
bound that limit already prunes (the rounds prune it at this round's end).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from roofline.serving.workers import Workers

Row = TypeVar("Row")
Key = tuple[float, float]


def search_rounds(
    tasks: Sequence[Any],
    bound_keys: Sequence[Key],
    chips: Sequence[Hashable],
    run_one: Callable[[Any, Key], tuple[Sequence[int], Row]],
    recheck: Callable[[int, Sequence[int], Row, Key], Row],
    at_bound: Callable[[int], Row],
    row_key: Callable[[Row], tuple[Hashable, Key] | None],
    per_round: int,
) -> list[Row]:
    """The rows of `tasks` (sorted most promising first; `bound_keys` the key each could reach
    at best, `chips` its chip) in the order the rounds (module docstring) produce them.
    `run_one(task, limit)`: (the fewest GPUs it can need at each of its checks, in order;
    row); `recheck(i, gpus, row, limit)`: the row against a tighter limit; `at_bound(i)`: the
    row of a layout pruned on its bound; `row_key(row)`: its chip and key if it meets the SLOs,
    else None."""
    inf = (math.inf, math.inf)
    left = list(range(len(tasks)))  # neither run nor pruned yet, in order
    given: dict[int, Key] = {}  # submitted: the limit each was given
    runs: dict[int, tuple[bool, Any]] = {}  # (True, (gpus, row)) or (False, what it raised)
    best: dict[Hashable, Key] = {}  # each chip's best key in the rounds so far
    found: list[Row] = []

    def limit(i: int) -> Key:
        return best.get(chips[i], inf)

    def soon(i: int, now: list[int]) -> Key:  # its chip's best with the round's rows done
        keys = (row_key(runs[j][1][1]) for j in now if j in runs and runs[j][0])
        return min([limit(i)] + [k for c, k in filter(None, keys) if c == chips[i]])

    def pruned(i: int) -> bool:
        return chips[i] in best and bound_keys[i] >= best[chips[i]]

    with Workers(run_one, tasks) as pool:
        size = 1  # one search first, to have a deployment to prune against
        while left:
            now, left = left[:size], left[size:]
            size = per_round
            for i in now:
                if i not in given:
                    given[i] = limit(i)
                    pool.submit(i, given[i])
            while any(i not in runs for i in now):
                while pool.running < pool.size:  # an idle worker: the next layout, ahead
                    busy = {chips[i] for i in given if i not in runs or i in left}
                    j = next((i for i in left if i not in given and chips[i] not in busy
                              and bound_keys[i] < soon(i, now)), None)  # fmt: skip
                    if j is None:
                        break
                    given[j] = soon(j, now)
                    pool.submit(j, given[j])
                j, ok, got = pool.done()
                runs[j] = (ok, got)
            for i in now:
                ok, got = runs[i]
                if not ok:
                    raise got
                gpus, row = got
                if given[i] != limit(i) and gpus:  # run ahead, on a looser limit
                    row = recheck(i, gpus, row, limit(i))
                found.append(row)
            for row in found:
                got = row_key(row)
                if got is not None:
                    chip, k = got
                    best[chip] = min(best.get(chip, k), k)
            keep = []
            for i in left:
                if pruned(i):
                    found.append(at_bound(i))
                else:
                    keep.append(i)
            left = keep
    return found

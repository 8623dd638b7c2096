"""The order of `size`'s layout searches (roofline.serving.sizerounds): the rounds fix which
layouts are searched and which are pruned, whatever the workers run ahead and in whatever order
their runs finish. Checked on a toy search whose answer is worked out by hand."""

from __future__ import annotations

import math

import pytest

import roofline.serving.sizerounds as sr
from roofline.serving.workers import Workers

# five layouts of one chip and one of another, most promising first: (bound key, GPUs a layout
# needs at its saturation rate, GPUs it needs once searched). Keys are (GPUs, GPUs).
LAYOUTS = [
    ("a", 2, 3, 4),  # round 1 alone: searched, 4 GPUs: chip a's best is (4, 4)
    ("a", 3, 5, 6),  # round 2, limit (4, 4): at saturation 5 GPUs >= 4: unsearched
    ("b", 3, 3, 3),  # round 2, chip b has no best yet: searched, 3 GPUs
    ("a", 4, 4, 4),  # after round 1: its bound 4 >= a's best 4: pruned on its bound
    ("b", 4, 9, 9),  # after round 2: pruned on its bound (4 >= b's best 3)
    ("a", 5, 1, 1),  # after round 1: pruned on its bound, though a search would find 1 GPU
]
# by hand: rows in the order the rounds make them (round 1, the layouts it prunes, round 2,
# the layouts it prunes)
EXPECTED = [
    ("a", "searched", 4),
    ("a", "pruned at bound", 4),
    ("a", "pruned at bound", 5),
    ("a", "unsearched at saturation", 5),
    ("b", "searched", 3),
    ("b", "pruned at bound", 4),
]


def _key(g: float) -> tuple[float, float]:
    return (g, g)


def run_one(task: int, limit: tuple[float, float]):
    _, _, at_sat, searched = LAYOUTS[task]
    if _key(at_sat) >= limit:
        return [at_sat], (LAYOUTS[task][0], "unsearched at saturation", at_sat)
    return [at_sat], (LAYOUTS[task][0], "searched", searched)


def recheck(i: int, gpus: list[int], row, limit):
    return (row[0], "unsearched at saturation", gpus[0]) if _key(gpus[0]) >= limit else row


def at_bound(i: int):
    return (LAYOUTS[i][0], "pruned at bound", LAYOUTS[i][1])


def row_key(row):
    return (row[0], _key(row[2])) if row[1] == "searched" else None


def _search() -> list:
    return sr.search_rounds(
        list(range(len(LAYOUTS))), [_key(x[1]) for x in LAYOUTS], [x[0] for x in LAYOUTS],
        run_one, recheck, at_bound, row_key, 2,
    )  # fmt: skip


class AheadWorkers:
    """Two workers that run every item the moment it is submitted and hand the finished ones
    back newest first: the rounds must not depend on the order runs finish in."""

    size = 2

    def __init__(self, fn, items):
        self.fn, self.items, self.finished, self.submitted = fn, items, [], []
        self.running = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def submit(self, i, *args):
        self.running += 1
        self.submitted.append((i, args[0]))
        self.finished.append((i, True, self.fn(self.items[i], *args)))

    def done(self):
        self.running -= 1
        return self.finished.pop()


def test_rounds_by_hand_in_this_process(monkeypatch):
    monkeypatch.setenv("ROOFLINE_JOBS", "1")
    assert _search() == EXPECTED


def test_rounds_are_the_same_with_work_run_ahead(monkeypatch):
    made: list[AheadWorkers] = []

    def workers(fn, items):
        made.append(AheadWorkers(fn, items))
        return made[-1]

    monkeypatch.setattr(sr, "Workers", workers)
    assert _search() == EXPECTED
    order = [i for i, _ in made[0].submitted]
    submitted = dict(made[0].submitted)
    # by hand: while layout 0 (chip a) runs in round 1, the idle worker runs layout 2 ahead
    # (chip b, no best yet: no limit); layout 1 waits, its chip having a layout in flight, and
    # round 2 gives it chip a's best, layout 0's 4 GPUs; layouts 3 to 5, pruned, never run
    assert order == [0, 2, 1]
    assert submitted[2] == (math.inf, math.inf) and submitted[1] == (4, 4)


def test_forked_workers_give_results_as_they_finish(monkeypatch):
    monkeypatch.setenv("ROOFLINE_JOBS", "2")
    with Workers(lambda x, y: x * y, [1, 2, 3]) as pool:
        assert pool.size == 2
        for i in range(3):
            pool.submit(i, 10)
        got = sorted(pool.done() for _ in range(3))
    assert got == [(0, True, 10), (1, True, 20), (2, True, 30)]
    with Workers(lambda x: 1 // x, [0]) as pool:
        pool.submit(0)
        i, ok, err = pool.done()
    assert i == 0 and not ok and isinstance(err, ZeroDivisionError)


def test_a_run_that_raised_is_raised_when_the_rounds_reach_it(monkeypatch):
    monkeypatch.setenv("ROOFLINE_JOBS", "1")

    def broken(task, limit):
        if task == 0:
            raise ValueError("layout 0 broke")
        return run_one(task, limit)

    with pytest.raises(ValueError, match="layout 0"):
        sr.search_rounds([0, 1], [_key(2), _key(3)], ["a", "a"], broken, recheck, at_bound,
                         row_key, 2)  # fmt: skip

"""Fit vLLM V0's host time per running sequence on AMD Instinct (hardware/engines.yaml vllm-v0
`cpu_per_seq_us` amd-instinct, issue 34) on every published single-step vLLM V0 run on the
family in the serving files, with leave-one-source-out.

vllm-v0's 225 us per sequence-step was fitted on three sources pooled (validation/
fit_engine_versions.py; two of them AMD's). The full-load runs of validation/highload_cases.yaml
add two AMD V0 sources (ROCm's vLLM 0.7.3 dev docker latency table, Oracle's 405B blog) whose
batch-64/128 decodes take 15-85% less time than 225 us per sequence gives; refitted on the family's
own points alone, every AMD source is best between 25 and 100 us (ROCm's vLLM fork runs the same
loop as vLLM's latency table under V1, where the family's 65 us was fitted). Left out, as
fit_engine_versions does: multi-step scheduling and the dstack DeepSeek-R1 sweeps.

The fit: the grid value minimising the sum of squared log(expected / measured) over the cases,
every metric of a case counting once. Out of sample: each source left out, refitted on the others.
Run `python -m validation.fit_amd_v0` (~6 s); validation/serving_crossval.py AMD_V0_FIT holds
what it prints.
"""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from validation.fit_engine_versions import excluded  # noqa: E402
from validation.serving_crossval import CASE_FILES, _Patched, source_group  # noqa: E402

FAMILY = "amd-instinct"
GRID_US = tuple(range(0, 230, 5))


def cases(cat) -> list[dict]:
    from roofline.cases.casefiles import load_serving_cases
    from roofline.domain.errors import InputError
    from roofline.engines.versions import parse_version

    out = []
    for f in CASE_FILES:
        for c in load_serving_cases(ROOT / f):
            if c.get("engine", "vllm") != "vllm":
                continue
            if cat.accelerator(c["hardware"]).family != FAMILY or excluded(c):
                continue
            try:
                if parse_version(str(c.get("engine_version"))) >= (0, 8):
                    continue
            except InputError:
                continue
            out.append(c)
    return out


def log_errors(cat, cs: list[dict], us: float) -> dict[str, list[float]]:
    from roofline.cases.serving import run_serving_case

    prof = cat.engines["vllm-v0"] if hasattr(cat, "engines") else None
    other = [(f, s) for f, s in (prof.cpu_per_seq_s if prof else ()) if f != FAMILY]
    pc = _Patched(cat, {("vllm-v0", "cpu_per_seq_s"): tuple(sorted([*other, (FAMILY, us * 1e-6)]))})
    out: dict[str, list[float]] = {}
    for c in cs:
        r = run_serving_case(c, pc, expected_only=True)  # the fit reads the expected figure only
        out.setdefault(source_group(c), []).append(float(np.log(r.expected / c["measured"])))
    return out


def loss(errors: dict[str, list[float]], leave: str | None = None) -> float:
    """The sum of squared log errors over every source but `leave`."""
    return sum(e * e for g, es in errors.items() if g != leave for e in es)


def fit(table: dict[float, dict[str, list[float]]], leave: str | None = None) -> float:
    """The grid value with the least loss (the first of equals, in grid order)."""
    return min(table, key=lambda us: loss(table[us], leave))


def loss_floor(a: dict[str, list[float]], b: dict[str, list[float]], leave: str | None) -> float:
    """The least loss any grid value between two evaluated ones can have: a case's log error is
    monotone in the per-sequence cost (more host time per step makes every step longer: a time
    lengthens, a throughput drops; search checks it on every point it runs), so between the two
    it lies between its two ends, and its square is at least the smaller end's, or 0 where the
    ends' signs differ."""
    floor = 0.0
    for g, es in a.items():
        if g != leave:
            for x, y in zip(es, b[g], strict=True):
                floor += 0.0 if (x <= 0) != (y <= 0) else min(x * x, y * y)
    return floor


def search(errors_at, grid: tuple[float, ...], leaves: list[str | None]):
    """The grid's log errors at the points each fit in `leaves` needs: the two ends, then the
    middle of every gap whose loss_floor for some fit is at most that fit's least loss so far,
    until no gap is open. A point left out has, for every fit, a loss above the least one found,
    so fit() on the points run gives what it gives on the whole grid (the first of equals too: a
    point equal to the least sits in an open gap). Raises if a case's error is not monotone over
    the points run (the floor's premise)."""
    table = {grid[0]: errors_at(grid[0]), grid[-1]: errors_at(grid[-1])}
    while True:
        done = sorted(table)
        least = {k: min(loss(table[us], k) for us in done) for k in leaves}
        todo = [
            grid[(grid.index(a) + grid.index(b)) // 2]
            for a, b in pairwise(done)
            if grid.index(b) - grid.index(a) > 1
            and any(loss_floor(table[a], table[b], k) <= least[k] for k in leaves)
        ]
        if not todo:
            break
        for us in todo:
            table[us] = errors_at(us)
    done = sorted(table)
    for g, es in table[done[0]].items():
        for i in range(len(es)):
            steps = np.diff([table[us][g][i] for us in done])
            if not ((steps >= 0).all() or (steps <= 0).all()):
                raise AssertionError(f"{g} case {i}: log error not monotone in the per-seq cost")
    return {us: table[us] for us in done}  # in grid order: fit() takes the first of equals


def refits(cat) -> tuple[dict[float, dict[str, list[float]]], float, dict[str, float]]:
    """(the log errors at the grid points the fits need, the fit on every source in us, the fit
    without each source in us): what validation/serving_crossval.py AMD_V0_FIT holds (in
    seconds). The same fits as evaluating the whole grid (search), at the points that can win."""
    cs = cases(cat)
    groups = sorted({source_group(c) for c in cs})
    table = search(lambda us: log_errors(cat, cs, us), GRID_US, [None, *groups])
    return table, fit(table), {g: fit(table, g) for g in groups}


def main() -> None:
    from roofline.catalog.load import load_catalog

    table, every, without = refits(load_catalog())
    n = sum(len(v) for v in table[GRID_US[0]].values())
    print(f"{n} cases from {len(without)} sources; all: {every:g} us")
    for g, us in without.items():
        print(f"  without {g}: {us:g} us ({len(table[GRID_US[0]][g])} cases)")


if __name__ == "__main__":
    main()

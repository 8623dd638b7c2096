"""Fit an engine's host time per running sequence per step on one hardware family
(hardware/engines.yaml `cpu_per_seq_us`, issue 34 item 1), per engine x family, never per case,
with leave-one-source-out.

The mechanism (roofline/timing/host.py): each decode step costs the engine's host loop a time
per running sequence (scheduling, sampling bookkeeping, building the batch's metadata) beyond the
kernels; SGLang overlaps its scheduler with the GPU step (LMSYS, 'SGLang v0.4', Dec 2024) but
the per-request work of the batch it builds still grows with the batch. At full batch (hundreds
of sequences) that term is what separates SGLang's measured decode step from the kernels': on
DataCrunch's H200 runs (validation/highload_cases.yaml) SGLang's ITL at 500-1,500 running
sequences is 1.2-2.7x the modelled kernels' time while the same model at a few sequences is
close.

The cases: every serving case of `engine` on `family` in the serving files
(validation/serving_crossval.py CASE_FILES), less the sources validation/fit_engine_versions.py
leaves out (the dstack DeepSeek-R1 sweeps: every engine as far off there, not this cost) and
multi-step runs. The fit: the grid value minimising the sum of squared log(expected / measured),
every metric of a case counting once. Out of sample: each source (serving_crossval.source_group)
left out and the figure refitted on the others; validation/serving_crossval.py SEQ_FITS holds
what this prints, and its leave-one-source-out table uses it.

Run: `python -m validation.fit_seq_cost sglang nvidia-datacenter` (a few minutes, two workers);
a third argument fits one profile alone on the cases its versions resolve to
(`python -m validation.fit_seq_cost vllm nvidia-datacenter vllm`: vLLM V1, not vllm-v0).
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from validation.fit_engine_versions import excluded  # noqa: E402
from validation.serving_crossval import CASE_FILES, _Patched, source_group  # noqa: E402

GRID_US = (0, 20, 40, 50, 60, 70, 80, 100, 125, 150, 200)


def cases(cat: Any, engine: str, family: str, profile: str | None = None) -> list[dict]:
    """The serving cases the figure is fitted on (see the module docstring); with `profile`
    only those its versions resolve to (roofline/engines/versions.py pick_profile)."""
    from roofline.cases.casefiles import load_serving_cases
    from roofline.engines.versions import pick_profile

    out = []
    for f in CASE_FILES:
        for c in load_serving_cases(ROOT / f):
            if str(c.get("engine", "vllm")) != engine or excluded(c):
                continue
            if profile and pick_profile(engine, c.get("engine_version"), cat.engines) != profile:
                continue
            if cat.accelerator(c["hardware"]).family == family:
                out.append(c)
    return out


_JOB: dict[str, Any] = {}


def _one(task: tuple[int, float]) -> float:
    """log(expected / measured) of case i with the family's per-sequence cost at `us`."""
    from roofline.cases.serving import run_serving_case

    i, us = task
    cat, engine, family, cs = _JOB["cat"], _JOB["engine"], _JOB["family"], _JOB["cases"]
    only = _JOB.get("profile")
    patch = {}
    for pid, prof in cat.engines.items():  # the engine and its version profiles (sglang-v0.4)
        if pid == only or (not only and (pid == engine or prof.base == engine)):
            other = [(f, s) for f, s in prof.cpu_per_seq_s if f != family]
            patch[(pid, "cpu_per_seq_s")] = tuple(sorted([*other, (family, us * 1e-6)]))
    pc = _Patched(cat, patch)
    return float(
        np.log(run_serving_case(cs[i], pc, expected_only=True).expected / cs[i]["measured"])
    )


def table(
    cat: Any, engine: str, family: str, workers: int = 2, profile: str | None = None
) -> dict[float, dict[str, list]]:
    """grid value -> source -> the log errors of its cases (`profile`: that profile alone)."""
    import multiprocessing as mp

    cs = cases(cat, engine, family, profile)
    _JOB.update(cat=cat, engine=engine, family=family, cases=cs, profile=profile)
    tasks = [(i, us) for us in GRID_US for i in range(len(cs))]
    with mp.get_context("fork").Pool(workers) as pool:
        errs = pool.map(_one, tasks, chunksize=4)
    out: dict[float, dict[str, list]] = {us: {} for us in GRID_US}
    for (i, us), e in zip(tasks, errs, strict=True):
        out[us].setdefault(source_group(cs[i]), []).append(e)
    return out


def fit(tab: dict[float, dict[str, list]], leave: str | None = None) -> float:
    """The grid value with the least squared log error over every source but `leave`."""

    def loss(us: float) -> float:
        return sum(e * e for g, es in tab[us].items() if g != leave for e in es)

    return min(tab, key=loss)


def med(tab: Mapping[Hashable, dict[str, list]], at: Hashable, only: str | None = None) -> float:
    """Median |error| of the cases (of one source) at the grid point `at` (here a cost in us;
    validation/fit_stack_kernels.py's tables are keyed by MoE and MLA factors)."""
    es = [e for g, v in tab[at].items() if only in (None, g) for e in v]
    return float(np.median(np.abs(np.expm1(es))))


def main(argv: list[str]) -> None:
    from roofline.catalog.load import load_catalog

    engine, family = argv[1], argv[2]
    profile = argv[3] if len(argv) > 3 else None  # one profile alone (vllm: V1, not vllm-v0)
    cat = load_catalog()
    if not cases(cat, engine, family, profile):
        sys.exit(f"no {engine} case on {family} to fit (after the excluded sources)")
    tab = table(cat, engine, family, profile=profile)
    groups = sorted(tab[GRID_US[0]])
    n = sum(len(v) for v in tab[GRID_US[0]].values())
    best = fit(tab)
    print(f"{engine} on {family}: {n} cases from {len(groups)} sources; all: {best:g} us")
    at0, atbest = med(tab, 0) * 100, med(tab, best) * 100
    print(f"  median |error| at 0 us {at0:.0f}%, at {best:g} us {atbest:.0f}%")
    for g in groups:
        without = fit(tab, g)
        print(
            f"  without {g}: {without:g} us ({len(tab[0][g])} cases; left out, its median "
            f"|error| {med(tab, 0, g) * 100:.0f}% at 0 -> {med(tab, without, g) * 100:.0f}%)"
        )


if __name__ == "__main__":
    main(sys.argv)

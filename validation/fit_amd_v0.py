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
Run `python -m validation.fit_amd_v0` (~1 min); validation/serving_crossval.py AMD_V0_FIT holds
what it prints.
"""

from __future__ import annotations

import sys
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
        r = run_serving_case(c, pc)
        out.setdefault(source_group(c), []).append(float(np.log(r.expected / c["measured"])))
    return out


def fit(table: dict[float, dict[str, list[float]]], leave: str | None = None) -> float:
    def loss(us: float) -> float:
        return sum(e * e for g, es in table[us].items() if g != leave for e in es)

    return min(table, key=loss)


def refits(cat) -> tuple[dict[float, dict[str, list[float]]], float, dict[str, float]]:
    """(the grid's log errors, the fit on every source in us, the fit without each source in us):
    what validation/serving_crossval.py AMD_V0_FIT holds (in seconds)."""
    table = {us: log_errors(cat, cases(cat), us) for us in GRID_US}
    return table, fit(table), {g: fit(table, g) for g in sorted(table[GRID_US[0]])}


def main() -> None:
    from roofline.catalog.load import load_catalog

    table, every, without = refits(load_catalog())
    n = sum(len(v) for v in table[GRID_US[0]].values())
    print(f"{n} cases from {len(without)} sources; all: {every:g} us")
    for g, us in without.items():
        print(f"  without {g}: {us:g} us ({len(table[GRID_US[0]][g])} cases)")


if __name__ == "__main__":
    main()

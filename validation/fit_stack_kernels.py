"""Fit an engine's own fused-MoE and MLA decode kernels on a hardware family (hardware/engines.yaml
`moe_time_factor`, `mla_decode_time_factor`; roofline/timing/host.py kernel_time_factor): issue 34
mechanism (a), per engine x family, never per case, with leave-one-source-out.

The mechanism: a family's kernel curves are one library's kernels (CDNA 3: AITER's tuned GEMMs,
hardware/kernels-amd.yaml), while each engine ships its own MoE and MLA kernels per platform and
version. SGLang 0.4.2 and vLLM 0.7.3 on ROCm ran Triton fused_moe and Triton MLA decode; AMD's
AITER block-scale fused MoE and MLA decode came later and were measured at up to 3x and 17x those
(ROCm blog 'Supercharge DeepSeek-R1 Inference on AMD Instinct MI300X', 2025-03-21); vLLM still
takes its Triton MLA unless VLLM_ROCM_USE_AITER=1 (vLLM blog 'Beyond Porting', 2025-12-16: 1.2-1.4x
the time of ROCM_AITER_MLA). The factor multiplies the expected time of the routed experts' fused
MoE op (every phase) and of MLA's absorbed decode attention (roofline/step/phases.py _own_kernels).

The Triton era (vllm-v0, sglang-v0.4 on amd-instinct) is derived, not fitted (`triton_era`): the
AITER era's factors on the family (below) times AMD's own figures for AITER over the kernels before
it (the ROCm blog above: up to 3x fused MoE, 17x MLA decode), so x6 and x17; the 3x is AITER's
block-scale fused MoE, so it applies to block-scaled FP8 experts alone (engines.yaml
block_fp8_moe_time_factor) and 16-bit ones take x2. They were once fitted
here on dstack's DeepSeek-R1 runs on 8x MI300X against the same runs on 8x H200 (the H200 runs'
error taken as the harness's; those H200 runs are now scored high-load points in
validation/highload_cases.yaml, dstack-offline-dsr1-h200x8-*), which left the offline runs
+38% (vLLM 0.7.3) and +90% (SGLang 0.4.2) too fast in requests/s in sample: fitted on the one
lab's runs and far off. Derived, nothing is fitted on them, and their 78 points go from 60% to 29%
median |error| (docs/ACCURACY.md Mechanisms). `cases`, `control` and the grid below still serve a
refit on a new source (`python -m validation.fit_stack_kernels vllm-v0 amd-instinct --fit`).

The AITER era (vllm >= 0.8, issue 34): the vLLM blog 'Beyond Porting' (vllm-project/
vllm-project.github.io at c57a123e) ran AMD's rocm/vllm-dev nightly with VLLM_ROCM_USE_AITER=1 on
DeepSeek-R1-0528 (AITER MLA) and Qwen3-235B-A22B FP8 on 8x MI300X, MI325X and MI355X, read off its
figures into validation/engine_sweeps.yaml; no H200 control (offset 0), a finer grid near 1
(AITER_*_GRID), one source (so nothing out of sample: serving_crossval STACK_FIT). Prints moe x2,
mla x1: 24 points, median |error| 26% at x1 -> 5%.

Run: `python -m validation.fit_stack_kernels vllm amd-instinct` (some ten minutes on two workers);
`vllm-v0` or `sglang-v0.4` prints the derived factors (and with `--fit`, the old fit beside them).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from validation.fit_seq_cost import med  # noqa: E402  (median |error| at a grid point)
from validation.serving_crossval import CASE_FILES, _Patched, source_group  # noqa: E402

METRICS = ("requests_per_s", "output_tokens_per_s", "tpot_p50_ms", "tpot_mean_ms", "itl_p50_ms")
MOE_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
MLA_GRID = (1.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0)
# the AITER-era profiles (vllm >= 0.8, sglang >= 0.4.4) run AMD's own fused MoE and assembly MLA
# decode, the curves' own library: a finer grid near 1 (the Triton-era one starts at 1 and 4)
AITER_PROFILES = ("vllm", "sglang")
AITER_MOE_GRID = (1.0, 1.25, 1.5, 2.0, 2.5)
AITER_MLA_GRID = (1.0, 1.5, 2.0, 3.0, 4.0)
CONTROL_FAMILY = "nvidia-datacenter"
# AMD's figures for AITER's kernels over the Triton ones the early-2025 engines ran on ROCm (ROCm
# blog 'Supercharge DeepSeek-R1 Inference on AMD Instinct MI300X', 2025-03-21: "+3X MoE", "+17x MLA
# decode") [uncertain: 'up to' figures, the shapes not given]
AITER_GAIN = {"moe": 3.0, "mla": 17.0}
TRITON_ERA = {
    "vllm-v0": "vllm",
    "sglang-v0.4": "vllm",
}  # profile -> the AITER-era profile it scales


def triton_era(cat: Any, engine: str, family: str = "amd-instinct") -> tuple[float, float]:
    """(moe, mla) of a Triton-era profile on `family` for block-scaled FP8 experts: the
    AITER-era profile's factors there (TRITON_ERA: vLLM's, fitted on the vLLM blog's AITER runs;
    SGLang's own AITER-era MoE factor is borrowed from it) times AITER_GAIN. The MoE gain is
    AITER's block-scale fused MoE over Triton's, so the catalog writes it apart
    (block_fp8_moe_time_factor, AITER_GAIN["moe"]) and 16-bit or per-tensor experts take the
    AITER era's factor alone (moe_time_factor). Nothing is fitted on the Triton-era runs."""
    from roofline.timing.host import kernel_time_factor

    prof = cat.engines[TRITON_ERA[engine]]
    return (
        kernel_time_factor(prof, family, "moe") * AITER_GAIN["moe"],
        kernel_time_factor(prof, family, "mla") * AITER_GAIN["mla"],
    )


def _profile(cat: Any, c: dict) -> str:
    from roofline.engines.versions import pick_profile

    hw = cat.accelerator(c["hardware"])
    engines = hw.efficiency.engines or {}
    return pick_profile(str(c.get("engine", "vllm")), c.get("engine_version"), engines)


def _moe_or_mla(cat: Any, c: dict) -> bool:
    m = cat.model(c["model"])
    return bool(m.is_mla or m.is_moe)


def cases(cat: Any, engine: str, family: str, files: tuple[str, ...] = CASE_FILES) -> list[dict]:
    """The cases of engine profile `engine` on `family` the factors act on (module docstring)."""
    from roofline.cases.casefiles import load_serving_cases

    out = []
    for f in files:
        for c in load_serving_cases(ROOT / f):
            if c["metric"] not in METRICS or cat.accelerator(c["hardware"]).family != family:
                continue
            if _profile(cat, c) == engine and _moe_or_mla(cat, c):
                out.append(c)
    return out


def control(cat: Any, engine: str, groups: set[str]) -> dict[str, float]:
    """source -> the median speed_error of its H200 runs of `engine` (the catalog as shipped),
    for the sources in `groups` that ran on Hopper too."""
    from roofline.cases.serving import run_serving_case

    hop = cases(cat, engine, CONTROL_FAMILY, CASE_FILES)
    out: dict[str, list[float]] = {}
    for c in hop:
        g = source_group(c)
        if g in groups and "h200" in c["hardware"]:
            out.setdefault(g, []).append(
                speed_error(c, run_serving_case(c, cat, expected_only=True).expected)
            )
    return {g: float(np.median(v)) for g, v in out.items()}


_JOB: dict[str, Any] = {}
RATES = ("requests_per_s", "output_tokens_per_s")


def speed_error(c: dict, expected: float) -> float:
    """How much too fast the model is on a case, as a log: log(expected / measured) for a rate,
    log(measured / expected) for a time (so +0.69 is 2x too fast on either)."""
    e = float(np.log(expected / c["measured"]))
    return e if c["metric"] in RATES else -e


def _patched(cat: Any, engine: str, family: str, moe: float, mla: float) -> Any:
    prof = cat.engines[engine]
    keep_m = [(f, x) for f, x in prof.moe_time_factor if f != family]
    keep_a = [(f, x) for f, x in prof.mla_decode_time_factor if f != family]
    return _Patched(
        cat,
        {
            (engine, "moe_time_factor"): tuple(sorted([*keep_m, (family, moe)])),
            (engine, "mla_decode_time_factor"): tuple(sorted([*keep_a, (family, mla)])),
        },
    )


def _one(task: tuple[int, float, float]) -> float:
    """speed_error of case i at the factors (moe, mla)."""
    from roofline.cases.serving import run_serving_case

    i, moe, mla = task
    cat, engine, family, cs = _JOB["cat"], _JOB["engine"], _JOB["family"], _JOB["cases"]
    pc = _patched(cat, engine, family, moe, mla)
    return speed_error(cs[i], run_serving_case(cs[i], pc, expected_only=True).expected)


Table = dict[tuple[float, float], dict[str, list[float]]]


def table(cat: Any, engine: str, family: str, workers: int = 2) -> Table:
    """(moe, mla) -> source -> the log errors of its cases."""
    import multiprocessing as mp

    cs = cases(cat, engine, family)
    _JOB.update(cat=cat, engine=engine, family=family, cases=cs)
    moes, mlas = (
        (AITER_MOE_GRID, AITER_MLA_GRID) if engine in AITER_PROFILES else (MOE_GRID, MLA_GRID)
    )
    grid = [(a, b) for a in moes for b in mlas]
    tasks = [(i, a, b) for a, b in grid for i in range(len(cs))]
    with mp.get_context("fork").Pool(workers) as pool:
        errs = pool.map(_one, tasks, chunksize=4)
    out: Table = {k: {} for k in grid}
    for (i, a, b), e in zip(tasks, errs, strict=True):
        out[(a, b)].setdefault(source_group(cs[i]), []).append(e)
    return out


def fit(tab: Table, offset: dict[str, float], leave: str | None = None) -> tuple[float, float]:
    """The grid point with the least squared (log error - the source's Hopper offset) over every
    source but `leave`; ties go to the smaller factors (the curves as they are)."""

    def loss(k: tuple[float, float]) -> float:
        return sum(
            (e - offset.get(g, 0.0)) ** 2 for g, es in tab[k].items() if g != leave for e in es
        )

    return min(sorted(tab), key=loss)


def main(argv: list[str]) -> None:
    from roofline.catalog.load import load_catalog

    engine, family = argv[1], argv[2]
    cat = load_catalog()
    if engine in TRITON_ERA:
        moe, mla = triton_era(cat, engine, family)
        print(f"{engine} on {family}: derived, moe x{moe:g}, mla x{mla:g} ({TRITON_ERA[engine]}'s")
        print(f"  AITER-era factors x {AITER_GAIN['moe']:g} and x {AITER_GAIN['mla']:g})")
        if "--fit" not in argv:
            return
    if not cases(cat, engine, family):
        sys.exit(f"no MoE/MLA {engine} case on {family} to fit")
    tab = table(cat, engine, family)
    one = (1.0, 1.0)
    groups = sorted(tab[one])
    offset = control(cat, engine, set(groups))
    n = sum(len(v) for v in tab[one].values())
    best = fit(tab, offset)
    print(f"{engine} on {family}: {n} points from {len(groups)} sources")
    print(f"  all: moe x{best[0]:g}, mla x{best[1]:g}")
    for g in groups:
        c = offset.get(g)
        hop = "no H200 runs" if c is None else f"H200 {np.expm1(c):+.0%} too fast"
        print(f"  {g}: {hop}")
    at1, atfit = med(tab, one) * 100, med(tab, best) * 100
    print(f"  median |error| at x1 {at1:.0f}%, at the fit {atfit:.0f}%")
    for g in groups:
        w = fit(tab, offset, g)
        before, after = med(tab, one, g) * 100, med(tab, w, g) * 100
        print(
            f"  without {g}: moe x{w[0]:g}, mla x{w[1]:g} ({len(tab[one][g])} points; left out, "
            f"its median |error| {before:.0f}% at x1 -> {after:.0f}%)"
        )


if __name__ == "__main__":
    main(sys.argv)

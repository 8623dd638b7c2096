"""Fit the case-level parameters on the published measurements and write them to the catalog.

The kernel curves (hardware/kernels.yaml) come from measured kernel timings
(validation/calibrate_kernels.py) and are never tuned here. This script fits, by the method of
roofline/crossval.py, on validation/public_cases.yaml + validation/extra_cases.yaml:
- each engine's CPU time per step (`cpu_step_us` in hardware/engines.yaml) and per running
  sequence per step on each hardware family (`cpu_per_seq_us`, roofline/timing/host.py; 0 for a
  family that did not run the engine at two or more batch sizes);
- the scalar shares of the families without kernel curves (hardware/families.yaml);
and records per family the number of cases and the out-of-sample (leave-one-source-out) median
|error| as its error band. Run `python validation/calibrate.py` (prints the figures) or
`python validation/calibrate.py --write` (rewrites the two YAML files).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.cases.casefiles import load_cases  # noqa: E402
from roofline.catalog.load import Catalog, load_catalog  # noqa: E402
from validation.crossval import (  # noqa: E402
    Base,
    CrossResult,
    cross_validate,
    family_bands,
    fit,
    make_bases,
)

CASE_FILES = ("validation/public_cases.yaml", "validation/extra_cases.yaml")
HELD_OUT = "validation/heldout_cases.yaml"


def gguf_decode_levers() -> list:
    """The plain llama.cpp GGUF decode rows of validation/levers_cases.yaml (one device, no
    speculation, no offload): the only cases whose chips differ in FP32 rate per byte of
    bandwidth (M1 Max 26 FLOP/B against ~34 on the M2-M4 chips of the public cases), so the only
    ones that pin the ALU share of llama.cpp's block mat-vec kernels (roofline/timing/gemv.py).
    They join the fit and its leave-one-source-out like the other fitted cases, except the
    Apple rows of an older llama.cpp build (older_metal_build)."""
    from roofline.domain.precision import GGUF_FORMATS

    return [
        c
        for c in load_cases(ROOT / LEVER_CASES)
        if c.speculative is None
        and c.offload is None
        and c.gpus == 1
        and c.metric == "decode_tokens_per_s_per_user"
        and c.weights in GGUF_FORMATS
        and not older_metal_build(c)
    ]


# XiongjieDai's LLaMA 3 tables ran a llama.cpp of May 2024 (README: "snapshots May 2024"); the
# Metal block kernels have sped up since: the same M1 Max and Llama-3 8B Q4_K_M ran tg 35.73 and
# pp512 408.23 t/s there against 46.2 and 499.58 with a 2026 build (brand-o/normiebench issue 40;
# a 70B Q4_K_M on an M1 Max Mac Studio 4.34 there against 7.25 under Ollama in
# geerlingguy/ai-benchmarks' README at bdf9441). Their Apple GGUF rows would fit the current
# engine's shares to an older engine, so they are held out (validation/heldout_cases.yaml) or,
# in the levers file, left out of the fit; their F16 rows (no block kernel) stay fitted.
OLDER_METAL_SOURCE = "XiongjieDai"


def older_metal_build(c) -> bool:
    """A llama.cpp GGUF row on Apple from the May 2024 build of XiongjieDai's tables."""
    from roofline.domain.precision import GGUF_FORMATS

    return (
        c.hardware.startswith("apple-")
        and c.weights in GGUF_FORMATS
        and OLDER_METAL_SOURCE in c.source
    )


def fallback_shares(cat: Catalog) -> dict[str, float]:
    """What a family without a training case borrows: the median over the kernel groups of the
    16-bit GEMM plateau (η_max) and weight-streaming (η_mem) shares."""
    curves = [k.kernels.gemm["bf16"] for k in cat.kernels.values() if "bf16" in k.kernels.gemm]
    return {
        "compute": float(np.median([c.eta_max for c in curves])),
        "memory": float(np.median([c.eta_memory for c in curves])),
    }


def _lookup(cat: Catalog):
    def lookup(c):
        return cat.model(c.model), cat.accelerator(c.hardware)

    return lookup


def fitted_bases(cat: Catalog) -> list[Base]:
    """The cases this script fits on, each evaluated once (validation/crossval.py make_bases)."""
    cases = [c for f in CASE_FILES for c in load_cases(ROOT / f)] + gguf_decode_levers()
    return make_bases(cases, _lookup(cat), cat)


def fits_without(
    groups: tuple[str, ...], cat: Catalog | None = None
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The fit on every case and, per source group in `groups` (validation/crossval.py
    source_group), the fit on the cases of the other sources: what validation/serving_crossval.py
    patches when it leaves out a serving source that is also one of these tables."""
    cat = cat or load_catalog()
    bases, fallback = fitted_bases(cat), fallback_shares(cat)
    without = {g: fit([b for b in bases if b.group != g], fallback) for g in groups}
    return fit(bases, fallback), without


def run(cat: Catalog | None = None):
    """(catalog, fit on all cases, leave-one-source-out results, held-out results); `cat` None:
    the catalog load_catalog() reads, run once per process for its ROOFLINE_CATALOG (bands.py,
    accuracy_doc.py and the tests read the same run; read only)."""
    if cat is None:
        return _run_loaded(os.environ.get("ROOFLINE_CATALOG", ""))
    return _run(cat)


@cache
def _run_loaded(catalog_env: str):
    return _run(load_catalog())


def _run(cat: Catalog):
    bases = fitted_bases(cat)
    held = make_bases(load_cases(ROOT / HELD_OUT), _lookup(cat), cat)
    full, loso, never = cross_validate(bases, fallback_shares(cat), held)
    return cat, full, loso, never


def bands(loso: list[CrossResult], cat: Catalog) -> dict[str, tuple[int, float]]:
    """Per family (cases, out-of-sample band); families without cases get the widest band."""
    out = family_bands(loso)
    widest = max(b for _, b in out.values())
    for fam in cat.families:
        out.setdefault(fam, (0, widest))
    return out


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def write(cat: Catalog, full: dict[str, float], loso: list[CrossResult], bases: list[Base]) -> None:
    eng_path = ROOT / "hardware/engines.yaml"
    text = eng_path.read_text()
    full = dict(full)
    if "cpu:llamacpp" in full:  # MLX has no public case: it borrows llama.cpp's (engines.yaml)
        full.setdefault("cpu:mlx", full["cpu:llamacpp"])
    for key, value in full.items():
        if key.startswith("cpu:") and key != "cpu:*":
            name = key[4:]
            pattern = rf"(- id: {re.escape(name)}\n(?:  .*\n)*?  cpu_step_us: )[0-9.]+"
            text = re.sub(pattern, rf"\g<1>{round(value * 1e6)}", text)
    for name in cat.engines:
        # the families this fit sets; the others keep what their own fits wrote
        # (validation/fit_seq_cost.py, fit_engine_versions.py, fit_amd_v0.py)
        fitted = {k.split(":")[2]: v for k, v in full.items() if k.startswith(f"seq:{name}:")}
        if not fitted:
            continue
        per = dict(cat.engines[name].cpu_per_seq_s) | fitted
        flow = ", ".join(f"{fam}: {round(v * 1e6)}" for fam, v in sorted(per.items()))
        pattern = rf"(- id: {re.escape(name)}\n(?:  .*\n)*?  cpu_per_seq_us: )\{{.*\}}"
        text = re.sub(pattern, rf"\g<1>{{{flow}}}", text)
    eng_path.write_text(text)
    fam_path = ROOT / "hardware/families.yaml"
    text = fam_path.read_text()
    b = bands(loso, cat)
    for fam in cat.families:
        n, band = b[fam]
        block = rf"(- id: {re.escape(fam)}\n(?:  .*\n)*?)"
        keys = ("compute", "memory", "memory_weight_only", "compute_weight_only", "alu_weight_only")
        for key in keys:
            if f"{key}:{fam}" in full:
                text = re.sub(
                    block + rf"(    {key}: )[0-9.]+",
                    rf"\g<1>\g<2>{_fmt(full[f'{key}:{fam}'])}",
                    text,
                )
        text = re.sub(block + r"(    cases: )[0-9]+", rf"\g<1>\g<2>{n}", text)
        text = re.sub(block + r"(    error_band: )[0-9.]+", rf"\g<1>\g<2>{band:.3f}", text)
    fam_path.write_text(text)


# ---- speculative decoding: each engine's host cost of a round --------------------------------
# Fitted per ENGINE on the speculative cases of validation/levers_cases.yaml whose source names
# that engine (cases with no engine, the eager PyTorch prototypes of Spec-Bench, are never fitted
# and run under the default engine's figures). A case's predicted speed-up is its best candidate
# round's, base·E / (t_round + r + n·d), with t_round the round's expected time without the
# speculative host cost, n its sequential draft steps (speculative.host_draft_steps) and (r, d)
# = (spec_round_cpu, spec_draft_step_cpu) of its engine: least squares in log(speed-up) on a
# 25 us grid, r and d non-negative.
LEVER_CASES = "validation/levers_cases.yaml"
SPEC_ROUND_GRID_US = np.arange(0.0, 4000.0 + 1.0, 25.0)
SPEC_STEP_GRID_US = np.arange(0.0, 1500.0 + 1.0, 25.0)
SPEC_MIN_SOURCES = 2


@dataclass(frozen=True)
class SpecCase:
    """One speculative case, reduced to its candidate rounds (without speculative host cost)."""

    id: str
    engine: str  # the engine whose figures it fits ("" for a case with no engine: never fitted)
    group: str  # its source table (leave-one-source-out)
    measured: float
    base_s: np.ndarray  # per candidate: plain-decode TPOT
    round_s: np.ndarray  # the round's expected time without the speculative host cost
    tokens: np.ndarray  # E
    steps: np.ndarray  # sequential draft steps

    def predict(self, round_us: np.ndarray, step_us: np.ndarray) -> np.ndarray:
        """Speed-up for each (r, d) of the broadcast grids, in us."""
        r = np.asarray(round_us, dtype=float)[..., None] * 1e-6
        d = np.asarray(step_us, dtype=float)[..., None] * 1e-6
        t = (self.round_s + r + self.steps * d) / self.tokens
        return np.max(self.base_s / t, axis=-1)


def spec_cases(cat: Catalog) -> list[SpecCase]:
    from dataclasses import replace

    from roofline.cases.case import case_deployment, case_engine
    from roofline.cases.levers import speculative_rounds
    from roofline.levers.speculative import host_draft_steps
    from validation.crossval import source_group

    cases = [c for c in load_cases(ROOT / LEVER_CASES) if c.speculative is not None]
    by_id = {c.id: c for c in cases}
    out = []
    for c in cases:
        model, hw = cat.model(c.model), cat.accelerator(c.hardware)
        eff = replace(
            hw.efficiency,
            engines={
                k: replace(v, draft_round_cpu_s=0.0, draft_step_cpu_s=0.0)
                for k, v in hw.efficiency.engines.items()
            },
        )
        dep, _ = case_deployment(c)
        ctx = c.prompt + max(c.output // 2, 1)
        runs = speculative_rounds(c, model, hw, dep, eff, ctx, cat)
        engine = case_engine(c)
        out.append(
            SpecCase(
                c.id,
                "" if engine == "auto" else engine,
                source_group(c, by_id),
                float(c.measured),
                np.array([float(r.tpot_baseline_expected_s) for r in runs]),
                np.array([float(r.tpot_expected_s * r.tokens_per_round) for r in runs]),
                np.array([float(r.tokens_per_round) for r in runs]),
                np.array([float(host_draft_steps(r.drafter, r.gamma)) for r in runs]),
            )
        )
    return out


def fit_spec_engine(cases: list[SpecCase]) -> tuple[float, float]:
    """(spec_round_cpu_us, spec_draft_step_cpu_us) minimising Σ log²(predicted / measured);
    (0, 0) without cases. A draft-step cost needs a case with draft steps to be identified."""
    if not cases:
        return 0.0, 0.0
    steps = SPEC_STEP_GRID_US if any(np.any(c.steps > 0) for c in cases) else np.zeros(1)
    r, d = np.meshgrid(SPEC_ROUND_GRID_US, steps, indexing="ij")
    loss = sum(np.log(c.predict(r, d) / c.measured) ** 2 for c in cases)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(r[i, j]), float(d[i, j])


def run_speculative(cat: Catalog | None = None):
    """(per-engine fit, rows (id, engine, measured, in-sample, out-of-sample) for every case).
    Out of sample: the engine's fit on its cases from other source tables; a case with no
    engine is predicted with the default engine's (vLLM's) full fit, and a case of an engine
    with cases from fewer than SPEC_MIN_SOURCES tables with none (0): neither is fitted on."""
    cat = cat or load_catalog()
    cases = spec_cases(cat)
    groups: dict[str, set[str]] = {}
    for c in cases:
        if c.engine:
            groups.setdefault(c.engine, set()).add(c.group)
    # an engine is fitted only on cases from SPEC_MIN_SOURCES source tables or more: one table
    # would make the engine's figures that table's own (a per-case fit)
    engines = sorted(e for e, g in groups.items() if len(g) >= SPEC_MIN_SOURCES)
    fits = {e: fit_spec_engine([c for c in cases if c.engine == e]) for e in engines}
    rows = []
    for c in cases:
        eng = c.engine or "vllm"
        full = fits.get(eng, (0.0, 0.0))
        if eng in fits:
            others = [o for o in cases if o.engine == eng and o.group != c.group]
            held = fit_spec_engine(others)
        else:
            held = full
        rows.append((c.id, c.engine or "(none)", c.measured,
                     float(c.predict(*full)), float(c.predict(*held))))  # fmt: skip
    return fits, rows


def write_speculative(fits: dict[str, tuple[float, float]]) -> None:
    """The fitted spec_* of each engine, and of its version profiles (`base:` it), which share
    them (tests/test_speculative_host.py)."""
    path = ROOT / "hardware/engines.yaml"
    text = path.read_text()
    based = re.findall(r"- id: (\S+)\n(?:  .*\n)*?  base: (\S+)\n", text)
    for name, (r, d) in fits.items():
        names = [name] + [v for v, b in based if b == name]
        for key, value in (("spec_round_cpu_us", r), ("spec_draft_step_cpu_us", d)):
            for one in names:
                pattern = rf"(- id: {re.escape(one)}\n(?:  .*\n)*?  {key}: )[0-9.]+"
                text = re.sub(pattern, rf"\g<1>{round(value)}", text)
    path.write_text(text)


def main() -> None:
    cat, full, loso, _ = run()
    for key, value in full.items():
        shown = f"{value * 1e6:.0f} us" if key.startswith(("cpu:", "seq:")) else f"{value:.2f}"
        print(f"{key}: {shown}")
    for fam, (n, band) in bands(loso, cat).items():
        print(f"{fam}: {n} cases, out-of-sample median |error| {band:.3f}")
    fits, rows = run_speculative(cat)
    for name, (r, d) in fits.items():
        print(f"spec:{name}: round {r:.0f} us, draft step {d:.0f} us")
    for cid, eng, meas, fin, fout in rows:
        err_in, err_out = fin / meas - 1, fout / meas - 1
        print(f"  {cid} [{eng}] measured {meas:.3g}: in {err_in:+.1%}, out {err_out:+.1%}")
    if "--write" in sys.argv:
        write(cat, full, loso, [r.base for r in loso])
        write_speculative(fits)
        print("wrote hardware/engines.yaml and hardware/families.yaml")


if __name__ == "__main__":
    main()

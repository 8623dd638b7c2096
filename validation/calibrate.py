"""Fit the case-level parameters on the published measurements and write them to the catalog.

The kernel curves (hardware/kernels.yaml) come from measured kernel timings
(validation/calibrate_kernels.py) and are never tuned here. This script fits, by the method of
roofline/crossval.py, on validation/public_cases.yaml + validation/extra_cases.yaml:
- each engine's CPU time per step (`cpu_step_us` in hardware/engines.yaml);
- the scalar shares of the families without kernel curves (hardware/families.yaml);
and records per family the number of cases and the out-of-sample (leave-one-source-out) median
|error| as its error band. Run `python validation/calibrate.py` (prints the figures) or
`python validation/calibrate.py --write` (rewrites the two YAML files).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.catalog import Catalog, load_catalog  # noqa: E402
from roofline.crossval import Base, CrossResult, cross_validate, family_bands, make_bases  # noqa: E402
from roofline.userfiles import load_cases  # noqa: E402

CASE_FILES = ("validation/public_cases.yaml", "validation/extra_cases.yaml")
HELD_OUT = "validation/heldout_cases.yaml"


def fallback_shares(cat: Catalog) -> dict[str, float]:
    """What a family without a training case borrows: the median over the kernel groups of the
    16-bit GEMM plateau (η_max) and weight-streaming (η_mem) shares."""
    curves = [k.kernels.gemm["bf16"] for k in cat.kernels.values() if "bf16" in k.kernels.gemm]
    return {
        "compute": float(np.median([c.eta_max for c in curves])),
        "memory": float(np.median([c.eta_memory for c in curves])),
    }


def run(cat: Catalog | None = None):
    """(catalog, fit on all cases, leave-one-source-out results, held-out results)."""
    cat = cat or load_catalog()
    cases = [c for f in CASE_FILES for c in load_cases(ROOT / f)]

    def lookup(c):
        return cat.model(c.model), cat.accelerator(c.hardware)

    bases = make_bases(cases, lookup)
    held = make_bases(load_cases(ROOT / HELD_OUT), lookup)
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
    eng_path.write_text(text)
    fam_path = ROOT / "hardware/families.yaml"
    text = fam_path.read_text()
    b = bands(loso, cat)
    for fam in cat.families:
        n, band = b[fam]
        block = rf"(- id: {re.escape(fam)}\n(?:  .*\n)*?)"
        for key in ("compute", "memory", "memory_weight_only"):
            if f"{key}:{fam}" in full:
                text = re.sub(
                    block + rf"(    {key}: )[0-9.]+",
                    rf"\g<1>\g<2>{_fmt(full[f'{key}:{fam}'])}",
                    text,
                )
        text = re.sub(block + r"(    cases: )[0-9]+", rf"\g<1>\g<2>{n}", text)
        text = re.sub(block + r"(    error_band: )[0-9.]+", rf"\g<1>\g<2>{band:.3f}", text)
    fam_path.write_text(text)


def main() -> None:
    cat, full, loso, _ = run()
    for key, value in full.items():
        shown = f"{value * 1e6:.0f} us" if key.startswith("cpu:") else f"{value:.2f}"
        print(f"{key}: {shown}")
    for fam, (n, band) in bands(loso, cat).items():
        print(f"{fam}: {n} cases, out-of-sample median |error| {band:.3f}")
    if "--write" in sys.argv:
        write(cat, full, loso, [r.base for r in loso])
        print("wrote hardware/engines.yaml and hardware/families.yaml")


if __name__ == "__main__":
    main()

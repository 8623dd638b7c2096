"""Fit a version profile's host costs (hardware/engines.yaml) on the published serving points of
that version in validation/engine_sweeps.yaml, with leave-one-source-out.

A version profile (roofline/engines/versions.py) gets its own figures only where three or more
independent sources ran that version (issue 24: otherwise it borrows the engine's and says so).
What is fitted: the time per running sequence per step `cpu_per_seq_us` (roofline/timing/host.py;
with --free-step the fixed host time per step `cpu_step_us` too), one figure for every family
with cases (the
per-sequence work is the engine's Python host loop, the same code on every GPU). The fit is a
least-squares one on log(expected / measured) over a grid of the two figures; every metric of
a case counts once.

Left out of the fit, each with its reason (they stay in the validation table):
- multi-step scheduling (`num_scheduler_steps` above 1, or `--num-scheduler-steps` in the case's
  source or notes): one schedule serves many steps, so its host cost per step is the profile's
  spread over them (roofline/serving/sim/multistep.py), not the single-step figure being fitted;
- sources whose other engines are as far off (`EXCLUDED_SOURCES`): the dstack DeepSeek-R1 sweeps
  run 3-4x slower than modelled under SGLang and TensorRT-LLM too, so the gap there is not the
  version's host cost;
- runs on a kernel the catalog does not time (`unmodelled_kernel`): SGLang's MXFP4 MoE, and
  the early engines' Triton fused MoE on AMD Instinct (a derived factor).

In sample: every fit case under the fitted figures. Out of sample: each source left out in turn,
the figures refitted on the others (the same grid) and the left-out cases predicted with them.
cpu_step stays the base engine's unless --free-step (fit's docstring says why).
Run: `python -m validation.fit_engine_versions vllm-v0 [--free-step]` (prints the fit; ~1-3 min).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from roofline.cases.serving import run_serving_case
from roofline.domain.units import US
from roofline.engines.versions import pick_profile

PATH = Path(__file__).with_name("engine_sweeps.yaml")
EXCLUDED_SOURCES = {
    "https://github.com/dstackai/benchmarks": "DeepSeek-R1 sweep: SGLang and TensorRT-LLM as far "
    "off as vLLM there (not the version's host cost)",
}
MULTI_STEP = re.compile(r"num-scheduler-steps[ =]*([0-9]+)|scheduler steps ([0-9]+)")
SEQ_GRID_US = (0.0, 50.0, 100.0, 150.0, 175.0, 200.0, 225.0, 250.0, 275.0, 300.0, 350.0, 400.0)
STEP_GRID_US = (0.0, 250.0, 500.0, 1000.0, 1500.0, 2500.0)  # with --free-step only


def source_of(case: dict[str, Any]) -> str:
    """The source a case cites: its first URL up to the repository (or page) it names."""
    url = re.search(r"https?://\S+", str(case["source"]))
    u = url.group(0) if url else str(case["source"])
    m = re.match(r"(https://github\.com/[^/]+/[^/]+)", u)
    return m.group(1) if m else u.split("#")[0]


def unmodelled_kernel(case: dict[str, Any]) -> str:
    """Why a case's gap is a kernel the catalog does not time, not the engine's host ('' when
    none): SGLang's MXFP4 MoE (gpt-oss). On Hopper its fused_moe_triton runs 2-3x the time of the
    MXFP4 curve the catalog has (aiconfigurator-core 0.12.0's sglang 0.5.14 moe tables,
    roofline/step/moe_curves.py), and on Ampere, where no MXFP4 table exists, SGLang says of
    itself 'mxfp4 quantization is not fully optimized yet. The speed can be slower than
    non-quantized models' (its log in sgl-project/sglang issue #8864, 2025-08): GPUStack's
    gpt-oss-20b and -120b pages (gpustack@47277d79) measure SGLang 0.5.3-0.5.4 on one A100 at
    1.36 and 1.67 requests/s where vLLM 0.11.0 serves 23.8 and 11.6 on the same GPU. A host
    figure fitted on them would carry that kernel into every other SGLang run."""
    if str(case.get("engine", "")) == "sglang" and str(case.get("weights", "")) == "mxfp4":
        return "SGLang's MXFP4 MoE: a kernel the catalog does not time"
    if _rocm_triton_moe(case):
        return "ROCm's Triton fused MoE of the early engines: a derived factor, not a timed kernel"
    return ""


def _rocm_triton_moe(case: dict[str, Any]) -> bool:
    """An MoE model on AMD Instinct under vLLM before 0.8 or SGLang before 0.4.4: its routed
    experts run the engines' Triton fused_moe, whose time over the CDNA 3 curves is derived
    (hardware/engines.yaml vllm-v0 moe_time_factor, block_fp8_moe_time_factor), not measured;
    a host figure fitted on such runs would carry that kernel's error (as the dstack DeepSeek-R1
    sweeps, EXCLUDED_SOURCES)."""
    from roofline.catalog.load import load_catalog
    from roofline.domain.errors import InputError
    from roofline.engines.versions import parse_version

    cat = load_catalog()
    try:
        hw, model = cat.accelerator(str(case["hardware"])), cat.model(str(case["model"]))
        v = parse_version(str(case.get("engine_version")))
    except (KeyError, InputError):
        return False
    floor = {"vllm": (0, 8), "sglang": (0, 4, 4)}.get(str(case.get("engine", "vllm")))
    return (
        hw.family == "amd-instinct"
        and model.n_routed_experts > 0
        and floor is not None
        and v is not None
        and v < floor
    )


def excluded(case: dict[str, Any]) -> str:
    """Why a case stays out of the fit ('' when it is in)."""
    if why := unmodelled_kernel(case):
        return why
    src = source_of(case)
    for prefix, why in EXCLUDED_SOURCES.items():
        if src.startswith(prefix):
            return why
    text = f"{case['source']} {case.get('notes', '')}"
    steps = [int(a or b) for a, b in MULTI_STEP.findall(text)]
    if case.get("num_scheduler_steps", 1) > 1 or any(s > 1 for s in steps):
        return "multi-step scheduling"
    return ""


class Patched:
    """A catalog whose accelerators run one engine profile with other host figures."""

    def __init__(self, cat: Any, profile: str, step_us: float, seq_us: float, families) -> None:
        self._cat, self._profile = cat, profile
        self._fields = {
            "cpu_step_s": step_us * US,
            "cpu_per_seq_s": tuple(sorted((f, seq_us * US) for f in families)),
        }

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cat, name)

    def accelerator(self, name: str):
        hw = self._cat.accelerator(name)
        engines = dict(hw.efficiency.engines or {})
        if self._profile in engines:
            engines[self._profile] = replace(engines[self._profile], **self._fields)
        return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


def version_cases(profile: str, cat: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases whose engine and stated version run under `profile`."""
    out = []
    for c in cases:
        engines = cat.accelerator(c["hardware"]).efficiency.engines or {}
        eng = c.get("engine", "vllm")
        ours = profile in engines and eng == engines[profile].base
        if ours and pick_profile(eng, c.get("engine_version"), engines) == profile:
            out.append(c)
    return out


def log_errors(cases, cat, profile, step_us, seq_us, families) -> np.ndarray:
    """log(expected / measured) of every case under the figures."""
    pc = Patched(cat, profile, step_us, seq_us, families)
    return np.array(
        [
            math.log(run_serving_case(c, pc, expected_only=True).expected / float(c["measured"]))
            for c in cases
        ]
    )


def fit(profile: str, free_step: bool = False) -> dict[str, Any]:
    """The grid, the in-sample fit and the leave-one-source-out refits (module docstring).
    cpu_step is the base engine's (its fixed per-step work, fitted on its latency tables)
    unless `free_step`: the sources run the version at its max_num_seqs only (bursts and
    saturated rates), where c·B and cpu_step cannot be told apart."""
    from roofline.catalog.load import load_catalog
    from validation.engine_sweeps_report import load

    cat = load_catalog()
    base = cat.engines[cat.engines[profile].base]
    steps = STEP_GRID_US if free_step else (base.cpu_step_s / US,)
    mine = version_cases(profile, cat, load(PATH))
    fit_cases = [c for c in mine if not excluded(c)]
    families = sorted({cat.accelerator(c["hardware"]).family for c in fit_cases})
    sources = sorted({source_of(c) for c in fit_cases})
    grid = {
        (s, q): log_errors(fit_cases, cat, profile, s, q, families)
        for s in steps
        for q in SEQ_GRID_US
    }
    src = np.array([source_of(c) for c in fit_cases])

    def best(mask: np.ndarray) -> tuple[float, float]:
        return min(grid, key=lambda k: float(np.sum(grid[k][mask] ** 2)))

    every = np.ones(len(fit_cases), dtype=bool)
    chosen = best(every)
    err_in = np.expm1(grid[chosen])
    err_out = np.empty(len(fit_cases))
    per_source = {}
    for s in sources:
        left = src == s
        k = best(~left)
        err_out[left] = np.expm1(grid[k][left])
        per_source[s] = (k, int(left.sum()))
    return {
        "profile": profile,
        "cases": len(mine),
        "fit_cases": len(fit_cases),
        "families": families,
        "sources": per_source,
        "chosen": chosen,
        "median_in": float(np.median(np.abs(err_in))),
        "median_out": float(np.median(np.abs(err_out))),
        "by_source": {
            s: (
                float(np.median(np.abs(err_in[src == s]))),
                float(np.median(np.abs(err_out[src == s]))),
            )
            for s in sources
        },
        "excluded": {c["id"]: excluded(c) for c in mine if excluded(c)},
    }


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    profile = args[0] if args else "vllm-v0"
    r = fit(profile, "--free-step" in argv)
    step, seq = r["chosen"]
    print(f"{profile}: {r['fit_cases']} of {r['cases']} cases fitted, families {r['families']}")
    print(f"fitted: cpu_step_us {step:g}, cpu_per_seq_us {seq:g}")
    print(f"median |error| in sample {r['median_in']:.1%}, out of sample {r['median_out']:.1%}")
    for s, (k, n) in r["sources"].items():
        i, o = r["by_source"][s]
        print(f"  {s}: {n} cases, without it {k[0]:g}/{k[1]:g} us; in {i:.1%} out {o:.1%}")
    reasons: dict[str, int] = {}
    for why in r["excluded"].values():
        reasons[why] = reasons.get(why, 0) + 1
    for why, n in reasons.items():
        print(f"  left out: {n} cases ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Calibrate one set of efficiencies per hardware family from published measurements.

Method (run `python validation/calibrate.py`; it prints the figures written to
hardware/families.yaml):
1. decode regime, 16-bit and FP8 weights: grid search over memory efficiency η_m (0.30-1.00)
   and a fixed per-step overhead o (0-2 ms) minimising the mean squared log(expected / measured).
   With fewer than three such cases in a family, o is fixed at 0 and only η_m is fitted.
2. decode regime, weight-only quantised weights (int8, int4, q4_0, ...): η for the dequantising
   matmuls, with η_m and o from step 1.
3. TTFT regime: compute efficiency η_c, with η_m and o from step 1.
Throughput cases are not fitted: they check the combination (held out).
Families without cases borrow another family's figures; hardware/families.yaml says which.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.catalog import load_cases, load_catalog  # noqa: E402
from roofline.hardware import Efficiency  # noqa: E402
from roofline.precision import weight_format  # noqa: E402
from roofline.validate import METRICS, evaluate  # noqa: E402

ETAS = np.round(np.arange(0.30, 1.001, 0.02), 2)
OVERHEADS_US = np.arange(0, 2001, 50)


def loss(cases, cat, eff: Efficiency) -> float:
    errs = [
        abs(
            np.log(
                evaluate(c, cat.model(c.model), cat.accelerator(c.hardware), eff).expected
                / c.measured
            )
        )
        for c in cases
    ]
    return float(np.mean(np.square(errs)))


def fit() -> dict[str, dict[str, object]]:
    """Fitted efficiencies per family with the case ids behind each figure."""
    cat = load_catalog()
    cases = load_cases(ROOT / "validation/public_cases.yaml") + load_cases(
        ROOT / "validation/extra_cases.yaml"
    )
    by_family: dict[str, list] = defaultdict(list)
    for c in cases:
        by_family[cat.accelerator(c.hardware).family].append(c)
    out: dict[str, dict[str, object]] = {}
    for family, fc in sorted(by_family.items()):
        regime = {c.id: METRICS[c.metric][0] for c in fc}
        wo = {c.id: weight_format(c.weights).weight_only for c in fc}
        dec = [c for c in fc if regime[c.id] == "decode" and not wo[c.id]]
        dec_wo = [c for c in fc if regime[c.id] == "decode" and wo[c.id]]
        ttft = [c for c in fc if regime[c.id] == "ttft"]
        overheads = OVERHEADS_US if len(dec) >= 3 else [0]
        eta_m, o_us = 1.0, 0
        if dec:
            _, eta_m, o_us = min(
                (loss(dec, cat, Efficiency(memory=e, step_overhead_s=o * 1e-6, source="fit")), e, o)
                for e in ETAS
                for o in overheads
            )
        base = {"memory": eta_m, "step_overhead_s": o_us * 1e-6, "source": "fit"}
        eta_wo = eta_c = None
        if dec_wo:
            eta_wo = min(
                (loss(dec_wo, cat, Efficiency(**base, memory_weight_only=e)), e) for e in ETAS
            )[1]
        if ttft:
            eta_c = min((loss(ttft, cat, Efficiency(**base, compute=e)), e) for e in ETAS)[1]
        out[family] = {
            "memory": float(eta_m),
            "step_overhead_us": int(o_us),
            "memory_weight_only": None if eta_wo is None else float(eta_wo),
            "compute": None if eta_c is None else float(eta_c),
            "decode_cases": [c.id for c in dec],
            "weight_only_cases": [c.id for c in dec_wo],
            "ttft_cases": [c.id for c in ttft],
        }
    return out


def main() -> None:
    for family, f in fit().items():
        print(
            f"{family}: memory {f['memory']:.2f}, step_overhead_us {f['step_overhead_us']}, "
            f"memory_weight_only {f['memory_weight_only']}, compute {f['compute']}"
        )
        for key in ("decode_cases", "weight_only_cases", "ttft_cases"):
            print(f"   {key}: {', '.join(f[key]) or '-'}")


if __name__ == "__main__":
    main()

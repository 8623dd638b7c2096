"""Where an expected figure's efficiencies come from (the family's case fit, the GPU
generation's kernel curves, own or borrowed) and how far to trust it (the family's out-of-sample
error band), for the reports of roofline/phases.py and roofline/cases/.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

FloatArray = np.ndarray


@dataclass(frozen=True)
class Calibration:
    """Where an expected figure's efficiencies come from and how far to trust it."""

    family: str
    engine: str
    kernels: str  # the GPU generation whose kernel curves apply ("" = scalar shares only)
    kernels_borrowed: bool  # the accelerator has no kernel data of its own
    cases: int  # published cases of the family behind the case-fitted figures
    error_band: float | None  # the family's out-of-sample median |error| (relative)
    source: str = ""

    @property
    def borrowed(self) -> bool:
        """True when the figures are not the accelerator's own: borrowed curves or no cases."""
        return self.kernels_borrowed or self.cases == 0

    def band(self, value: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """(low, high) of an expected figure: value · (1 ∓ band); (value, value) without a band."""
        v = np.asarray(value, dtype=float)
        b = self.error_band or 0.0
        return v * (1.0 - b), v * (1.0 + b)


def calibration_of(eff, engine: str) -> Calibration:
    """The calibration status of an Efficiency (roofline/hardware.py) under an engine."""
    ks = eff.kernels
    return Calibration(
        family=eff.family,
        engine=engine,
        kernels="" if ks is None else ks.id,
        kernels_borrowed=False if ks is None else ks.borrowed,
        cases=eff.cases,
        error_band=eff.error_band,
        source=eff.source,
    )

"""A user catalog's `calibrations:` entries: one chip's kernel shares and one engine's host costs
on that chip, fitted to the user's own benchmark runs by `roofline validate --calibrate DIR`
(roofline/cases/fit.py) and applied by the catalog (roofline/catalog/load.py) to that chip only. The
shipped figures never change: an entry names only what it replaces, and replaces it for one
accelerator id.

    calibrations:
    - id: vllm-h100            # <engine>-<hardware>
      hardware: h100           # the accelerator id the runs were on
      engine: vllm
      compute: 0.632           # the chip's compute share (the family's, else), every engine
      memory: 0.648            # the chip's bandwidth share
      cpu_step_us: 2400        # the engine's host costs on this chip only
      cpu_per_seq_us: 40
      request_latency_us: 30000
      source: "..."

`compute` and `memory` replace the shares the chip takes from its family; on a chip with kernel
curves they scale every curve by fitted / family share, as --eta-compute and --eta-memory do
(roofline/step/optime.py kernel_view), so the curves keep their shapes. The model's kernels are the
chip's, not the engine's, so the shares apply under every engine on that chip; the host costs
apply to the named engine on that chip (cpu_per_seq_us is the chip's family's entry of the
engine's per-family mapping, hardware/engines.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from roofline.catalog.schema import NUM, SOURCED
from roofline.catalog.schema import check as _check
from roofline.domain.errors import CatalogError
from roofline.domain.hardware import Efficiency
from roofline.domain.units import US
from roofline.timing.host import EngineProfile

SHARES = ("compute", "memory")
HOST_US = ("cpu_step_us", "cpu_per_seq_us", "request_latency_us")

_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "hardware": (str, True),
    "engine": (str, True),
    **dict.fromkeys((*SHARES, *HOST_US), (NUM, False)),
    **SOURCED,
}


@dataclass(frozen=True)
class ChipCalibration:
    """One `calibrations:` entry: the figures it replaces (shares in (0, 1], host costs in µs as
    the catalog files hold them) for one accelerator and one engine."""

    id: str
    hardware: str
    engine: str
    values: Mapping[str, float]  # a subset of SHARES + HOST_US
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()


def calibration_entry(where: str, data: Any) -> ChipCalibration:
    """A validated `calibrations:` entry (shares in (0, 1], host costs non-negative)."""
    d = _check(where, data, _KEYS)
    values = {k: float(d[k]) for k in (*SHARES, *HOST_US) if k in d}
    for k in SHARES:
        if k in values and not 0 < values[k] <= 1:
            raise CatalogError(f"{where}: key '{k}' must be in (0, 1], got {values[k]:g}")
    for k in HOST_US:
        if k in values and values[k] < 0:
            raise CatalogError(f"{where}: key '{k}' must be non-negative, got {values[k]:g}")
    return ChipCalibration(
        d["id"], d["hardware"], d["engine"], values, d["source"], d.get("notes", "")
    )


def calibrated_profile(
    prof: EngineProfile, family: str, values: Mapping[str, float]
) -> EngineProfile:
    """The engine's profile with the calibration's host costs (cpu_per_seq for `family`)."""
    per = dict(prof.cpu_per_seq_s)
    if "cpu_per_seq_us" in values:
        per[family] = values["cpu_per_seq_us"] * US
    return replace(
        prof,
        cpu_step_s=values.get("cpu_step_us", prof.cpu_step_s / US) * US,
        cpu_per_seq_s=tuple(sorted((k, v) for k, v in per.items() if v > 0)),
        request_latency_s=values.get("request_latency_us", prof.request_latency_s / US) * US,
    )


def calibrated(eff: Efficiency, cal: ChipCalibration) -> Efficiency:
    """A chip's resolved efficiency (family shares, kernel curves and engines attached) with the
    calibration applied: its shares (the curves' reference shares stay the family's, so the
    curves scale) and its engine's host costs. An engine the catalog lacks is left out."""
    v = cal.values
    engines = dict(eff.engines)
    if cal.engine in engines:
        engines[cal.engine] = calibrated_profile(engines[cal.engine], eff.family, v)
    if not any(k in v for k in SHARES):
        return replace(eff, engines=engines)
    return replace(
        eff,
        engines=engines,
        compute=v.get("compute", eff.compute),
        memory=v.get("memory", eff.memory),
        source=f"{cal.source} (before: {eff.source})",
    )

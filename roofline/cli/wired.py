"""The memory a command that lays out or serves a model plans on a Mac past its default
GPU-wired limit (plan, serve), as analyze and capacity plan it (options.fitted_plan)."""

from __future__ import annotations

from roofline.cli import options as opt
from roofline.domain.errors import DoesNotFitError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine as EngineRule
from roofline.step.ops import Deployment


def wired_capacity(
    m: ModelArch, hw: Accelerator, dep: Deployment, eng: EngineRule, memory: str | None
) -> float:
    """options.capacity, but on a Mac whose default GPU-wired limit the weights pass, the limit as
    users raise it (options.fitted_plan, with its note on stderr); a model that fits nowhere keeps
    the default, so the command refuses it in its own words."""
    if hw.vendor != "apple" or not hw.unified_memory:
        return opt.capacity(hw, memory)
    try:
        return opt.fitted_plan(m, hw, dep, eng, memory).capacity_bytes
    except DoesNotFitError:
        return opt.capacity(hw, memory)

"""The memory a command that lays out or serves a model plans on a Mac past its default
GPU-wired limit (plan, serve), as analyze and capacity plan it (options.fitted_plan); and
analyze's layout check for the commands whose only layout option is --tp (offload, tiers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofline.cli import options as opt
from roofline.domain.errors import DoesNotFitError, InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import node_gpus
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine as EngineRule
from roofline.step.ops import Deployment

if TYPE_CHECKING:
    from roofline.catalog.load import Catalog


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


def one_node(cat: Catalog, m: ModelArch, hw: Accelerator, dep: Deployment, command: str) -> None:
    """analyze's layout check (layout_options.layout: the degrees, the heads TP splits, the TP
    group inside one node's scale-up domain) for a command with --tp alone: a TP group past one
    node is refused in its own words, since it has no --cross-node-tp or --scale-out."""
    from roofline.cli import layout_options as lopt  # only where a command checks a layout

    per_node = node_gpus(hw)
    if dep.tp > per_node:
        raise InputError(
            f"--tp {dep.tp} spans more than one node of {per_node} {hw.id} (its scale-up "
            f"domain): {command} runs its TP group inside one node; lower --tp"
        )
    lopt.layout(cat, m, hw, dep, lopt.LayoutOptions(tp=dep.tp))

"""Option groups: options several commands take together, declared once.

A group is a frozen dataclass whose fields are the Annotated options with their defaults. A
command takes the group as one parameter; `grouped` spreads the group's fields into the signature
typer reads (each an option of its own, in the group's order, where the group stands) and hands
the command the group."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from roofline.cli import options as opt
from roofline.cli.app import app
from roofline.cli.startup import guarded
from roofline.domain.deployment import Deployment
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import check_degree
from roofline.domain.model import ModelArch

if TYPE_CHECKING:
    from roofline.catalog.load import Catalog
    from roofline.domain.hardware import Tier

F = TypeVar("F", bound=Callable[..., Any])


def grouped(fn: F) -> F:
    """`fn` with each dataclass-typed parameter replaced by its fields (see the module); a field
    that is itself a group is spread the same way, in its place."""
    sig = inspect.signature(fn, eval_str=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    for p in sig.parameters.values():
        if _is_group(p.annotation):
            groups[p.name] = p.annotation
            params += _fields(p.annotation, p.kind)
        else:
            params.append(p)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, cls in groups.items():
            kwargs[name] = _gather(cls, kwargs)
        return fn(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return typing.cast(F, wrapper)


def _is_group(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A group's field annotations, resolved once."""
    return typing.get_type_hints(cls, include_extras=True)


def _fields(cls: type, kind: Any) -> list[inspect.Parameter]:
    """A group's options in its order, the fields of a group within spread in its place."""
    hints = _hints(cls)
    out: list[inspect.Parameter] = []
    for f in dataclasses.fields(cls):
        if _is_group(hints[f.name]):
            out += _fields(hints[f.name], kind)
            continue
        d = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default  # argument
        out.append(inspect.Parameter(f.name, kind, default=d, annotation=hints[f.name]))
    return out


def _gather(cls: type, kwargs: dict[str, Any]) -> Any:
    """The group `cls` built from (and taken out of) the command's keyword arguments."""
    hints = _hints(cls)
    return cls(
        **{
            f.name: _gather(hints[f.name], kwargs)
            if _is_group(hints[f.name])
            else kwargs.pop(f.name)
            for f in dataclasses.fields(cls)
        }
    )


def command(name: str | None = None) -> Callable[[F], F]:
    """A command of the app, named `name` (default: the function's): guarded (one line on stderr
    and exit 2 on bad input, cli.startup) with its groups spread into options (`grouped`)."""

    def register(fn: F) -> F:
        return app.command(name)(guarded(grouped(fn)))

    return register


# ---- the groups of options.py's options ------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """The arguments MODEL HARDWARE (no defaults: a command takes the group first, as `tg`)."""

    model: opt.ModelArg
    hardware: opt.HardwareArg

    def load(self, cat: Catalog) -> tuple[ModelArch, Accelerator]:
        """The catalog's model and accelerator, looked up in that order."""
        return cat.model(self.model), cat.accelerator(self.hardware)


@dataclass(frozen=True)
class StaticBatch:
    """A static batch: the sequences launched together and their lengths (analyze, capacity,
    bytes, plot, offload, device)."""

    batch: opt.Batch = opt.BATCH
    prompt: opt.Prompt = opt.PROMPT
    output: opt.Output = opt.OUTPUT
    context: opt.Context = None

    def parse(self, model: ModelArch, strict: bool = False) -> tuple[int, int, int, int]:
        """(batch, prompt, output, context) checked: `batch`, then `workload`."""
        lens = opt.workload(self.prompt, self.output, self.context, strict, model)
        return (opt.batch(self.batch), *lens)


STATIC = StaticBatch()


@dataclass(frozen=True)
class Request:
    """One request's prompt and output tokens, and the tokens a sequence holds (speculate, tiers,
    check)."""

    prompt: opt.Prompt = opt.PROMPT
    output: opt.Output = opt.OUTPUT
    context: opt.Context = None

    def parse(self, model: ModelArch | None = None) -> tuple[int, int, int]:
        """(prompt, output, context) checked: `workload`."""
        return opt.workload(self.prompt, self.output, self.context, model=model)


REQUEST = Request()


@dataclass(frozen=True)
class Formats:
    """The number formats of weights and KV cache."""

    weights: opt.Weights = opt.WEIGHTS
    kv_dtype: opt.KvDtype = opt.KV_DTYPE


FORMATS = Formats()


@dataclass(frozen=True)
class Degrees:
    """Tensor, pipeline and expert parallel degrees."""

    tp: opt.Tp = 1
    pp: opt.Pp = 1
    ep: opt.Ep = 1


DEGREES = Degrees()


def scale_out_network(cat: Catalog, scale_out: str) -> Tier:
    """The --scale-out tier, checked to be a network."""
    net = cat.tier(scale_out)
    if net.kind != "network":
        raise InputError(f"--scale-out {scale_out} is a {net.kind} tier, not a network")
    return net


@dataclass(frozen=True)
class NodeOptions:
    """The nodes a replica spans, TP across them and the network between them (plan, bytes and
    the layout options)."""

    nodes: opt.Nodes = None
    cross_node_tp: opt.CrossNodeTp = False
    scale_out: opt.ScaleOut = opt.SCALE_OUT

    def __post_init__(self) -> None:
        if self.nodes is not None:  # before the planner reads it (as layout.validate checks it)
            check_degree("nodes", self.nodes)

    def network(self, cat: Catalog) -> Tier:
        """The --scale-out network (scale_out_network)."""
        return scale_out_network(cat, self.scale_out)


NODES = NodeOptions()


@dataclass(frozen=True)
class SimplePlacement:
    """MODEL HARDWARE on TP, PP and EP degrees, in the number formats (cliff, plot; no defaults:
    a command takes it first, as `pl`)."""

    tg: Target
    dg: Degrees = DEGREES
    fm: Formats = FORMATS

    def deployment(self, model: ModelArch, act_dtype: str = opt.ACT_DTYPE) -> Deployment:
        """The formats on the degrees (options.deployment)."""
        d, fm = self.dg, self.fm
        return opt.deployment(fm.weights, fm.kv_dtype, act_dtype, d.tp, d.pp, d.ep, model=model)


@dataclass(frozen=True)
class EngineOptions:
    """The serving engine whose rules set the KV budget, and the memory per GPU it plans in."""

    engine_name: opt.Engine = opt.ENGINE
    memory: opt.Memory = None


ENGINE_OPTIONS = EngineOptions()

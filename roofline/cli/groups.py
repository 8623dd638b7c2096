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
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def grouped(fn: F) -> F:
    """`fn` with each dataclass-typed parameter replaced by its fields (see the module)."""
    sig = inspect.signature(fn, eval_str=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for p in sig.parameters.values():
        cls = p.annotation
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            params.append(p)
            continue
        hints = typing.get_type_hints(cls, include_extras=True)
        names = [f.name for f in dataclasses.fields(cls)]
        groups[p.name] = (cls, names)
        params += [
            inspect.Parameter(f.name, p.kind, default=f.default, annotation=hints[f.name])
            for f in dataclasses.fields(cls)
        ]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, (cls, names) in groups.items():
            kwargs[name] = cls(**{n: kwargs.pop(n) for n in names})
        return fn(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return typing.cast(F, wrapper)

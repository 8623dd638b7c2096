"""A model entry's published repositories (models/*.yaml): `checkpoints`, the Hugging Face repos
the model is served from, each with the weight format it ships in (the instruct release in bf16,
pre-quantized fp8 releases), and `drafters`, published drafter weights by drafter kind. Each
names its `source`. Launch lines (roofline.engines.launch) name them."""

from __future__ import annotations

from typing import Any

from roofline.catalog.schema import SOURCED, check
from roofline.domain.errors import CatalogError, RooflineError
from roofline.domain.model import Checkpoint
from roofline.domain.precision import weight_format

_CHECKPOINT_KEYS: dict[str, tuple[Any, bool]] = {
    "repo": (str, True),
    "weights": (str, True),
    **SOURCED,
}
_DRAFTER_KEYS: dict[str, tuple[Any, bool]] = {
    "repo": (str, True),
    "drafter": (str, True),
    **SOURCED,
}
DRAFTER_KINDS = ("draft", "eagle", "eagle3", "mtp", "medusa", "ngram")  # levers.speculative


def _repo(where: str, repo: str) -> str:
    if repo.count("/") != 1 or any(c.isspace() for c in repo) or repo.startswith("/"):
        raise CatalogError(f"{where}: key 'repo' must be a Hugging Face owner/name, got {repo!r}")
    return repo


def checkpoints(where: str, items: list[Any]) -> tuple[Checkpoint, ...]:
    """An entry's `checkpoints` list, checked: one repo per weight format."""
    out: list[Checkpoint] = []
    for i, item in enumerate(items):
        w = f"{where}: checkpoints[{i}]"
        d = check(w, item, _CHECKPOINT_KEYS)
        try:
            fmt = weight_format(d["weights"]).name
        except RooflineError as exc:
            raise CatalogError(f"{w}: key 'weights': {exc}") from None
        if any(c.weights == fmt for c in out):
            raise CatalogError(f"{w}: a second checkpoint in {fmt}")
        out.append(Checkpoint(_repo(w, d["repo"]), weights=fmt, source=d["source"]))
    return tuple(out)


def drafter_heads(where: str, items: list[Any]) -> tuple[Checkpoint, ...]:
    """An entry's `drafters` list, checked: one repo per drafter kind."""
    out: list[Checkpoint] = []
    for i, item in enumerate(items):
        w = f"{where}: drafters[{i}]"
        d = check(w, item, _DRAFTER_KEYS)
        kind = d["drafter"]
        if kind not in DRAFTER_KINDS:
            raise CatalogError(f"{w}: key 'drafter' must be one of {', '.join(DRAFTER_KINDS)}")
        if any(c.drafter == kind for c in out):
            raise CatalogError(f"{w}: a second {kind} drafter")
        out.append(Checkpoint(_repo(w, d["repo"]), drafter=kind, source=d["source"]))
    return tuple(out)

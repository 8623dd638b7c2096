"""A launch line's speculative decoding: the drafter a sized replica runs, as each engine takes
it, built only from hardware/engine_flags.yaml (flags, options-file keys and --speculative-config
keys, each with its source; the drafter kinds' names under `values.speculative`).

- vLLM: --speculative-config '{"method": M, "model": DRAFT, "num_speculative_tokens": γ}'
  (SpeculativeConfig); it drafts a chain, so a tree of T tokens is left to SGLang (noted).
- SGLang: --speculative-algorithm A --speculative-draft-model-path DRAFT --speculative-num-steps γ
  --speculative-eagle-topk k --speculative-num-draft-tokens T (a chain: k = 1, T = γ + 1).
- TensorRT-LLM: speculative_config {decoding_type, max_draft_len γ, speculative_model DRAFT} in
  the --extra_llm_api_options file (MTP: num_nextn_predict_layers γ).
The drafter's weights: a separate draft model's served checkpoint, or the catalog's published
weights of that kind for the target (models/*.yaml `drafters`); MTP and n-gram need none. With
none published, DRAFTER_WEIGHTS stands in and the note says so."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DRAFTER_WEIGHTS = "DRAFTER_WEIGHTS"  # stands in for weights the catalog does not name
NO_WEIGHTS = ("mtp", "ngram")  # drafters that need no separate weights


@dataclass(frozen=True)
class DraftLaunch:
    """The drafter of a launch line: kind (levers.speculative.DRAFTERS), its weights' repo ("" for
    MTP and n-gram, DRAFTER_WEIGHTS when none is published), the chain length γ, the tokens
    verified per sequence (0: the chain, γ + 1) and a tree's candidates per node."""

    kind: str
    weights: str
    gamma: int
    tree_tokens: int = 0
    topk: int = 1

    @property
    def chain(self) -> bool:
        return not self.tree_tokens or self.tree_tokens == self.gamma + 1


def _means(items: list[dict[str, Any]], means: str, field: str) -> str:
    for f in items:
        if f["means"] == means:
            return str(f[field])
    raise KeyError(means)


def draft_args(t: dict[str, Any], engine: str, d: DraftLaunch) -> tuple[list[str], list[str]]:
    """(arguments, notes) for `d` on a vLLM or SGLang server (module docstring)."""
    name = (t.get("values") or {}).get("speculative", {}).get(d.kind)
    notes = []
    if d.weights == DRAFTER_WEIGHTS:
        notes.append(f"{DRAFTER_WEIGHTS}: no published {d.kind} weights for this checkpoint in"
                     " the catalog; give the drafter's repo")  # fmt: skip
    if name is None:
        return [], [f"{engine} has no {d.kind} drafter: launched without speculative decoding"]
    flags = t["flags"]
    if engine == "vllm":
        keys = t["speculative"]
        cfg: dict[str, Any] = {_means(keys, "speculative", "key"): name}
        if d.weights:
            cfg[_means(keys, "draft_model", "key")] = d.weights
        cfg[_means(keys, "gamma", "key")] = d.gamma
        if not d.chain:
            notes.append(f"vLLM drafts a chain of {d.gamma}: the tree of {d.tree_tokens} tokens"
                         " sized here is SGLang's")  # fmt: skip
        return [_means(flags, "speculative", "flag"), json.dumps(cfg)], notes
    args = [_means(flags, "speculative", "flag"), name]
    if d.weights:
        args += [_means(flags, "draft_model", "flag"), d.weights]
    tokens = d.gamma + 1 if d.chain else d.tree_tokens
    args += [_means(flags, "gamma", "flag"), str(d.gamma)]
    args += [_means(flags, "topk", "flag"), str(1 if d.chain else d.topk)]
    args += [_means(flags, "tree_tokens", "flag"), str(tokens)]
    return args, notes


def _option(t: dict[str, Any], means: str, suffix: str = "") -> str:
    """The speculative_config key of the TensorRT-LLM options file for `means`."""
    for o in t.get("options", []):
        key = o["key"]
        if o["means"] == means and key.startswith("speculative_config.") and key.endswith(suffix):
            return key.split(".", 1)[1]
    raise KeyError(means)


def draft_options(t: dict[str, Any], d: DraftLaunch) -> tuple[dict[str, Any], list[str]]:
    """(speculative_config of the --extra_llm_api_options file, notes) on TensorRT-LLM."""
    name = (t.get("values") or {}).get("speculative", {}).get(d.kind)
    cfg: dict[str, Any] = {_option(t, "speculative"): name}
    cfg[_option(t, "gamma", "max_draft_len")] = d.gamma
    if d.weights:
        cfg[_option(t, "draft_model")] = d.weights
    if d.kind == "mtp":
        cfg[_option(t, "gamma", "num_nextn_predict_layers")] = d.gamma
    notes = []
    if d.weights == DRAFTER_WEIGHTS:
        notes.append(f"{DRAFTER_WEIGHTS}: no published {d.kind} weights for this checkpoint in"
                     " the catalog; give the drafter's repo")  # fmt: skip
    if not d.chain:
        notes.append(f"a chain of {d.gamma} here: the tree of {d.tree_tokens} tokens is SGLang's")
    return cfg, notes

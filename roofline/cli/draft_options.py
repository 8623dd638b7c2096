"""The drafter options of speculative decoding, declared once for `speculate`, `serve` and
`size`, and their parsers."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Annotated

import typer

from roofline.cli import options as opt
from roofline.domain.errors import InputError

Drafter = Annotated[
    str | None,
    typer.Option(
        help="auto | draft (a separate model) | eagle | eagle3 | mtp | medusa | ngram "
        "(auto: mtp if the model has MTP layers, draft with --draft, else eagle; speculate's"
        " default; serve and size decode without a drafter unless given one)"
    ),
]
Draft = Annotated[str | None, typer.Option(help="draft model id (runs on the same GPUs)")]
Gamma = Annotated[str, typer.Option(help="draft tokens per round: 4 | 1,2,4 | 1..8:1")]
Acceptance = Annotated[
    str | None,
    typer.Option(
        help="acceptance α per draft token, or one per position: 0.9,0.8,0.7 (default: 0.7)"
    ),
]
Decay = Annotated[float, typer.Option(help="geometric decay of α by position: p_i = α·decay^(i−1)")]
Tau = Annotated[
    float | None,
    typer.Option(help="measured mean accepted tokens per round (bonus included) at max γ"),
]
TauGamma = Annotated[
    int | None,
    typer.Option(help="the chain length --tau was measured at (default: the largest γ)"),
]
TreeTokens = Annotated[
    str,
    typer.Option(
        help="tokens verified per sequence: auto (per batch, the chain or tree of up to 64 "
        "with the lowest TPOT) | chain (γ + 1) | N (a tree of N, root included)"
    ),
]
Topk = Annotated[int, typer.Option(help="tree: candidates per node (SGLang eagle-topk)")]
DraftVocab = Annotated[
    int | None, typer.Option(help="draft head's vocabulary (EAGLE-3 default 32000)")
]
DraftWeights = Annotated[str | None, typer.Option(help="draft weight format (default: --weights)")]
GAMMA = "1..8:1"
ACCEPTANCE = "0.7"


@dataclass(frozen=True)
class DraftOptions:
    """The drafter options, one group (cli.groups) in speculate, serve and size."""

    drafter: Drafter = None
    draft: Draft = None
    gamma: Gamma = GAMMA
    acceptance: Acceptance = None  # None: ACCEPTANCE, told apart from the same value given
    decay: Decay = 1.0
    tau: Tau = None
    tau_gamma: TauGamma = None
    tree_tokens: TreeTokens = "auto"
    topk: Topk = 8
    draft_vocab: DraftVocab = None
    draft_weights: DraftWeights = None


DRAFT = DraftOptions()


def acceptance_rates(text: str) -> float | list[float]:
    """One α, or per-position rates p_1,p_2,... (each in [0, 1])."""
    items = opt.comma_items(text, "--acceptance")  # an empty item said as such
    try:
        values = [float(v) for v in items]
    except ValueError:
        raise InputError(
            f"--acceptance {text!r}: give one rate (0.7) or one per position"
        ) from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise InputError(f"--acceptance must be in [0, 1] (one rate or a list), got {text}")
    return values[0] if len(values) == 1 else values


def tree_option(text: str, gamma_max: int) -> int | str:
    """--tree-tokens: auto, chain, or a tree of N tokens (γ + 1 .. 4096)."""
    word = text.strip().lower()
    if word in ("auto", "chain"):
        return word
    try:
        n = int(word)
    except ValueError:
        raise InputError(f"--tree-tokens is auto, chain or a number, got {text!r}") from None
    if not gamma_max + 1 <= n <= 4096:
        raise InputError(f"--tree-tokens must be from γ + 1 = {gamma_max + 1} to 4096")
    return n


def _kind(drafter: str, draft: str | None, m) -> str:
    """--drafter checked; auto: draft with --draft, else MTP where the model has it, else EAGLE."""
    from roofline.levers.speculative import DRAFTERS

    kind = drafter.lower()
    if kind == "auto":
        kind = "draft" if draft else ("mtp" if m.num_nextn_predict_layers else "eagle")
    if kind not in DRAFTERS:
        raise InputError(
            f"unknown --drafter '{drafter}'", hint=f"choose auto or {', '.join(DRAFTERS)}"
        )
    if kind == "mtp" and not m.num_nextn_predict_layers:
        raise InputError(
            f"--drafter mtp: {m.id} has no multi-token-prediction layers "
            "(num_nextn_predict_layers 0)",
            hint="choose eagle, eagle3, medusa, ngram or draft with --draft",
        )
    if draft is not None and not draft.strip():
        raise InputError("--draft: give a draft model id, e.g. llama-3.2-1b")
    if draft is not None and kind != "draft":
        raise InputError(
            f"give --draft or --drafter {kind}, not both: --draft {draft} is a draft model "
            f"(--drafter draft), which --drafter {kind} would not run"
        )
    return kind


def drafter_kind(o: DraftOptions, m) -> str:
    """`speculate`'s --drafter (`_kind`), checked with --draft and --decay."""
    draft, decay = o.draft, o.decay
    kind = _kind(o.drafter or "auto", draft, m)
    if kind == "draft" and draft is None:
        raise InputError("--drafter draft needs --draft MODEL")
    if not 0.0 < decay <= 1.0:
        raise InputError(f"--decay must be in (0, 1], got {decay}")
    return kind


def round_options(o: DraftOptions) -> tuple[list[int], int | str, float | list[float]]:
    """(γ list, tree: auto | chain | T, acceptance per position or one rate) from the round
    options, checked; --tau turns into α (acceptance.alpha_from_tau)."""
    from roofline.levers.acceptance import alpha_from_tau

    gamma, tree_tokens, topk, draft_vocab = o.gamma, o.tree_tokens, o.topk, o.draft_vocab
    tau, tau_gamma, decay = o.tau, o.tau_gamma, o.decay
    gammas = opt.int_list(gamma, "--gamma")
    if min(gammas) < 1 or max(gammas) > 64:
        raise InputError(f"--gamma values must be from 1 to 64, got {gamma}")
    tree = tree_option(tree_tokens, max(gammas))
    if not 1 <= topk <= 64:
        raise InputError(f"--topk must be from 1 to 64, got {topk}")
    if draft_vocab is not None and not 1 <= draft_vocab <= 10**7:
        raise InputError(f"--draft-vocab must be from 1 to 1e7, got {draft_vocab}")
    acc = acceptance_rates(ACCEPTANCE if o.acceptance is None else o.acceptance)
    if tau is not None:
        if isinstance(acc, list):
            raise InputError("give --tau or a per-position --acceptance list, not both")
        # --tau turns into α: an --acceptance given too would be dropped, even one equal to
        # the default (None is "not given": a spec's drafter passes it so, specs._drafting)
        if o.acceptance is not None:
            raise InputError(
                f"give --tau or --acceptance, not both: --tau {tau:g} sets α, which "
                f"--acceptance {o.acceptance} would also set"
            )
        if tau_gamma is not None and not 1 <= tau_gamma <= 64:
            raise InputError(f"--tau-gamma must be from 1 to 64, got {tau_gamma}")
        acc = alpha_from_tau(tau, tau_gamma or max(gammas), decay)
    return gammas, tree, acc


def draft_config(cat, m, dep, o: DraftOptions):
    """The drafter options of serve and size as a core DraftConfig (serving.sim.drafting), checked
    as `speculate` checks them; None without --drafter (plain decoding)."""
    from roofline.domain.precision import weight_format
    from roofline.levers.speculative import same_vocabulary
    from roofline.serving.sim.drafting import DraftConfig

    drafter, draft, decay = o.drafter, o.draft, o.decay
    if drafter is None:
        dflt = DraftOptions()
        given = [
            f"--{f.name.replace('_', '-')}"
            for f in fields(o)
            if f.name != "drafter" and getattr(o, f.name) != getattr(dflt, f.name)
        ]
        if given:  # a drafter's setting without a drafter would be dropped silently
            verb = "needs" if len(given) == 1 else "need"
            raise InputError(f"{', '.join(given)} {verb} --drafter (speculative decoding)")
        return None
    kind = _kind(drafter, draft, m)
    if kind == "draft" and not (draft and draft.strip()):
        raise InputError("--drafter draft needs --draft MODEL")
    if not 0.0 < decay <= 1.0:
        raise InputError(f"--decay must be in (0, 1], got {decay}")
    d_m = cat.model(draft) if kind == "draft" and draft else None
    if d_m is not None:
        same_vocabulary(m, d_m)  # refused here, before size tries any candidate
    d_weights = opt.resolve_weights(o.draft_weights or dep.weights.name, d_m or m)
    d_dep = replace(dep, weights=weight_format(d_weights)).with_layout(ep=1, pp=1) if d_m else None
    gammas, tree, acc = round_options(o)
    acc_v = float(acc) if not isinstance(acc, list) else tuple(acc)
    t = None if tree == "auto" else (0 if tree == "chain" else int(tree))
    return DraftConfig(kind, d_m, d_dep, tuple(gammas), t, acc_v, decay, o.draft_vocab, o.topk)


def draft_json(cfg, rep) -> dict:
    """The speculative configuration a replica runs, for the inputs of serve and size."""
    r = rep.drafting
    return {
        "drafter": cfg.drafter,
        "draft": cfg.draft.id if cfg.draft else None,
        "gamma": r.gamma,
        "tree_tokens": r.tree_tokens,
        "acceptance": cfg.acceptance,
        "tokens_per_round": r.tokens_per_round,
        "batch1_speedup": r.batch1_speedup,
        "round": "chosen as speculate chooses it for one sequence (lowest TPOT at batch 1),"
        " then run at every batch",
    }

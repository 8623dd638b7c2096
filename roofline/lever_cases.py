"""Published measurements of the levers (validation/levers_cases.yaml): speculative-decoding
speed-ups and decode rates with weights offloaded to host RAM, as `roofline validate` cases.

- speculative (metric `speedup`): the case's drafter, γ and τ (or α) at its batch, context
  prompt + output / 2 (the mean decode position). Ideal is the round's expected tokens E(γ), an
  upper bound: the verify pass never costs less than a plain step, so no speed-up exceeds E.
  Expected is roofline.speculative's calibrated speed-up.
- offload (metric decode_tokens_per_s_per_user): the case's -ngl and host. Ideal is the
  overlapped bound at η = 1 (nothing is faster); expected is the serial bound with calibrated
  efficiencies (a single sequence cannot overlap GPU and CPU layers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofline.errors import InputError
from roofline.hardware import Accelerator, Efficiency
from roofline.model import ModelArch
from roofline.offload import offload
from roofline.ops import Deployment
from roofline.speculative import alpha_from_tau, speculate

if TYPE_CHECKING:
    from roofline.validate import Case


def evaluate_lever(
    case: Case,
    model: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    eff: Efficiency,
    host: Accelerator | None,
) -> tuple[str, int, float, float]:
    """(regime, batch, ideal, expected) of a lever case's metric."""
    where = f"case '{case.id}'"
    if case.batch is None:
        raise InputError(f"{where}: lever cases need a batch")
    b = case.batch
    ctx = case.prompt + max(case.output // 2, 1)
    if case.speculative is not None:
        if case.metric != "speedup":
            raise InputError(f"{where}: a speculative case measures 'speedup'")
        sp = case.speculative
        gamma, decay = sp["gamma"], float(sp.get("decay", 1.0))
        acc = alpha_from_tau(sp["tau"], gamma, decay) if "tau" in sp else float(sp["acceptance"])
        kw = {"drafter": sp["drafter"], "decay": decay, "tree_tokens": sp.get("tree_tokens")}
        s = speculate(
            model,
            None,
            hw,
            dep,
            None,
            b,
            ctx,
            gamma,
            acc,
            eff,
            draft_vocab=sp.get("draft_vocab"),
            **kw,
        )
        return "speculative", b, float(s.tokens_per_round), float(s.speedup_expected)
    if case.metric != "decode_tokens_per_s_per_user" or host is None:
        raise InputError(f"{where}: an offload case measures decode_tokens_per_s_per_user")
    o = case.offload or {}
    kw = {"mode": o.get("mode", "cpu"), "block": o.get("block_batches", 1)}
    ideal = offload(model, hw, host, dep, o["gpu_layers"], b, ctx, ideal=True, **kw)
    expected = offload(model, hw, host, dep, o["gpu_layers"], b, ctx, **kw)
    return "decode", b, float(1.0 / ideal.tpot_overlap_s), float(1.0 / expected.tpot_serial_s)

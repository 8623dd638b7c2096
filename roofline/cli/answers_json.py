"""The JSON of `size`'s answer per accelerator asked for (its cheapest deployment, or why none) and
of the layouts with no fleet (not searched, ruled out)."""

from __future__ import annotations

from typing import Any

from roofline.cli.convert import finite
from roofline.serving.size import ChipAnswer, Sized


def unsized_json(rows: list[Sized]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The layouts with no fleet, apart from the deployments: (not searched: pruned against
    their chip's best, with the fewest GPUs their rate bound allows; ruled out: searched, or
    none to search, with the bound that ruled them out)."""
    pruned, ruled = [], []
    for d in rows:
        if d.gpus:
            continue
        row = {
            "hardware": d.hardware,
            "layout": d.layout or None,
            "tp": d.tp,
            "pp": d.pp,
            "ep": d.ep,
            "attention_dp": d.attention_dp,
            "reason": d.note,
        }
        if d.searched:
            ruled.append({**row, "max_rate_per_replica": d.max_rate_per_replica})
        else:
            pruned.append({**row, "gpus_at_rate_bound": d.bound_gpus})
    return pruned, ruled


def per_hardware_json(answers: list[ChipAnswer]) -> list[dict[str, Any]]:
    """Every accelerator asked for: its cheapest deployment meeting the SLOs, or why none."""
    out = []
    for a in answers:
        b = a.best
        if b is None:  # the same keys, null: no deployment of it meets the SLOs
            keys = ("layout", "tp", "pp", "ep", "replicas", "prefill_replicas",
                    "decode_replicas", "gpus", "cost_per_hour", "cost_per_million_output_tokens",
                    "ttft_p99_s", "tpot_p99_s", "gpus_expected", "constraint")  # fmt: skip
            none = dict.fromkeys(keys)
            out.append({"hardware": a.hardware, "meets_slo": False, **none, "reason": a.reason})
            continue
        e = b.expected
        out.append(
            {
                "hardware": a.hardware,
                "meets_slo": True,
                "layout": b.layout,
                "tp": b.tp,
                "pp": b.pp,
                "ep": b.ep,
                "replicas": b.replicas,
                "prefill_replicas": b.prefill_replicas,
                "decode_replicas": b.decode_replicas,
                "gpus": b.gpus,
                "cost_per_hour": b.cost_per_hour,
                "cost_per_million_output_tokens": b.cost_per_million_output_tokens,
                "ttft_p99_s": finite(e.ttft_s.p99) if e is not None else None,
                "tpot_p99_s": finite(e.tpot_s.p99) if e is not None else None,
                # sized to a confidence: the same layout's GPUs at the expected figures
                "gpus_expected": b.gpus_expected or b.gpus,
                "constraint": b.constraint or None,  # what set the replica count (Sized)
                "reason": None,
            }
        )
    return out

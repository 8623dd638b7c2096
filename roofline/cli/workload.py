"""`--workload FILE` (a workload file's classes, roofline.serving.workloadfile) in serve and
size: the workload, its classes' JSON, and size's replicas (roofline.serving.mixsize)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from roofline.domain.errors import InputError


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def classes_json(per_class) -> list[dict[str, Any]]:
    """Each class's figures (serving.classes.ClassMetrics); unbounded percentiles null."""

    def pcts(p) -> dict[str, float | None]:
        return {k: _finite(getattr(p, k)) for k in ("p50", "p90", "p99", "mean")}

    return [
        {
            "name": c.name,
            "priority": c.priority,
            "arrivals_per_s": c.arrivals_per_s,
            "requests": c.requests,
            "ttft_s": pcts(c.ttft_s),
            "tpot_s": pcts(c.tpot_s),
            "e2e_s": pcts(c.e2e_s),
            "queue_s": pcts(c.queue_s),
            "slo": {"ttft_s": c.slo.ttft_s, "tpot_s": c.slo.tpot_s, "pct": c.slo.pct},
            "slo_attainment": c.slo_attainment,
            "meets_slo": c.meets_slo,
            "output_tokens_per_s": c.output_tokens_per_s,
            "ttft_p99_by_turn_s": [_finite(x) for x in c.ttft_p99_by_turn_s],
        }
        for c in per_class
    ]


def workload_inputs(spec, w, rules=None) -> dict[str, Any]:
    """The file's classes as given, for a result's inputs; with the replica's `rules`, the KV
    one arrival of a class with n samples holds, shared and not (serving.classes.kv_sharing)."""
    from roofline.serving.classes import kv_sharing

    def sharing(c, k: int) -> dict[str, Any] | None:
        if rules is None or c.n == 1:
            return None
        sel = w.klass == k
        p, o = round(w.prompts[sel].mean()), round(w.outputs[sel].mean())
        s = kv_sharing(p, o, c.n, rules.block_tokens, rules.budget_blocks)
        return {
            "n": s.n,
            "independent_tokens": s.independent_tokens,
            "shared_tokens": s.shared_tokens,
            "saved_share": s.saved_share,
            "cliff_batch_sequences": s.arrivals_that_fit * s.n,
            "cliff_batch_sequences_independent": s.arrivals_that_fit_independent * s.n,
        }

    return {
        "file": spec.where,
        "arrivals_per_s": w.mix_rate,
        "sequences_per_s": w.rate,
        "classes": [
            {
                "name": c.name,
                "arrivals_per_s": r,
                "prompt": c.prompt,
                "output": c.output,
                "thinking_budget": c.thinking_budget or None,
                "thinking_share": c.thinking_share if c.thinking_budget else None,
                "n": c.n,
                "share_prompt": c.share_prompt,
                "system_prompt": c.system_prompt or None,
                "turns": c.turns,
                "tool_wait": c.tool_wait.text() if c.turns > 1 else None,
                "priority": c.priority,
                "slo_ttft_s": c.slo_ttft_s,
                "slo_tpot_s": c.slo_tpot_s,
                "kv_sharing": sharing(c, k),
            }
            for k, (c, r) in enumerate(zip(spec.classes, spec.class_rates(w.mix_rate), strict=True))
        ],
    }


def load(path: Path, requests: int | None, seed: int, rate: float | None):
    """(spec, workload) of a workload file at `rate` arrivals/s (None: the file's)."""
    from roofline.serving.mix import mix_workload
    from roofline.serving.workloadfile import read_workload

    spec = read_workload(path)
    return spec, mix_workload(spec, requests or 1000, seed, rate)


def refuse_shapes(px, lens, concurrency, arrivals) -> None:
    """The single-shape options a workload file replaces."""
    if px.config() is not None:
        raise InputError(
            "--workload: the file holds prefixes and turns; drop --shared-prefix/--turns"
        )
    if lens.prompt_dist or lens.output_dist:
        raise InputError("--workload: the file holds the lengths; drop --prompt-dist/--output-dist")
    if concurrency is not None or arrivals is not None:
        raise InputError("--workload: classes arrive at their rates; drop --concurrency/--arrivals")

"""`--workload FILE` (a workload file's classes, roofline.serving.workloadfile) in serve and
size: the workload, its classes' JSON, and size's replicas (roofline.serving.mixsize) and, with
--traffic-curve, each deployment's day (cli.day.mix_day)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.cli.convert import finite
from roofline.domain.errors import InputError


def classes_json(per_class) -> list[dict[str, Any]]:
    """Each class's figures (serving.classes.ClassMetrics); unbounded percentiles null."""

    def pcts(p) -> dict[str, float | None]:
        return {k: finite(getattr(p, k)) for k in ("p50", "p90", "p99", "mean")}

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
            "ttft_p99_by_turn_s": [finite(x) for x in c.ttft_p99_by_turn_s],
        }
        for c in per_class
    ]


def workload_inputs(mix, w, rules=None) -> dict[str, Any]:
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
        "file": mix.where,
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
            for k, (c, r) in enumerate(zip(mix.classes, mix.class_rates(w.mix_rate), strict=True))
        ],
    }


def load(path: Path, requests: int | None, seed: int, rate: float | None):
    """(mix, workload) of a workload file at `rate` arrivals/s (None: the file's)."""
    from roofline.serving.mix import mix_workload
    from roofline.serving.workloadfile import read_workload

    mix = read_workload(path)
    return mix, mix_workload(mix, requests or 1000, seed, rate)


def serve_base(path, px, lens, concurrency, arrivals, requests, seed, rate_list):
    """serve --workload: (mix, workload at the first rate, the rates: the file's if none)."""
    refuse_shapes(px, lens, concurrency, arrivals)
    mix, base = load(path, requests, seed, rate_list[0])
    return mix, base, [base.mix_rate] if rate_list == [None] else rate_list


def serve_table(doc: dict[str, Any], mix, base, rep):
    """serve's table for a workload file, its classes added to the inputs."""
    from roofline import render

    doc["inputs"]["workload"] = workload_inputs(mix, base, rep.rules)
    return render.workload_serve_table


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


def size_doc(
    m, hws, weights, kv_dtype, eng, path, rate, requests, seed, slo, prices, router, kv=None,
    day=None, edges=None,
):  # fmt: skip
    """size --workload: for each accelerator the layout (TP 1, 2, 4, 8 within a node; EP = TP for
    a mixture of experts) needing the fewest GPUs for the classes together, and the same
    layout sized for each class apart (serving.mixsize). `kv(rep, hw)`: the replica with its
    KV tiers and retention (cli.kvtier_options); `day(hw, rep, w, usd)`: its day under a
    traffic curve (cli.day.mix_day), each row's `day`; `edges`: hardware id -> --confidence's
    band edges (serving.confidence), the pool sized at them (mixsize.replicas_at_edges)."""
    from roofline.cli import options as opt
    from roofline.serving.mixsize import replicas_at_edges, replicas_needed, size_apart
    from roofline.serving.serve import make_replica

    mix, w = load(path, requests or 1000, seed, rate)
    no_slo = slo.ttft_s is None and slo.tpot_s is None
    if no_slo and all(c.slo_ttft_s is None and c.slo_tpot_s is None for c in mix.classes):
        raise InputError(
            f"size --workload sizes a pool to its classes' SLOs and {path} gives none: add"
            " slo_ttft or slo_tpot to a class, or give --slo-ttft/--slo-tpot"
        )
    max_len = w.max_len
    rows: list[dict[str, Any]] = []
    for hw in hws:
        best = None
        for tp in (1, 2, 4, 8):
            if best is not None and tp >= best[0].gpus:
                break  # one replica of this layout already needs as many GPUs
            dep = opt.deployment(weights, kv_dtype, opt.ACT_DTYPE, tp, 1, tp if m.is_moe else 1,
                                 model=m)  # fmt: skip
            try:
                rep = make_replica(m, hw, dep, eng, max_len)
                rep = rep if kv is None else kv(rep, hw, w)
                sized = replicas_needed(rep, w, slo, router)
            except InputError:
                continue
            if best is None or sized.gpus < best[0].gpus:
                best = (sized, rep, tp)
        if best is None:
            continue
        sized, rep, tp = best
        n_exp, at = sized.replicas, (edges or {}).get(hw.id)
        if at is not None and not at.neutral:
            sized = replicas_at_edges(rep, w, slo, at, seed, router, sized)
        apart = size_apart(rep, w, slo, seed, router, at)
        entry = prices.get(hw.id)
        price = entry.usd_per_gpu_hour if entry is not None else None
        e = sized.result.expected
        rows.append(
            {
                "hardware": hw.id,
                "tp": tp,
                "ep": tp if m.is_moe else 1,
                "replicas": sized.replicas,
                "gpus": sized.gpus,
                "cost_per_hour": price * sized.gpus if price else None,
                "output_tokens_per_s": e.output_tokens_per_s,
                "cost_per_million_output_tokens": (
                    price * sized.gpus / (e.output_tokens_per_s * 3600) * 1e6
                    if price and e.output_tokens_per_s
                    else None
                ),
                "classes": classes_json(e.per_class),
                "apart": [
                    {"class": c.name, "replicas": a.replicas, "gpus": a.gpus}
                    for c, a in zip(mix.classes, apart, strict=True)
                ],
                "apart_gpus": sum(a.gpus for a in apart),
                "confidence": at.level if at is not None else "expected",
                "replicas_expected": n_exp,
                "gpus_expected": n_exp * rep.gpus,
            }
        )
        if day is not None:
            rows[-1]["day"] = day(hw, rep, w, price)
    if not rows:
        raise InputError("no accelerator in --hardware holds the model and one request")
    rows.sort(key=lambda r: (r["gpus"], r["cost_per_hour"] or 0.0))
    return {
        "command": "size",
        "inputs": {"model": m.id, "workload": workload_inputs(mix, w), "slo_pct": slo.pct},
        "deployments": rows,
    }

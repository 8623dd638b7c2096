"""The JSON documents of `kv`, `capacity` and `bytes` (roofline/cli/memory.py)."""

from dataclasses import asdict
from typing import Any

from roofline import render
from roofline.cli import convert
from roofline.cli import layout_options as lopt
from roofline.step.phases import PhaseResult


def kv_compare_doc(m, fmt_kv, ref, ref_bytes, variants) -> dict:
    """`kv --compare`: the model's attention next to MHA, GQA, MQA and MLA (and a baseline)."""
    rows = [
        {
            "variant": r.variant,
            "description": r.description,
            "kv_bytes_per_token": r.kv_bytes_per_token,
            "ratio_to_mha": r.ratio_to_mha,
            "reduction_vs_mha": 1 - r.ratio_to_mha,
            **(
                {
                    "ratio_to_baseline": r.ratio_to_baseline,
                    "reduction_vs_baseline": 1 - r.ratio_to_baseline,
                }
                if r.ratio_to_baseline is not None
                else {}
            ),
        }
        for r in variants
    ]
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "kv_bits": fmt_kv.bits,
        "baseline": ref.id if ref else None,
        "baseline_kv_bytes_per_token": ref_bytes,
        "baseline_kv_bits": 16.0 if ref else None,
    }
    return render.document("kv --compare", inputs, variants=rows)


def kv_allocation_doc(m, fmt_kv, allocation, block, limit, desc, reports) -> dict:
    """`kv --allocation`: allocated vs used KV bytes for the chosen scheme, both compared."""
    chosen = reports[allocation]
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "allocation": allocation,
        "block_tokens": block,
        "max_len_tokens": limit,
        "lengths": desc,
    }
    return render.document(
        "kv --allocation",
        inputs,
        sequences=chosen.sequences,
        mean_length_tokens=chosen.mean_length,
        **convert.named(chosen, "used_bytes", "allocated_bytes", "waste_fraction"),
        compare={
            a: {"allocated_bytes": r.allocated_bytes, "waste_fraction": r.waste_fraction}
            for a, r in reports.items()
        },
    )


def eviction_json(gain, hw) -> dict:
    """What a KV token budget saves (kvcache.eviction_gain)."""
    eviction = {
        "kv_budget_tokens": gain.kv_budget_tokens,
        "kv_bytes_per_sequence_without_eviction": gain.kv_bytes_per_sequence_without_eviction,
        "kv_bytes_saved_per_sequence": gain.kv_bytes_per_sequence_without_eviction
        - gain.kv_bytes_per_sequence_with_eviction,
        "saved_fraction": gain.saved_fraction,
        "decode_kv_read_saved_bytes_per_step": gain.decode_kv_read_saved_bytes_per_step,
        "max_batch_without_eviction": gain.max_batch_without_eviction,
        "max_batch_with_eviction": gain.max_batch_with_eviction,
        "accuracy_modelled": False,
        "note": "accuracy effects of eviction are not modelled",
    }
    if hw is not None:
        eviction["hardware"] = hw.id
    return eviction


def kv_doc(m, fmt_kv, ctx, b, tp, budget, kv, eviction) -> dict:
    """`kv`: bytes per token, sequence and batch, per layer group, and eviction's saving."""
    inputs = {
        "model": m.id,
        "kv_dtype": fmt_kv.name,
        "kv_bits": fmt_kv.bits,
        "context_tokens": ctx,
        "batch": b,
        "tp": tp,
        "kv_budget_tokens": budget,
    }
    return render.document(
        "kv",
        inputs,
        attention=m.attention_kind,
        **convert.named(
            kv,
            "kv_bytes_per_token_per_layer",
            "kv_bytes_per_token",
            "kv_bytes_per_sequence",
            "kv_bytes_total",
        ),
        layer_groups=[asdict(g) for g in kv.layer_groups],
        eviction=eviction,
    )


def capacity_doc(m, hw, lay, dep, eng, plan, *, b, ctx, mb, reason, grid, by_ctx) -> dict:
    """`capacity`: memory per GPU, the largest batch at --context and at a grid of contexts."""
    inputs = {
        **lopt.layout_inputs(m, hw, lay, dep),
        **convert.formats_json(dep),
        "batch": b,
        "context_tokens": ctx,
        "engine": eng.name,
        "engine_rule": eng.source,
        "memory_fraction": eng.memory_fraction,
        "block_tokens": eng.block_tokens,
    }
    return render.document(
        "capacity",
        inputs,
        max_batch=mb,
        max_concurrency=mb * lay.dp,
        batch_fits=b <= mb,
        kv_budget_bytes=plan.kv_budget_bytes,
        weights_bytes_per_gpu=plan.weights_bytes,
        reason=reason,
        memory=convert.memory_plan_json(plan, m, dep),
        max_batch_by_context=[
            {"context_tokens": c, "max_batch": int(v)} for c, v in zip(grid, by_ctx, strict=True)
        ],
    )


def levers_json(rows, limit: int, kv_budget_tokens: int) -> dict:
    """`bytes --levers`: each lever's bytes, step time and max batch, and its ratio to none."""
    base = rows[0]
    return {
        "max_len_tokens": limit,
        "kv_budget_tokens": kv_budget_tokens,
        "note": "accuracy effects of KV eviction and quantisation are not modelled",
        "rows": [
            {
                "lever": r.lever.name,
                **convert.named(
                    r,
                    "bits_per_weight",
                    "weight_bytes_per_gpu",
                    "kv_bytes_per_token",
                    "kv_bytes_per_sequence",
                    "t_step_ideal_s",
                    "t_step_expected_s",
                    "max_batch",
                ),
                "weight_ratio": r.weight_bytes_per_gpu / base.weight_bytes_per_gpu,
                "kv_ratio": r.kv_bytes_per_sequence / base.kv_bytes_per_sequence,
                "step_ratio": r.t_step_ideal_s / base.t_step_ideal_s,
                "max_batch_ratio": r.max_batch / base.max_batch if base.max_batch else None,
            }
            for r in rows
        ],
    }


def bytes_doc(m, hw, lay, dep, t, *, b, s, o, ctx, budget, levers) -> dict:
    """`bytes`: where the bytes go per prefill and decode step (flows.byte_traffic)."""

    def phase(r: PhaseResult) -> dict[str, Any]:
        return {
            **{k: v for k, v in convert.phase_json(r).items() if k != "ops"},
            **t.shares(r),
        }

    inputs = {
        **convert.deployment_inputs(m, hw, dep),
        **lopt.layout_json(lay, dep),
        "weights": dep.weights.name,
        "weight_bits": dep.linear_bits,
        "kv_dtype": dep.kv.name,
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "context_tokens": ctx,
        "kv_budget_tokens": budget,
        "efficiency": convert.efficiency_json(hw.efficiency),
    }
    result: dict[str, Any] = {
        "prefill": phase(t.prefill),
        "decode": phase(t.decode),
        "activation": {
            "prefill_traffic_bytes": float(t.prefill.activation_bytes),
            "prefill_peak_bytes": t.prefill_activation_peak_bytes,
            "decode_traffic_bytes": float(t.decode.activation_bytes),
        },
        "split": {
            "batches": list(t.split_batches),
            "contexts": list(t.split_contexts),
            "kv_over_weight": t.kv_over_weight,
        },
        "crossover": {
            "context_at_batch": t.crossover_context_at_batch,
            "batch_at_context": t.crossover_batch_at_context,
        },
        "levers": levers,
    }
    return render.document("bytes", inputs, **result)

"""Core objects as JSON-ready dicts (SI units in the keys), shared by the commands' documents."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from roofline.domain.hardware import MEMORY_BASES, Accelerator, Efficiency, Tier
from roofline.domain.model import ModelArch
from roofline.step.memory import kv_bytes_per_token
from roofline.step.phases import PhaseResult
from roofline.timing.host import Calibration


def link_json(link: Tier | None) -> dict[str, Any] | None:
    if link is None:
        return None
    return named(link, "name", "bandwidth_bytes_per_s", "latency_s")


def hardware_json(hw: Accelerator) -> dict[str, Any]:
    return {
        **named(hw, "id", "name", "vendor", "family"),
        "aliases": list(hw.aliases),
        **named(
            hw,
            "memory_type",
            "memory_capacity_bytes",
            "memory_nominal_bytes",
            "usable_memory_bytes",
        ),
        "memory_capacity_gib": (hw.memory_nominal_bytes or hw.memory_capacity_bytes) / 2**30,
        "memory_basis": hw.memory_basis,
        "memory_basis_text": MEMORY_BASES[hw.memory_basis],
        "memory_bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
        "peak_flops_per_s": dict(hw.peak_flops_per_s),
        "ridge_flops_per_byte": {k: hw.ridge_flops_per_byte(k) for k in hw.peak_flops_per_s},
        "sparsity_2_4": hw.sparsity_2_4,
        "gpu_memory_fraction": hw.gpu_memory_fraction,
        "scale_up": link_json(hw.scale_up),
        "host_link": link_json(hw.host_link),
        "efficiency": efficiency_json(hw.efficiency),
        "source": hw.source,
        "notes": hw.notes,
    }


def efficiency_json(eff: Efficiency) -> dict[str, Any]:
    return {
        "compute": eff.compute,
        "memory": eff.memory,
        "memory_weight_only": eff.memory_dequant,
        "step_overhead_s": eff.step_overhead_s,
        # per-step host costs come from the engine profile (hardware/engines.yaml), on top
        "engine_cpu_step_s": {name: p.cpu_step_s for name, p in (eff.engines or {}).items()},
        "source": eff.source,
    }


def bands_json(
    family: str, applies: dict[str, list[str]], engine: str | None = None
) -> dict[str, Any]:
    """The error bands (roofline/catalog/bands.py) of the figures a document carries under an engine
    profile: band name -> rel (±, relative), low/high (the measured figure's 90% interval as
    factors of the expected one), n, family (null: pooled), engine (null: all engines), basis
    and the keys it applies to."""
    from roofline.catalog.bands import band

    out = {}
    for name, keys in applies.items():
        b = band(name, family, engine)
        if b is not None:
            out[name] = {
                "rel": b.rel,
                "low": b.low,
                "high": b.high,
                "n": b.n,
                "family": b.family,
                "engine": b.engine,
                "basis": b.basis,
                "applies_to": keys,
                "fit": {"n": b.n, "sources": b.sources, "thin": b.thin},
            }
    return out


def calibration_json(c: Calibration) -> dict[str, Any]:
    """Where an expected figure's efficiencies come from and its out-of-sample error band."""
    return {
        "family": c.family,
        "engine": c.engine,
        "kernel_curves": c.kernels or None,
        "kernel_curves_borrowed": c.kernels_borrowed,
        "cases": c.cases,
        "borrowed": c.borrowed,
        "error_band": c.error_band,
        "error_band_kind": "out-of-sample median |error| of the family (docs/ACCURACY.md)",
    }


def model_json(m: ModelArch) -> dict[str, Any]:
    p = m.param_breakdown()
    return {
        "id": m.id,
        "name": m.name,
        "aliases": list(m.aliases),
        "attention": m.attention_kind,
        "moe": m.is_moe,
        "params_total": p["total"],
        "params_active": p["active"],
        "params_mtp": p["mtp"],
        "checkpoint_weights": m.native_weights,  # the released checkpoint's format (auto)
        "checkpoint_dense_weights": m.native_dense_weights,  # its non-expert layers' if other
        "params_breakdown": {k: v for k, v in p.items() if k not in ("total", "active", "mtp")},
        "kv_bytes_per_token_bf16": kv_bytes_per_token(m, 16.0),
        "max_position_embeddings": m.max_position_embeddings,
        "layer_groups": [
            {"count": g.count, "window": g.window, "moe": g.moe} for g in m.layer_groups
        ],
        "config": {
            k: getattr(m, k)
            for k in (
                "model_type",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "num_key_value_heads",
                "head_dim",
                "intermediate_size",
                "vocab_size",
                "n_routed_experts",
                "num_experts_per_tok",
                "moe_intermediate_size",
                "n_shared_experts",
                "first_k_dense_replace",
                "kv_lora_rank",
                "qk_rope_head_dim",
                "sliding_window",
            )
        },
        "source": m.source,
        "notes": m.notes,
    }


def phase_json(p: PhaseResult) -> dict[str, Any]:
    ops = [
        {
            "name": r.op.name,
            "kind": r.op.kind,
            "layers": r.op.layers,
            "flops": r.op.flops,
            "weight_bytes": r.op.weight_bytes,
            "kv_bytes": r.op.kv_bytes,
            "activation_bytes": r.op.act_bytes,
            "bytes": r.op.bytes,
            "link_bytes": np.asarray(r.op.message_bytes) * r.op.layers,
            "arithmetic_intensity": None if r.op.is_collective else r.intensity,
            "ridge_flops_per_byte": None if r.op.is_collective else r.ridge_flops_per_byte,
            "bound": r.bound,
            "t_ideal_s": r.t_ideal_s,
            "t_expected_s": r.t_expected_s,
        }
        for r in p.ops
    ]
    intensity = p.arithmetic_intensity
    totals = ("flops", "weight_bytes", "kv_bytes", "activation_bytes", "bytes", "link_bytes")
    return {
        **named(p, "compute_dtype", *totals),
        "arithmetic_intensity": intensity,
        "ridge_flops_per_byte": p.ridge_flops_per_byte,
        "ridge_over_intensity": p.ridge_flops_per_byte / intensity,
        "bound": p.bound,
        "t_ideal_s": p.t_ideal_s,
        "t_expected_s": p.t_expected_s,
        "ops": ops,
    }


def named(obj: Any, *names: str) -> dict[str, Any]:
    """{name: obj.name} for each of `names`, in their order: a result's figures under their own
    names in a document."""
    return {n: getattr(obj, n) for n in names}


def finite(x: float | None) -> float | None:
    """x, or None (JSON null) when it is missing or not finite."""
    return x if x is not None and math.isfinite(x) else None


def deployment_inputs(m: ModelArch, hw: Accelerator, dep: Any) -> dict[str, Any]:
    """The first keys of a document's `inputs`: the model, the chip and the parallel degrees."""
    return {"model": m.id, "hardware": hw.id, "tp": dep.tp, "pp": dep.pp, "ep": dep.ep}


def formats_json(dep: Any) -> dict[str, str]:
    """The number formats echoed in a document's `inputs`: weights, then KV cache."""
    return {"weights": dep.weights.name, "kv_dtype": dep.kv.name}


def memory_plan_json(plan: Any, m: ModelArch, dep: Any) -> dict[str, Any]:
    """A memory plan per GPU: capacity, weights, activations, runtime, the KV budget and the KV
    bytes one token takes on each GPU."""
    return {
        "capacity_bytes": plan.capacity_bytes,
        "weights_bytes_per_gpu": plan.weights_bytes,
        "activation_bytes": plan.activation_bytes,
        "runtime_overhead_bytes": plan.runtime_overhead_bytes,
        "kv_budget_bytes": plan.kv_budget_bytes,
        "kv_bytes_per_token_per_gpu": kv_bytes_per_token(m, dep.kv.bits, dep.attention_tp, dep.pp),
    }

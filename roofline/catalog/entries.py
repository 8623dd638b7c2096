"""One catalog file to validated entries in SI units (the Catalog that combines them: catalog.py).

Catalog files hold human-scale numbers with the unit in the key (`bandwidth_tb_s: 3.35`);
this module converts them to SI once. Loading is strict: unknown keys, wrong types, missing
fields, duplicate ids and non-positive numbers fail with a CatalogError naming the file,
the entry and the key. Kernel curves, engine profiles and links are built by catalog_kernels.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.catalog.calibrations import calibration_entry
from roofline.catalog.checkpoints import checkpoints, drafter_heads
from roofline.catalog.files import parse_yaml, read_text
from roofline.catalog.hfquant import block_scaled_fp8, dense_weights, quantized_weights
from roofline.catalog.kernels import engine_profile, kernel_entry, link_set
from roofline.catalog.schema import NUM, SOURCED, SOURCED_UNCERTAIN, SPANS, every_problem
from roofline.catalog.schema import check as _check
from roofline.catalog.schema import positive as _positive
from roofline.catalog.schema import within as _within
from roofline.domain.errors import CatalogError, RooflineError
from roofline.domain.hardware import Accelerator, Efficiency, Tier
from roofline.domain.model import ModelArch
from roofline.domain.model_types import MODEL_TYPES
from roofline.domain.precision import weight_format
from roofline.domain.units import GB, TB, TFLOPS, US, GiB, MiB

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# key -> (accepted types, required). bool is rejected where a number is expected.
_LINK_KEYS = {
    "name": (str, True),
    "bandwidth_gb_s": (NUM, True),
    "latency_us": (NUM, False),
    "domain_gpus": (int, False),
    "source": (str, False),
}
_MEMORY_KEYS = {
    "type": (str, False),
    "capacity_gib": (NUM, False),  # the datasheet size, binary as memory is sold (80GB = 80 GiB)
    "capacity_gb": (NUM, False),  # decimal GB (1e9 B), for user catalogs that state it so
    "bandwidth_tb_s": (NUM, True),
    "usable_mib": (NUM, False),  # the driver's total (nvidia-smi memory.total), sourced
    "reserve_share": (NUM, False),  # without usable_mib: the share the driver keeps back
    # the CUDA runtime's total (cudaMemGetInfo, torch.cuda.mem_get_info), below the driver's by
    # what the driver keeps for itself: what vLLM and TensorRT-LLM size their KV pools against
    "cuda_total_mib": (NUM, False),
}
# Without a published driver total, usable = capacity × (1 − DEFAULT_RESERVE_SHARE): the cited
# totals fall short of the binary capacity by 0.44% (H100 SXM 81,559 of 81,920 MiB; H20 97,871 of
# 98,304), 0.52% (B200 183,359 of 184,320) and 0.49% (RTX 5090 32,607 of 32,768) [uncertain]
DEFAULT_RESERVE_SHARE = 0.005
_EFFICIENCY_KEYS = {
    "compute": (NUM, False),
    "memory": (NUM, False),
    "memory_weight_only": (NUM, False),
    "memory_weight_only_affine": (NUM, False),
    "compute_weight_only": (NUM, False),
    "alu_weight_only": (NUM, False),
    "step_overhead_us": (NUM, False),
    "cases": (int, False),
    "error_band": (NUM, False),
    "source": (str, True),
}
_FAMILY_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "efficiency": (dict, True),
    **SOURCED,
}
_ACCELERATOR_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "vendor": (str, True),
    "family": (str, True),
    "aliases": (list, False),
    "memory": (dict, True),
    "dense_tflops": (dict, True),
    "sparsity_2_4": (bool, True),
    "scale_up": (dict, False),
    "host_link": (dict, False),
    "gpu_memory_fraction": (NUM, False),
    "efficiency": (dict, False),
    "sustained_compute": (dict, False),
    **SOURCED_UNCERTAIN,
}
_SUSTAINED_KEYS = {"ratio": (NUM, True), **SOURCED}
_TIER_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "kind": (str, True),
    "bandwidth_gb_s": (NUM, True),
    "latency_us": (NUM, False),
    "capacity_gb": (NUM, False),
    "aliases": (list, False),
    **SOURCED_UNCERTAIN,
}
_MODEL_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "name": (str, True),
    "aliases": (list, False),
    **SOURCED_UNCERTAIN,
    "published": (dict, False),
    "checkpoints": (list, False),  # catalog/checkpoints.py
    "drafters": (list, False),
    "model_type": (str, True),
    "hidden_size": (int, True),
    "num_hidden_layers": (int, True),
    "num_attention_heads": (int, True),
    "vocab_size": (int, True),
    "intermediate_size": (int, True),
    "num_key_value_heads": (int, False),
    "head_dim": (int, False),
    "max_position_embeddings": (int, False),
    "tie_word_embeddings": (bool, False),
    "attention_bias": (bool, False),
    "qkv_bias": (bool, False),
    "use_qk_norm": (bool, False),
    "weights": (str, False),
    "quantization_config": (dict, False),
    "n_routed_experts": (int, False),
    "num_experts_per_tok": (int, False),
    "moe_intermediate_size": (int, False),
    "n_shared_experts": (int, False),
    "first_k_dense_replace": (int, False),
    "interleave_moe_layer_step": (int, False),
    "intermediate_size_mlp": (int, False),
    "q_lora_rank": ((int, type(None)), False),
    "kv_lora_rank": (int, False),
    "qk_nope_head_dim": (int, False),
    "qk_rope_head_dim": (int, False),
    "v_head_dim": (int, False),
    "sliding_window": ((int, type(None)), False),
    "sliding_window_pattern": (int, False),
    "layer_types": (list, False),
    "num_nextn_predict_layers": (int, False),
    "index_topk": (int, False),
}
_PUBLISHED_KEYS = {"params_total_b": (NUM, False), "params_active_b": (NUM, False)}
_TIER_KINDS = ("link", "memory", "storage", "network")
_SECTIONS = (
    "accelerators", "tiers", "models", "families", "kernels", "engines", "links", "calibrations"
)  # fmt: skip
_ALIAS_SECTIONS = ("accelerators", "tiers", "models", "families")


def _link(where: str, data: Any, id_: str) -> Tier:
    d = _check(where, data, _LINK_KEYS)
    latency = d.get("latency_us")
    return Tier(
        id=id_,
        name=d["name"],
        kind="link",
        bandwidth_bytes_per_s=_positive(
            where, "bandwidth_gb_s", d["bandwidth_gb_s"], SPANS["bandwidth_gb_s"]
        )
        * GB,
        latency_s=None if latency is None else _within(where, "latency_us", latency) * US,
        source=d.get("source", ""),
        domain_gpus=_domain(where, d.get("domain_gpus")),
    )


def _domain(where: str, value: int | None) -> int | None:
    if value is not None and not 1 <= value <= 100_000:
        raise CatalogError(f"{where}: key 'domain_gpus' must be from 1 to 100000, got {value}")
    return value


def _efficiency(where: str, data: Any) -> Efficiency:
    e = _check(where, data, _EFFICIENCY_KEYS)
    for key in (
        "compute",
        "memory",
        "memory_weight_only",
        "memory_weight_only_affine",
        "compute_weight_only",
        "alu_weight_only",
    ):
        if key in e and not 0 < e[key] <= 1:
            raise CatalogError(f"{where}: key '{key}' must be in (0, 1], got {e[key]}")
    wo = e.get("memory_weight_only")
    cwo = e.get("compute_weight_only")
    return Efficiency(
        compute=float(e.get("compute", 1.0)),
        memory=float(e.get("memory", 1.0)),
        memory_weight_only=None if wo is None else float(wo),
        memory_weight_only_affine=None
        if e.get("memory_weight_only_affine") is None
        else float(e["memory_weight_only_affine"]),
        compute_weight_only=None if cwo is None else float(cwo),
        alu_weight_only=None if e.get("alu_weight_only") is None else float(e["alu_weight_only"]),
        step_overhead_s=float(_within(where, "step_overhead_us", e.get("step_overhead_us", 0.0)))
        * US,
        source=e["source"],
        cases=int(e.get("cases", 0)),
        error_band=None if "error_band" not in e else float(e["error_band"]),
    )


@dataclass(frozen=True)
class Family:
    """A hardware family and the efficiencies its members share unless they set their own."""

    id: str
    name: str
    efficiency: Efficiency
    source: str
    aliases: tuple[str, ...] = ()


def _family(where: str, data: Any) -> Family:
    d = _check(where, data, _FAMILY_KEYS)
    return Family(
        d["id"], d["name"], _efficiency(f"{where}: efficiency", d["efficiency"]), d["source"]
    )


def _memory(where: str, mem: dict, vendor: str, fraction: float) -> tuple[float, float, str]:
    """(datasheet capacity, the total the runtime sees, how that was found: MEMORY_BASES)."""
    if ("capacity_gib" in mem) == ("capacity_gb" in mem):
        raise CatalogError(f"{where}: memory needs one of 'capacity_gib' and 'capacity_gb'")
    if "capacity_gib" in mem:
        gib = _positive(where, "memory.capacity_gib", mem["capacity_gib"], SPANS["capacity_gib"])
        capacity = gib * GiB
    else:
        gb = _positive(where, "memory.capacity_gb", mem["capacity_gb"], SPANS["capacity_gib"])
        capacity = gb * GB
    if "usable_mib" in mem:
        usable = _positive(where, "memory.usable_mib", mem["usable_mib"], SPANS["usable_mib"]) * MiB
        if usable > capacity * 1.001:
            raise CatalogError(
                f"{where}: key 'memory.usable_mib' ({usable / MiB:,.0f} MiB) is above the "
                f"capacity ({capacity / MiB:,.0f} MiB)"
            )
        return capacity, usable, "driver"
    if vendor == "apple":  # unified RAM; Metal's wired limit is the usable part
        return capacity, capacity, "wired"
    if fraction < 1:
        return capacity, capacity, "share"
    reserve = float(mem.get("reserve_share", DEFAULT_RESERVE_SHARE))
    if not 0 <= reserve < 1:
        raise CatalogError(f"{where}: key 'memory.reserve_share' must be in [0, 1), got {reserve}")
    return capacity, capacity * (1.0 - reserve), "reserve"


def _accelerator(where: str, data: Any) -> Accelerator:
    d = _check(where, data, _ACCELERATOR_KEYS)
    mem = _check(f"{where}: memory", d["memory"], _MEMORY_KEYS)
    peaks = _check(f"{where}: dense_tflops", d["dense_tflops"], dict.fromkeys(DTYPES, (NUM, False)))
    if not peaks:
        raise CatalogError(f"{where}: dense_tflops needs at least one dtype")
    eff_data = d.get("efficiency")
    eff = Efficiency() if eff_data is None else _efficiency(f"{where}: efficiency", eff_data)
    fraction = float(d.get("gpu_memory_fraction", 1.0))
    if not 0 < fraction <= 1:
        raise CatalogError(f"{where}: key 'gpu_memory_fraction' must be in (0, 1], got {fraction}")
    capacity, usable, basis = _memory(where, mem, d["vendor"], fraction)
    cuda_total = None
    if "cuda_total_mib" in mem:
        cuda_total = _positive(
            where, "memory.cuda_total_mib", mem["cuda_total_mib"], SPANS["usable_mib"]
        )
        cuda_total *= MiB
        if cuda_total > usable:
            raise CatalogError(
                f"{where}: key 'memory.cuda_total_mib' ({cuda_total / MiB:,.0f} MiB) is above the "
                f"driver's total ({usable / MiB:,.0f} MiB)"
            )
    sustained, sustained_source = 1.0, ""
    if "sustained_compute" in d:
        s = _check(f"{where}: sustained_compute", d["sustained_compute"], _SUSTAINED_KEYS)
        sustained, sustained_source = float(s["ratio"]), s["source"]
        if not 0 < sustained <= 1:
            raise CatalogError(
                f"{where}: key 'sustained_compute.ratio' must be in (0, 1], got {sustained}"
            )
    return Accelerator(
        id=d["id"],
        name=d["name"],
        vendor=d["vendor"],
        family=d["family"],
        memory_capacity_bytes=usable,
        memory_nominal_bytes=capacity,
        memory_basis=basis,
        cuda_total_bytes=cuda_total,
        memory_bandwidth_bytes_per_s=_positive(
            where, "memory.bandwidth_tb_s", mem["bandwidth_tb_s"], SPANS["bandwidth_tb_s"]
        )
        * TB,
        memory_type=mem.get("type", ""),
        peak_flops_per_s={
            k: _positive(where, f"dense_tflops.{k}", v, SPANS["dense_tflops"]) * TFLOPS
            for k, v in peaks.items()
        },
        sparsity_2_4=d["sparsity_2_4"],
        scale_up=_link(f"{where}: scale_up", d["scale_up"], "scale-up")
        if "scale_up" in d
        else None,
        host_link=_link(f"{where}: host_link", d["host_link"], "host")
        if "host_link" in d
        else None,
        gpu_memory_fraction=fraction,
        efficiency=eff,
        aliases=tuple(str(a) for a in d.get("aliases", [])),
        source=d["source"],
        notes=d.get("notes", ""),
        sustained_compute_ratio=sustained,
        sustained_compute_source=sustained_source,
    )


def _tier(where: str, data: Any) -> Tier:
    d = _check(where, data, _TIER_KEYS)
    if d["kind"] not in _TIER_KINDS:
        raise CatalogError(f"{where}: key 'kind' must be one of {', '.join(_TIER_KINDS)}")
    capacity, latency = d.get("capacity_gb"), d.get("latency_us")
    return Tier(
        id=d["id"],
        name=d["name"],
        kind=d["kind"],
        bandwidth_bytes_per_s=_positive(
            where, "bandwidth_gb_s", d["bandwidth_gb_s"], SPANS["bandwidth_gb_s"]
        )
        * GB,
        latency_s=None if latency is None else _within(where, "latency_us", latency) * US,
        capacity_bytes=None
        if capacity is None
        else _positive(where, "capacity_gb", capacity, SPANS["capacity_gb"]) * GB,
        aliases=tuple(str(a) for a in d.get("aliases", [])),
        source=d["source"],
        notes=d.get("notes", ""),
    )


# Whole-number keys of a model and their allowed range: at least 1 (0 where it means "none"),
# at most a bound that keeps the work finite (a model of 10^9 layers would not finish)
_MODEL_INT_RANGE: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 10_000),
    "first_k_dense_replace": (0, 10_000),
    "n_shared_experts": (0, 1_000),
    "num_nextn_predict_layers": (0, 100),
    "n_routed_experts": (0, 100_000),
}
_MODEL_INT_MAX = 10**8


def _model_shape(where: str, d: dict[str, Any]) -> None:
    """Whole numbers in range, and head and expert counts that fit together."""
    for key, (kind, _) in _MODEL_KEYS.items():
        v = d.get(key)
        if v is None or kind not in (int, (int, type(None))) or isinstance(v, bool):
            continue
        lo, hi = _MODEL_INT_RANGE.get(key, (1, _MODEL_INT_MAX))
        if not lo <= v <= hi:
            raise CatalogError(f"{where}: key '{key}' must be from {lo} to {hi:,}, got {v}")
    heads, kv = d["num_attention_heads"], d.get("num_key_value_heads")
    if kv is not None and (kv > heads or heads % kv):
        raise CatalogError(
            f"{where}: key 'num_key_value_heads' ({kv}) must divide num_attention_heads ({heads})"
        )
    if d.get("head_dim") is None and not d.get("kv_lora_rank") and d["hidden_size"] % heads:
        raise CatalogError(
            f"{where}: hidden_size {d['hidden_size']} does not split over {heads} heads: give "
            "'head_dim'"
        )
    experts, k = d.get("n_routed_experts") or 0, d.get("num_experts_per_tok")
    if k and k > experts:  # 0 experts with a top-k is a malformed MoE, not a dense model
        raise CatalogError(
            f"{where}: key 'num_experts_per_tok' ({k}) is above n_routed_experts ({experts})"
        )


def _model(where: str, data: Any) -> ModelArch:
    d = dict(_check(where, data, _MODEL_KEYS))
    if d["model_type"] not in MODEL_TYPES:
        raise CatalogError(
            f"{where}: model_type '{d['model_type']}' is not supported "
            f"(supported: {', '.join(MODEL_TYPES)})"
        )
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        _positive(where, key, d[key])
    _model_shape(where, d)
    published = _check(f"{where}: published", d.pop("published", {}), _PUBLISHED_KEYS)
    if d.get("n_routed_experts") and not d.get("num_experts_per_tok"):
        raise CatalogError(f"{where}: MoE model needs key 'num_experts_per_tok'")
    if d.get("kv_lora_rank") and not all(
        d.get(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    ):
        raise CatalogError(
            f"{where}: MLA needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim "
            "with kv_lora_rank"
        )
    types = d.get("layer_types")
    if types is not None:
        bad = [t for t in types if t not in ("sliding_attention", "full_attention")]
        if bad or len(types) != d["num_hidden_layers"]:
            raise CatalogError(
                f"{where}: key 'layer_types' needs num_hidden_layers entries of "
                "'sliding_attention' or 'full_attention'"
            )
        d["layer_types"] = tuple(types)
    d.pop("uncertain", None)
    quant = d.pop("quantization_config", None)
    if quant is not None:  # the released checkpoint's config.json block (hfquant reads it)
        if "weights" in d:
            raise CatalogError(f"{where}: give 'weights' or 'quantization_config', not both")
        try:
            d["weights"] = quantized_weights(quant, f"{where}: quantization_config")[0]
        except RooflineError as exc:
            raise CatalogError(str(exc)) from None
        d["native_dense_weights"] = dense_weights(quant)
        d["block_scaled_fp8"] = block_scaled_fp8(quant)
    if "weights" in d:  # the format the checkpoint ships in (set by `models import`)
        try:
            d["native_weights"] = weight_format(d.pop("weights")).name
        except RooflineError as exc:
            raise CatalogError(f"{where}: key 'weights': {exc}") from None
    d["aliases"] = tuple(str(a) for a in d.get("aliases", []))
    d["checkpoints"] = checkpoints(where, d.pop("checkpoints", []))
    d["drafter_heads"] = drafter_heads(where, d.pop("drafters", []))
    total, active = published.get("params_total_b"), published.get("params_active_b")
    d["published_params_total"] = None if total is None else total * 1e9
    d["published_params_active"] = None if active is None else active * 1e9
    return ModelArch(**d)


_BUILDERS = {
    "accelerators": _accelerator,
    "tiers": _tier,
    "models": _model,
    "families": _family,
    "kernels": kernel_entry,
    "engines": engine_profile,
    "links": link_set,  # measured collectives per link kind (hardware/links.yaml)
    "calibrations": calibration_entry,  # a user's fit to their own runs (benchfit.py)
}


def _load_file(path: Path, problems: list[str] | None = None) -> dict[str, list[Any]]:
    """Parse one YAML file into {section: [entries]} with validation. With a `problems` list,
    a bad entry is recorded there and skipped, so one pass finds every bad entry; without it the
    first problem raises."""
    text = read_text(path)
    raw = parse_yaml(text, str(path), at_line=True)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: expected a mapping with one of {', '.join(_SECTIONS)}")
    out: dict[str, list[Any]] = {}
    for section, entries in raw.items():
        if section not in _BUILDERS:
            raise CatalogError(
                f"{path}: unknown top-level key '{section}' (expected {', '.join(_SECTIONS)})"
            )
        if not isinstance(entries, list):
            raise CatalogError(f"{path}: '{section}' must be a list of entries")
        built = []
        for i, entry in enumerate(entries):
            name = entry.get("id", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
            where = f"{path}: {section[:-1]} '{name}'"
            try:
                built.append(_BUILDERS[section](where, entry))
            except CatalogError as exc:
                if problems is None:
                    raise
                problems.extend(every_problem(_BUILDERS[section], where, entry, str(exc)))
        out[section] = built
    return out

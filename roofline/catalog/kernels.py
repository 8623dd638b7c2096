"""Loaders for hardware/kernels.yaml (per-op kernel curves per GPU generation, written by
validation/calibrate_kernels.py), hardware/links.yaml (measured collectives per link kind) and
hardware/engines.yaml (engine profiles): strict like the rest of the catalog, every error naming
the file, the entry and the key. catalog_entries.py reads the files and calls these builders on
each parsed entry."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from roofline.catalog.schema import NUM, SOURCED
from roofline.catalog.schema import check as _check
from roofline.catalog.schema import positive as _positive
from roofline.domain.errors import CatalogError
from roofline.domain.hardware import FP8_BLOCK, KernelSet
from roofline.domain.units import US
from roofline.engines.versions import check_range
from roofline.timing.attention import AttentionCurve, PrefillAttentionCurve
from roofline.timing.collectives import LINK_KINDS, LinkCurve, LinkSet
from roofline.timing.gemm import TILE_RULES, GemmCurve, MoeCurve, WeightOnlyCurve
from roofline.timing.host import EngineProfile

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

_FIT = {"fit_median_error": (NUM, False), "rows": (int, False)}
_GEMM_KEYS = {
    "eta_max": (NUM, True),
    "eta_memory": (NUM, True),
    "m_half": (NUM, True),
    "n_half": (NUM, True),
    "latency_us": (NUM, True),
    "tile_m": (NUM, False),
    "tile_n": (NUM, False),
    "split_k_max": (NUM, False),
    "wave_latency_us": (NUM, False),
    "m_large": (NUM, False),
    "large_ratio": (NUM, False),
    "tile_rule": (str, False),
    "wave_area_us": (NUM, False),
    "quant_bytes": (NUM, False),
    # the measurement's L2-resident rows: L2 size and L2/HBM speed (calibration and tests only)
    "harness_l2_ratio": (NUM, False),
    "harness_l2_bytes": (NUM, False),
    **_FIT,
}
_WO_KEYS = {
    "alu_ops_per_weight": (NUM, True),
    **{k: (t, k in ("eta_memory", "latency_us")) for k, (t, _) in _GEMM_KEYS.items()},
}
_ATTN_KEYS = {
    "eta_memory": (NUM, True),
    "latency_us": (NUM, True),
    "per_query_head_ns": (NUM, True),
    "streams_half": (NUM, True),
    "per_stream_ns": (NUM, False),
    "split_kib": (NUM, False),
    "split_min_group": (NUM, False),
    "block_bandwidth_gb_s": (NUM, False),
    "split_rule": (str, False),
    "swap_us": (NUM, False),
    "copy_us": (NUM, False),
    "combine_us": (NUM, False),
    "eta_compute": (NUM, False),
    "head_tile": (NUM, False),
    **_FIT,
}
_PREFILL_ATTN_KEYS = {
    "eta_max": (NUM, True),
    "s_half": (NUM, True),
    "latency_us": (NUM, True),
    "tile_q": (NUM, False),
    "wave_latency_us": (NUM, False),
    **_FIT,
}
_MOE_KEYS = {
    "eta_max": (NUM, True),
    "m_half": (NUM, True),
    "eta_memory": (NUM, True),
    "eta_act": (NUM, True),
    "latency_us": (NUM, True),
    "walk_us": (NUM, False),
    "tile_wave_us": (NUM, False),
    **_FIT,
}
_LINK_FIT_KEYS = {"latency_us": (NUM, True), "bandwidth_share": (NUM, True), **_FIT}
_KERNEL_KEYS = {
    "id": (str, True),
    "accelerators": (list, True),
    "borrowed_by": (list, True),
    "sm_count": (NUM, False),
    "sm_count_source": (str, False),
    "gemm": (dict, True),
    "gemm_source": (str, True),
    "weight_only": (dict, False),
    "weight_only_source": (str, False),
    "decode_attention": (dict, False),
    "decode_attention_source": (str, False),
    "allreduce": (dict, False),
    "allreduce_source": (str, False),
    "engine_allreduce": (dict, False),
    "engine_allreduce_source": (str, False),
    "alltoall": (dict, False),
    "alltoall_source": (str, False),
    "prefill_attention": (dict, False),
    "prefill_attention_source": (str, False),
    "moe": (dict, False),
    "moe_source": (str, False),
    "engine_moe": (dict, False),
    "engine_moe_source": (str, False),
    "ep_alltoall": (dict, False),
    "ep_alltoall_source": (str, False),
    "ep_alltoall_prefill": (dict, False),
    "ep_alltoall_prefill_source": (str, False),
    "notes": (str, False),
}
_ENGINE_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "cpu_step_us": (NUM, True),
    "launch_us": (NUM, True),
    "gap_us": (NUM, True),
    "kernels_per_layer": (NUM, True),
    "cuda_graphs_decode": (bool, True),
    "cuda_graphs_prefill": (bool, True),
    "allreduce_kernel": (str, True),
    "moe_kernel": (str, False),
    "spec_round_cpu_us": (NUM, False),
    "spec_draft_step_cpu_us": (NUM, False),
    "request_latency_us": (NUM, False),
    "api_request_us": (NUM, False),
    "api_token_fast_us": (NUM, False),
    "api_token_slow_us": (NUM, False),
    "cpu_per_seq_us": (dict, False),
    "cpu_per_seq_device": (list, False),
    "moe_time_factor": (dict, False),
    "mla_decode_time_factor": (dict, False),
    "block_fp8_moe_time_factor": (dict, False),
    "block_fp8_prefill_factor": (dict, False),
    "block_fp8_moe_layer_us": (dict, False),
    "start_s": (NUM, False),
    "load_gb_per_s": (NUM, False),
    "base": (str, False),
    "versions": (str, False),
    "max_num_seqs": (int, False),
    "chunked_prefill": (bool, False),
    "prefill_requests_per_step": (int, False),
    "decode_whole_cache": (bool, False),
    **SOURCED,
}


def _share(where: str, key: str, value: float) -> float:
    if not 0 < value <= 1:
        raise CatalogError(f"{where}: key '{key}' must be in (0, 1], got {value}")
    return float(value)


@dataclass(frozen=True)
class KernelEntry:
    """One GPU generation's kernel curves and the accelerators that use them."""

    id: str
    kernels: KernelSet
    accelerators: tuple[str, ...]
    borrowed_by: tuple[str, ...]
    aliases: tuple[str, ...] = ()


def _gemm_curve(where: str, data: Any, sm_count: float) -> GemmCurve:
    d = _check(where, data, _GEMM_KEYS)
    tile_m, tile_n = float(d.get("tile_m", 0)), float(d.get("tile_n", 0))
    if tile_m < 0 or tile_n < 0 or (tile_m > 0) != (tile_n > 0):
        raise CatalogError(f"{where}: tile_m and tile_n must both be positive or both 0")
    rule = str(d.get("tile_rule", ""))
    if rule and rule not in TILE_RULES:
        raise CatalogError(f"{where}: unknown tile_rule {rule!r} (known: {', '.join(TILE_RULES)})")
    if (tile_m > 0 or rule) and sm_count <= 0:
        raise CatalogError(f"{where}: a tile grid needs the group's 'sm_count'")
    split = float(d.get("split_k_max", 1))
    if split < 1:
        raise CatalogError(f"{where}: key 'split_k_max' must be at least 1, got {split}")
    return GemmCurve(
        eta_max=_share(where, "eta_max", d["eta_max"]),
        eta_memory=_share(where, "eta_memory", d["eta_memory"]),
        m_half=float(d["m_half"]),
        n_half=float(d["n_half"]),
        latency_s=d["latency_us"] * US,
        fit_median_error=d.get("fit_median_error"),
        tile_m=tile_m,
        tile_n=tile_n,
        split_k_max=split,
        wave_latency_s=float(d.get("wave_latency_us", 0.0)) * US,
        sm_count=sm_count,
        m_large=float(d.get("m_large", 0.0)),
        large_ratio=_share(where, "large_ratio", d.get("large_ratio", 1.0)),
        tile_rule=rule,
        wave_area_s=float(d.get("wave_area_us", 0.0)) * US,
        quant_bytes=float(d.get("quant_bytes", 0.0)),
    )


def _names(where: str, key: str, values: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in values):
        raise CatalogError(f"{where}: key '{key}' must be a list of accelerator ids")
    return tuple(values)


def kernel_entry(where: str, data: Any) -> KernelEntry:
    d = _check(where, data, _KERNEL_KEYS)
    parts = ("weight_only", "decode_attention", "prefill_attention", "allreduce", "alltoall")
    for part in (*parts, "engine_allreduce", "sm_count"):
        if (part in d) != (f"{part}_source" in d):
            raise CatalogError(f"{where}: key '{part}' needs '{part}_source' (and vice versa)")
    sm_count = _positive(where, "sm_count", d["sm_count"]) if "sm_count" in d else 0.0
    gemm = {}
    for dtype, curve in d["gemm"].items():
        if dtype not in (*DTYPES, FP8_BLOCK):
            known = ", ".join((*DTYPES, FP8_BLOCK))
            raise CatalogError(f"{where}: gemm: unknown dtype '{dtype}' ({known})")
        gemm[dtype] = _gemm_curve(f"{where}: gemm.{dtype}", curve, sm_count)
    wo = {}
    for name, curve in d.get("weight_only", {}).items():
        if name not in ("int8", "int4"):
            raise CatalogError(f"{where}: weight_only: unknown key '{name}' (int8 or int4)")
        w = f"{where}: weight_only.{name}"
        c = _check(w, curve, _WO_KEYS)
        own = None
        if "eta_max" in c:  # a GEMM curve of its own
            keys = {k: v for k, v in c.items() if k != "alu_ops_per_weight"}
            own = _gemm_curve(w, keys, sm_count)
        wo[name] = WeightOnlyCurve(
            float(c["alu_ops_per_weight"]),
            _share(w, "eta_memory", c["eta_memory"]),
            c["latency_us"] * US,
            c.get("fit_median_error"),
            own,
        )
    attn = None
    if "decode_attention" in d:
        w = f"{where}: decode_attention"
        c = _check(w, d["decode_attention"], _ATTN_KEYS)
        block_bw = float(c.get("block_bandwidth_gb_s", 0.0)) * 1e9
        if block_bw > 0 and sm_count <= 0:
            raise CatalogError(f"{w}: a per-block bandwidth needs the group's 'sm_count'")
        attn = AttentionCurve(
            _share(w, "eta_memory", c["eta_memory"]),
            c["latency_us"] * US,
            c["per_query_head_ns"] * 1e-9,
            float(c["streams_half"]),
            c.get("fit_median_error"),
            per_stream_s=float(c.get("per_stream_ns", 0.0)) * 1e-9,
            split_bytes=float(c.get("split_kib", 0.0)) * 1024.0,
            split_min_group=float(c.get("split_min_group", 1.0)),
            block_bw_bytes_per_s=block_bw,
            sm_count=sm_count,
            split_rule=str(c.get("split_rule", "")),
            swap_s=float(c.get("swap_us", 0.0)) * US,
            copy_s=float(c.get("copy_us", 0.0)) * US,
            combine_s=float(c.get("combine_us", 0.0)) * US,
            eta_compute=_share(w, "eta_compute", c["eta_compute"]) if "eta_compute" in c else 0.0,
            head_tile=float(c.get("head_tile", 0.0)),
        )
        if attn.split_rule not in ("", "fa2"):
            raise CatalogError(f"{w}: split_rule must be 'fa2' or absent, not {attn.split_rule!r}")
        if attn.split_rule and sm_count <= 0:
            raise CatalogError(f"{w}: split_rule needs the group's 'sm_count'")
    link = _link_curve(f"{where}: allreduce", d["allreduce"]) if "allreduce" in d else None
    by_engine = {}
    for name, table in d.get("engine_allreduce", {}).items():
        if not isinstance(table, dict):
            raise CatalogError(f"{where}: engine_allreduce.{name} must be a mapping")
        by_engine[str(name)] = _link_curve(f"{where}: engine_allreduce.{name}", table)
    sources = "; ".join(
        f"{k}: {d[k + '_source']}"
        for k in (
            "sm_count",
            "gemm",
            "weight_only",
            "decode_attention",
            "allreduce",
            "engine_allreduce",
            "alltoall",
            "moe",
            "engine_moe",
            "ep_alltoall",
            "ep_alltoall_prefill",
        )
        if k + "_source" in d
    )
    a2a = _link_curve(f"{where}: alltoall", d["alltoall"]) if "alltoall" in d else None
    pre = None
    if "prefill_attention" in d:
        w = f"{where}: prefill_attention"
        c = _check(w, d["prefill_attention"], _PREFILL_ATTN_KEYS)
        tile_q = float(c.get("tile_q", 0.0))
        if tile_q > 0 and sm_count <= 0:
            raise CatalogError(f"{w}: a query tile needs the group's 'sm_count'")
        pre = PrefillAttentionCurve(
            _share(w, "eta_max", c["eta_max"]),
            float(c["s_half"]),
            c["latency_us"] * US,
            c.get("fit_median_error"),
            tile_q=tile_q,
            wave_latency_s=float(c.get("wave_latency_us", 0.0)) * US,
            sm_count=sm_count,
        )
    moe = _moe_curves(f"{where}: moe", d.get("moe", {}), sm_count)
    engine_moe = {}
    for name, table in d.get("engine_moe", {}).items():
        if not isinstance(table, dict):
            raise CatalogError(f"{where}: engine_moe.{name} must be a mapping")
        engine_moe[str(name)] = _moe_curves(f"{where}: engine_moe.{name}", table, sm_count)
    ep_a2a = None
    if "ep_alltoall" in d:
        ep_a2a = _link_curve(f"{where}: ep_alltoall", d["ep_alltoall"])
    ks = KernelSet(d["id"], gemm, wo, attn, link, by_engine, a2a, pre, sources)
    ep_pre = None
    if "ep_alltoall_prefill" in d:
        ep_pre = _link_curve(f"{where}: ep_alltoall_prefill", d["ep_alltoall_prefill"])
    ks = replace(ks, moe=moe, engine_moe=engine_moe, ep_alltoall=ep_a2a, ep_alltoall_prefill=ep_pre)
    return KernelEntry(
        d["id"],
        ks,
        _names(where, "accelerators", d["accelerators"]),
        _names(where, "borrowed_by", d["borrowed_by"]),
    )


def _moe_curves(where: str, table: dict[Any, Any], sm_count: float = 0.0) -> dict[str, MoeCurve]:
    """The fused MoE curves per dtype of a kernels.yaml `moe` (or `engine_moe.<engine>`) table;
    `sm_count`: the group's SMs, over which the touched experts' tiles run in waves."""
    moe = {}
    for dt, c in table.items():
        w = f"{where}.{dt}"
        c = _check(w, c, _MOE_KEYS)
        moe[str(dt)] = MoeCurve(
            _share(w, "eta_max", c["eta_max"]),
            float(c["m_half"]),
            _share(w, "eta_memory", c["eta_memory"]),
            _share(w, "eta_act", c["eta_act"]),
            c["latency_us"] * US,
            c.get("fit_median_error"),
            walk_s=float(c.get("walk_us", 0.0)) * US,
            tile_wave_s=float(c.get("tile_wave_us", 0.0)) * US,
            sm_count=sm_count,
        )
    return moe


def _link_curve(where: str, table: dict[Any, Any]) -> LinkCurve:
    lat, share = {}, {}
    for n, curve in table.items():
        w = f"{where}.{n}"
        if not str(n).isdigit() or int(n) < 2:
            raise CatalogError(f"{w}: GPU counts must be whole numbers of at least 2")
        c = _check(w, curve, _LINK_FIT_KEYS)
        lat[int(n)] = c["latency_us"] * US
        share[int(n)] = _share(w, "bandwidth_share", c["bandwidth_share"])
    if not lat:
        raise CatalogError(f"{where}: needs at least one GPU count")
    return LinkCurve(lat, share)


def _per_family_us(
    where: str, data: dict, key: str = "cpu_per_seq_us"
) -> tuple[tuple[str, float], ...]:
    """A mapping family -> µs (cpu_per_seq_us, block_fp8_moe_layer_us) as (family, seconds)
    pairs; values non-negative."""
    out: dict[str, float] = {}
    for fam, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise CatalogError(f"{where}: {key}.{fam} must be a non-negative number")
        out[str(fam)] = float(value) * US
    return tuple(sorted(out.items()))


def _per_family_factor(where: str, key: str, data: dict) -> tuple[tuple[str, float], ...]:
    """A mapping family -> factor (moe_time_factor, mla_decode_time_factor) as (family, factor)
    pairs; each a positive number (1: the kernel curves as they are)."""
    out: dict[str, float] = {}
    for fam, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise CatalogError(f"{where}: {key}.{fam} must be a positive number")
        out[str(fam)] = float(value)
    return tuple(sorted(out.items()))


def engine_profile(where: str, data: Any) -> EngineProfile:
    d = _check(where, data, _ENGINE_KEYS)
    _positive(where, "kernels_per_layer", d["kernels_per_layer"])
    values = {
        k: float(d.get(k, 0))
        for k in (
            "spec_round_cpu_us",
            "spec_draft_step_cpu_us",
            "request_latency_us",
            "api_request_us",
            "api_token_fast_us",
            "api_token_slow_us",
            "start_s",
            "load_gb_per_s",
        )
    }
    for key, value in values.items():
        if value < 0:
            raise CatalogError(f"{where}: key '{key}' must be non-negative, got {value:g}")
    if "versions" in d:
        try:
            check_range(d["versions"])
        except ValueError as exc:
            raise CatalogError(f"{where}: key 'versions': {exc}") from None
    if "base" in d and "versions" not in d:
        raise CatalogError(f"{where}: a version profile ('base') needs 'versions' (e.g. <0.8)")
    for fam in d.get("cpu_per_seq_device", []):
        if fam not in d.get("cpu_per_seq_us", {}):
            raise CatalogError(f"{where}: cpu_per_seq_device names '{fam}' without cpu_per_seq_us")
    for key in ("max_num_seqs", "prefill_requests_per_step"):
        if d.get(key, 0) < 0:
            raise CatalogError(f"{where}: key '{key}' must be non-negative")
    return EngineProfile(
        id=d["id"],
        cpu_step_s=d["cpu_step_us"] * US,
        launch_s=d["launch_us"] * US,
        gap_s=d["gap_us"] * US,
        kernels_per_layer=float(d["kernels_per_layer"]),
        graphs_decode=d["cuda_graphs_decode"],
        graphs_prefill=d["cuda_graphs_prefill"],
        allreduce_kernel=d["allreduce_kernel"],
        moe_kernel=d.get("moe_kernel"),
        source=d["source"],
        aliases=(),
        draft_round_cpu_s=values["spec_round_cpu_us"] * US,
        draft_step_cpu_s=values["spec_draft_step_cpu_us"] * US,
        request_latency_s=values["request_latency_us"] * US,
        api_request_s=values["api_request_us"] * US,
        api_token_fast_s=values["api_token_fast_us"] * US,
        api_token_slow_s=values["api_token_slow_us"] * US,
        cpu_per_seq_s=_per_family_us(where, d.get("cpu_per_seq_us", {})),
        per_seq_device=tuple(str(f) for f in d.get("cpu_per_seq_device", [])),
        moe_time_factor=_per_family_factor(where, "moe_time_factor", d.get("moe_time_factor", {})),
        mla_decode_time_factor=_per_family_factor(
            where, "mla_decode_time_factor", d.get("mla_decode_time_factor", {})
        ),
        block_fp8_moe_time_factor=_per_family_factor(
            where, "block_fp8_moe_time_factor", d.get("block_fp8_moe_time_factor", {})
        ),
        block_fp8_prefill_factor=_per_family_factor(
            where, "block_fp8_prefill_factor", d.get("block_fp8_prefill_factor", {})
        ),
        block_fp8_moe_layer_s=_per_family_us(
            where, d.get("block_fp8_moe_layer_us", {}), "block_fp8_moe_layer_us"
        ),
        start_s=values["start_s"],
        load_bytes_per_s=values["load_gb_per_s"] * 1e9,
        base=d.get("base", ""),
        versions=d.get("versions", ""),
        max_num_seqs=int(d.get("max_num_seqs", 0)),
        chunked_prefill=d.get("chunked_prefill"),
        prefill_requests_per_step=int(d.get("prefill_requests_per_step", 0)),
        decode_whole_cache=bool(d.get("decode_whole_cache", False)),
    )


# ---- collectives per link kind (hardware/links.yaml) --------------------------------------------
_LINK_SET_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "kind": (str, True),
    "accelerators": (list, False),
    "allreduce": (dict, True),
    "alltoall": (dict, False),
    **SOURCED,
}


def link_set(where: str, data: Any) -> LinkSet:
    """One `links:` entry: the measured all-reduce (and all-to-all) on one kind of link."""
    d = _check(where, data, _LINK_SET_KEYS)
    if d["kind"] not in LINK_KINDS:
        raise CatalogError(f"{where}: key 'kind' must be one of {', '.join(LINK_KINDS)}")
    a2a = _link_curve(f"{where}: alltoall", d["alltoall"]) if "alltoall" in d else None
    return LinkSet(
        id=d["id"],
        kind=d["kind"],
        allreduce=_link_curve(f"{where}: allreduce", d["allreduce"]),
        alltoall=a2a,
        accelerators=_names(where, "accelerators", d.get("accelerators", [])),
        source=d["source"],
    )


# ---- end of collectives per link kind -----------------------------------------------------------

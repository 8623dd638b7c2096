"""Map a Hugging Face config.json onto a catalog model entry (pure: dict in, dict out).

Most catalog keys are config.json names already; the mapping renames the few that differ by
model_type (num_local_experts / num_experts → n_routed_experts, a MoE's intermediate_size →
moe_intermediate_size), unwraps multimodal `text_config`, and spells out local-attention layouts
(Gemma 2 alternates local and global layers starting with a local one; Llama 4 runs chunked
attention, modelled as a window, on its RoPE layers and global attention on every 4th).

A model_type the importer does not know is read through its `architectures` class when that class
is one it knows: Kimi-K2 ships model_type `kimi_k2` with DeepseekV3ForCausalLM (Moonshot's
deployment guide: "Kimi-K2 reuses the DeepseekV3CausalLM architecture"), so it imports as
deepseek_v3. `quantization_config` sets the format the checkpoint ships in (`weights`), see
`roofline.catalog.hfquant.quantized_weights`.
"""

from __future__ import annotations

import re
from typing import Any

from roofline.catalog.hfquant import quantized_weights
from roofline.domain.errors import CatalogError, InputError
from roofline.domain.model import DSA_INDEX_HEAD_DIM, DSA_INDEX_HEADS
from roofline.domain.model_types import (
    ARCHITECTURES,
    LINEAR_ATTENTION,
    MODEL_TYPES,
    TEXT_TYPES,
    TYPE_ALIASES,
    traits,
)
from roofline.domain.precision import WEIGHT_FORMATS

SUPPORTED = MODEL_TYPES
_SHAPE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
_OPTIONAL_COUNTS = ("num_key_value_heads", "head_dim", "max_position_embeddings")
_OPTIONAL_FLAGS = ("tie_word_embeddings", "attention_bias")
# config.json keys read as whole numbers, checked up front in the config and its text_config (so
# the message names 'text_config.KEY'); every other count is checked where it is read (_count)
_COUNTS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings", "n_routed_experts",
    "num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
    "n_shared_experts", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "sliding_window", "num_layers", "first_k_dense_replace",
)  # fmt: skip
# counts Hunyuan gives per layer, as lists (_uniform)
_PER_LAYER = ("num_experts", "moe_topk", "num_shared_expert", "moe_intermediate_size")
_DIGITS = re.compile(r"\s*-?\d{1,18}\s*")
_LIMIT = 10**15  # no count comes near it; past it a product of counts would overflow a float


def whole(where: str, key: str, value: Any) -> int:
    """A config.json count as an int: an integer, a float without a fraction (32.0) or a string
    of digits ("4096"); anything else (32.5, "big", a list, true) is refused naming the key,
    never truncated."""
    spelled = isinstance(value, str) and _DIGITS.fullmatch(value) is not None
    integral = isinstance(value, float) and value.is_integer()
    number = int(value) if spelled or integral else value
    if isinstance(number, bool) or not isinstance(number, int):
        raise CatalogError(f"{where}: key '{key}' must be a whole number, got {value!r:.40}")
    if not -_LIMIT < number < _LIMIT:
        digits = str(number)
        shown = digits if len(digits) <= 20 else f"{digits[:12]}... ({len(digits)} digits)"
        raise CatalogError(f"{where}: key '{key}' is out of range: {shown}")
    return number


def check_config_values(cfg: dict[str, Any], where: str) -> None:
    """model_type a string and the counts whole numbers, in the config and its text_config: one
    line naming the key instead of an internal error or a silently truncated count."""
    for prefix, d in (("", cfg), ("text_config.", cfg.get("text_config"))):
        if not isinstance(d, dict):
            continue
        if "model_type" in d and not isinstance(d["model_type"], str):
            raise CatalogError(f"{where}: key '{prefix}model_type' must be a string")
        for key in _COUNTS:
            v = d.get(key)
            for item in v if key in _PER_LAYER and isinstance(v, list) else [v]:
                if item is not None:
                    whole(where, prefix + key, item)


def _need(cfg: dict[str, Any], key: str, where: str) -> Any:
    if cfg.get(key) is None:
        raise InputError(f"{where}: missing field '{key}'")
    return cfg[key]


def _count(cfg: dict[str, Any], key: str, where: str) -> int:
    """A required count (whole)."""
    return whole(where, key, _need(cfg, key, where))


def _count_or(cfg: dict[str, Any], key: str, where: str, default: int) -> int:
    """An optional count; `default` when absent, null or 0."""
    return whole(where, key, cfg.get(key) or default)


def _refuse_linear_attention(name: str, why: str, where: str) -> None:
    raise InputError(
        f"{where}: {name} is not supported: {why}, whose state does not grow with context, "
        "and roofline models softmax attention with a KV cache that does (counting them as "
        "softmax layers would misstate its weights, KV memory and decode bytes)"
    )


def _refuse_hybrid(cfg: dict[str, Any], where: str) -> None:
    """Refuse, with the reason, a config whose model_type or class names a model with linear
    attention or state-space layers (hffamilies.LINEAR_ATTENTION)."""
    archs = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    for name in [cfg.get("model_type"), *archs]:
        if name in LINEAR_ATTENTION:
            _refuse_linear_attention(*LINEAR_ATTENTION[name], where)


def resolve_model_type(cfg: dict[str, Any], where: str = "config.json") -> str:
    """The model_type to read a config as: its own when known, else its `architectures` class,
    else a documented alias (kimi_k2). Hybrid linear-attention models are refused by name."""
    model_type = cfg.get("model_type")
    archs = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    _refuse_hybrid(cfg, where)
    if model_type in SUPPORTED:
        return model_type
    for arch in archs:
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    if model_type in TYPE_ALIASES:
        return TYPE_ALIASES[model_type]
    shown = f" (architectures {', '.join(archs)})" if archs else ""
    raise InputError(
        f"{where}: model_type {model_type!r}{shown} is not supported",
        hint=f"supported model_types: {', '.join(SUPPORTED)}; "
        f"architectures: {', '.join(ARCHITECTURES)}",
    )


def _uniform(cfg: dict[str, Any], key: str, where: str) -> int | None:
    """A count that may be a per-layer list (Hunyuan's moe_topk, num_experts, ...) whose entries
    all agree, as one value; differing entries are refused (roofline's layers of one kind share
    one shape). None when absent."""
    value = cfg.get(key)
    if isinstance(value, list):
        values = {whole(where, key, v) for v in value}
        if len(values) != 1:
            raise InputError(f"{where}: per-layer {key} {sorted(values)} is not supported")
        return values.pop()
    return None if value is None else whole(where, key, value)


def _hunyuan(cfg: dict[str, Any], entry: dict[str, Any], where: str) -> None:
    """Hunyuan-A13B (transformers HunYuanMoEV1): routed experts of moe_intermediate_size, a shared
    MLP of num_shared_expert x intermediate_size (use_mixed_mlp_moe; counted as that many experts,
    so the two widths must agree), dense layers before moe_layer_num_skipped, router gate.wg
    without bias. Per-layer lists must be uniform."""
    flat = {k: _uniform(cfg, k, where) for k in ("num_experts", "moe_topk", "num_shared_expert")}
    entry["n_routed_experts"] = _need(flat, "num_experts", where)
    entry["num_experts_per_tok"] = _need(flat, "moe_topk", where)
    entry["intermediate_size"] = _count(cfg, "intermediate_size", where)
    width = _uniform(cfg, "moe_intermediate_size", where) or entry["intermediate_size"]
    entry["moe_intermediate_size"] = width
    if cfg.get("use_mixed_mlp_moe", True) and flat["num_shared_expert"]:
        if entry["intermediate_size"] != width:
            raise InputError(f"{where}: a shared MLP wider than the experts is not supported")
        entry["n_shared_experts"] = flat["num_shared_expert"]
    entry["first_k_dense_replace"] = _count_or(cfg, "moe_layer_num_skipped", where, 0)


def _moe(cfg: dict[str, Any], entry: dict[str, Any], model_type: str, where: str) -> None:
    """Expert counts and widths, renamed to the catalog's DeepSeek-style keys."""
    if model_type == "hunyuan_v1_moe":
        return _hunyuan(cfg, entry, where)
    entry["n_routed_experts"] = _count(cfg, str(traits(model_type).experts), where)
    top_k = next((k for k in ("num_experts_per_tok", "moe_k") if cfg.get(k)), "experts_per_token")
    entry["num_experts_per_tok"] = _count(cfg, top_k, where)
    if model_type == "llama4_text":
        # routed experts and one shared expert of intermediate_size; dense layers of _mlp
        width = _count(cfg, "intermediate_size", where)
        entry["intermediate_size"] = width
        entry["moe_intermediate_size"] = width
        entry["n_shared_experts"] = 1
        entry["interleave_moe_layer_step"] = _count_or(cfg, "interleave_moe_layer_step", where, 1)
        entry["intermediate_size_mlp"] = _count(cfg, "intermediate_size_mlp", where)
    elif traits(model_type).experts_ffn_wide:
        width = _count(cfg, "intermediate_size", where)
        entry["intermediate_size"] = width
        entry["moe_intermediate_size"] = width
    else:
        width = _count(cfg, "moe_intermediate_size", where)
        entry["moe_intermediate_size"] = width
        entry["intermediate_size"] = _count_or(cfg, "intermediate_size", where, width)
    if model_type in ("qwen2_moe", "qwen3_moe") and (
        cfg.get("decoder_sparse_step", 1) != 1 or cfg.get("mlp_only_layers")
    ):
        raise InputError(
            f"{where}: {model_type} with dense layers (decoder_sparse_step / "
            "mlp_only_layers) is not supported"
        )
    if model_type == "qwen2_moe" and cfg.get("shared_expert_intermediate_size"):
        # one shared expert of shared_expert_intermediate_size, counted as n routed-width ones
        # (same parameters and FLOPs: 3·D·(n·F_moe)); transformers Qwen2MoeSparseMoeBlock
        shared = _count(cfg, "shared_expert_intermediate_size", where)
        if width < 1:
            raise InputError(
                f"{where}: key 'moe_intermediate_size' must be at least 1, got {width}"
            )
        if shared % width:
            raise InputError(
                f"{where}: shared_expert_intermediate_size {shared} is not a multiple of "
                f"moe_intermediate_size {width}, which roofline needs to count the shared expert"
            )
        entry["n_shared_experts"] = shared // width
    if model_type == "ernie4_5_moe":
        # transformers Ernie4_5_MoeDecoderLayer: MoE on layers moe_layer_start_index ..
        # moe_layer_end_index every moe_layer_interval; one shared MLP of
        # moe_intermediate_size x moe_num_shared_experts (counted as that many experts)
        end = cfg.get("moe_layer_end_index")
        last = entry["num_hidden_layers"] - 1
        if cfg.get("moe_layer_interval", 1) != 1 or end not in (None, -1, last):
            raise InputError(
                f"{where}: ernie4_5_moe with moe_layer_interval other than 1 or dense layers "
                "after moe_layer_end_index is not supported"
            )
        entry["n_shared_experts"] = _count_or(cfg, "moe_num_shared_experts", where, 0)
        entry["first_k_dense_replace"] = _count_or(cfg, "moe_layer_start_index", where, 0)
    if model_type.startswith("deepseek") or model_type == "glm4_moe":
        if cfg.get("moe_layer_freq", 1) != 1:
            raise InputError(f"{where}: moe_layer_freq other than 1 is not supported")
        entry["n_shared_experts"] = _count_or(cfg, "n_shared_experts", where, 0)
        entry["first_k_dense_replace"] = _count_or(cfg, "first_k_dense_replace", where, 0)
        if cfg.get("num_nextn_predict_layers"):
            entry["num_nextn_predict_layers"] = _count(cfg, "num_nextn_predict_layers", where)
        if model_type == "deepseek_v32":
            if not isinstance(cfg.get("index_topk"), int) or cfg["index_topk"] < 1:
                raise InputError(f"{where}: deepseek_v32 needs a positive integer index_topk")
            entry["index_topk"] = cfg["index_topk"]


def _local_attention(cfg: dict[str, Any], entry: dict[str, Any], model_type: str, where: str):
    # local attention (Llama 4: chunked attention on the RoPE layers, every 4th layer global)
    chunk = cfg.get("attention_chunk_size")
    if model_type == "llama4_text" and chunk:
        layers = entry["num_hidden_layers"]
        rope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]
        entry["sliding_window"] = whole(where, "attention_chunk_size", chunk)
        entry["layer_types"] = ["sliding_attention" if r else "full_attention" for r in rope]
    window = cfg.get("sliding_window")
    if model_type == "qwen2" and not cfg.get("use_sliding_window"):
        window = None
    if window and traits(model_type).windowed:
        entry["sliding_window"] = whole(where, "sliding_window", window)
        types = cfg.get("layer_types")
        if types:
            entry["layer_types"] = list(types)
        elif model_type == "gemma2":  # even layers local (Gemma 2 is_sliding = not layer_idx % 2)
            entry["layer_types"] = [
                "sliding_attention" if i % 2 == 0 else "full_attention"
                for i in range(entry["num_hidden_layers"])
            ]
        elif model_type in ("gemma3", "gemma3_text"):
            entry["sliding_window_pattern"] = _count_or(cfg, "sliding_window_pattern", where, 6)
        elif model_type in ("cohere2", "exaone4"):
            # every p-th layer global (Cohere2Config sliding_window_pattern 4); EXAONE 4 may
            # spell it as a string such as "LLLG" (L local, G global), repeated over the layers
            pattern = cfg.get("sliding_window_pattern") or 4
            if isinstance(pattern, str):
                if set(pattern) - {"L", "G"}:
                    raise InputError(f"{where}: sliding_window_pattern {pattern!r} is not L/G")
                entry["layer_types"] = [
                    "sliding_attention" if pattern[i % len(pattern)] == "L" else "full_attention"
                    for i in range(entry["num_hidden_layers"])
                ]
            else:
                entry["sliding_window_pattern"] = whole(where, "sliding_window_pattern", pattern)
        elif model_type in ("gpt_oss", "olmo3"):  # (OLMo 3: 3 of 4 local, the last global)
            raise InputError(f"{where}: missing field 'layer_types'")


def _refuse(where: str, what: str) -> None:
    raise InputError(
        f"{where}: {what}, which roofline does not count; refusing rather than miscount"
    )


def _family_fields(cfg: dict[str, Any], entry: dict[str, Any], family: Any, where: str) -> None:
    """Fields of the families read as another model_type or needing a check: Seed-OSS biases
    (SeedOssAttention: attention_bias on q, k, v; attention_out_bias on o), Cohere's use_qk_norm,
    Phi-3.5-MoE's lm_head bias, StarCoder 2's biases (use_bias), MiniMax-M2's layer kinds and q/k
    norm, DeepSeek-V3.2's indexer shape. Whatever would change the count unmodelled is refused."""
    model_type = entry["model_type"]
    if cfg.get("mlp_bias") and model_type != "starcoder2":
        _refuse(where, "mlp_bias true puts biases on the FFN")
    if family == "seed_oss" or "attention_out_bias" in cfg:
        qkv, out = bool(cfg.get("attention_bias")), bool(cfg.get("attention_out_bias"))
        entry.pop("attention_bias", None)
        if out and not qkv:
            _refuse(where, "attention_out_bias without attention_bias (a bias on o alone)")
        if qkv:
            entry["attention_bias" if out else "qkv_bias"] = True
    if family in ("ernie4_5", "ernie4_5_moe") and cfg.get("use_bias"):
        _refuse(where, "use_bias true puts biases on ERNIE 4.5's projections")
    if cfg.get("use_qk_norm") and (
        model_type in ("cohere", "cohere2", "hunyuan_v1_moe") or family == "hunyuan_v1_dense"
    ):
        entry["use_qk_norm"] = True  # Hunyuan: query_layernorm / key_layernorm over head_dim
    if cfg.get("use_cla"):
        _refuse(where, "use_cla shares K/V across layers (cross-layer attention)")
    if model_type == "phimoe" and cfg.get("lm_head_bias") is not True:
        _refuse(where, "phimoe without lm_head_bias true (every published Phi-3.5-MoE has it)")
    if model_type == "starcoder2":
        if cfg.get("use_bias", True) is not True:
            _refuse(where, "starcoder2 with use_bias false (roofline counts its biases)")
        entry["attention_bias"] = True  # q, k, v and o (Starcoder2Attention bias=use_bias)
    if model_type == "minimax_m2":
        kinds = set(cfg.get("attn_type_list") or [1])
        if kinds != {1}:
            _refuse_linear_attention(
                "this MiniMax model",
                "some of its layers use lightning (linear) attention (attn_type_list 0)",
                where,
            )
        if not cfg.get("use_qk_norm") or cfg.get("qk_norm_type", "per_layer") != "per_layer":
            _refuse(where, "minimax_m2 without use_qk_norm and qk_norm_type per_layer")
        if cfg.get("shared_intermediate_size"):
            _refuse(where, "minimax_m2 with shared_intermediate_size (a shared expert)")
    if model_type == "deepseek_v32":
        shape = (cfg.get("index_n_heads"), cfg.get("index_head_dim"))
        if shape != (DSA_INDEX_HEADS, DSA_INDEX_HEAD_DIM):
            _refuse(
                where,
                f"a DSA indexer of {shape[0]} heads x {shape[1]} (roofline counts "
                f"V3.2-Exp's {DSA_INDEX_HEADS} x {DSA_INDEX_HEAD_DIM})",
            )


def _granite4_dense(cfg: dict[str, Any]) -> dict[str, Any]:
    """Granite 4.0 ships its pure-attention dense models (granite-4.0-micro) as granitemoehybrid
    with every layer_types entry "attention" and no experts: its shared_mlp (input_linear D->2F,
    output_linear F->D, transformers GraniteMoeHybridMLP) is a gated FFN of
    shared_intermediate_size, so it reads as granite. Hybrids with Mamba layers stay refused."""
    types = cfg.get("layer_types") or cfg.get("layers_block_type") or []
    if (
        cfg.get("model_type") != "granitemoehybrid"
        or not types
        or set(types) != {"attention"}
        or cfg.get("num_local_experts")
        or not cfg.get("shared_intermediate_size")
    ):
        return cfg
    rest = {k: v for k, v in cfg.items() if k not in ("layer_types", "layers_block_type")}
    return {
        **rest,
        "model_type": "granite",
        "architectures": ["GraniteForCausalLM"],
        "intermediate_size": cfg["shared_intermediate_size"],
    }


def entry_from_config(
    cfg: dict[str, Any], model_id: str, where: str = "config.json", source: str | None = None
) -> dict[str, Any]:
    """A catalog entry (the keys of models/*.yaml) from a config.json mapping."""
    check_config_values(cfg, where)
    outer = cfg = _granite4_dense(cfg)
    _refuse_hybrid(outer, where)  # a wrapper may name the hybrid only outside its text_config
    if "text_config" in cfg and isinstance(cfg["text_config"], dict):  # Gemma 3, Llama 4, Kimi
        text_type = TEXT_TYPES.get(cfg.get("model_type") or "")
        text = cfg["text_config"]
        cfg = {**text, "model_type": text.get("model_type", text_type)}
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in outer:
            cfg["tie_word_embeddings"] = outer["tie_word_embeddings"]  # Qwen3-VL keeps it outside
    if cfg.get("model_type") == "exaone" and "num_layers" in cfg:  # EXAONE 3.5's own names
        cfg = {**cfg, "num_hidden_layers": cfg["num_layers"]}
    if "attention_head_dim" in cfg and cfg.get("head_dim") is None:  # Hunyuan's name
        cfg = {**cfg, "head_dim": cfg["attention_head_dim"]}
    family = cfg.get("model_type")  # as the config names it, before aliases
    model_type = resolve_model_type(cfg, where)
    types = cfg.get("layer_types") or []
    odd = sorted({t for t in types if t not in ("sliding_attention", "full_attention")})
    if odd:
        raise InputError(
            f"{where}: layer_types {', '.join(map(str, odd))} are not supported (roofline models "
            "softmax attention with a KV cache: full or sliding-window)"
        )
    entry: dict[str, Any] = {
        "id": model_id,
        "name": model_id,
        "source": source or f"imported from {where}",
        "model_type": model_type,
    }
    if model_type != cfg.get("model_type"):
        entry["notes"] = f"config.json model_type {cfg.get('model_type')!r} read as {model_type}"
    for key in _SHAPE:
        entry[key] = _count(cfg, key, where)
    for key in _OPTIONAL_COUNTS:
        if cfg.get(key) is not None:
            entry[key] = whole(where, key, cfg[key])
    for key in _OPTIONAL_FLAGS:
        if cfg.get(key) is not None:
            entry[key] = cfg[key]
    tied_default = traits(model_type).tied or traits(str(family)).tied
    if "tie_word_embeddings" not in entry and tied_default:
        entry["tie_word_embeddings"] = True  # the transformers config class default
    if model_type in ("glm", "glm4", "glm4_moe"):
        # GLM attention_bias is on q, k and v only (transformers GlmAttention, Glm4Attention,
        # Glm4MoeAttention: o_proj has no bias)
        if entry.pop("attention_bias", False):
            entry["qkv_bias"] = True
        if cfg.get("use_qk_norm"):
            entry["use_qk_norm"] = True
    elif model_type != "gpt_oss" and not cfg.get("attention_bias"):
        entry.pop("attention_bias", None)
    if traits(model_type).experts:
        _moe(cfg, entry, model_type, where)
    else:
        entry["intermediate_size"] = _count(cfg, "intermediate_size", where)
    if model_type.startswith("deepseek"):
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            entry[key] = _count(cfg, key, where)
        entry["q_lora_rank"] = _count(cfg, "q_lora_rank", where) if cfg.get("q_lora_rank") else None
    _family_fields(cfg, entry, family, where)
    _local_attention(cfg, entry, model_type, where)
    if "vision_config" in outer:
        note = "text decoder only: the vision encoder (vision_config) is not counted"
        entry["notes"] = f"{entry['notes']}; {note}" if "notes" in entry else note
    quant = cfg.get("quantization_config") or outer.get("quantization_config")
    if quant is not None and not isinstance(quant, dict):  # ignored, it would read as 16-bit
        raise InputError(f"{where}: quantization_config must be a mapping, got {quant!r}")
    if isinstance(quant, dict):
        fmt, what = quantized_weights(quant, where)
        assert fmt in WEIGHT_FORMATS, fmt
        entry["weights"] = fmt
        note = f"checkpoint weights: {what} (format {fmt})"
        entry["notes"] = f"{entry['notes']}; {note}" if "notes" in entry else note
    return entry

"""Map a Hugging Face config.json onto a catalog model entry (pure: dict in, dict out).

Most catalog keys are config.json names already; the mapping renames the few that differ by
model_type (num_local_experts / num_experts → n_routed_experts, a MoE's intermediate_size →
moe_intermediate_size), unwraps multimodal `text_config`, and spells out local-attention layouts
(Gemma 2 alternates local and global layers starting with a local one; Llama 4 runs chunked
attention, modelled as a window, on its RoPE layers and global attention on every 4th).
"""

from __future__ import annotations

from typing import Any

from roofline.errors import InputError
from roofline.model import MODEL_TYPES

SUPPORTED = MODEL_TYPES
_SHAPE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
# config classes whose tie_word_embeddings defaults to True (transformers Gemma2Config,
# Gemma3TextConfig); the others default to False, as ModelArch does
_TIED_BY_DEFAULT = ("gemma2", "gemma3", "gemma3_text")
_OPTIONAL = (
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
)


def _need(cfg: dict[str, Any], key: str, where: str) -> Any:
    if cfg.get(key) is None:
        raise InputError(f"{where}: missing field '{key}'")
    return cfg[key]


def entry_from_config(
    cfg: dict[str, Any], model_id: str, where: str = "config.json", source: str | None = None
) -> dict[str, Any]:
    """A catalog entry (the keys of models/*.yaml) from a config.json mapping."""
    if "text_config" in cfg and isinstance(cfg["text_config"], dict):  # Gemma 3, Llama 4
        text_type = {"gemma3": "gemma3_text", "llama4": "llama4_text"}.get(cfg.get("model_type"))
        text = cfg["text_config"]
        cfg = {**text, "model_type": text.get("model_type", text_type)}
    model_type = cfg.get("model_type")
    if model_type not in SUPPORTED:
        raise InputError(
            f"{where}: model_type {model_type!r} is not supported",
            hint=f"supported: {', '.join(SUPPORTED)}",
        )
    entry: dict[str, Any] = {
        "id": model_id,
        "name": model_id,
        "source": source or f"imported from {where}",
        "model_type": model_type,
    }
    for key in _SHAPE:
        entry[key] = int(_need(cfg, key, where))
    for key in _OPTIONAL:
        if cfg.get(key) is not None:
            entry[key] = cfg[key]
    if "tie_word_embeddings" not in entry and model_type in _TIED_BY_DEFAULT:
        entry["tie_word_embeddings"] = True  # the transformers config class default
    if model_type != "gpt_oss":
        entry.pop("attention_bias", None) if not cfg.get("attention_bias") else None
    moe_types = {
        "mixtral": "num_local_experts",
        "llama4_text": "num_local_experts",
        "qwen3_moe": "num_experts",
        "gpt_oss": "num_local_experts",
        "deepseek_v2": "n_routed_experts",
        "deepseek_v3": "n_routed_experts",
    }
    if model_type in moe_types:
        entry["n_routed_experts"] = int(_need(cfg, moe_types[model_type], where))
        entry["num_experts_per_tok"] = int(
            cfg.get("num_experts_per_tok") or _need(cfg, "experts_per_token", where)
        )
        if model_type == "llama4_text":
            # routed experts and one shared expert of intermediate_size; dense layers of _mlp
            width = int(_need(cfg, "intermediate_size", where))
            entry["intermediate_size"] = width
            entry["moe_intermediate_size"] = width
            entry["n_shared_experts"] = 1
            entry["interleave_moe_layer_step"] = int(cfg.get("interleave_moe_layer_step") or 1)
            entry["intermediate_size_mlp"] = int(_need(cfg, "intermediate_size_mlp", where))
        elif model_type in ("mixtral", "gpt_oss"):
            width = int(_need(cfg, "intermediate_size", where))
            entry["intermediate_size"] = width
            entry["moe_intermediate_size"] = width
        else:
            entry["moe_intermediate_size"] = int(_need(cfg, "moe_intermediate_size", where))
            entry["intermediate_size"] = int(
                cfg.get("intermediate_size") or entry["moe_intermediate_size"]
            )
        if model_type == "qwen3_moe" and (
            cfg.get("decoder_sparse_step", 1) != 1 or cfg.get("mlp_only_layers")
        ):
            raise InputError(
                f"{where}: qwen3_moe with dense layers (decoder_sparse_step / "
                "mlp_only_layers) is not supported"
            )
        if model_type.startswith("deepseek"):
            if cfg.get("moe_layer_freq", 1) != 1:
                raise InputError(f"{where}: moe_layer_freq other than 1 is not supported")
            entry["n_shared_experts"] = int(cfg.get("n_shared_experts") or 0)
            entry["first_k_dense_replace"] = int(cfg.get("first_k_dense_replace") or 0)
    else:
        entry["intermediate_size"] = int(_need(cfg, "intermediate_size", where))
    if model_type.startswith("deepseek"):
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            entry[key] = int(_need(cfg, key, where))
        entry["q_lora_rank"] = cfg.get("q_lora_rank") or None
        if cfg.get("num_nextn_predict_layers"):
            entry["num_nextn_predict_layers"] = int(cfg["num_nextn_predict_layers"])
    # local attention (Llama 4: chunked attention on the RoPE layers, every 4th layer global)
    chunk = cfg.get("attention_chunk_size")
    if model_type == "llama4_text" and chunk:
        layers = entry["num_hidden_layers"]
        rope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]
        entry["sliding_window"] = int(chunk)
        entry["layer_types"] = ["sliding_attention" if r else "full_attention" for r in rope]
    window = cfg.get("sliding_window")
    if model_type == "qwen2" and not cfg.get("use_sliding_window"):
        window = None
    if window and model_type in ("gemma2", "gemma3", "gemma3_text", "gpt_oss", "mistral"):
        entry["sliding_window"] = int(window)
        types = cfg.get("layer_types")
        if types:
            entry["layer_types"] = list(types)
        elif model_type == "gemma2":  # even layers local (Gemma 2 is_sliding = not layer_idx % 2)
            entry["layer_types"] = [
                "sliding_attention" if i % 2 == 0 else "full_attention"
                for i in range(entry["num_hidden_layers"])
            ]
        elif model_type in ("gemma3", "gemma3_text"):
            entry["sliding_window_pattern"] = int(cfg.get("sliding_window_pattern") or 6)
        elif model_type == "gpt_oss":
            raise InputError(f"{where}: missing field 'layer_types'")
    return entry

"""Launch lines: the command that starts a sized replica on a serving engine (vLLM, SGLang,
TensorRT-LLM), built only from flags listed in hardware/engine_flags.yaml, each read from the
engine's own argument definitions at a stated commit (`source:` per flag, the engine version
per engine).

How a layout maps to each engine (their argument docs, quoted in the data file):
- vLLM: --tensor-parallel-size is the attention TP group (TP / attention-DP); attention-DP is
  --data-parallel-size with --enable-expert-parallel (the experts then span TP x DP GPUs, EP =
  TP); EP = TP without attention-DP is --enable-expert-parallel alone. Scheduler limits are per
  engine core, so per attention-DP rank. Redundant expert slots: --enable-eplb with
  --eplb-config {"num_redundant_experts": R}.
- SGLang: --tp-size is every GPU of a stage, --dp-size with --enable-dp-attention the
  attention-DP groups, --ep-size the EP degree, --ep-num-redundant-experts R.
- TensorRT-LLM (trtllm-serve): --tp_size, --pp_size, --ep_size; attention-DP and the KV dtype are
  keys of the --extra_llm_api_options YAML file; the weight format comes from the checkpoint.
An EP degree the engine cannot express (vLLM: EP other than 1 or TP x DP) gives no line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from roofline.errors import CatalogError, InputError
from roofline.files import read_text, safe_load_yaml

FLAGS_FILE = "engine_flags.yaml"
ENGINES = ("vllm", "sglang", "trtllm")


@dataclass(frozen=True)
class LaunchSpec:
    """What a launch line states, in roofline's terms (per replica; scheduler limits per
    attention-DP rank, as the engines take them)."""

    model_path: str
    tp: int
    pp: int = 1
    ep: int = 1
    attention_dp: int = 1
    redundant_experts: int = 0
    max_seqs: int | None = None  # per attention-DP rank
    max_batched_tokens: int | None = None  # per attention-DP rank
    max_model_len: int | None = None
    memory_fraction: float | None = None
    weights: str = "bf16"
    kv_dtype: str = "bf16"
    nodes: int = 1


@dataclass(frozen=True)
class Launch:
    engine: str
    version: str
    argv: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)  # an options file's keys (TRT-LLM)
    note: str = ""


@lru_cache(maxsize=4)
def engine_flags(path: str | None = None) -> dict[str, dict[str, Any]]:
    """hardware/engine_flags.yaml by engine id, checked: every flag names its source."""
    if path is None:
        from roofline.catalog import shipped_dirs

        path = str(shipped_dirs()[0] / FLAGS_FILE)
    raw = safe_load_yaml(read_text(Path(path)))
    if not isinstance(raw, dict) or not isinstance(raw.get("engines"), list):
        raise CatalogError(f"{path}: expected a top-level 'engines' list")
    out = {}
    for e in raw["engines"]:
        for f in e.get("flags", []) + e.get("options", []):
            src = f.get("source") or {}
            if not all(src.get(k) for k in ("repo", "path", "commit")):
                name = f.get("flag") or f.get("key")
                raise CatalogError(f"{path}: {e.get('id')} {name}: source needs repo, path, commit")
        out[e["id"]] = e
    return out


def _flag(table: dict[str, Any], means: str) -> str:
    """The engine's flag for one thing roofline states (the first listed)."""
    for f in table["flags"]:
        if f["means"] == means:
            return f["flag"]
    raise CatalogError(f"engine_flags.yaml: {table['id']} has no flag for {means}")


def _value(table: dict[str, Any], kind: str, fmt: str) -> str | None:
    return (table.get("values") or {}).get(kind, {}).get(fmt)


def launch(engine: str, spec: LaunchSpec) -> Launch:
    """The launch line for `spec` on `engine` (module docstring)."""
    if engine not in ENGINES:
        raise InputError(f"no launch line for engine '{engine}': vllm, sglang or trtllm")
    t = engine_flags()[engine]
    argv = [spec.model_path if a == "MODEL" else a for a in t["command"]]
    notes = []

    def add(means: str, value: object | None = None, when: bool = True) -> None:
        if not when:
            return
        argv.append(_flag(t, means))
        if value is not None:
            argv.append(str(value))

    atp = spec.tp // spec.attention_dp
    adp = spec.attention_dp > 1
    if engine == "vllm":
        if spec.ep not in (1, spec.tp):
            return Launch(engine, t["version"], (), {}, "vLLM runs EP over TP x DP only")
        add("attention_tp", atp)
        add("pp", spec.pp, spec.pp > 1)
        add("attention_dp", spec.attention_dp, adp)
        add("ep", None, spec.ep > 1)
        if spec.redundant_experts:
            argv += ["--enable-eplb", "--eplb-config"]
            argv.append(f'{{"num_redundant_experts": {spec.redundant_experts}}}')
    elif engine == "sglang":
        add("tp", spec.tp)
        add("pp", spec.pp, spec.pp > 1)
        add("ep", spec.ep, spec.ep > 1)
        if adp:
            argv += [_flag(t, "attention_dp"), str(spec.attention_dp), "--enable-dp-attention"]
        add("redundant_experts", spec.redundant_experts, spec.redundant_experts > 0)
    else:
        add("tp", spec.tp)
        add("pp", spec.pp, spec.pp > 1)
        add("ep", spec.ep, spec.ep > 1)
        if spec.redundant_experts:
            notes.append(f"{spec.redundant_experts} redundant expert slots: not set by a flag")
    seqs = spec.max_seqs
    if engine == "sglang" and seqs is not None:
        seqs *= spec.attention_dp  # SGLang's cap is the server's, shared by its DP ranks
    add("max_seqs", seqs, seqs is not None)
    add("max_batched_tokens", spec.max_batched_tokens, spec.max_batched_tokens is not None)
    add("max_model_len", spec.max_model_len, spec.max_model_len is not None)
    if spec.memory_fraction is not None:
        add("memory_fraction", f"{spec.memory_fraction:g}")
    options: dict[str, Any] = {}
    if engine == "trtllm":
        if adp:
            options["enable_attention_dp"] = True
        kv = _value(t, "kv_dtype", spec.kv_dtype)
        if kv:
            options["kv_cache_config"] = {"dtype": kv}
        if options:
            add("options_file", "extra_llm_api_options.yaml")
        notes.append(t.get("notes", ""))
    else:
        q = _value(t, "quantization", spec.weights)
        add("quantization", q, q is not None)
        kv = _value(t, "kv_dtype", spec.kv_dtype)
        add("kv_dtype", kv, kv is not None)
    if spec.nodes > 1:
        notes.append(f"spans {spec.nodes} nodes: add the engine's multi-node flags")
    return Launch(engine, t["version"], tuple(argv), options, "; ".join(n for n in notes if n))


def launch_spec(
    model_id: str,
    source: str,
    row: dict[str, Any],
    max_model_len: int,
    memory_fraction: float,
    weights: str,
    kv_dtype: str,
) -> LaunchSpec:
    """The spec of one sized deployment (a row of size's JSON: tp, pp, ep, attention_dp,
    redundant_experts, max_seqs, max_batched_tokens per rank, nodes)."""
    return LaunchSpec(
        model_path(model_id, source),
        row["tp"],
        row["pp"],
        row["ep"],
        row["attention_dp"],
        row["redundant_experts"],
        row["max_seqs"] or None,
        row["max_batched_tokens"] or None,
        max_model_len,
        memory_fraction,
        weights,
        kv_dtype,
        row["nodes"],
    )


def launch_json(engine: str, spec: LaunchSpec, disaggregated: bool = False) -> dict | None:
    """size's `launch`: {engine, version, argv, options_file, note}; None for an engine
    without launch flags or a disaggregated deployment (two pools, two commands)."""
    if engine not in ENGINES or disaggregated:
        return None
    x = launch(engine, spec)
    return {
        "engine": x.engine,
        "version": x.version,
        "argv": list(x.argv) or None,
        "options_file": x.options or None,
        "note": x.note,
    }


def model_path(model_id: str, source: str) -> str:
    """The checkpoint a launch line names: the Hugging Face repository that opens the catalog
    entry's `source` (e.g. "deepseek-ai/DeepSeek-R1 config.json"), else the catalog id."""
    first = source.split()[0] if source.split() else ""
    if first.count("/") == 1 and not first.startswith(("http", "/")):
        return first
    return model_id


def shell(argv: tuple[str, ...]) -> str:
    """The argv as one shell line (arguments with spaces or braces single-quoted)."""
    return " ".join(f"'{a}'" if any(c in a for c in ' {}"') else a for a in argv)

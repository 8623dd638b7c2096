"""KV-cache levers: attention variants compared, paged vs contiguous allocation, eviction.

- Attention variants (DeepSeek-V2 report, Table 1, per token per layer in elements):
  MHA 2·N·H, GQA 2·K·H, MQA 2·H, MLA d_c + d_rope (DeepSeek-V2: d_c = 4·H, d_rope = H/2, "equal to
  GQA with only 2.25 groups").
- Allocation (Kwon et al., "Efficient Memory Management for LLM Serving with PagedAttention",
  SOSP'23): contiguous allocation reserves the maximum length for every request; paged allocation
  rounds each sequence up to whole blocks, wasting only part of its last block.
- Eviction (H2O, Zhang et al. 2023; SnapKV, Li et al. 2024; StreamingLLM, Xiao et al. 2023): a
  fixed number of tokens per sequence is kept (sink + recent window for StreamingLLM). Accuracy
  effects are not modelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from roofline.catalog.files import read_text
from roofline.catalog.lengths import length_table
from roofline.domain.errors import InputError
from roofline.domain.model import ModelArch
from roofline.step.memory import MemoryPlan, kv_bytes_per_sequence, kv_bytes_per_token, max_batch
from roofline.step.ops import Deployment, cached_tokens_cap, kv_bytes_per_token_layer
from roofline.timing.roofline import FloatArray


@dataclass(frozen=True)
class AttentionVariant:
    name: str
    description: str
    kv_elements_per_token_layer: float  # K and V (or latent) elements per token per layer


def attention_variants(model: ModelArch) -> list[AttentionVariant]:
    """The model's own attention next to MHA, GQA (its K), MQA and an MLA of the same head width.
    For an MLA model, 'MHA of its own width' uses N heads of qk_nope_head_dim (DeepSeek-V2's H)."""
    n = model.num_attention_heads
    h = model.qk_nope_head_dim if model.is_mla and model.qk_nope_head_dim else model.d_head
    k = model.n_kv_heads
    own = (
        (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        if model.is_mla
        else 2 * k * model.d_head
    )
    rows = [
        AttentionVariant(f"own {model.attention_kind}", "as configured", own),
        AttentionVariant("MHA", f"{n}×{h}", 2 * n * h),
    ]
    if not model.is_mla:
        rows.append(AttentionVariant("GQA", f"{k}×{h}", 2 * k * h))
    rows += [
        AttentionVariant("MQA", f"1×{h}", 2 * h),
        AttentionVariant("MLA", f"latent {4 * h}+{h // 2}", 4 * h + h / 2),  # d_c = 4H, rope H/2
    ]
    return rows


@dataclass(frozen=True)
class LayerGroupKv:
    layers: int
    window: int | None
    tokens_held: int
    kv_bytes_per_sequence: float


@dataclass(frozen=True)
class KvFootprint:
    """The KV cache of `batch` sequences of `context` tokens, per GPU (KV heads split over TP,
    layers over PP)."""

    kv_bytes_per_token_per_layer: float
    kv_bytes_per_token: float  # all layers at full attention
    kv_bytes_per_sequence: float  # window- and eviction-capped at the context
    kv_bytes_total: float
    layer_groups: tuple[LayerGroupKv, ...]


def kv_footprint(model: ModelArch, dep: Deployment, context: int, batch: int = 1) -> KvFootprint:
    """KV bytes per token, per sequence and per batch (DESIGN.md §3: 2·K·H·b per token per layer,
    MLA (kv_lora_rank + qk_rope_head_dim)·b; sliding-window layers hold at most their window, an
    eviction budget caps every layer)."""
    per_layer = kv_bytes_per_token_layer(model, dep.kv.bits, dep.tp)
    per_seq = float(kv_bytes_per_sequence(model, dep, context))
    groups = []
    for g in model.layer_groups:
        cap = cached_tokens_cap(g.window, dep)
        held = min(context, cap) if cap else context
        groups.append(LayerGroupKv(g.count, g.window, held, g.count * held * per_layer / dep.pp))
    return KvFootprint(
        per_layer,
        kv_bytes_per_token(model, dep.kv.bits, dep.tp, dep.pp),
        per_seq,
        per_seq * batch,
        tuple(groups),
    )


@dataclass(frozen=True)
class AttentionComparison:
    variant: str
    description: str
    kv_bytes_per_token: float
    ratio_to_mha: float
    ratio_to_baseline: float | None  # against `baseline` at its own bits, when one is given


def compare_attention(
    model: ModelArch, kv_bits: float, baseline_kv_bytes_per_token: float | None = None
) -> list[AttentionComparison]:
    """The model's attention next to MHA, GQA, MQA and MLA of the same head width, in KV bytes
    per token over all layers (DeepSeek-V2 report, Table 1)."""
    variants = attention_variants(model)
    scale = model.num_hidden_layers * kv_bits / 8
    mha = next(v for v in variants if v.name == "MHA").kv_elements_per_token_layer * scale
    rows = []
    for v in variants:
        per_token = v.kv_elements_per_token_layer * scale
        ref = baseline_kv_bytes_per_token
        rows.append(
            AttentionComparison(
                v.name, v.description, per_token, per_token / mha, per_token / ref if ref else None
            )
        )
    return rows


@dataclass(frozen=True)
class EvictionGain:
    """What keeping `kv_budget_tokens` per sequence saves (accuracy effects not modelled)."""

    kv_budget_tokens: int
    kv_bytes_per_sequence_without_eviction: float
    kv_bytes_per_sequence_with_eviction: float
    decode_kv_read_saved_bytes_per_step: float  # decode reads the whole cache every step
    max_batch_without_eviction: int | None
    max_batch_with_eviction: int | None

    @property
    def saved_fraction(self) -> float:
        return 1 - self.kv_bytes_per_sequence_with_eviction / (
            self.kv_bytes_per_sequence_without_eviction
        )


def eviction_gain(
    model: ModelArch, dep: Deployment, context: int, batch: int, plan: MemoryPlan | None = None
) -> EvictionGain:
    """KV bytes and decode read saved by evicting down to dep.kv_token_budget tokens (H2O,
    SnapKV, StreamingLLM), and the max batch with and without it when a memory plan is given."""
    if dep.kv_token_budget is None:
        raise InputError("eviction needs a KV budget (--kv-budget or --sink/--window)")
    full_dep = replace(dep, kv_token_budget=None)
    full = float(kv_bytes_per_sequence(model, full_dep, context))
    kept = float(kv_bytes_per_sequence(model, dep, context))
    without = with_ = None
    if plan is not None:
        without = int(max_batch(plan, model, full_dep, context))
        with_ = int(max_batch(plan, model, dep, context))
    return EvictionGain(dep.kv_token_budget, full, kept, (full - kept) * batch, without, with_)


@dataclass(frozen=True)
class AllocationReport:
    sequences: int
    used_bytes: float
    allocated_bytes: float
    waste_fraction: float
    mean_length: float


def allocation_waste(
    lengths: FloatArray, kv_bytes_per_token: float, allocation: str, block_tokens: int, max_len: int
) -> AllocationReport:
    """Allocated vs used KV bytes for a set of sequence lengths.
    contiguous: every request reserves max_len tokens (pre-vLLM servers);
    paged: ceil(L / block)·block tokens per sequence."""
    lengths = np.minimum(np.asarray(lengths, dtype=float), max_len)
    used = float(lengths.sum()) * kv_bytes_per_token
    if allocation == "contiguous":
        slots = len(lengths) * float(max_len)
    elif allocation == "paged":
        slots = float((np.ceil(lengths / block_tokens) * block_tokens).sum())
    else:
        raise InputError(f"--allocation must be paged or contiguous, got {allocation}")
    allocated = slots * kv_bytes_per_token
    return AllocationReport(
        len(lengths), used, allocated, 1.0 - used / allocated, float(lengths.mean())
    )


# Named length distributions: (generator, default parameters, description)
NAMED = {
    "sharegpt": (
        "lognormal",
        {"mean": 500.0, "sigma": 0.9},
        "ShareGPT-like chat lengths: log-normal, mean 500 tokens (vLLM paper §6: mean "
        "input 161 + output 338 tokens), sigma 0.9 [sigma uncertain]",
    ),
    "alpaca": (
        "lognormal",
        {"mean": 78.0, "sigma": 0.6},
        "Alpaca-like instruction lengths: log-normal, mean 78 tokens (vLLM paper §6: "
        "input 19 + output 58), sigma 0.6 [sigma uncertain]",
    ),
}


MAX_SAMPLES = 1_000_000  # lengths a distribution may draw (n=...)
# shipped tables of (prompt, output) rows (roofline.catalog.lengths): "<table>-prompt" and
# "<table>-output" read one column each, rows in the table's order from the first, so that a
# workload's prompt and output of request i come from one row (the harness's pairing)
TABLE_COLUMNS = {"sharegpt-prompt": ("sharegpt", 0), "sharegpt-output": ("sharegpt", 1)}
_PARAMS = {
    "lognormal": ("mean", "sigma"),
    "uniform": ("low", "high"),
    "fixed": ("length",),
    "eos": ("mean", "max"),
    "table": ("mean",),
}


def eos_stop_probability(mean: float, cap: float) -> float:
    """The per-token end-of-sequence probability h whose capped geometric length
    L = min(G, cap), G ~ Geometric(h) on 1, 2, …, has E[L] = mean: E[L] = Σ_{k<cap} (1−h)^k
    = (1 − (1−h)^cap)/h (a sum of survival probabilities), decreasing in h, solved by
    bisection. Generation that stops at EOS with a constant hazard or at max_tokens."""
    if mean >= cap:
        return 0.0
    lo, hi = 1e-12, 1.0
    for _ in range(200):
        h = 0.5 * (lo + hi)
        if (1.0 - (1.0 - h) ** cap) / h > mean:
            lo = h
        else:
            hi = h
    return 0.5 * (lo + hi)


def _check_params(name: str, params: dict[str, float], what: str) -> None:
    """Distribution parameters must be known, finite and in range before anything is drawn."""
    for key, value in params.items():
        if key not in _PARAMS[name]:
            raise InputError(
                f"{what}: {name} has no parameter '{key}' ({', '.join(_PARAMS[name])})"
            )
        if not np.isfinite(value):
            raise InputError(f"{what}: {key}={value} is not a finite number")
    if name == "lognormal" and (params.get("mean", 1) <= 0 or params.get("sigma", 0) < 0):
        raise InputError(f"{what}: lognormal needs mean > 0 and sigma >= 0")
    if name == "uniform" and not 0 < params.get("low", 1) <= params.get("high", 1):
        raise InputError(f"{what}: uniform needs 0 < low <= high")
    if name == "fixed" and params.get("length", 1) <= 0:
        raise InputError(f"{what}: fixed needs length > 0")
    if name == "eos" and not 1 <= params.get("mean", 1) <= params.get("max", 1):
        raise InputError(f"{what}: eos needs 1 <= mean <= max")
    if name == "table" and params.get("mean", 1) <= 0:
        raise InputError(f"{what}: a table's mean must be positive")


def table_lengths(name: str, n: int, mean: float | None = None) -> FloatArray:
    """The first n lengths of a shipped table's column (TABLE_COLUMNS; repeated in order past its
    rows), scaled so that their mean is `mean` when given (a run's own mean, from its token
    totals: its tokenizer and sample are not the table's) [approximation: one factor for every
    row, so the harness's caps (prompt <= 1,024, total <= 2,048 tokens) move with it]."""
    table, col = TABLE_COLUMNS[name]
    values = np.resize(length_table(table)[col].astype(float), n)
    if mean is not None:
        values = values * (mean / float(values.mean()))
    return np.maximum(values, 1.0)


def listed(lengths: str) -> bool:
    """Lengths given one by one (a list such as 100,250,900, or a file of numbers), not drawn
    from a distribution: what parse_lengths reads as the user's own values."""
    text = lengths.strip()
    return bool(re.fullmatch(r"[0-9.,\s]+", text)) or Path(text).is_file()


def parse_lengths(
    lengths: str, max_len: int, n: int = 10_000, seed: int = 0, what: str = "--lengths"
) -> tuple[FloatArray, str]:
    """Sequence lengths from a list ("100,250,900"), a file of numbers (whitespace or comma
    separated), or a distribution: sharegpt, alpaca, lognormal:mean=500,sigma=0.9,
    uniform:low=1,high=2048, fixed:length=1000, eos:mean=100,max=128 (answers that end at EOS with
    a constant per-token probability or at max_tokens; optional n=… and seed=…), or a shipped
    table's column, sharegpt-prompt / sharegpt-output (optional mean=…: table_lengths; the seed
    is not used, so a prompt and an output column pair row by row). Lengths are clipped to
    [1, max_len]. Returns the lengths and a description of where they came from."""
    text = lengths.strip()
    if re.fullmatch(r"[0-9.,\s]+", text):
        values = np.array([float(x) for x in re.split(r"[,\s]+", text) if x])
        desc = f"{len(values)} listed lengths"
    elif Path(text).is_file():
        raw = read_text(text)
        try:
            values = np.array([float(x) for x in re.split(r"[,\s]+", raw) if x])
        except ValueError:
            raise InputError(
                f"{text}: expected numbers separated by commas or whitespace"
            ) from None
        desc = f"{len(values)} lengths from {text}"
    else:
        name, _, arg_text = text.partition(":")
        params: dict[str, float] = {}
        for item in filter(None, arg_text.split(",")):
            key, _, value = item.partition("=")
            try:
                params[key.strip()] = float(value)
            except ValueError:
                raise InputError(f"{what}: cannot read '{item}' (use key=number)") from None
        n_value, seed_value = params.pop("n", n), params.pop("seed", seed)
        if not (np.isfinite(n_value) and 1 <= n_value <= MAX_SAMPLES and n_value == int(n_value)):
            raise InputError(f"{what}: n must be a whole number from 1 to {MAX_SAMPLES:,}")
        if not (np.isfinite(seed_value) and 0 <= seed_value < 2**63):
            raise InputError(f"{what}: seed must be a whole number >= 0")
        n, seed = int(n_value), int(seed_value)
        desc_prefix = ""
        if name in TABLE_COLUMNS:
            _check_params("table", params, what)
            values = table_lengths(name, n, params.get("mean"))
            shown = f", mean {params['mean']:g}" if "mean" in params else ""
            desc = f"{name} (models/lengths, rows in order{shown}), n={n}"
            return np.clip(np.round(values), 1, max_len), desc
        if name in NAMED:
            kind, defaults, desc_prefix = NAMED[name]
            params = {**defaults, **params}
            name = kind
        if name in _PARAMS:
            _check_params(name, params, what)
        rng = np.random.default_rng(seed)
        if name == "lognormal":
            mean, sigma = params.get("mean", 500.0), params.get("sigma", 0.9)
            mu = np.log(mean) - sigma**2 / 2  # so that E[L] = mean
            values = rng.lognormal(mu, sigma, n)
        elif name == "uniform":
            values = rng.uniform(params.get("low", 1.0), params.get("high", max_len), n)
        elif name == "fixed":
            values = np.full(n, params.get("length", max_len))
        elif name == "eos":  # stops at EOS with a constant per-token hazard, or at max
            cap = params.get("max", max_len)
            h = eos_stop_probability(params.get("mean", cap), cap)
            values = np.minimum(rng.geometric(h, n), cap) if h > 0 else np.full(n, cap)
        else:
            raise InputError(
                f"{what}: unknown distribution '{name}'",
                hint="use a list, a file, sharegpt, alpaca, lognormal:mean=…,sigma=…, "
                "uniform:low=…,high=…, fixed:length=…, eos:mean=…,max=…, "
                "sharegpt-prompt or sharegpt-output",
            )
        shown = ", ".join(f"{k}={v:g}" for k, v in params.items())
        desc = (desc_prefix + "; " if desc_prefix else "") + f"{name}({shown}), n={n}, seed={seed}"
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise InputError(f"{what} needs at least one length, each positive and finite")
    if values.size > MAX_SAMPLES:
        raise InputError(f"{what}: more than {MAX_SAMPLES:,} lengths")
    return np.clip(np.round(values), 1, max_len), desc

"""Every option the commands share, declared once: the same name, type, meaning and default in
every command (a test walks the app and checks). Also the parsers that turn their text into the
core's values, so each command only parses, calls the core and renders.

The workload vocabulary (docs/METRICS.md): `--prompt` and `--output` are tokens per request;
`--context` is the tokens a sequence holds (default prompt + output); `--batch` is the sequences a
replica runs at once. The layout: `--tp --pp --ep` per replica, `--dp` replicas, `--gpus` in all
(= TP x PP x DP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from typing import Annotated

import numpy as np
import typer

from roofline import render
from roofline.domain.errors import DoesNotFitError, InputError, RooflineError
from roofline.domain.hardware import (
    Accelerator,
    Efficiency,
    default_wired_limit_bytes,
    raised_wired_limit_bytes,
)
from roofline.domain.layout import Layout
from roofline.domain.model import ModelArch, past_positions
from roofline.domain.precision import activation_format, kv_format, weight_format
from roofline.domain.units import fmt_bytes, parse_count, parse_memory_bytes, parse_seconds
from roofline.engines.engine import ENGINES
from roofline.engines.engine import Engine as EngineRule
from roofline.step.memory import MemoryPlan, engine_total_bytes, plan_memory
from roofline.step.ops import Deployment

# ---- the defaults, one place ----------------------------------------------------------------
PROMPT = "1k"
OUTPUT = "1k"
BATCH = 1
WEIGHTS = "auto"  # the format the checkpoint ships in (quantization_config), else bf16
KV_DTYPE = "bf16"
ACT_DTYPE = "bf16"
ENGINE = "auto"
MAX_TOKENS = 1e9
MAX_BATCH = 1e7
MAX_GPUS = 4096


class Fmt(str, Enum):
    table = "table"
    json = "json"


# ---- arguments ------------------------------------------------------------------------------
ModelArg = Annotated[
    str,
    typer.Argument(
        help="model id or alias, a config.json path, or a Hugging Face repo id in the local cache"
    ),
]
HardwareArg = Annotated[str, typer.Argument(help="accelerator id or alias, e.g. h100")]

# ---- output ---------------------------------------------------------------------------------
FormatOpt = Annotated[Fmt, typer.Option("--format", "-f", help="table for people, json for pipes")]
RowFormat = Annotated[
    render.RowFmt,
    typer.Option("--format", "-f", help="table, json, jsonl, csv or markdown"),
]
Ideal = Annotated[bool, typer.Option("--ideal", help="speed-of-light step times (eta = 1)")]

# ---- layout ---------------------------------------------------------------------------------
Tp = Annotated[int, typer.Option("--tp", help="tensor-parallel degree per replica")]
Pp = Annotated[int, typer.Option("--pp", help="pipeline-parallel stages per replica")]
Ep = Annotated[int, typer.Option("--ep", help="expert-parallel degree (divides --tp)")]
Dp = Annotated[int, typer.Option("--dp", help="data-parallel replicas")]
Gpus = Annotated[
    int | None, typer.Option("--gpus", help="GPUs in all, TP x PP x DP (default: from --dp)")
]
AttentionDp = Annotated[
    int,
    typer.Option(
        "--attention-dp", help="attention data-parallel groups per stage (MoE; needs --ep = --tp)"
    ),
]
Microbatches = Annotated[
    int | None,
    typer.Option("--microbatches", help="pipeline micro-batches (default: --pp, as vLLM does)"),
]
Nodes = Annotated[
    int | None, typer.Option("--nodes", help="nodes the GPUs sit in (default: as few as hold them)")
]
CrossNodeTp = Annotated[
    bool, typer.Option("--cross-node-tp", help="allow TP all-reduces across nodes (slow)")
]
ScaleOut = Annotated[
    str, typer.Option("--scale-out", help="network between nodes: infiniband-ndr, -xdr, roce-400g")
]
SCALE_OUT = "infiniband-ndr"

# ---- formats and engine ---------------------------------------------------------------------
Weights = Annotated[
    str,
    typer.Option(
        "--weights",
        help="weight format: auto (the checkpoint's own, from its quantization_config; else "
        "bf16), bf16, fp8, int4, nvfp4, q4_k_m, ...",
    ),
]
KvDtype = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16, fp8, int8, int4")]
ActDtype = Annotated[str, typer.Option("--act-dtype", help="activation format: bf16, fp8, ...")]
Engine = Annotated[
    str, typer.Option("--engine", help=f"serving engine's KV-budget rule: {', '.join(ENGINES)}")
]
Memory = Annotated[
    str | None,
    typer.Option(
        "--memory",
        help="memory per GPU (or a Mac's RAM) instead of the catalog's, e.g. 64GB; GB as memory is"
        " sold: 64GB = 64 GiB",
    ),
]
Sparsity = Annotated[str | None, typer.Option("--sparsity", help="2:4 for structured sparsity")]
Compute = Annotated[
    str | None, typer.Option("--compute", help="override the matmul dtype, e.g. fp8")
]

# ---- workload -------------------------------------------------------------------------------
Prompt = Annotated[str, typer.Option("--prompt", help="prompt tokens per request, e.g. 4k")]
Output = Annotated[str, typer.Option("--output", help="output tokens per request, e.g. 1k")]
Context = Annotated[
    str | None,
    typer.Option("--context", help="tokens a sequence holds, e.g. 32k (default prompt + output)"),
]
Batch = Annotated[int, typer.Option("--batch", help="sequences a replica runs at once")]
# where "as many as fit" is the useful default (tiers) or the batch follows another option (check)
BatchOrAuto = Annotated[
    int | None,
    typer.Option("--batch", help="sequences a replica runs at once (default: see the command)"),
]
Batches = Annotated[
    str,
    typer.Option("--batches", help="batch sizes to sweep: 1..256 | 1,8,64 | 8..256:8"),
]
BATCHES = "1..256"
WiredLimit = Annotated[
    str | None,
    typer.Option(
        "--wired-limit",
        help="unified memory the GPU may wire, e.g. 480GB (default: what macOS allows, "
        "sysctl iogpu.wired_limit_mb raises it)",
    ),
]
LENGTHS_HELP = "100,250,900 | FILE | lognormal:mean=1000,sigma=0.5 | uniform:low=1,high=2048"
PromptDist = Annotated[
    str | None, typer.Option("--prompt-dist", help=f"draw prompt lengths: {LENGTHS_HELP}")
]
OutputDist = Annotated[
    str | None, typer.Option("--output-dist", help=f"draw output lengths: {LENGTHS_HELP}")
]
Requests = Annotated[
    int | None, typer.Option("--requests", help="requests to simulate (default: see the command)")
]
Seed = Annotated[int, typer.Option("--seed", help="seed for drawn lengths and arrivals")]
Confidence = Annotated[
    str,
    typer.Option(
        "--confidence",
        help="size to the expected figures, or to the error bands' pessimistic edge (p90): "
        "capacity x the throughput band's low edge, TTFT/TPOT x their bands' high edge",
    ),
]
CONFIDENCE = "expected"


MaxSeqs = Annotated[
    str | None,
    typer.Option(
        "--max-seqs", help="scheduler's max concurrent sequences: 64 | 1,8,64 | 1..1024 | 8..256:8"
    ),
]
MaxLen = Annotated[
    str | None,
    typer.Option(
        "--max-len", help="tokens a contiguous allocation reserves per request (default --context)"
    ),
]
Block = Annotated[
    int | None, typer.Option("--block", help="paged-KV block in tokens (default: the engine's)")
]
LinkEfficiency = Annotated[
    float | None,
    typer.Option(
        "--link-efficiency",
        help="share of a link's nominal bandwidth a copy reaches (default: the command's link "
        "model: PCIe protocol and per-copy set-up for offload and tiers, RDMA's 0.87 for a "
        "disagg KV transfer over a network)",
    ),
]
KvBudget = Annotated[
    str | None,
    typer.Option("--kv-budget", help="KV eviction (H2O, SnapKV): tokens kept per sequence"),
]


# ---- parsers --------------------------------------------------------------------------------
def tokens(text: str, what: str, minimum: float = 1) -> int:
    """A whole number of tokens from `minimum` (1 unless zero means none, as --sink's) to 1e9,
    with SI suffixes (4k, 32Ki)."""
    value = parse_count(text, what)
    if not minimum <= value <= MAX_TOKENS or value != int(value):
        raise InputError(
            f"{what} must be a whole number of tokens from {minimum:g} to 1e9, got {text}"
        )
    return int(value)


def workload(
    prompt: str,
    output: str,
    context: str | None,
    strict: bool = False,
    model: ModelArch | None = None,
) -> tuple[int, int, int]:
    """(prompt, output, context) tokens; context defaults to prompt + output. `strict` (commands
    that prefill the prompt and decode at the context): a context no longer than the prompt is
    refused. With the `model`, a context past its positions is warned about (positions)."""
    s, o = tokens(prompt, "--prompt"), tokens(output, "--output")
    ctx = tokens(context, "--context") if context is not None else s + o
    if strict and ctx <= s:
        raise InputError(
            f"--context ({ctx:,} tokens) must be longer than --prompt ({s:,}): it counts the "
            "prompt and the tokens generated so far"
        )
    if model is not None:
        positions(model, max(ctx, s + o) if strict else ctx)
    return s, o, ctx


def positions(model: ModelArch, context: float) -> None:
    """A context past the model's positions: computed as asked, and one warning (past_positions)
    once the command has its result."""
    from roofline.cli.startup import warn_later

    if (said := past_positions(model, context)) is not None:
        warn_later(said)


def block(value: int | None, engine_block: int) -> int:
    """The paged-KV block: --block, or the engine's."""
    if value is None:
        return engine_block
    if not 1 <= value <= 65536:
        raise InputError(f"--block must be from 1 to 65536 tokens, got {value}")
    return value


def batch(value: int) -> int:
    if not 1 <= value <= MAX_BATCH:
        raise InputError(f"--batch must be from 1 to {MAX_BATCH:.0e}, got {value}")
    return value


def kv_budget(budget: str | None, sink: str | None = None, window: str | None = None) -> int | None:
    """Tokens an eviction policy keeps: --kv-budget, or StreamingLLM's sink + window."""
    if budget is not None and (sink or window):
        raise InputError("give either --kv-budget or --sink/--window, not both")
    if budget is not None:
        return tokens(budget, "--kv-budget", 1)
    if sink or window:
        return tokens(sink or "0", "--sink", 0) + tokens(window or "0", "--window", 1)
    return None


def resolve_weights(weights: str, model: ModelArch | None) -> str:
    """--weights auto: the format the model's checkpoint ships in (an imported config's
    quantization_config), else bf16."""
    if weights != "auto":
        return weights
    return (model.native_weights if model is not None else None) or "bf16"


def deployment(
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    act_dtype: str = ACT_DTYPE,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    sparsity: str | None = None,
    compute: str | None = None,
    model: ModelArch | None = None,
) -> Deployment:
    if sparsity not in (None, "none", "2:4"):
        raise InputError(f"--sparsity must be 2:4 or none, got {sparsity}")
    dense = model.native_dense_weights if weights == "auto" and model is not None else None
    return Deployment(
        weights=weight_format(resolve_weights(weights, model)),
        dense_weights=weight_format(dense) if dense else None,
        kv=kv_format(kv_dtype),
        activations=activation_format(act_dtype),
        sparse_2_4=sparsity == "2:4",
        compute_dtype=compute,
        layout=Layout(tp=tp, pp=pp, ep=ep),
    )


def efficiency(
    hw: Accelerator, eta_compute: float | None, eta_memory: float | None, overhead: str | None
) -> Efficiency:
    """The family's calibrated efficiency, with any command-line overrides."""
    base = hw.efficiency
    if eta_compute is None and eta_memory is None and overhead is None:
        return base
    return replace(
        base,
        compute=base.compute if eta_compute is None else eta_compute,
        memory=base.memory if eta_memory is None else eta_memory,
        step_overhead_s=base.step_overhead_s if overhead is None else parse_seconds(overhead),
        source=f"command line (catalog: {base.source})",
    )


def capacity(
    hw: Accelerator,
    memory: str | None,
    wired_limit: str | None = None,
    eng: EngineRule | None = None,
) -> float:
    """Bytes per GPU the engine may use: the catalog's usable memory (the driver's total, or the
    capacity less a stated reserve; the CUDA runtime's total for an engine that sizes its pool
    against it, roofline.step.memory.engine_total_bytes), or --memory (binary, as memory is
    sold). On Apple unified memory the GPU may wire what macOS allows for that RAM
    (hardware.default_wired_limit_bytes), or --wired-limit when it was raised."""
    ram = hw.memory_capacity_bytes
    if memory is not None:
        ram = parse_memory_bytes(memory, "--memory")
        if not 0 < ram < 1e15:
            raise InputError(f"--memory must be positive and below 1 PB, got {memory}")
    if wired_limit is not None:
        if not hw.unified_memory:
            raise InputError(f"--wired-limit applies to unified memory; {hw.id} has its own")
        limit = parse_memory_bytes(wired_limit, "--wired-limit")
        if not 0 < limit <= ram:
            raise InputError(  # memory as sold: GB read as GiB, so the RAM in GiB beside it
                f"--wired-limit must be positive and at most the RAM ({ram / 2**30:,.0f} GiB), "
                f"got {wired_limit} ({limit / 2**30:,.0f} GiB)"
            )
        return limit
    if memory is None:
        return hw.usable_memory_bytes if eng is None else engine_total_bytes(hw, eng)
    if hw.memory_basis == "wired":
        return default_wired_limit_bytes(ram)
    return ram * hw.gpu_memory_fraction


def fitted_plan(
    m: ModelArch, hw: Accelerator, dep: Deployment, eng: EngineRule, memory: str | None,
    wired_limit: str | None = None,
) -> MemoryPlan:  # fmt: skip
    """The plan at `capacity`, refused (exit 2) when the weights do not fit; on a Mac past the
    default GPU-wired limit, at the limit as users raise it (hardware.raised_wired_limit_bytes;
    mlx-lm README 'Large Models'), said on stderr: gpt-oss-20b runs on a 16 GB Mac."""
    from roofline.cli.app import note

    plan = plan_memory(m, hw, dep, eng, capacity(hw, memory, wired_limit, eng))
    mac = not plan.weights_fit and wired_limit is None and hw.vendor == "apple"
    ram = hw.memory_capacity_bytes if memory is None else parse_memory_bytes(memory)
    raised = plan_memory(m, hw, dep, eng, raised_wired_limit_bytes(ram)) if mac else plan
    if not raised.weights_fit:
        raise not_fit(m, hw, dep, plan)
    if mac:
        lim, at = fmt_bytes(default_wired_limit_bytes(ram)), fmt_bytes(raised.capacity_bytes)
        note(f"note: {m.id} is past macOS's default GPU-wired limit on {hw.id} ({lim}): planned "
             f"at {at} (RAM less 3 GiB), as users raise it (sudo sysctl iogpu.wired_limit_mb=N, "
             "--wired-limit); unraised, MLX runs slower and llama.cpp keeps MoE experts on the "
             "CPU (roofline edge prices it)")  # fmt: skip
    return raised


MAX_LIST = 100_000  # values a list or range option may expand to


def comma_items(text: str, what: str) -> list[str]:
    """The comma-separated items of `text`, stripped. An empty item ('1,,2', a trailing comma,
    '') is refused: dropped, it would change the list without a word."""
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise InputError(f"{what} {text!r}: an empty item", hint="separate the items by one comma")
    return items


def int_list(text: str, what: str, parse: Callable[[str], int] = int) -> list[int]:
    """'1,8,64' | '1..1024' (powers of two) | '8..256:8' (a step); items may take units. The
    size of a range is checked before it is expanded."""
    items = None if ".." in text else comma_items(text, what)
    try:
        if items is None:
            lo_text, _, rest = text.partition("..")
            hi_text, _, step_text = rest.partition(":")
            lo, hi = parse(lo_text), parse(hi_text)
            step = parse(step_text) if step_text else None
        else:
            values = [parse(v) for v in items]
    except (ValueError, ZeroDivisionError, RooflineError):
        raise InputError(
            f"cannot read {what} {text!r}: use 1,8,64 or 1..1024 or 8..256:8"
        ) from None
    if ".." in text:
        if hi < lo:
            raise InputError(f"{what} {text!r}: the range runs backwards ({lo} > {hi})")
        if step is not None:
            if step < 1:
                raise InputError(f"{what} {text!r}: the step must be at least 1")
            if (hi - lo) // step + 1 > MAX_LIST:
                raise InputError(f"{what} {text!r}: more than {MAX_LIST:,} values")
            values = list(range(lo, hi + 1, step))
        elif lo < 1:
            raise InputError(f"{what} {text!r}: a powers-of-two range starts at 1 or more")
        else:
            count = int(np.log2(hi / lo)) + 1
            values = sorted({round(v) for v in np.geomspace(lo, hi, count)} | {hi})
    if not values:
        raise InputError(f"{what} {text!r} gives no values")
    if len(values) > MAX_LIST:
        raise InputError(f"{what} {text!r}: more than {MAX_LIST:,} values")
    return values


def batch_sweep(text: str, what: str = "--max-seqs") -> list[int]:
    values = int_list(text, what)
    if min(values) < 1 or max(values) > 65536 or len(values) > 256:
        raise InputError(f"{what} {text!r}: 1 to 256 settings, each from 1 to 65536")
    return values


def sharing(tp: int, given: int | None, link_efficiency: float | None) -> int:
    """The GPUs sharing one link (--sharing, default --tp), checked, and --link-efficiency."""
    share = tp if given is None else given
    if not 1 <= share <= 64:
        raise InputError(f"--sharing must be from 1 to 64 GPUs, got {share}")
    if link_efficiency is not None and not 0 < link_efficiency <= 1:
        raise InputError(f"--link-efficiency must be in (0, 1], got {link_efficiency}")
    return share


def check_formats(dep: Deployment, hw: Accelerator) -> None:
    """Formats the chip lacks: --compute it has no peak for is refused (exit 2); a weight format
    without its compute runs weight-only, said in one line on stderr."""
    from roofline.cli.app import note
    from roofline.domain.precision import weight_format_note

    dep.compute(hw)  # refuses a --compute the chip lacks
    line = weight_format_note(dep.weights, hw.peak_flops_per_s, hw.id)
    if line:
        note(f"note: {line}")


def check_sparsity(dep: Deployment, hw: Accelerator) -> None:
    """2:4 sparsity needs sparse tensor cores: without them it neither halves the weights nor
    doubles the peak, so a model must not 'fit' through it."""
    if dep.sparse_2_4 and not hw.sparsity_2_4:
        raise InputError(
            f"--sparsity 2:4: {hw.id} has no 2:4 sparse tensor cores (catalog: sparsity_2_4 false)"
        )


def not_fit(m: ModelArch, hw: Accelerator, dep: Deployment, plan: MemoryPlan) -> DoesNotFitError:
    return DoesNotFitError(
        f"{m.id} in {dep.weights.name} needs {fmt_bytes(plan.weights_bytes)} of weights per GPU "
        f"(TP{dep.tp} PP{dep.pp}) plus "
        f"{fmt_bytes(plan.activation_bytes + plan.runtime_overhead_bytes)}"
        f" of activations and runtime, more than {plan.engine.name} leaves on {hw.id} "
        f"({fmt_bytes(plan.capacity_bytes * plan.engine.memory_fraction)})",
        hint=(
            "raise the GPU-wired limit (sudo sysctl iogpu.wired_limit_mb=N) and pass "
            "--wired-limit, or use smaller --weights"
            if hw.unified_memory and hw.vendor == "apple"
            else "raise --tp or --pp, or use smaller --weights"
        ),
    )


MAX_OVERHEAD_S = 3600.0  # a per-step or per-transfer overhead past an hour is a typo


def step_overhead(text: str, what: str) -> float:
    """A fixed overhead in seconds (units.parse_seconds), at most an hour: 1e30s would print a
    31-digit TTFT."""
    t = parse_seconds(text, what)
    if not t <= MAX_OVERHEAD_S:
        raise InputError(f"{what} must be at most 1 hour (3600s), got {text}")
    return t

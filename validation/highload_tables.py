"""docs/ACCURACY.md's high-load section (issue 34): the cases of validation/highload_cases.yaml
per vendor x engine x metric, out of sample (leave-one-source-out) with in sample beside it,
n and sources per cell, before -> after, from the committed error files:
validation/serving_errors.csv (now) and validation/highload_before.csv (the same rows as
validation/serving_crossval.py wrote them before issue 34 fitted anything on these cases).

Metric classes: capacity is requests/s at full load (every request sent at once: the rate a
replica sustains), throughput output tokens/s, the others as validation/serving_tables.py.
A vendor x engine cell resting on fewer than THIN points, or one source, is marked thin.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import numpy as np

from validation.serving_crossval import ERRORS, ServingResult, load
from validation.source_weight import influence_table, twin_note, twin_table
from validation.source_weight import median_abs as _med

HIGHLOAD = "validation/highload_cases.yaml"
BEFORE = ERRORS.with_name("highload_before.csv")
THIN = 5  # fewer points than this: the cell is marked thin (as the bands' MIN_POINTS)
CLASSES = (  # (label, the case metrics it gathers)
    ("TTFT p50", ("ttft_p50_ms", "ttft_mean_ms")),
    ("TTFT p99", ("ttft_p99_ms",)),
    ("TPOT p50", ("tpot_p50_ms", "tpot_mean_ms", "itl_p50_ms")),
    ("TPOT p99", ("tpot_p99_ms",)),
    ("capacity (req/s)", ("requests_per_s",)),
    ("throughput (tok/s)", ("output_tokens_per_s", "output_tokens_per_s_per_gpu")),
    ("E2E p50", ("e2e_p50_ms",)),
)
VENDORS = ("NVIDIA", "AMD", "Intel", "Google", "Apple")
_PREFIX = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "google": "Google", "apple": "Apple"}


def vendor(r: ServingResult) -> str:
    """The vendor of a case's accelerator, from its catalog id (nvidia-h100-sxm -> NVIDIA)."""
    return _PREFIX.get(r.hardware.split("-")[0], r.hardware.split("-")[0])


def write_before(path: Path = BEFORE) -> int:
    """Copy the high-load rows of validation/serving_errors.csv to `path` (run once, before any
    fit on these cases: the fixed "before" of the tables)."""
    lines = ERRORS.read_text().splitlines()
    keep = [lines[0]] + [ln for ln in lines[1:] if ln.startswith(HIGHLOAD + ",")]
    path.write_text("\n".join(keep) + "\n")
    return len(keep) - 1


@cache
def before(path: Path = BEFORE) -> dict[str, float]:
    """id -> out-of-sample error before issue 34 (empty when the file is missing)."""
    if not path.exists():
        return {}
    rows = csv.DictReader(path.read_text().splitlines())
    return {r["id"]: float(r["out_of_sample"]) / float(r["measured"]) - 1 for r in rows}


def _signed(xs: Iterable[float]) -> float:
    a = list(xs)
    return float(np.median(a)) if a else float("nan")


def _pct(x: float) -> str:
    return "-" if x != x else f"{x * 100:.0f}%"


def _spct(x: float) -> str:
    """A signed median as +12%; '-' when there is none (a new point has no before)."""
    return "-" if x != x else f"{x * 100:+.0f}%"


def cell(rs: list[ServingResult]) -> str:
    """`out (in) n/s`: out-of-sample and in-sample median |error|, points and sources."""
    if not rs:
        return "-"
    srcs = len({r.group for r in rs})
    thin = " thin" if len(rs) < THIN or srcs < 2 else ""
    return (
        f"{_pct(_med(r.error_out for r in rs))} ({_pct(_med(r.error_in for r in rs))}) "
        f"{len(rs)}/{srcs}{thin}"
    )


def highload(rs: Iterable[ServingResult]) -> list[ServingResult]:
    return [r for r in rs if r.file == HIGHLOAD]


def vendor_table(rs: list[ServingResult]) -> str:
    """Per vendor x engine: each metric class's cell, and all metrics before -> after."""
    head = " | ".join(label for label, _ in CLASSES)
    lines = [
        f"| vendor | engine | {head} | all: out of sample, before → after (signed) |",
        "|---|---|" + "---:|" * (len(CLASSES) + 1),
    ]
    old = before()
    keys = sorted(
        {(vendor(r), r.engine) for r in rs},
        key=lambda k: (VENDORS.index(k[0]) if k[0] in VENDORS else 9, k[1]),
    )
    for v, e in keys:
        mine = [r for r in rs if (vendor(r), r.engine) == (v, e)]
        cells = [cell([r for r in mine if r.metric in ms]) for _, ms in CLASSES]
        was = [old[r.id] for r in mine if r.id in old]
        now = [r.error_out for r in mine]
        lines.append(
            f"| {v} | {e} | {' | '.join(cells)} | {_pct(_med(was))} ({_spct(_signed(was))}) "
            f"→ {_pct(_med(now))} ({_spct(_signed(now))}), {len(mine)} |"
        )
    return "\n".join(lines)


def class_table(rs: list[ServingResult]) -> str:
    """Per vendor and metric class: out-of-sample median |error| before -> after, signed."""
    lines = [
        "| vendor | metric | n | sources | before (signed) | after (signed) | in sample |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    old = before()
    for v in VENDORS:
        for label, ms in CLASSES:
            mine = [r for r in rs if vendor(r) == v and r.metric in ms]
            if not mine:
                continue
            was = [old[r.id] for r in mine if r.id in old]
            now = [r.error_out for r in mine]
            lines.append(
                f"| {v} | {label} | {len(mine)} | {len({r.group for r in mine})} | "
                f"{_pct(_med(was))} ({_spct(_signed(was))}) | "
                f"{_pct(_med(now))} ({_spct(_signed(now))}) | "
                f"{_pct(_med(r.error_in for r in mine))} |"
            )
    return "\n".join(lines)


STEP_FILES = ("validation/public_cases.yaml", "validation/extra_cases.yaml")


@cache
def step_points() -> dict[str, tuple[int, int]]:
    """Vendor -> (step cases, their source tables) in the files validation/calibrate.py fits the
    scalar shares on: single-request decode and prefill, no load (a row whose source is "notes
    of <id>" belongs to <id>'s table, as validation/crossval.py groups them)."""
    from roofline.cases.casefiles import load_cases

    root = Path(__file__).resolve().parent.parent
    cases = [c for f in STEP_FILES for c in load_cases(root / f)]
    by_id = {c.id: c for c in cases}

    def group(c) -> str:
        src = str(c.source)
        if src.startswith("notes of "):
            ref = by_id.get(src.split()[2])
            return group(ref) if ref is not None and ref is not c else src
        return src.split(" (")[0]

    out: dict[str, tuple[int, int]] = {}
    for v in VENDORS:
        mine = [c for c in cases if _PREFIX.get(c.hardware.split("-")[0]) == v]
        out[v] = (len(mine), len({group(c) for c in mine}))
    return out


def calibration_note(rs: list[ServingResult], every: list[ServingResult]) -> str:
    """Which vendors rest on too few high-load points or sources to call calibrated; a vendor
    with none says what its shares rest on instead (single-request step cases)."""
    out = []
    steps = step_points()
    for v in VENDORS:
        n = [r for r in rs if vendor(r) == v]
        all_n = [r for r in every if vendor(r) == v]
        srcs = len({r.group for r in n})
        k, k_srcs = steps.get(v, (0, 0))
        state = (
            "enough to check a fit"
            if len(n) >= 20 and srcs >= 2
            else "thin (marked in every table)"
            if n
            else f"calibrated on {k} single-request step points from {k_srcs} sources (the "
            "family's scalar shares, docs/ACCURACY.md's step tables); **uncalibrated** at "
            "full load: no high-load measurement"
            if k
            else "**uncalibrated**: no high-load measurement"
        )
        out.append(
            f"- {v}: {len(n)} high-load points from {srcs} sources ({len(all_n)} serving points "
            f"in every file): {state}"
        )
    return "\n".join(out)


def _stack(r: ServingResult) -> bool:
    """An MoE or MLA case on AMD Instinct under an engine of the Triton era on ROCm (vLLM before
    0.8, SGLang before 0.4.4: hardware/engines.yaml vllm-v0, sglang-v0.4), where the derived
    MoE/MLA kernel factors act (validation/fit_stack_kernels.py triton_era)."""
    from roofline.engines.versions import parse_version

    case = _case_keys().get(r.id, {})
    v = parse_version(case.get("engine_version"))
    floor = {"vllm": (0, 8), "sglang": (0, 4, 4)}.get(r.engine)
    return (
        r.family == "amd-instinct"
        and floor is not None
        and v is not None
        and v < floor
        and _is_moe(str(case.get("model", "")))
    )


def _block_scaled_experts(r: ServingResult) -> bool:
    """Whether the case's routed experts are block-scaled FP8 (a 128x128-block checkpoint run in
    fp8: DeepSeek-V3/R1), where engines.yaml block_fp8_moe_time_factor acts."""
    from roofline.catalog.load import load_catalog

    case = _case_keys().get(r.id, {})
    try:
        m = load_catalog().model(str(case.get("model", "")))
    except KeyError:
        return False
    return bool(m.block_scaled_fp8 and case.get("weights") == "fp8")


def _stack_block(r: ServingResult) -> bool:
    """_stack on block-scaled FP8 experts: the derived x6 (and MLA's x17) act."""
    return _stack(r) and _block_scaled_experts(r)


def _stack_16bit(r: ServingResult) -> bool:
    """_stack on 16-bit or per-tensor experts: the AITER era's MoE x2 alone acts."""
    return _stack(r) and not _block_scaled_experts(r)


def _block_fp8_era(r: ServingResult) -> bool:
    """A block-scaled FP8 MoE checkpoint (DeepSeek-V3/R1) on NVIDIA datacenter GPUs under an
    early-2025 engine (vLLM before 0.8, SGLang before 0.4.4: hardware/engines.yaml vllm-v0 and
    sglang-v0.4 block_fp8_prefill_factor, block_fp8_moe_layer_us)."""
    from roofline.engines.versions import parse_version

    case = _case_keys().get(r.id, {})
    v = parse_version(case.get("engine_version"))
    floor = {"vllm": (0, 8), "sglang": (0, 4, 4)}.get(r.engine)
    if r.family != "nvidia-datacenter" or floor is None or v is None or v >= floor:
        return False
    return _block_scaled_experts(r) and _is_moe(str(case.get("model", "")))


@cache
def _trtllm_bench(r: ServingResult) -> bool:
    """Run by trtllm-bench with its own batch and token caps (a case's `harness`)."""
    return _case_keys().get(r.id, {}).get("harness") is not None


def _case_keys() -> dict[str, dict]:
    """id -> the case's keys in validation/highload_cases.yaml (what a mechanism acts on; read
    only): read once while the file is unchanged (every mechanism asks it of every row)."""
    path = ERRORS.parent.parent / HIGHLOAD
    st = path.stat()
    return _case_map(str(path), st.st_mtime_ns, st.st_size)


@cache
def _case_map(path: str, mtime_ns: int, size: int) -> dict[str, dict]:
    from roofline.cases.casefiles import load_serving_cases

    return {c["id"]: c for c in load_serving_cases(path)}


def _attention_dp(r: ServingResult) -> bool:
    return _case_keys().get(r.id, {}).get("attention_dp", 1) > 1


def _sharegpt(r: ServingResult) -> bool:
    return str(_case_keys().get(r.id, {}).get("prompt", "")).startswith("sharegpt-")


def _sglang_derived_fraction(r: ServingResult) -> bool:
    from roofline.engines.versions import parse_version

    case = _case_keys().get(r.id, {})
    v = parse_version(case.get("engine_version"))
    return (
        r.engine == "sglang"
        and v is not None
        and v >= (0, 5, 5)
        and case.get("gpu_memory_utilization") is None
    )


def _cuda_total_trtllm(r: ServingResult) -> bool:
    from roofline.step.memory import CUDA_TOTAL_ENGINES

    return r.engine in CUDA_TOTAL_ENGINES and r.hardware in _cuda_total_hardware()


@cache
def _cuda_total_hardware() -> frozenset[str]:
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    return frozenset(h for h, a in cat.accelerators.items() if a.cuda_total_bytes is not None)


def _shared_expert_trtllm(r: ServingResult) -> bool:
    model = str(_case_keys().get(r.id, {}).get("model", ""))
    return r.engine == "trtllm" and model.startswith(("deepseek", "llama-4"))


@cache
def _fp8_curve_parts() -> frozenset[str]:
    """The accelerators whose FP8 GEMM curve lost the dynamic-scale pass (Hopper, Blackwell)."""
    from roofline.catalog.load import load_catalog

    kernels = load_catalog().kernels
    return frozenset(
        a for g in ("nvidia-hopper", "nvidia-blackwell") for a in kernels[g].accelerators
    )


def _fp8_static(r: ServingResult) -> bool:
    return r.hardware in _fp8_curve_parts() and _case_keys().get(r.id, {}).get("weights") == "fp8"


@cache
@cache
def _mla_tile_parts() -> dict[str, float]:
    """The accelerators whose MLA decode kernel pads a latent stream's heads to a tile, and
    that tile (kernels.yaml decode_attention head_tile)."""
    from roofline.catalog.load import load_catalog

    kernels = load_catalog().kernels
    return {
        a: g.kernels.decode_attention.head_tile
        for g in kernels.values()
        if g.kernels.decode_attention is not None and g.kernels.decode_attention.head_tile
        for a in g.accelerators
    }


def _mla_tiled(r: ServingResult) -> bool:
    """An MLA model with an FP8 latent cache on such an accelerator, whose heads a rank the tile
    pads (TP over attention: heads / TP, attention DP gives each rank all; the simulator's own
    rule, timing/attention.py mla_tile_padding)."""
    from roofline.catalog.load import load_catalog
    from roofline.timing.attention import mla_tile_padding

    case = _case_keys().get(r.id, {})
    tile = _mla_tile_parts().get(r.hardware)
    if tile is None:
        return False
    try:
        m = load_catalog().model(str(case.get("model", "")))
    except KeyError:
        return False
    tp, adp = int(case.get("tp") or 1), int(case.get("attention_dp") or 1)
    fp8 = str(case.get("kv", "")) == "fp8"  # a 16-bit cache stays memory-bound padded
    return fp8 and m.is_mla and mla_tile_padding(m.num_attention_heads * adp / tp, tile) > 1.0


def _is_moe(model: str) -> bool:
    """Whether the catalog's model (an id or alias) routes experts."""
    from roofline.catalog.load import load_catalog

    try:
        return load_catalog().model(model).n_routed_experts > 0
    except KeyError:
        return False


def _triton_moe(r: ServingResult) -> bool:
    """An MoE model on Hopper under vLLM 0.8+ or SGLang 0.4.4+ (moe_kernel in engines.yaml)."""
    from roofline.engines.versions import parse_version

    case = _case_keys().get(r.id, {})
    v = parse_version(case.get("engine_version"))
    floor = {"vllm": (0, 8), "sglang": (0, 4, 4)}.get(r.engine)
    from roofline.catalog.load import load_catalog

    hopper = r.hardware in load_catalog().kernels["nvidia-hopper"].accelerators
    return (
        floor is not None
        and v is not None
        and v >= floor
        and hopper
        and _is_moe(str(case.get("model", "")))
    )


def _ampere_moe(r: ServingResult) -> bool:
    """An MoE model on an accelerator of the Ampere kernel group (hardware/kernels.yaml
    nvidia-ampere: its fused-MoE curves)."""
    from roofline.catalog.load import load_catalog

    case = _case_keys().get(r.id, {})
    ampere = r.hardware in load_catalog().kernels["nvidia-ampere"].accelerators
    return ampere and _is_moe(str(case.get("model", "")))


def _moe_tp(r: ServingResult) -> bool:
    """An MoE model on Hopper or Blackwell with its experts sharded by TP (EP below TP)."""
    case = _case_keys().get(r.id, {})
    tp, ep = int(case.get("tp") or 1), int(case.get("ep") or 1)
    return r.hardware in _fp8_curve_parts() and _is_moe(str(case.get("model", ""))) and ep < tp


def _api_burst(r: ServingResult) -> bool:
    """A burst through the API server of vLLM V1 or SGLang (the engines with a time per request,
    hardware/engines.yaml api_request_us)."""
    case = _case_keys().get(r.id, {})
    v1 = r.engine == "vllm" and not r.engine_version.startswith(("0.5", "0.6", "0.7"))
    return (
        (v1 or r.engine == "sglang")
        and case.get("arrivals") == "burst"
        and case.get("frontend", "api") == "api"
    )


def _mean_length(spec: object) -> float | None:
    """The mean of a case's length: a number, `...:mean=M`, or `uniform:low=a,high=b`."""
    if isinstance(spec, int | float):
        return float(spec)
    text = str(spec)
    if "mean=" in text:
        return float(text.split("mean=")[1].split(",")[0])
    if text.startswith("uniform:"):
        keys = dict(kv.split("=") for kv in text.split(":", 1)[1].split(","))
        return (float(keys["low"]) + float(keys["high"])) / 2
    return None


def _streamed_multistep(r: ServingResult) -> bool:
    """A vLLM V0 multi-step run (num_scheduler_steps > 1) of 0.6.3 or later, whose outputs
    stream step by step (roofline/serving/sim/multistep.py streams_each_step)."""
    from roofline.serving.sim.multistep import streams_each_step

    case = _case_keys().get(r.id, {})
    if int(case.get("num_scheduler_steps") or 1) <= 1 or r.engine != "vllm":
        return False
    return streams_each_step(str(case.get("engine_version") or ""))


def _vllm_v1(r: ServingResult) -> bool:
    """vLLM V1 (0.8 and later, or no version stated: the current release)."""
    from roofline.engines.versions import parse_version

    v = parse_version(_case_keys().get(r.id, {}).get("engine_version"))
    return r.engine == "vllm" and (v is None or v >= (0, 8))


def _sglang_tp_fraction(r: ServingResult) -> bool:
    """SGLang before 0.4.6 at TP >= 2 with its default fraction (0.88 only at TP1)."""
    from roofline.engines.scheduler import SGLANG_TP_RULE_BEFORE
    from roofline.engines.versions import parse_version

    case = _case_keys().get(r.id, {})
    v = parse_version(case.get("engine_version"))
    return (
        r.engine == "sglang"
        and v is not None
        and v < SGLANG_TP_RULE_BEFORE
        and int(case.get("tp") or 1) >= 2
        and case.get("gpu_memory_utilization") is None
    )


def _shared_prefill(r: ServingResult) -> bool:
    """Prompts short enough that a step's token budget (8,192 on these parts) carries several:
    mean prompt at most 2,048 tokens."""
    mean = _mean_length(_case_keys().get(r.id, {}).get("prompt"))
    return mean is not None and mean <= 2048


MECHANISMS = (  # (what changed and its source, the out-of-sample cases it acts on)
    (
        "The fused MoE layer on Ampere from measured tables (issue 34 (a), MoE kernels per "
        "stack): the A100 had no MoE curve, so an expert layer ran on the dense GEMM curves; now "
        "hardware/kernels.yaml nvidia-ampere moe (TensorRT-LLM 1.0.0 moe_torch_flow, plateau "
        "0.604 of the bf16 peak) and engine_moe (vLLM 0.14.0's fused_moe 0.463, SGLang 0.5.10's "
        "fused_moe_triton 0.511), fitted by validation/calibrate_kernels.py on aiconfigurator-core "
        "0.12.0's a100_sxm moe tables (8-17% median error; vLLM's and TensorRT-LLM's under "
        "power-law 1.01 routing only [uncertain]); Marlin's MXFP4 and FP8 W8A16 experts on the "
        "bf16 curve at their own bytes [approximation]. Qwen3-235B's experts at 8,192 tokens on "
        "one A100, vLLM's table against the curve: 24.9 against 23.1 ms a layer at TP1, 2.48 "
        "against 4.12 ms at TP8 (1.88 ms before): the one form's activation pass does not shrink "
        "with the shard, so thin TP-sharded experts come out slow, as on Hopper (+40%) "
        "[approximation]. Nothing fitted on a case; "
        "vLLM's cpu_step and spec figures refitted after it, and the API time (the API-server "
        "row). "
        "GPUStack's gpt-oss-20b, gpt-oss-120b and Qwen3-235B A100 pages (gpustack@47277d79), "
        "out of sample before -> after: requests/s 54.1% (+54%) -> 17.2% (+9%) on 27 points, "
        "TTFT p50 41.6% -> 23.0%, TPOT p50 40.5% -> 18.7%, TTFT p99 42.3% -> 25.1%, TPOT p99 "
        "43.2% -> 18.2%; NVIDIA's high-load TTFT p50 38.3% -> 23.1% (76 points), TPOT p50 "
        "36.4% -> 23.1% (67), capacity 25.8% -> 18.0% (92), before GPUStack's Qwen3-14B pages "
        "joined (the tables above hold them)",
        _ampere_moe,
    ),
    (
        "vLLM V1's memory profile (0.8 and later): GPUModelRunner.profile_run runs a forward of "
        "max_num_batched_tokens, then its dummy sampler over max_num_seqs rows of the whole "
        "vocabulary (vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run; vllm-project/vllm "
        "PR #13594 for issue #13507, Feb 2025), and the KV pool is what the peak of the two "
        "leaves (roofline/step/memory.py profile_peak_bytes), where every vLLM version had "
        "reserved a forward of 8,192 tokens and fp32 logits of 256 rows / TP. At V1's defaults "
        "on the device (1,024 rows and 8,192 tokens on an H100, 256 and 2,048 on an A100) the "
        "sampler holds the 16-bit logits and their fp32 copy, rows x V x 6 B (the copy is the "
        "786 MiB an H100 fails to allocate for gpt-oss-120b's 1,024 x 201,088, vllm-project/vllm "
        "issue #27508) [lower bound: the top-k/top-p sort the dummy run may take is not counted]: "
        "Qwen3-235B at TP8 on an H100 reserves 0.93 GB (the forward 0.21), Qwen3-32B on one "
        "A100 0.36 GB (1.58 before). Nothing fitted. The 24 gpustack vLLM 0.11 points it moves, "
        "out of sample: 7.1% (+0%) -> 7.7% (+1%); requests/s 3.2% -> 7.5% (the A100 page's "
        "+5%, -2%, 0% -> +9%, +4%, +8%), TTFT p50 4.5% -> 8.0%, TPOT p50 14.0% -> 7.6%; with "
        "vLLM's API-server time per request refitted leaving each source out after it "
        "(5.75-9.75 ms, the API-server row), the 27 points the two move 8.9% -> 8.1%. A run's "
        "own limits are what it profiles: AMD's dev-docker 0.10.0 rows at "
        "--max-num-batched-tokens 131072 reserve a 13.8 GB forward for Llama-3.1-405B at TP8, "
        "its two KV-bound rows 1.5% (+2%) -> 2.2% (-2%)",
        _vllm_v1,
    ),
    (
        "SGLang's KV pool at the mem_fraction_static its releases before 0.4.6 set from the TP "
        "size alone (ServerArgs.__post_init__ in the sglang 0.3.0, 0.4.0.post1, 0.4.3.post2, "
        "0.4.4 and 0.4.5 wheels on PyPI: 0.88 at TP1, 0.87 at TP2, 0.85 at TP4, 0.81 at TP8, "
        "0.83 at TP8 in 0.3.x; roofline/engines/scheduler.py sglang_tp_fraction) instead of "
        "0.88 at every TP: dstack's DeepSeek-R1 on 8 H200 (0.4.3.post2; its offline script "
        "builds ServerArgs without a fraction, Deepseek-R1/benchmark_throughput.py at "
        "dstackai/benchmarks@7f37e669) keeps 10 GB, 150,000 MLA tokens, less KV a GPU. Right by "
        "the source, and the fit is worse for it: the 9 NVIDIA requests/s points it moves, out "
        "of sample, 19.2% (-17%) -> 28.6% (-28%) (dstack's H200 runs of 256-1,024 prompts, "
        "-10% to -29% -> -18% to -32%), AMD's 7 (dstack's MI300X, 0.4.2.post4) 17.3% (+17%) -> "
        "18.0% (+18%); DataCrunch's Llama-3.3-70B TP4 runs never fill the pool (within 1%). "
        "With SGLang's per-sequence cost refitted after it (60 -> 40 µs, the row below) NVIDIA "
        "SGLang capacity goes from 18% (-7%) to 26% (-1%) (22 points, 6 sources; DataCrunch's "
        "4,096-token Llama-3.3-70B runs +40% and +52% -> +46% and +61%): the pool is not what "
        "carries its error (Not yet explained, below)",
        _sglang_tp_fraction,
    ),
    (
        "vLLM V0's host time per running sequence on AMD Instinct refitted on the family's own "
        "single-step V0 runs (225 → 70 µs, hardware/engines.yaml vllm-v0; "
        "validation/fit_amd_v0.py, four sources, 35-75 µs leaving one out): ROCm's vLLM 0.7.3 "
        "batch-latency table and Oracle's 405B runs decode batches of 64-128 in 15-85% less "
        "time than 225 µs per sequence gives",
        lambda r: (
            r.family == "amd-instinct"
            and r.engine_version.startswith(("0.6", "0.7"))
            and not _stack(r)
        ),
    ),
    (
        "The engines' own fused-MoE and MLA decode kernels on AMD Instinct before AITER (SGLang "
        "0.4.2 and vLLM 0.7.3 on ROCm ran Triton fused_moe and Triton MLA decode), derived, "
        "nothing fitted: the AITER era's factors on CDNA 3 (vLLM's MoE x2, MLA x1, fitted on the "
        "vLLM blog's AITER runs) times AMD's own figures for AITER's kernels over the ones before "
        "them (up to 3x fused MoE and 17x MLA decode: ROCm blog 'Supercharge DeepSeek-R1 "
        "Inference on AMD Instinct MI300X', 2025-03-21), so MoE x6 and MLA x17 "
        "(hardware/engines.yaml vllm-v0 and sglang-v0.4; validation/fit_stack_kernels.py "
        "triton_era). They had been fitted on these very runs (dstack's DeepSeek-R1 on 8x MI300X) "
        "at x1.5 and x32 against the same runs on 8x H200, taking the H200 runs' error for the "
        "harness's; derived, no figure rests on the runs it is checked on",
        _stack_block,
    ),
    (
        "The Triton era's MoE factor on AMD Instinct scoped to the experts it was derived for: "
        "AMD's up to 3x is AITER's block-scale fused MoE over the Triton fused_moe before it, so "
        "it acts on block-scaled FP8 experts alone (hardware/engines.yaml vllm-v0 and sglang-v0.4 "
        "block_fp8_moe_time_factor 3, roofline/step/phases.py _own_kernels), and 16-bit or "
        "per-tensor experts run at the AITER era's MoE x2 alone, where every MoE had paid x6. "
        "Derived, nothing fitted. Checked on a source no figure rests on, Leonard Lin's "
        "Mixtral-8x7B BF16 on MI300X under vLLM 0.6.4 (AUGMXNT/MI300-testing at 7332bc19; "
        "benchmark_throughput 128/128, 64-1,024 prompts at TP1 and TP2; the Triton fused_moe with "
        "its tuned MI300X config): requests/s at x6 -53% to -77% (median |error| 68%)",
        _stack_16bit,
    ),
    (
        "vLLM V0's multi-step outputs streamed step by step from 0.6.3 (--multi-step-stream-"
        "outputs, True by default: vllm-project/vllm PR #8335 added it, PR #9047 made it the "
        "default on 2024-10-03 'so we have good ITL metrics with multi-step'; "
        "roofline/serving/sim/multistep.py streams_each_step): each token and each finish "
        "reaches the client at its own step, where the simulator had bunched a batch's tokens "
        "at its end for every version (0.6.0-0.6.2 keep that); admission still waits for the "
        "batch's end. Nothing fitted. Leonard Lin's Llama-3.1-70B runs on MI300X (vLLM ROCm "
        "fork, --num-scheduler-steps 20), bunched -> streamed: TPOT p50 13% (+8%) -> 7% (+5%), "
        "TPOT p99 137% (+137%) -> 70% (+70%), TTFT p50 15% (-0%) -> 20% (-20%); requests/s "
        "within 1 point. What TPOT p99 keeps: the closed loop's first 256-512 prompts run as "
        "the V0 budget of the longest request allows, so a short answer prefilled early waits "
        "for the rest of the ramp (Not yet explained)",
        _streamed_multistep,
    ),
    (
        "vLLM's fused MoE on AMD Instinct in the AITER era (vLLM >= 0.8 with "
        "VLLM_ROCM_USE_AITER=1, as AMD's images run it): the routed experts' MoE op at 2x the "
        "curves' time, MLA decode (AITER's assembly kernel) at 1x (hardware/engines.yaml vllm "
        "moe_time_factor; validation/fit_stack_kernels.py on the vLLM blog 'Beyond Porting', "
        "vllm-project.github.io@c57a123e: DeepSeek-R1-0528 and Qwen3-235B-A22B FP8 on 8x "
        "MI300X/MI325X/MI355X at 10K in / 1K out, 64 and 128 users). It acts on no high-load "
        "case: on the post's 24 throughput and TPOT points (validation/engine_sweeps.yaml) "
        "26% → 5% median |error| in sample, DeepSeek throughput +32% to +69% → -7% to +25%; "
        "one source (thin), so out of sample it is refitted to nothing",
        lambda r: r.engine == "vllm" and r.family == "amd-instinct" and "aiter" in r.id,
    ),
    (
        "AMD's vLLM dev-docker throughput tables (ROCm/vllm docs/dev-docker at b309ea7, vLLM "
        "0.7.3, and 040de12, vLLM 0.10.0; 8x MI300X, Llama 3.1 70B/405B FP8, 500-3,200 prompts "
        "at once) read as output tokens/s, not input + output: so read, each page's 405B at "
        "2,048 in / 2,048 out served 500 prompts at 0.66x and 0.52x the output rate its own "
        "latency table gives a batch of 128 (1,613 and 2,089 tokens/s), and every 2048/2048 row "
        "sat 1.5-2.0x under a model within 14% of those latency rows (the 'long-context decode "
        "attention' once suspected). A reading of the data, nothing fitted; left: vLLM 0.10.0's "
        "rows 14-39% too slow (below)",
        lambda r: r.id.startswith("rocm-devdocker-") and "-thr-" in r.id,
    ),
    (
        "vLLM V1's cost per running sequence on AMD Instinct (65 µs, fitted on AMD's 0.10.0 "
        "latency table at batch 1-128) is device work, paid up to the batch where the step "
        "turns compute bound on the family's GEMM curve, B_c = B · t_weights / t_compute "
        "(about 92 rows on MI300X FP8: plateau 0.271 of the peak, memory share 0.731), not on "
        "every sequence (hardware/engines.yaml vllm cpu_per_seq_device; "
        "roofline/timing/host.py seq_cost_rows). The same V1 engine code pays 0 on NVIDIA "
        "(no NVIDIA case shows a slope), its output processing runs in the front-end process "
        "beside the engine loop (vllm/v1/engine/output_processor.py), and the slope is "
        "peaked at batch 64 and larger for the larger model (90 µs a sequence for the 70B, "
        "167 µs for the 405B, measured less modelled), where the curve's FP8 GEMMs stay flat "
        "from 16 to 128 rows: the per-tensor GEMMs' growth before the turn, which past it "
        "the curve's compute-bound time carries. Nothing refitted (the fit with it in place "
        "is still 65 µs; the latency table 9% → 6% median |error| in sample). vLLM 0.10.0's "
        "throughput rows at 500-3,200 sequences: -39% to -14% → -10% to +28%, the 70B "
        "over-predicted (+10% to +28%: V1's own host work per sequence, about 20 µs by "
        "these rows, is not modelled on any family)",
        lambda r: (
            r.family == "amd-instinct"
            and r.engine == "vllm"
            and not r.engine_version.startswith(("0.5", "0.6", "0.7"))
        ),
    ),
    (
        "Intel Gaudi's scalar shares fitted on Intel's own Gaudi 2 and Gaudi 3 throughput "
        "tables (nvidia-datacenter's borrowed 0.79/0.81 × 0.72, hardware/families.yaml; "
        "validation/fit_family_share.py, k 0.71-0.72 leaving one page out), with Gaudi 3's "
        "compute at its shipping sustained matmul rate (hardware/intel-gaudi3.yaml "
        "sustained_compute 0.72: MME at 1,600 of 1,750 MHz, graph-mode MAMF 1,243-1,290 of "
        "1,835 TFLOPS against Gaudi 2's 96-97%, stas00/ml-engineering); before it one k could "
        "not serve both (0.59 Gaudi 3, 0.72 Gaudi 2)",
        lambda r: r.family == "intel-gaudi",
    ),
    (
        "SGLang's host time per running sequence on NVIDIA datacenter parts (0 → 40 µs, "
        "hardware/engines.yaml sglang; validation/fit_seq_cost.py on the 136 SGLang cases of the "
        "family from 12 sources, 40-125 µs leaving one out, with its prompts run first and "
        "0.3-0.4.5's pools at their TP-size fraction, 60 µs before that; paid "
        "on one attention-DP rank's sequences, roofline/step/phases.py): DataCrunch's H200 runs "
        "decode 500-1,500 sequences "
        "at 1.2-2.7x the kernels' time",
        lambda r: r.engine == "sglang" and r.family == "nvidia-datacenter",
    ),
    (
        "JetStream-PyTorch's decode attends each slot's whole preallocated cache (2,048 "
        "tokens, the source's cache length; hardware/engines.yaml decode_whole_cache, "
        "validation max_cache_length): a dense einsum with an additive mask over max_seqlen "
        "(jetstream_pt/layers.py at 781ec9e; ragged attention behind --ragged_mha, default "
        "False, at 2ba0dd8). Nothing fitted: the TPU family keeps its borrowed shares",
        lambda r: r.engine == "jetstream-pytorch",
    ),
    (
        "Attention-DP prompt scheduling as each engine runs it (roofline/serving/attention_dp.py, "
        "--attention-dp-balance): serialised by default in all three engines (TensorRT-LLM's "
        "attention_dp_config.enable_balance off, SGLang's PrefillDelayer opt-in, vLLM's DP "
        "engine cores each prefilling their own queue), balanced where a run's configuration "
        "sets it (TensorRT-LLM's DeepSeek-R1 perf-overview runs). These two DataCrunch SGLang "
        "runs are the default and 1-token prompts: unchanged by it (their move is the "
        "per-sequence cost's)",
        _attention_dp,
    ),
    (
        "TensorRT-LLM's shared expert on its auxiliary stream beside the routed experts in "
        "CUDA-graph decode steps (modeling_deepseekv3.py maybe_execute_in_parallel; "
        "roofline/step/overlap.py, never under the pair's speed of light): no high-load case "
        "runs a shared-expert model on TensorRT-LLM; its effect is on the engine sweeps' "
        "DeepSeek-R1 rows and the aiconfigurator comparison below",
        _shared_expert_trtllm,
    ),
    (
        "ShareGPT lengths as the benchmark harnesses draw them (issue 34 c): each request's "
        "prompt and max_tokens from one row of models/lengths/sharegpt.csv in order, scaled to "
        "the run's own means (roofline/levers/kvcache.py table_lengths), instead of two "
        "independent log-normals of sigma 0.9: the first turn and first answer of the "
        "ShareGPT V3 conversations under vLLM's sampler (prompt and answer at least 4 tokens, "
        "prompt at most 1,024, both at most 2,048; vllm/benchmarks/datasets.py at f2e97dda), "
        "Qwen3 tokenizer (validation/sharegpt_lengths.py). Answers' 99th percentile 800 "
        "tokens against the log-normal's 1,090, prompt and answer anti-correlated: the long "
        "tail that left a burst's last requests decoding alone was the assumption's",
        _sharegpt,
    ),
    (
        "SGLang's KV pool at the mem_fraction_static its server derives from 0.5.5 (sgl-project/"
        "sglang PR #10975, ServerArgs._handle_gpu_memory_settings: the device's memory less "
        "512 MiB + 1.5 x the prefill chunk + 2 x cuda_graph_max_bs + TP x PP / 8 GiB, and more "
        "under attention DP; roofline/engines/scheduler.py sglang_static_fraction) instead of "
        "0.88: 0.835 on one H100 or A100 (sgl-project/sglang issue #29092 reads 0.828 in a "
        "later release), 0.818 at TP8, so Qwen3-32B keeps 5.5 GiB of KV, not 9, and SGLang's "
        "running batch is the smaller one its pool allows",
        _sglang_derived_fraction,
    ),
    (
        "FP8 GEMMs at the static activation scale engines run (issue 34, mechanism b: the "
        "per-step fixed cost of small-batch decode): the Hopper and Blackwell FP8 curves were "
        "fitted on aiconfigurator's TensorRT-LLM Linear built without an input_scale, so every "
        "timed call carried a dynamic per-tensor compute-scale pass (collector/trtllm/"
        "collect_gemm.py at ai-dynamo/aiconfigurator@095f58a5; 7.2 us on H100, 8.2 us on B200 "
        "at decode sizes, timed on its own in quantize/trtllm/1.3.0rc20); refitted on the "
        "calls less that pass, as aiconfigurator derives its own static FP8 "
        "(validation/kernel_data.py static_scale_rows): the fixed cost per FP8 GEMM falls from "
        "12.5 to about 5 us, what vLLM's CUTLASS and SGLang's sgl_kernel FP8 GEMMs measure on "
        "their own (4.7-5.3 us at M <= 128; neither table fitted). Every 70B layer runs four "
        "such GEMMs, 61-layer DeepSeek five dense ones besides its MoE",
        _fp8_static,
    ),
    (
        "SGLang runs prompts first (issue 34 c, TTFT under load: the prefill scheduling policy "
        "per engine): its scheduler's run_step tries get_new_batch_prefill before anything "
        "else and decodes only when no prefill batch forms, a batch of up to "
        "chunked_prefill_size tokens (8,192 on an H100 or H200) that the running decodes wait "
        "for; the decodes join a prefill batch only under --enable-mixed-chunk, off by default "
        "(sgl-project/sglang python/sglang/srt/managers/scheduler.py at d51c1c21, "
        "server_args.py enable_mixed_chunk False; roofline/engines/scheduler.py "
        "PREFILL_FIRST), where the simulator had run SGLang's prompts beside the decodes as "
        "vLLM V1 and TensorRT-LLM do; each prefill batch filled to its budget with a chunk "
        "of the next prompt (schedule_policy.py PrefillAdder's chunked request; "
        "roofline/serving/sim/prefillsteps.py), where whole prompts alone left 3,000-token "
        "ones 6,000 of the 8,192 tokens a batch (23% -> 22% here). Every SGLang case on every "
        "family",
        lambda r: r.engine == "sglang",
    ),
    (
        "Experts sharded by TP in the fused MoE layer (issue 34): every persistent CTA of "
        "TensorRT-LLM's block-scaled FP8 grouped GEMM (DeepGEMM GroupedWithOffset) walks all "
        "the rank's local experts before it finds its tile (GroupedWithOffsetScheduler"
        "::get_next_block, cpp/include/tensorrt_llm/deep_gemm/scheduler.cuh at "
        "NVIDIA/TensorRT-LLM@89fd9b74), and the thin per-expert GEMMs (N = 2f/8 at TP8) run "
        "in more waves of tiles: two terms of the MoE curve (hardware/kernels.yaml walk_us, "
        "tile_wave_us), fitted with the tables' balanced routing counted as it is (min(E, T·k) "
        "experts, collector/helper.py balanced_logits at ai-dynamo/aiconfigurator@095f58a5); "
        "Hopper fp8 fit 13.3% → 6.8%, Blackwell 15.2% → 7.1%; DeepSeek-R1's layer at TP8 on "
        "H200 at 1/4/16/64 tokens 41/76/186/385 → 92/125/230/421 µs against 100/147/237/409 "
        "measured under power-law routing (rows the fit never saw)",
        _moe_tp,
    ),
    (
        "vLLM 0.8+ and SGLang 0.4.4+ on Hopper run their own measured Triton fused_moe "
        "(hardware/engines.yaml moe_kernel; kernels.yaml engine_moe, aiconfigurator-core "
        "0.12.0's vLLM 0.24.0 and SGLang 0.5.14 tables), not TensorRT-LLM's module: one "
        "program per block of the sorted rows, no walk over the experts "
        "(vllm/model_executor/layers/fused_moe/fused_moe.py fused_moe_kernel); DeepSeek-R1's "
        "layer at TP8 on H200 under vLLM 56/86/181/348 µs at 1/4/16/64 tokens against "
        "57/84/155/305 measured (power-law routing, never fitted)",
        _triton_moe,
    ),
    (
        "The API server's time per request, shared by a burst (issue 34, TTFT under load: "
        "the front end per request): vLLM's API server and SGLang's tokenizer manager parse, "
        "template, tokenize and hand each request to the engine on one Python event loop "
        "(vllm/v1/engine/async_llm.py; sglang/srt/managers/tokenizer_manager.py), and the "
        "requests of a burst share it, each handler resuming in turn at every await, so all "
        "N reach the engine after N times the work (roofline/serving/sim/apiserver.py "
        "tokenize_sent; one after another before, and 0 µs). gpustack's 984-request bursts of "
        "128-token prompts through vLLM 0.11 on 8 H100 get their first tokens within 5.5-5.8 s "
        "(p50-p99, TP4 FP8; qwen3-235b-a22b/h100.md at gpustack@10e9444a) where the engine's "
        "prefill takes about 2 s. Fitted per engine on the burst TTFTs through its server "
        "(validation/fit_api_request.py): vLLM 7,750 µs (71 cases, 12 sources; 7.0-9.75 ms "
        "leaving one out, at most 9.9 ms: vLLM PR #11636 streamed 56 requests/s "
        "unsaturated), SGLang 3,500 µs (24 cases, 8 sources; 2.75-4.75 ms; 6,750 and 2,000 "
        "before a step's prompts shared one attention call, the next row), inside vLLM's "
        "19 ms unloaded path (request_latency_us) [uncertain: the host's CPU, and the "
        "benchmark client's own per-request work]. Every burst through vLLM V1's or SGLang's "
        "server",
        _api_burst,
    ),
    (
        "A step's prompts share one attention call per layer (issue 34 c, the scheduler's "
        "token budget per step): vLLM V1's FlashAttention backend runs one "
        "flash_attn_varlen_func over the step's cu_seqlens "
        "(vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.forward), SGLang's "
        "FlashInfer one batch-prefill call per layer, TensorRT-LLM one context FMHA over the "
        "packed tokens, where the simulator had charged every prompt its own call: the "
        "expected attention curve's floor (16 µs a layer below ~500 tokens) once per prompt, "
        "57 ms of a 300 ms step for the 38 ShareGPT prompts of 216 tokens an 8,192-token step "
        "of Qwen3-235B carries at TP8 on H100. Now each prompt's work is its own (the ideal's "
        "exact causal time) at the efficiency of one call of the same work (S_eff = "
        "√Σ(upto² − done²); roofline/serving/sim/steps.py shared_attention_s): 2.7 ms. Nothing "
        "fitted; the API server's time per request refitted after it (the row above). Every "
        "high-load case whose mean prompt is at most 2,048 tokens; out of sample, before it "
        "-> after (with the refit): these 172 points 17.0% (-4%) -> 16.7% (-4%), NVIDIA TTFT "
        "p50 32.0% -> 30.3% (34), capacity 13.1% -> 12.8% (29), TPOT p50 34.7% -> 35.1% (30); "
        "every serving case 22.5% -> 22.8% (TensorRT-LLM's perf-overview throughputs, its "
        "host time per step fitted with the per-prompt charge, +0.8 points each)",
        _shared_prefill,
    ),
    (
        "The early-2025 engines' block-FP8 DeepSeek path on Hopper (vLLM 0.7, SGLang before "
        "0.4.4; hardware/engines.yaml vllm-v0 and sglang-v0.4, nvidia-datacenter): their "
        "128x128 block-scaled FP8 GEMMs ran on Triton's w8a8_block_fp8_matmul or vLLM's "
        "CUTLASS sm90 kernel at 403-490 TFLOPS on an H100 (vllm-project/vllm PR #23280, "
        "DeepSeek-V3's N 2,112 K 7,168 at 4,096-16,384 rows) against the Hopper FP8 curve's "
        "1,508: x3 on the block-scaled GEMMs of a prefill step; and a decode step pays 345 µs "
        "a block-FP8 MoE layer the curves do not time (grouped top-k as PyTorch ops, "
        "moe_align_block_size, per-token-group quantisation), 20 ms over DeepSeek's 58, from "
        "SGLang 0.4.1's own DeepSeek-V3 figures (sgl-project/sglang PR #2643: 33.0, 38.8, "
        "42.1 ms a token at batch 1, 8, 32 where the curves gave 11.5, 16.4, 27.8; +4%, +5%, "
        "-14% after). Nothing fitted on a validation case. dstack's 21 offline runs on 8 H200, "
        "scored from now on (they were validation/stack_kernels_control.yaml, no before row): "
        "requests/s SGLang 0.4.3 53% (+53%) → 19% (-13%), vLLM 0.7.4 49% (+49%) → 16% "
        "(-16%); the same lab's online sweeps (validation/engine_sweeps.yaml, 48 points): "
        "SGLang output tokens/s 121% → 9%, TPOT p50 53% → 10%, TTFT p50 59% → 7%; vLLM output "
        "tokens/s 65% → 18%, TPOT p50 34% (-34%) → 30% (+30%), TTFT p50 58% → 11%, TTFT p99 "
        "26% → 88% (+88%: V0's prefill-first queue at 128 users) [borrowed: vLLM takes "
        "SGLang's time per layer]",
        _block_fp8_era,
    ),
    (
        "TensorRT-LLM's KV pool from the CUDA runtime's total, not the driver's: KvCacheCreator "
        "(tensorrt_llm/_torch/pyexecutor/_util.py at NVIDIA/TensorRT-LLM@d8ae02ca) takes the "
        "total from torch.cuda.mem_get_info and keeps 0.9 x (total - profiling peak); "
        "cudaMemGetInfo's total on an A100-SXM4-80GB is 81,251 MiB (CUDA deviceQuery; "
        "PyTorch's OOM message on an A100 80GB reads the same 79.35 GiB) against nvidia-smi's "
        "81,920, so 602 MiB (2,408 Qwen3-32B tokens) less KV (hardware/*.yaml "
        "memory.cuda_total_mib, roofline/step/memory.py engine_total_bytes); an H100's 79.11 "
        "GiB (PyTorch's OOM message under vLLM, vllm-project/vllm issue #27508) against "
        "81,559 MiB: 550 MiB. Acts where the catalog has the runtime total: the A100 80GB SXM "
        "and H100 SXM so far",
        _cuda_total_trtllm,
    ),
    (
        "trtllm-bench's own batch and token caps (issue 34 c, harness caps on tokens per "
        "step): given no --max_batch_size / --max_num_tokens, trtllm-bench sizes both from "
        "its own KV estimate, 2 x layers x max(TP, KV heads) x head size bytes a token "
        "(tensorrt_llm/bench/build/tuning.py calc_engine_setting, finetune_setting; "
        "bench/benchmark/utils/general.py get_settings, NVIDIA/TensorRT-LLM at 04cba882 and "
        "0171265e): DeepSeek's MLA read as 128 heads of 56, 874 KB a token where its cache "
        "holds 35 KB, so at most 384 requests a rank at 1,024/1,024 on 8 H200 and 64 at "
        "1,024/8,192 (96 on 4 B200), per rank under attention DP (the DeepSeek-R1 "
        "performance guide: '--max_batch_size: Max batch size in each rank'), where the "
        "simulator had run up to what the KV held (144 a rank there); max_num_tokens 2,048, at "
        "least the longest prompt + max_batch_size. A case's `harness: trtllm-bench` (or "
        "trtllm-bench-build) applies it (roofline/engines/scheduler.py trtllm_bench_limits); "
        "nothing fitted. Acts on no high-load point: on the 71 trtllm-bench throughputs of "
        "validation/engine_sweeps.yaml (TensorRT-LLM's perf-overview, PyTorch 1.x 48 and 0.17 "
        "builds 23) out of sample 12.4% (+9%) -> 15.0% (+8%), the 0.17 builds 10.8% -> 10.9%, "
        "the 9 DeepSeek-R1 rows 8.8% (+9%) -> 25.1% (-15%), every serving case 20.7% -> "
        "20.9%: H200 DEP8 "
        "DeepSeek-R1 1,024/8,192 +71% -> +25%, 1,024/1,024 +92% -> +83% (the cap holds its "
        "375 a rank), 1,024/32,768 +90% (bound by the KV already); RTX Pro 6000 TP1 PP2 "
        "Llama-3.3-70B +54%, +52% -> +32%, +33%; B200 and GB200 DEP4 DeepSeek-R1 (NVFP4) "
        "-7% to +9% -> -38% to -15%: not the step (at 96-384 a rank over 4 B200 the "
        "simulator's NVFP4 decode step is within 6% of aiconfigurator's and its in-flight "
        "estimate at 384 a rank reads the same 4,888 tok/s/GPU: Not yet explained, below), "
        "while at a stated 384 and 896 a rank over 8 B200 it "
        "is within 1% (TensorRT-LLM's DeepSeek-R1 guide at 01c4ece9, two runs added to "
        "validation/engine_sweeps.yaml; its H200 run at 128 a rank +26%) [approximation: an "
        "NVFP4 checkpoint's element count, two weights a byte and a scale per 16; uncertain: "
        "the perf-overview's release, newer than the guide's b6261862]",
        _trtllm_bench,
    ),
    (
        "MLA decode at TP8 on Hopper pays its kernel's 64-row tiles (issue 34, MLA+MoE at "
        "large batch): FlashMLA computes a latent stream's query heads in wgmma tiles of "
        "BLOCK_SIZE_M = 64 rows (csrc/kernels/traits.h at deepseek-ai/FlashMLA@00b3c0e8), so "
        "the 16 heads a rank holds at TP8 cost as 64 (roofline/timing/attention.py "
        "mla_tile_padding; hardware/kernels.yaml decode_attention.head_tile on nvidia-hopper, "
        "eta_compute refitted on the padded heads 0.605 -> 0.631, 228 -> 570 compute-bound "
        "rows; validation/kernel_attention.py MLA_HEAD_TILE). TensorRT-LLM's H200 MLA decode "
        "table reads it: at 1-16 heads a rank its time is that of 64 (FP8 latent cache, batch "
        "256, 4,096 tokens: 0.224 ms a layer at 16 heads, 0.239 ms at 64), and SGLang's FA3 "
        "table is as flat. It binds only with an FP8 latent cache (2 x 64 x 1,088 FLOPs on "
        "576 bytes a token, past the ridge; a 16-bit cache stays memory-bound, 0.88-0.90 of "
        "the bandwidth measured at 1-16 heads, as modelled). Against that table (16 heads, "
        "FP8, rows the fit never saw as such) at 64/256/1,024 sequences of 1,024 tokens and "
        "256/1,024 of 4,096: -31%, -26%, -30%, -31%, -30% -> -15%, +5%, +5%, +12%, +16%. "
        "Beside aiconfigurator 0.12.0's static_gen on h200_sxm (1,024/1,024, FP8 weights and "
        "KV, TP8, batch 64/256/512/1,024): its mla_block (the five GEMMs and the core) "
        "4.8/9.3/16.3/30.9 ms a step against the simulator's 4.1/7.3/12.0/21.6 -> "
        "4.6/9.4/16.3/30.1 ms; TPOT under TensorRT-LLM (EP8) 26.9/39.7/58.5/81.6 against "
        "25.6/34.4/43.5/60.9 -> 26.1/36.5/47.7/69.4 ms, under vLLM (MoE TP8) "
        "31.7/47.3/64.9/99.5 against 28.9/38.2/48.2/68.2 -> 29.4/40.3/52.4/76.7 ms. Blackwell "
        "not changed (trtllm-gen's table does not read as 64-row tiles: 32 and 64 heads at "
        "0.43 and 0.49 of the peak padded, 128 at 0.99). No high-load or serving case runs "
        "DeepSeek with an FP8 cache at TP attention: every case's figure is unchanged "
        "(validation/serving_errors.csv, 904 cases)",
        _mla_tiled,
    ),
)


LEFT = (
    "Not yet explained, nothing fitted (a negative time error is predicted too fast):\n\n"
    "- AMD, TPOT p99 of vLLM V0's closed loops on MI300X (Leonard Lin's Llama-3.1-70B, "
    "--num-scheduler-steps 20): +70% (+30% to +142% at the default 256 sequences). The "
    "closed loop's first 256-512 prompts are prefilled in steps of the simulator's V0 budget, "
    "max(the longest request, 2,048) tokens, so a short answer prefilled early waits out the "
    "rest of the ramp. vLLM V0 budgets max(max_model_len, 2,048) without chunked prefill "
    "(131,072 for Llama 3.1 at the server's default), and turns chunked prefill on for a "
    "max_model_len above 32K on CUDA (vllm/engine/arg_utils.py; 0.7-era builds leave ROCm "
    "out). Tested, neither adopted: the server's 131,072 takes TPOT p99 to -14% to -87% and "
    "TTFT p50 of the 4,096-sequence runs to +134% to +200% (one prefill of every prompt); "
    "chunked prefill takes TTFT p50 to 7% and TPOT p99 to -21% to -67%. Which one the ROCm "
    "fork of December 2024 ran is not in the source [uncertain].\n"
    "- NVIDIA, SGLang's capacity (26% (-1%), 22 points from 6 sources; 18% (-7%) with 0.4.x's "
    "pool at 0.88 and 60 µs a sequence): 12 of the 22 are dstack's DeepSeek-R1 offline runs on "
    "8 H200 (SGLang 0.4.3.post2, 3,200-token prompts), with a shape over the batch: requests/s "
    "+50%, +33%, +26% at 32, 64 and 128 prompts of 800 out (too fast) and -8% to -31% at "
    "256-1,024 prompts (too slow) "
    "with the pool at the release's 0.81 (the Mechanisms row: 526,000 MLA tokens, about 130 "
    "running sequences of 4,000 tokens). Not the admission reserve: SGLang's new_token_ratio "
    "decays from 0.7 to 0.098 over 600 decode steps (schedule_policy.py; reserve_output 0.7 "
    "here), and at 0.1 (tested at 60 µs a sequence, not kept) the 256-1,024 runs stay at -14% "
    "to -32% while "
    "gpustack's Qwen3-32B on one H100 goes from +35% to +68%: the decode step of SGLang 0.4.3's "
    "DeepSeek-R1 at 100-150 sequences of 3,000-6,000 tokens is modelled too slow and at 32-128 "
    "too fast, a step-time question (its per-sequence cost, MLA decode attention over the "
    "context), not the pool's. Nor SGLang's admission as its scheduler runs it (issue 34, "
    "2026-12-07; branch sglang-admission at 9624904, not merged): the ratio falling over 600 "
    "decode steps, back at 0.7 when idle and set from the running requests after a retraction, "
    "each newcomer holding back all of its own output (PrefillAdder adds its whole "
    "max_new_tokens), and with ignore_eos and no radix cache (DataCrunch's and SGLang's v0.3 "
    "benchmark runs: sglang.bench_serving sends ignore_eos, --disable-radix-cache) the "
    "whole-future check of add_one_req_ignore_eos. Out of sample NVIDIA's high-load TTFT p50 "
    "25.7% -> 38.0%, TPOT p50 34.9% -> 34.3%, capacity 18.0% -> 18.6%, AMD's capacity 15.0% -> "
    "13.8%; with SGLang's per-sequence cost refitted under it (40 -> 125 µs, 100-150 leaving one "
    "out) 30.3%, 35.3% (signed -25% -> -7%) and 19.3%. Right by the source and worse for the "
    "fit: it starts more at once (DataCrunch's Llama-3.3-70B 1,024/1,024 burst: 637 -> 818 "
    "running), so the bursts' TTFT comes out short (+5% -> -42%), the same step-time shortfall "
    "at hundreds of sequences read another way. The rest: DataCrunch's Llama-3.3-70B TP4 at "
    "4,096-token prompts "
    "+46% and +61% (the pool never fills), DataCrunch's DeepSeek-V2.5 at attention DP 8 +137% "
    "(below), gpustack's Qwen3-32B on one H100 +38% (the slow H100 page, below).\n"
    "- NVIDIA, gpt-oss's MXFP4 experts on Hopper run on TensorRT-LLM's measured MXFP4 module "
    "(hardware/kernels.yaml nvidia-hopper moe.mxfp4) under every engine. The engines' own "
    "(aiconfigurator-core 0.12.0 h100/h200 moe tables, balanced routing; tried 2026-12-07, not "
    "adopted): vLLM 0.24's OAITritonExperts fit a plateau of 0.839 of the bf16 peak (7.9% on "
    "648 rows) against the module's 0.379, and put GPUStack's gpt-oss-20b random bursts on one "
    "H100 (vLLM 0.11.0, gpustack@47277d79) from within +/-5% to +89% to +105% requests/s too "
    "fast, NVIDIA's high-load TPOT p50 23% -> 34% out of sample [uncertain: which MXFP4 "
    "kernel vLLM 0.11.0 ran there]; SGLang 0.5.14's fused_moe_triton MXFP4 (0.367 of the peak, "
    "0.193 of the bandwidth) moves the same page's SGLang burst only from +123% to +95%. "
    "SGLang's MXFP4 runs stay out of the host-cost fits (validation/fit_engine_versions.py "
    "unmodelled_kernel): on one A100 the same pages measure SGLang at 1.36 and 1.67 requests/s "
    "where vLLM serves 23.8 and 11.6, scored here 6-19x too fast.\n"
    "- NVIDIA, gpt-oss on one A100 under vLLM 0.11: its attention runs vLLM's TRITON_ATTN "
    "backend (the sinks FlashAttention 2 lacks; vLLM's recipe OpenAI/GPT-OSS.md: 'GPT-OSS works "
    "on Ampere devices by default, using the TRITON_ATTN attention backend and Marlin MXFP4 "
    "MoE'), which this model times with the FlashAttention curve (aiconfigurator-core 0.12.0's "
    "A100 attention tables hold vllm_flash_attn only): the 32,000-token bursts on GPUStack's "
    "gpt-oss-20b and -120b A100 pages stay +67% and +29% requests/s too fast while their 2,000-"
    "and 4,000-token ones are within -21% to -5%. No table to time the Triton kernel.\n"
    "- NVIDIA, ShareGPT bursts through vLLM 0.11 on 8 H100 (gpustack's Qwen3-235B page): TPOT "
    "p50 35-68% too fast while the median inter-token latency is close (TP8 BF16: measured "
    "51.1 ms, modelled 42.4 ms), the mean ITL further (81.3 against 54.3 ms) and the p99 ITL "
    "far (678 against 256 ms): the model's decode step is about right; the long gaps a "
    "request sees while the burst's prompts are prefilled beside it are not (the measured "
    "run also ends sooner, 48.3 s against 53.5 s).\n"
    "- NVIDIA, both gpustack pages (one lab, one harness): single-H100 Qwen3-32B bursts of "
    "1,000 requests run at 22-60% of the speed of light (requests/s over-predicted up to 2.8x "
    "at 128 in / 4 out under vLLM and TensorRT-LLM alike, TTFT and TPOT too fast), while "
    "Qwen3-235B on 4-8 H100 is close on throughput; the same shapes disagree in opposite "
    "directions across the two pages, so no engine figure fitted on one improves the other "
    "out of sample. Not the lengths: with ShareGPT's own lengths (the mechanism above) the "
    "single-H100 ShareGPT bursts are over-predicted as the same page's fixed-length bursts "
    "are (+45% to +80% against +76% to +138% at 2,000-4,000 in), and the page's 32,000-token "
    "vLLM run decodes one sequence in 43 ms a step, twice the 22 ms an H100 SXM's bandwidth "
    "allows (30.6 ms modelled; the page names an H100 SXM at gpustack@1f37f1b8): a slow machine "
    "in every regime, where the same lab's A100 page is within 18% at 2,000-4,000 in. Read as "
    "an H100 PCIe (its cases run with hardware: nvidia-h100-pcie, 2.0 TB/s, 756 dense BF16 "
    "TFLOPS), the "
    "page's BF16 bursts under all three engines come within -12% to +22% on requests/s (SXM: "
    "+38% to +78%) and -11% to +1% on TPOT p50 (SXM: -34% to -39%), TTFT p50 -26% to +4% "
    "(SXM: -33% to -48%), in sample at 2,000-4,000 in and ShareGPT; its 32,000-token decode "
    "step, 43 ms, sits between the PCIe part's ideal and expected 36 and 49 ms; TensorRT-LLM's "
    "FP8 runs stay +31% to +121% (SXM: +86% to +185%). Not adopted: the page names an SXM, "
    "and choosing a case's hardware by its fit is a per-case fit. Nor is it the lab's machine "
    "on every page: its gpt-oss-20b page on 'a single NVIDIA H100 SXM GPU' (gpustack@1f37f1b8, "
    "vLLM 0.11.0, a ShareGPT burst of 1,000; not in the validation files) reads the other way, "
    "40.3 requests/s measured against 31.5 modelled as the SXM and 25.8 as the PCIe part, its "
    "TTFT p50 4.8 s against 10.4 s (an API server faster per request than the 7.5 ms fitted).\n"
    "- AMD, SGLang 0.4.4 and later (AITER's fused MoE and MLA decode on ROCm): no MoE/MLA run "
    "of it on CDNA 3 in the validation files; its profile borrows vLLM's AITER-era MoE x2 "
    "(the row above: SGLang's ROCm image sets SGLANG_USE_AITER=1 and calls the same "
    "aiter.fused_moe, sgl-project/sglang@004ae46f), which serves DeepSeek-R1 on 8 MI300X at "
    "64 users, 1k/1k, at 1,309 tokens/s, not 2,182; independent 2025-26 runs put SGLang's "
    "MoE/MLA on CDNA 3 about 2x too fast (issue 34): unchecked here until such a run is "
    "collected. vLLM 0.8 and later has one source (the MoE row above, thin); its "
    "TTFT there stays 52-80% too fast, 10K-token prompts at 64-128 users whose prompt count "
    "the post does not give (at two prompts per user, not the client's default 1,000, the "
    "model's mean TTFT on MI300X comes within -31% to +5%; nothing fitted to it).\n"
    "- AMD, sizing dense models (`size llama-3.1-70b --rate 10 --hardware h100,mi300x "
    "--weights fp8 --kv-dtype fp8 --prompt 2k --output 300 --slo-ttft 2s --slo-tpot 50ms`: 17 "
    "MI300X at TP1 against 8 H100 at TP2): the MI300X count is set by prefill compute on the "
    "CDNA 3 FP8 plateau, 0.271 of the peak, fitted on AITER's block-scaled FP8 GEMMs. "
    "hipBLASLt's own per-tensor FP8 GEMMs, what Llama FP8 runs, reach 0.424 on large shapes "
    "(AMD's Max-Achievable FLOPs blog, 1,273 TFLOPS; Azure's ND MI300X v5 table, 955-1,160 "
    "TFLOPS; validation/kernel_cdna3_gemm.csv) and would size 11 MI300X, but the served vLLM "
    "runs disagree: at that plateau the 45 Llama FP8 high-load points on MI300X go from 12% "
    "(+2%) to 22% (+21%) out of sample (11% (-5%) to 24% (+19%) before any refit, with AMD's "
    "throughput tables read as output tokens/s), AMD's vLLM latency table refits vLLM's "
    "per-step CPU time from 1450 to 1725 µs and the family's band from 0.078 to 0.132, so it "
    "is not adopted (validation/calibrate_amd_kernels.py ADOPT_PER_TENSOR). The bands beside "
    "it (TTFT/TPOT from 12 points of one source) are marked thin (†) in the size table.\n"
    "- AMD capacity's median (14%, -6%; 18%, -14% before the device-side V1 cost and dstack's "
    "405B comparison): the dstack DeepSeek-R1 TP8 offline runs on 8 MI300X "
    "(30 of the 58 points) with the Triton-era MoE/MLA factors derived rather than fitted on "
    "them (the Mechanisms row) sit at -44% to -8% under vLLM 0.7.3 (median -18%, too slow) "
    "and -30% to +52% under SGLang 0.4.2 (+3%), where the fit once left them +18% to +43% and "
    "+58% to +148% in sample; their H200 twins from the same harness "
    "(dstack-offline-dsr1-h200x8-*) were +34% to +83% (vLLM 0.7.4) and +25% to +200% "
    "(SGLang 0.4.3) requests/s too fast, the H200 DeepSeek-R1 item below: the early-2025 "
    "engines on Hopper, no longer taken for the harness's offset on CDNA 3. The derived MoE "
    "x6 has the wrong shape over the batch, not only the wrong size: under vLLM 0.7.3 the "
    "rows of 32-128 prompts sit at -35% to -44% and those of 256-1,024 (V0's 256 running "
    "sequences) at -8% to -19%; at x3 the first come within -5% to +6% and the second go to "
    "+24% to +38%; x6 on the MoE's compute alone (its weights streamed at the curve's speed) "
    "puts every row too fast (+46% to +89%, SGLang's +112% to +168%): the early Triton "
    "fused_moe was slow in the weight-streaming regime too, and slower still as the tokens "
    "per expert grow; AMD's 'up to 3x' for AITER is one end of it. Nothing refitted: these "
    "are the rows it is checked on. A measurement of another source contradicts the derived "
    "MLA x17: SGLang's own ROCm pull request #4053 (sgl-project/sglang, 2025-03-04: AITER's "
    "CK fused MoE with SGLang's Triton MLA decode, before AITER's MLA came in #4344) decodes "
    "DeepSeek-V3 on 8 MI300X in 45.8 ms at 64 sequences of about 2,200 tokens and about 62 "
    "ms at 128 (its first five steps 61.5-63.0 ms), which MoE x2 and MLA x1 give within -8% "
    "to +5% (48.2 and 57.0 ms) and MLA x17 at 2.0-2.3x (91.8 and 141.6 ms). With the Triton "
    "era at MoE x3 (AITER's MoE +25-35% in the same pull request) and MLA x1, dstack's runs "
    "go +7% to +188% too fast (median +64%), as their H200 twins are (+25% to +200%): the "
    "early-2025 harness and engines run slower than the model on both vendors, and the "
    "derived x6 and x17 had been cancelling it. Not adopted (30 of AMD's 58 capacity points "
    "would sit at +64%); the Triton-era factors stay as derived [uncertain]. What that "
    "slowness is, read off the same lab's online sweeps (validation/engine_sweeps.yaml): at 4 "
    "users the early-2025 engines decode DeepSeek-R1 at 26-46 ms a step on both vendors "
    "(H200: vLLM 26, SGLang 43; MI300X: SGLang 35, vLLM 46) where the curves give 15-18 ms, "
    "and their TTFT p50 is 2-2.5x the modelled prefill; on Hopper both are now modelled from "
    "sources outside the validation files (the block-FP8 Mechanisms row). The same two on "
    "CDNA 3 with the sourced MoE x3 / MLA x1 (block-FP8 prefill x2 [no source: no early-2025 "
    "Triton block-FP8 GEMM table on MI300X], Hopper's 345 µs a layer borrowed) bring the "
    "MI300X online sweeps within about 10-20% (TPOT p50 +13% and +14% median, output tokens/s "
    "-6% and -8%, TTFT p50 -34% and -5%, SGLang and vLLM) and vLLM 0.7.3's offline rows to "
    "19% (+4%), but SGLang 0.4.2's offline rows stay 53% (+53%), growing past 128 prompts "
    "(+40% at 128 to +99% at 1,024): SGLang before 0.4.4 captures CUDA graphs up to batch "
    "160 only (capture_bs [1, 2, 4] + 8..160, cuda_graph_max_bs 160, "
    "sglang/srt/model_executor/cuda_graph_runner.py), and an MI300X's KV holds about 340 "
    "running sequences where an H200's holds 169, so those batches decode eagerly, which the "
    "step's max(GPU time, launches) with 11 kernels a layer does not charge (DeepSeek's layer "
    "launches about 50). Not adopted on AMD (the 30 rows would go from about 18% to 23%) "
    "until the prefill factor has a source and eager steps past the graph sizes are "
    "modelled. The rest: vLLM "
    "0.10.0's 70B rows (+10% to +28%, below) and upstream vLLM 0.6.3's 405B bursts (+112% to "
    "+133%, below).\n"
    "- AMD, upstream vLLM 0.6.3 built from source on ROCm 6.1 (dstack's Llama 3.1 405B BF16 on "
    "8 MI300X, Oct 2024, amd/tgi_vs_vllm at dstackai/benchmarks@ac24b9d1; bursts of 512-2,048 "
    "sonnet prompts of 82 in / 59 out): requests/s +112% to +133%, TTFT p50 -51% to -53%, TPOT "
    "p50 -55% to -57%, every metric about 2.1x too fast, at 11-13% of the speed of light, where "
    "AMD's own vLLM images run the same model (FP8) within -20% to +13% (ROCm/vllm dev-docker, "
    "Azure, Oracle). The build is vllm-project/vllm main, not AMD's ROCm fork with its tuned "
    "GEMMs, and the same page's TGI on the same machine is much faster: an untuned build, one "
    "source, nothing fitted.\n"
    "- AMD, vLLM 0.10.0 (V1) on 8 MI300X at 500-3,200 running sequences (AMD's dev-docker "
    "throughput table at 040de12): with the device-side per-sequence cost stopping at the "
    "compute turn (the Mechanisms row) the 405B rows are within -10% to +1% and the 70B rows "
    "+10% to +28% too fast: V1's host work per sequence in its engine loop (the scheduler's "
    "per-request loop, the workers' state updates; about 1 µs in Scheduler.update_from_output, "
    "vllm-project/vllm PR #46112) is 0 on every family, where these rows ask about 20 µs (the "
    "same page's vLLM V0 at 10 scheduler steps, 7 µs a sequence-step, is within -10% to +16% "
    "at the same batches, and V1 runs 0.84x V0's output rate: 13,383 against 15,919 tokens/s "
    "at 3,200 prompts); one source, nothing fitted. The slope itself is the CDNA 3 curve's "
    "shape below the turn, under either engine: dstack's 405B comparison (vLLM 0.6.4, V0) "
    "runs 64 prompts of 128 in / 2,048 out 31% faster in the model than measured where 128 "
    "and 256 prompts come within +1% and +8% [uncertain: no per-tensor FP8 GEMM of fewer "
    "than 1,024 rows is timed in validation/kernel_cdna3_gemm.csv; AITER's block-scaled "
    "kernels the curve follows stay flat from 16 to 128 rows, 19.3 and 18.3 µs at N 1,536, "
    "K 7,168]; other "
    "forms tried serve one table or the other, not both: the attention at 3-8x the curves' "
    "time (no per-sequence cost) leaves the latency table at 12% (x3) to 24% (x8) median "
    "|error| and the throughput rows at -17% to +6% (x3) or -43% to -19% (x8).\n"
    "- Google TPU: two publications (thin). JetStream-PyTorch's 2024-07-29 row, which its "
    "authors flag as a regression (+33% after the whole-cache decode; the six earlier rows of "
    "the same file come within -12% to +18%); and Google's vLLM TPU recipe (v0.12.0, "
    "Llama-3.3-70B on v6e-8, 1000 in / 1000 out at 64 and 128 users, tpu-recipes at "
    "b709d73): throughput 14-29% over-predicted, TPOT 12-23% and TTFT p50 43% too fast, the "
    "gap growing with the running batch (measured TPOT +10 ms from 64 to 128 sequences, "
    "predicted +5 ms): a per-sequence decode cost of vLLM's TPU path (its ragged paged "
    "attention, or the host's input preparation) the GPU-borrowed shares miss; one source "
    "at two batch sizes cannot tell them apart, so nothing is fitted and the family keeps "
    "nvidia-datacenter's shares. Apple: no high-load point (its shares rest on "
    "single-request llama.cpp steps; a batched table, the last item, is not scored).\n"
    "- NVIDIA, SGLang DeepSeek-V2.5 on 8 H200 with attention DP 8 (DataCrunch, 10,000 "
    "requests of 1 in / 512 out): requests/s 2.4x over-predicted (2.2x at 60 µs a sequence, "
    "3.0x before the per-sequence "
    "cost; MLA + MoE at thousands of sequences). Not a cap on batch or tokens per step: "
    "sglang.bench_serving sets none, and SGLang 0.4.0 under --enable-dp-attention halves "
    "chunked_prefill_size (8,192 -> 4,096), caps cuda_graph_max_bs at 96, scales "
    "schedule_conservativeness by 0.3 and turns the overlap scheduler off (server_args.py "
    "__post_init__ of that release), none of which limits 1-token prompts; its running cap "
    "(about 2,300 a rank by _resolve_max_num_reqs) holds the 1,250 a rank. By Little's law "
    "the run kept about 4,600 sequences decoding (24.2 requests/s x 512 tokens x the 372 ms "
    "median gap); capping the simulator at 577 a rank (that figure) gives 61 requests/s "
    "(+153%) and a 112 ms gap (-70%), at 300 55 requests/s and 66 ms: the simulator's step "
    "at ~4,600 tokens is 3.3x too fast (bf16 Triton fused MoE over the all-gathered tokens, "
    "eager above 96 a rank, torch.compile only to 32) [uncertain: which].\n"
    "- NVIDIA, DeepSeek-R1 on 8 H200 (gpustack, 1,000 ShareGPT prompts at once; "
    "validation/engine_sweeps.yaml): TPOT p50 -59% to -67% (too fast) and output tokens/s "
    "+23% to +218% under vLLM 0.11, SGLang 0.5.3 and TensorRT-LLM 1.0 alike. Every engine "
    "admits all 1,000 (vLLM V1 max_num_seqs 1,024 on a 141 GB part; SGLang's running cap "
    "2,048-4,096; trtllm-serve max_batch_size 2,048), as the simulator does; a cap moves "
    "both errors the wrong way at once (256 sequences: TPOT -70% to -77%, tokens/s -4% to "
    "+178%). By Little's law the runs held 270-690 sequences decoding at 167-217 ms a step, "
    "the simulator 245-345 at 55-88 ms: the large-batch DeepSeek-R1 step on Hopper, as in "
    "TensorRT-LLM's H200 DEP8 perf-overview rows (1,024/1,024 +83% at its own 384 a rank) "
    "and its DeepSeek-R1 guide's H200 run (128 a rank, 1,436 tokens/s a GPU, 89 ms a step, "
    "where the simulator gives 2,405 and 53 ms); candidates: CUDA graphs only up to each "
    "engine's capture size (steps above it run eagerly), the block-FP8 grouped GEMMs at "
    "thousands of rows.\n"
    "- SGLang's EAGLE-3 speedups at batch 4-64 (validation/levers_cases.yaml, in sample for the "
    "speculative host costs) stay over-predicted: +18%, +19%, +17% in sample at batch 4, 32, 64 "
    "(+25% to +29% out of sample) against -20% at batch 1. The verify pass now pays SGLang's own "
    "per-sequence cost as the plain-decode baseline does (roofline/levers/speculative.py "
    "verify_efficiency); refitted with it (validation/calibrate.py run_speculative: round "
    "2175 → 125 µs, draft step 400 → 675 µs; 100 and 625 µs after SGLang's prompts-first "
    "refit of its per-sequence cost and the Triton fused-MoE curves, 400 and 525 µs after its "
    "40 µs refit with 0.3-0.4.5's pools at their TP-size fraction), batch 32 and 64 go "
    "from +32% and +51% to +23% "
    "(+15% and +10% before the per-sequence cost), but the trend over batch remains.\n"
    "- NVIDIA, TensorRT-LLM's KV pool on gpustack's A100 page (trtllm-serve 1.2.0rc1, "
    "Qwen3-32B on one A100): requests/s +4% to +16%, TTFT p50 -12% to -18% and TPOT p50 +11% "
    "to +20% at once, the signature of a pool that holds too many sequences (a larger batch "
    "of slower steps). Its rule, read at NVIDIA/TensorRT-LLM@d8ae02ca "
    "(tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator): 0.9 x (the device's memory - "
    "the peak of a profiling run of dummy prompts of max_num_tokens, torch and non-torch, "
    "NCCL and CUDA graphs among the latter), the rule here (roofline/step/memory.py) with "
    "1.5 GiB of activations and 0.9 GiB of runtime for that model. With 3 GB more held back "
    "the three move together to -2%, -5% and -3% (the ShareGPT burst; requests/s +5% and +8% "
    "at 4,000 and 2,000 in). The runtime's total explains 0.6 GiB of it (the Mechanisms row: "
    "ShareGPT +5%, -14%, +11% → +4%, -11%, +8%; 4,000 in +12%, -12%, +20% → +9%, -8%, +14%; "
    "2,000 in +13%, -12%, +19% → +11%, -10%, +15%). The rest is not in the source as read: "
    "the dummy prompts total max_num_tokens (8,192) in requests of min(max_num_tokens, "
    "max_seq_len - 1) tokens with one output token each, and the PyTorch backend computes "
    "logits for the last token of each (about 1.3 GiB of activations for Qwen3-32B, the "
    "residual stream and the MLP's gate/up and SiLU outputs); the sampler is TorchSampler "
    "unless beam search (instantiate_sampler), whose buffers are token ids, not logits; CUDA "
    "graphs (generation-only, batch sizes up to 128 in 1.x logs) are captured before the "
    "profile and land in its non-torch part with the CUDA context. Nothing else is changed.\n"
    "- NVIDIA, TTFT p50 of 1,000-request bursts too fast where requests/s is right "
    "(gpustack's A100 page: -12% to -15% beside +3% to +8% under all three engines): a "
    "burst's median TTFT is the time the 500th request is first scheduled, about (500 - the "
    "running batch) / requests per second; the measured median sits at 41-47% of the run's "
    "length against 38-43% modelled, so either the running batch is smaller than modelled "
    "(TensorRT-LLM above) or the run's end drains faster than the simulator's. SGLang's "
    "prompts-first policy (the mechanism above) moves its burst TTFTs further below, as it "
    "should: it gives the waiting prompts the whole token budget. The API server's time per "
    "request (the last Mechanisms row) takes vLLM's and SGLang's part of it (vLLM -15% -> -8%, "
    "SGLang -6% -> -5% out of sample); TensorRT-LLM's stays at -13% (no time per request "
    "fitted: its bursts on TensorRT-LLM's own perf-overview, Triton's server, read 2 ms a "
    "request and gpustack's trtllm-serve runs 17 ms, each leaving the other out).\n"
    "- NVIDIA, DeepSeek-R1 decode on 8 H200 too fast (dstack's early-2025 engines, gpustack's "
    "TensorRT-LLM 1.0). The fused-MoE curve now charges experts sharded by TP (the Mechanisms "
    "table's scheduler row: TensorRT-LLM's layer at TP8 on H200, 1/4/16/64 tokens, 92/125/230/"
    "421 µs against 100/147/237/409 measured under power-law routing), and vLLM 0.8+ and "
    "SGLang 0.4.4+ run their own measured Triton fused_moe (hardware/engines.yaml moe_kernel; "
    "56/86/181/348 µs against vLLM 0.24.0's 57/84/155/305). Out of sample, TPOT p50: dstack "
    "vLLM 0.7 -40% → -34%, SGLang 0.4.3 -56% → -51%, TensorRT-LLM 0.17 (EP4) -64% → -66%; "
    "gpustack TensorRT-LLM 1.0 (EP8) -64% → -66%, SGLang 0.5.3 +106% → +49%, vLLM 0.11 +6% → "
    "-24%. What remains is not the MoE kernel: the dstack and gpustack TensorRT-LLM runs (EP4, "
    "EP8, where the scheduler's walk is 32-64 experts) predict 3x their measured throughput, "
    "and the early-2025 Triton kernels of vllm-v0 and sglang-v0.4 have no measured module (they "
    "borrow TensorRT-LLM's curve). Those two now pay their block-FP8 path (the last Mechanisms "
    "row): dstack's SGLang 0.4.3 TPOT p50 -53% → -10%, vLLM 0.7.4 -34% → +30% (vLLM takes "
    "SGLang's time per layer, too much for it at 4-8 users: +29% to +41%) [borrowed].\n"
    "- NVIDIA, TPOT p50 of ~1,000-request ShareGPT bursts through vLLM 0.11 (gpustack's "
    "Qwen3-235B page, five layouts: -31% to -65%; its DeepSeek-R1 H200 page -62%) where the "
    "same pages' random-length bursts are within -10% to +23%: the measured TPOT p50 "
    "(108-132 ms) is twice the measured ITL p50 (49-61 ms), nearly the same at TP4 and TP8, BF16 "
    "and FP8, and the page's peak output rate is 8,005-9,788 tokens/s in every layout (SGLang "
    "8,791): a cap that is not the GPUs'. Two candidates tested, neither adopted. (1) The API "
    "server's time per streamed token (api_token_fast_us, 40 µs) fitted on the bursts' TPOTs "
    "(`python -m validation.fit_api_request vllm --token`, 36 cases, 7 sources): 130 µs, but "
    "20 µs with the Qwen3-235B page left out, since gpustack's gpt-oss-120b page (vLLM 0.10.2, "
    "one H100) bounds it near 40 µs (its TPOTs are already +58% too slow at TP1): out of sample "
    "it moves nothing. (2) An eager floor above the largest CUDA graph (a decode batch past "
    "SGLang 0.4's cuda_graph_max_bs 160, or vLLM V1's min(2 × max_num_seqs, 512), "
    "vllm/config/compilation.py at vllm-project/vllm@002284db, runs its layers' kernels from "
    "Python, 0.8-1 ms a layer where eager and graphs were timed apart: vllm-project/vllm-omni "
    "issue #7960, facebookresearch/metaseq PR #270): fitted jointly with SGLang 0.4's "
    "per-sequence cost on its 54 NVIDIA cases (least squares on log error, as "
    "validation/fit_seq_cost.py; an experiment not kept in the tree) it takes 0 µs a "
    "layer (1,000 µs only with DataCrunch's online 70B runs left out), though at 800 µs those "
    "cases' median |error| falls from 20.5% to 15% (DataCrunch's 4,096-token-prompt ITLs -44% "
    "and -40% to +15% and +5%) while its 70B rate-16 run saturates (TTFT +275% to +1,161%). "
    "(3) The same floor for vLLM V1 alone, on NVIDIA, above its 512-sequence graphs: the page's "
    "own signature asks for it. The simulator has the shape of the TPOTs (its TPOT mean over "
    "its ITL mean, 102.5 over 54.2 ms at TP8 BF16, is the measured 147.6 over 81.3: the short "
    "requests decode in the crowded first seconds) but its steps at about 1,000 sequences take "
    "58 ms, where the page's peak of 9,638 tokens/s at 984 requests asks about 100 ms; 94 "
    "layers of Qwen3-235B at 1 ms a layer give 94 ms in every layout, the one cap TP4 and TP8, "
    "BF16 and FP8 share. At 1 ms a layer the five TPOT p50 go from -35% to -68% to -2% to -24% "
    "in sample (TP8 BF16: TPOT p50 103, ITL p50 42, TPOT mean 133, ITL mean 75 ms against "
    "115, 51, 148 and 81), but requests/s from -12% to -21% (TP8 BF16), -7% to -16% and -9% to "
    "-18% (TP4 FP8; TP8 EP8 +18% to -1%), their front end already slow (TTFT p50 +16% to "
    "+23%), and with the page left out the two other "
    "sources past 512 sequences (gpt-oss-120b on H100, whose TP4 TPOT goes from 0% to +28%, "
    "and DeepSeek-R1 on H200) fit 0-400 µs a layer (their summed |log error| 8.06 there, 8.09 "
    "at 1 ms, 8.13 at 800 µs): out of sample it moves nothing, so nothing is kept (an experiment, "
    "not in the tree). The metrics themselves follow `vllm bench serve` (vllm/benchmarks/"
    "serve.py calculate_metrics: TPOT per request over the requests of more than one token, now "
    "so in roofline/serving/metrics.py; it changes no case here), except ITL: the client times "
    "its gaps after the API server's queue, the simulator before it.\n"
    "- NVIDIA, vLLM V1's host time per running sequence (issue 34, TPOT p50 under load; "
    "tested, not adopted). The vllm profile pays none on NVIDIA, though vLLM 0.11 runs its "
    "engine core's per-request loops (scheduling, input preparation, output objects) between "
    "GPU steps: async scheduling, which overlaps them, became the default only in later "
    "releases (vllm-project/vllm PR #23569; vLLM blog 'GPT-OSS Performance Optimizations on "
    "NVIDIA Blackwell', 2026-02-01) [uncertain: the release that turned it on]. What asks for"
    " it: gpustack's Qwen3-235B ShareGPT bursts decode about 1,000 sequences at once and "
    "measure TPOT p50 108-132 ms in every layout, TP4 FP8 (59 GB of weights a GPU) and TP8 "
    "EP8 FP8 (29 GB) alike (122 and 129 ms), where the same page's random bursts, about 260 "
    "running sequences, are within -10% to +23%. Fitted as SGLang's is, on the vllm profile "
    "alone (`python -m validation.fit_seq_cost vllm nvidia-datacenter vllm`: 136 cases of 10 "
    "sources): 40 µs a sequence (20 µs with the Qwen3-235B or the DeepSeek-R1 H200 page left "
    "out, 100 µs with gpt-oss-120b's), but those 136 cases' median |error| goes from 21% to "
    "22%, and the API server's time per request refitted beside it stays at 7,250-7,500 µs. "
    "On the high-load points, each source at its left-out fit: vLLM's 15 TPOT p50 34% (-34%) "
    "→ 24% (-24%) (the ShareGPT bursts -35% to -68% → -24% to -58%, the random ones +9% to "
    "+21% → +11% to +24%), all 38 NVIDIA TPOT p50 34.4% (-26%) → 33.3% (-19%); but vLLM's 18 "
    "capacity points 8.3% → 10.5% (12.7% at 40 µs: the ShareGPT bursts' requests/s -12% → "
    "-22%, already too slow behind a front end whose TTFT is +16% to +23%) and its 18 TTFT "
    "p50 12.8% → 13.9-15.0% (20-40 µs). Not kept (nothing in the catalog changed); "
    "fit_seq_cost.py keeps the option to fit one profile.\n"
    "- NVIDIA, SGLang's per-sequence cost as work beside the GPU step (tested, not adopted). "
    "SGLang's overlap scheduler (event_loop_overlap, the default since 0.4: LMSYS, 'SGLang "
    "v0.4: Zero-Overhead Batch Scheduler', 2024-12-04) processes one batch's results and "
    "builds the next while the GPU runs, so a step would be max(GPU step, the per-sequence "
    "work) where the simulator adds them (roofline/step/phases.py). Refitted in that form on "
    "the 91 SGLang cases of 10 sources (validation/fit_seq_cost.py; an experiment not kept in"
    " the tree): 125 µs (200 µs with DataCrunch's online 70B runs left out), median |error| "
    "34% → 24%, against 23% for the sum at 60 µs; left out, DataCrunch's 405B runs stay at "
    "60% (52% with the sum) and its DeepSeek-V2.5 runs at 116% (77%); DataCrunch's 13 ITL p50"
    " in sample 41% (-34%) → 46% (-43%): where the GPU step is the longer (the 405B, the "
    "4,096-token prompts) the runs lose the time they need (405B at 4 requests/s -52% → "
    "-70%). The sum stays. Nor is the +118% of DataCrunch's 256 in / 512 out burst (6,000 "
    "prompts at once) the per-sequence cost's: the simulator's gaps there are nearly all "
    "alike (median 408, mean 397 ms), where the measured median of 188 ms sits far under the "
    "run's mean gap (mean E2E 156 s less the median TTFT of 33 s over 255 tokens, about 480 "
    "ms): most real gaps are a plain decode step and a few carry long prefill batches, where "
    "the simulator's prompts-first loop admits a few prompts before nearly every decode step."
    " The measured median ITL spans only 120-259 ms over the six offline runs (prompts of "
    "128-2,048 tokens on average), the simulator's 67-408 ms.\n"
    "- NVIDIA, SGLang's new_token_ratio as its scheduler runs it (issue 34 c; tested, not "
    "switched on). SGLang admits against ratio x each running request's remaining output, the"
    " ratio falling from 0.7 by 0.0010 a decode step to 0.098, back to 0.7 when the scheduler"
    " idles, and set by a retraction to (tokens the kept requests generated + 20 each) / "
    "their max_new_tokens; a prefill batch holds each of its requests' whole output and stops"
    " at the chunk, and a refusal (batch_is_full) forms no batch until a request ends "
    "(sgl-project/sglang scheduler.py, schedule_policy.py, schedule_batch.py, 0.4.x-0.5.x; "
    "an experiment, not kept in the tree: off, its code would be dead). The bursty rhythm "
    "it was to bring (a "
    "retraction, nothing admitted for many steps, then a large admission) does not come: no "
    "DataCrunch burst retracts (256 in / 512 out: the queue empties with the ratio at 0.35, "
    "peak KV 0.97M of 1.13M tokens; 1,024 / 1,024 and 4,096 / 2,048: the ratio at its floor, "
    "peak 1.10M and 1.12M; none with the pool cut to 60% either): each newcomer is held its "
    "whole output and the requests ending free KV faster than the decoders grow. Switched on,"
    " SGLang's points (every serving file) out of sample: NVIDIA TPOT/ITL p50 (37) 23.4% → "
    "23.4%, TTFT p50 (32) 20.4% → 21.2%, requests/s (24) 24.7% (+1%) → 25.2% (+7%), "
    "throughput (15) 14.3% → 14.3%, AMD's medians unchanged (requests/s signed -3% → -10%); "
    "DataCrunch's 13 TPOT/ITL 45.6% → 46.0% (256/512 burst +79% → +96%, 1,024/1,024 burst "
    "-13% → +6%, 405B at 8 requests/s -46% → -30%, the 4,096-token prompts -51% → -46% and "
    "-52% → -46%); without the decay (the rest of it alone) DataCrunch 48.2%, the others "
    "unchanged. SGLang's per-sequence cost refitted under it (validation/fit_seq_cost.py) "
    "goes from 40 to 125 µs, the 91 cases' median 24% → 21% in sample, but left out 6 of the "
    "10 sources worse (Qwen3-235B 6% → 27%, gpt-oss-120b 91% → 145%, DataCrunch's 70B online "
    "37% → 47%), 3 better (DataCrunch's 405B 56% → 35%, DeepSeek-V2.5 89% → 63%); SGLang's "
    "NVIDIA points then read TPOT/ITL 23.4% → 17.5%, TTFT 20.4% → 18.5%, DataCrunch 45.6% → "
    "42.4%, but requests/s 24.7% (+1%) → 25.6% (-21%): capacity a fifth too low. What the "
    "256/512 burst does say: by Little's law the run held about 3,200 requests in decode "
    "(26.1 requests/s x 123 s from first token to last), as the simulator's 2,400-2,500; its "
    "median gap of 188 ms is the simulator's ideal one (175 ms), where the expected gap (367 "
    "ms) adds 40 µs x ~2,900 sequences (115 ms) and the kernels' efficiency: the step at "
    "large batch, not the admission rhythm.\n"
    "- DeepSeek-R1 on B200 against aiconfigurator (issue 34): see below."
)

AICONFIGURATOR = (
    "#### DeepSeek-R1 on B200 beside aiconfigurator\n\n"
    "aiconfigurator 0.12.0 from PyPI in a venv of its own (TensorRT-LLM 1.3.0rc20 database for "
    "b200_sxm), its static generation estimate against `roofline analyze` at the same layout, "
    "1,024 in / 1,024 out, FP8 weights and KV (run 2026-12-06, figures as printed):\n\n"
    "```\n"
    "aiconfigurator cli estimate --model-path deepseek-ai/DeepSeek-R1 --system b200_sxm \\\n"
    "  --backend trtllm --estimate-mode static_gen --isl 1024 --osl 1024 --batch-size 64 \\\n"
    "  --tp-size 8 --moe-ep-size 8 --moe-tp-size 1 --detail time\n"
    "aiconfigurator cli estimate ... --batch-size 64 --tp-size 1 --attention-dp-size 8 \\\n"
    "  --moe-ep-size 8 --moe-tp-size 1 --detail time   # 512 sequences in all\n"
    "roofline analyze deepseek-r1 nvidia-b200-hgx --prompt 1024 --output 1024 --batch 64 \\\n"
    "  --tp 8 --ep 8 --weights fp8 --kv-dtype fp8 --engine trtllm\n"
    "roofline analyze ... --batch 512 --tp 8 --ep 8 --attention-dp 8 ...\n"
    "```\n\n"
    "| layout | aiconfigurator TPOT | roofline TPOT: before → shared expert → static FP8 → "
    "MoE refit → exchange per kernel family | throughput ratio (roofline / aic), the same "
    "five |\n"
    "|---|---:|---:|---:|\n"
    "| TP8/EP8, batch 64 | 20.87 ms | 27.6 → 25.7 → 23.8 → 20.75 → 20.75 ms | "
    "0.76 → 0.81 → 0.88 → 1.01 → 1.01 |\n"
    "| attention-DP 8, EP8, 64 per rank | 27.98 ms | 40.3 → 38.1 → 36.2 → 32.69 → 31.88 ms | "
    "0.69 → 0.73 → 0.77 → 0.86 → 0.88 |\n"
    "| TP8/EP8, batch 1 (run 2026-12-07) | 6.94 ms | 8.78 ms after all five | 0.79 |\n\n"
    "What changed (issue 34, mechanism d): TensorRT-LLM runs DeepSeek's shared expert on an "
    "auxiliary CUDA stream beside the router, dispatch, routed experts and combine "
    "(Deepseekv3MoE.forward's maybe_execute_in_parallel, "
    "tensorrt_llm/_torch/models/modeling_deepseekv3.py at NVIDIA/TensorRT-LLM@000561df), two "
    "streams only in CUDA-graph steps (multi_stream_utils.py at NVIDIA/TensorRT-LLM@05b58881): "
    "decode, not context. aiconfigurator's generation_moe_overlap is the same rule. The "
    "simulator now hides the shared expert's 1.9 ms (TP8) and 2.2 ms (attention-DP 8) under "
    "the routed path in TensorRT-LLM decode steps (roofline/step/overlap.py: the pair never "
    "under the speed of light of both, a `moe.overlap` row). The attention-DP balance "
    "(`--attention-dp-balance`) does not enter this comparison: a static batch prefills every "
    "rank at once, and aiconfigurator's static_gen times decode steps only; it acts on the "
    "steady state (serve, size, the cases), where TensorRT-LLM's DeepSeek-R1 perf-overview "
    "rows, run with attention_dp_config.enable_balance, go from 29% to 8% median |error| out "
    "of sample (below).\n\n"
    "Then (issue 34, mechanism b) the FP8 GEMM curves at the static activation scale: the "
    "Hopper and Blackwell FP8 curves had been fitted on aiconfigurator's TensorRT-LLM Linear "
    "run with a dynamic per-tensor scale (its collector gives the weights no input_scale), "
    "whose compute-scale pass (8.2 µs a call on B200 at decode sizes) no static-scale or "
    "block-scaled checkpoint runs; refitted without it (12.5 → 5.1 µs fixed cost per FP8 "
    "GEMM on Hopper, 15.2 → 6.1 µs on Blackwell), MLA's five small GEMMs at TP8 take 2.4 ms "
    "a step instead of 5.2 ms, and the attention block (the GEMMs, the core and its "
    "all-reduce) 4.1 ms against aiconfigurator's mla_block 4.0 ms. validation/calibrate.py "
    "then refits TensorRT-LLM's host time per step on the NIM and TensorRT-LLM step cases "
    "(0 → 1,525 µs: with the GEMMs 2.3 ms faster at 70B TP2 the fit no longer pins it at "
    "zero), which gives back 1.5 ms of the 3.4 ms.\n\n"
    "Then (issue 34) the fused-MoE curves refitted with the grouped GEMM's scheduler "
    "(hardware/kernels.yaml walk_us, tile_wave_us; the Mechanisms table's last row) and with "
    "the tables' balanced routing counted as the collector routes it (min(E, T·k) experts "
    "touched, collector/helper.py balanced_logits at ai-dynamo/aiconfigurator@095f58a5, where "
    "the earlier fit took a uniform random draw's E·(1 − (1 − k/E)^T) and so fitted Blackwell's "
    "weight streaming at 0.631 of the bandwidth, 0.876 now): the B200 fp8 module's fit goes "
    "from 15.2% to 7.1% median error and the routed experts of the TP8/EP8 step from 16.8 to "
    "13.8 ms, the router, experts and all-reduce 14.7 ms against aiconfigurator's "
    "generation_moe_overlap 16.3 ms a step. At the same layout with one sequence the kernels "
    "agree: the step's ops sum to 6.98 ms against aiconfigurator's 6.94 ms (MLA block 3.4 "
    "against 2.8 ms and the add-norms 0.4 ms it times apart; MoE path 3.4 against 3.7 ms), "
    "and the 1.8 ms between 8.78 and 6.94 ms is TensorRT-LLM's host time per step and the "
    "launch gaps (hardware/engines.yaml trtllm cpu_step_us 1,525, fitted on the NIM and "
    "TensorRT-LLM step cases), which static_gen leaves out: the B200 steps' fixed costs are "
    "the engine's, not the small GEMMs' (the measured module itself is slower on B200 than on "
    "H200 at one token: 44-46 against 40-41 µs, moe/trtllm/1.3.0rc20, DeepGEMM against "
    "CUTLASS).\n\n"
    "What still separates the two at attention-DP 8, per decode step: the 116 exchange calls "
    "(dispatch and combine per MoE layer) cost 7.2 ms (62 µs each, 1.0 ms ideal; 8.0 ms on "
    "the one curve fitted on both DeepEP kernel families before the split, the exchange "
    "item below), timed on DeepEP's measured low-latency all-to-all (hardware/kernels.yaml "
    "ep_alltoall, 56.9 µs latency at 8 ranks). TensorRT-LLM's CommunicationFactory picks "
    "DeepEP only with TRTLLM_CAN_USE_DEEP_EP=1 and the one-sided NVLink all-to-all only on "
    "MNNVL systems (GB200 NVL72), falling back to AllGather + ReduceScatter on an HGX node "
    "(tensorrt_llm/_torch/modules/fused_moe/communication/communication_factory.py at "
    "NVIDIA/TensorRT-LLM@673f3412): NCCL collectives of about 13 µs latency "
    "(kernels.yaml alltoall) that would take roughly 5 ms off the step (ratio about 0.85). "
    "Not adopted: after the balance and the static-scale FP8 GEMMs the measured B200 "
    "DeepSeek-R1 rows of the perf-overview (the same engine, a real run) were within -6% to "
    "+7% (-38% to -15% under trtllm-bench's own cap since, the last item below, where the "
    "exchange is tested again), so a faster exchange there would over-predict measured "
    "throughput to match an "
    "estimate; and the H200 attention-DP 8 rows, +3% to +61% before the balance, are +59% to "
    "+92% after both: the serialised charge had "
    "been hiding an H200 DeepSeek-R1 decode that is too fast (the dstack and gpustack H200 "
    "TP8 runs agree: TPOT 52-78% too fast).\n"
    "- NVIDIA, DeepSeek-R1 decode on H200 at large batch, op by op beside aiconfigurator "
    "0.12.0 (static_gen, h200_sxm, 1,024/1,024, FP8 weights and KV; issue 34, MLA+MoE at very "
    "large batch). With the MLA tiles (the Mechanisms row) the attention block agrees at every "
    "batch (TensorRT-LLM TP8: 4.6/9.4/16.3/30.1 ms a step against its mla_block "
    "4.8/9.3/16.3/30.9 at 64/256/512/1,024 sequences; attention-DP 8 at 256 a rank: 20.1 "
    "against 23.0 ms); what still separates the steps is the MoE path, the simulator's faster "
    "as the batch grows: TensorRT-LLM TP8/EP8 router, shared expert, experts and their "
    "all-reduce 23.4/26.1/31.1 ms against generation_moe_overlap 29.4/40.6/48.1 at "
    "256/512/1,024 (the attention's all-reduce, 5.6 ms at 1,024, apart), attention-DP 8 at 256 a "
    "rank 46.0 against 59.8 ms (TPOT 69.7 against 84.4 ms). The module itself is not in "
    "question: the simulator's routed experts at EP8, 0.436 ms a layer at 1,024 tokens, are "
    "the measured module under balanced routing (0.445 ms, moe/trtllm/1.3.0rc20), where "
    "aiconfigurator's estimate takes its power-law routing (0.557 ms; 0.764-0.851 against "
    "0.526 at 2,048 tokens): an assumed skew of the experts' load, not a measurement of "
    "DeepSeek-R1's, so nothing is fitted to it. Nor does it reach the measured runs: "
    "aiconfigurator's own H200 steps (58.5 ms at 512 sequences under TensorRT-LLM, 64.9 under "
    "vLLM) are a third of the 167-217 ms gpustack's ShareGPT bursts held at 270-690 "
    "sequences (by Little's law), so that gap is not the kernels' (prefill chunks in the "
    "decode steps, the harness: the tokcap items above). B200 at attention-DP 8, 256 a rank, "
    "agrees (46.6 against 45.6 ms; 32.7 against 28.0 at 64 a rank, the table below). The "
    "add + RMSNorm pairs aiconfigurator times (2 x 61 calls, 1.1 ms a step each at 1,024 "
    "tokens on H200, 0.24 ms at 64) are not modelled (about 3% of the step).\n"
    "- NVIDIA, vLLM's MLA attention block on Hopper has a fixed cost TensorRT-LLM's lacks "
    "(found, not yet measured on the cases): aiconfigurator 0.12.0's H200 "
    "mla_generation_module tables (the block's block-FP8 GEMMs and the decode kernel, 1,024 "
    "cached tokens) put vLLM 0.24.0's above TensorRT-LLM 1.3.0rc20's by 36-58 µs a layer with "
    "a 16-bit cache and 49-78 µs with FP8 at every head count (16-128) and batch 1-64 (64-110 "
    "µs at 256), where the simulator gives both engines TensorRT-LLM's: static_gen at TP8, "
    "batch 4, mla_block 7.24 ms a step under vLLM and 3.37 under TensorRT-LLM, the simulator "
    "3.23 under either. About 45 µs on each of 61 layers is 2.7 ms a step: gpustack's vLLM "
    "0.11 DeepSeek-R1 on 8 H200 at 4 users (TPOT p50 19.1 ms measured, 12.5 modelled, -35% "
    "out of sample) would go to about -21%. Not adopted here: the brief's two accuracy runs "
    "were spent measuring the tiles, and an engine figure needs its before -> after on the "
    "left-out sources (hardware/engines.yaml vllm would carry it per family, as vllm-v0's "
    "block_fp8_moe_layer_us does).\n"
    "- NVIDIA, DeepSeek-R1 NVFP4 on 4 B200 (DEP4) under trtllm-bench's own cap: not the step "
    "(issue 34, R1 decode on B200 1.2-2.0x aiconfigurator's time; the perf-overview rows "
    "-38% to -15% since the cap, Mechanisms). aiconfigurator 0.12.0 static_gen (b200_sxm, "
    "TensorRT-LLM 1.3.0rc20, --attention-dp-size 4 --moe-ep-size 4 --gemm-quant-mode nvfp4 "
    "--moe-quant-mode nvfp4 --kvcache-quant-mode fp8 --fmha-quant-mode fp8, 1,024/1,024, run "
    "2026-12-07) against `roofline analyze deepseek-r1 nvidia-b200-hgx --tp 4 --ep 4 "
    "--attention-dp 4 --weights nvfp4 --kv-dtype fp8 --engine trtllm` at 96/192/384 a rank: "
    "TPOT 41.7/46.0/58.1 against 39.3/45.1/56.5 ms (throughput ratio 1.06/1.02/1.03); the "
    "attention 7.9/10.1/14.2 against 8.5/10.4/13.8 ms a step, the MoE path (router, "
    "exchange, experts, the shared expert beside them) 33.0/34.9/42.5 against 28.7/32.6/40.4."
    " Inside the MoE path the two differ and cancel: the simulator's routed experts (NVFP4 "
    "on the borrowed FP8 grouped-GEMM curve at half the weight bytes) 0.34/0.36/0.41 ms a "
    "layer, the measured NVFP4 CUTLASS module (the page's moe_config backend) 0.52/0.55/0.51 "
    "ms at 384/768/1,536 tokens under balanced routing (moe/trtllm/1.3.0rc20; TRTLLM-gen's "
    "min-latency module 0.36/0.43/0.50), while the simulator's exchange (DeepEP's curve) "
    "takes 74/97/141 µs a call. Prefill agrees (static_ctx, 1,024 tokens a rank: 90.7/139.6/"
    "244.0 ms for 1/2/4 prompts a rank, the simulator's batch prefill 86.9/149.6/272.0), and "
    "so does the in-flight loop: aiconfigurator's agg estimate at 384 a rank, the heuristic's "
    "cap, reads 4,888 tok/s/GPU at 1,024/1,024 (the simulator 4,890, the page 6,430), and at "
    "1,024/8,192 with 96 a rank 2,151 (the simulator 2,395, the page 3,862: a 24.9 ms step at "
    "96 a rank, where aiconfigurator's step is 44.0 ms). aiconfigurator reaches the page near "
    "768 a rank (agg 5,491/6,455/7,180 at 512/768/1,024). So the run held more sequences a "
    "rank than the heuristic of 04cba882/0171265e gives, or its kernels ran 1.3-1.8x faster "
    "than both models' measured tables. trtllm-bench's heuristic later sized each "
    "attention-DP rank on its own with the NVFP4 checkpoint's real size (NVIDIA/TensorRT-LLM "
    "PR 13498, merged 2026-04) and MLA's compressed cache (PR 16707, 2026-07; "
    "tensorrt_llm/bench/tuning/heuristics.py at 0b42ceaf): about 1,280 a rank at "
    "1,024/1,024, 256-384 at 1,024/8,192 and 8,192/1,024, 96 at 1,024/32,768, where the six "
    "B200/GB200 rows read -9%, +9%, 0%, +15%, -13%, +3% (now -24%, -38%, -17%, +15%, -27%, "
    "-15%). Not adopted: the page names no release, and a harness version picked because it "
    "fits is a fit. The measured NVFP4 CUTLASS module would add 6-11 ms a step at these "
    "batches and move every NVFP4 DeepSeek-R1 row further from its measurement (the DEP8 "
    "guide's -1%/+1% too), so it waits on the cap. On the guide's DEP8 runs at a stated 384 "
    "(16-bit KV) and 896 a rank, 1,024/2,048, aiconfigurator's agg reads 5,215 and 7,010 "
    "tok/s/GPU against 4,548 and 5,393 measured (+15%, +30%), the simulator -1% and +1%. "
    "Tested, not adopted: TensorRT-LLM's AllGather + ReduceScatter exchange (its fallback "
    "on an HGX node, communication_factory.py at NVIDIA/TensorRT-LLM@673f3412, and "
    "aiconfigurator's moe_pre/post_dispatch: each token once to every rank, NCCL's curve) "
    "in place of DeepEP's per-expert copies. Qwen3-235B at attention-DP 4 on B200 shows the "
    "gap it would close (aiconfigurator's exchange 15 + 24 µs a layer at 128 a rank in "
    "decode, 118 + 380 µs at one 8,192-token prompt a rank; the simulator's 138 µs and 2.28 "
    "ms), but on the 23 TensorRT-LLM attention-DP rows of validation/engine_sweeps.yaml (the "
    "simulator's expected figures) the median |error| goes 19% -> 24%: the B200 DEP4 "
    "DeepSeek-R1 1,024/1,024 -24% -> +1% and Qwen3-235B -14% -> +18%, but the DEP8 guide "
    "runs -1%/+1% -> +16%/+18%, gpt-oss-120b DEP2 +18% -> +39% and the H200 DEP8 "
    "DeepSeek-R1 rows, too fast already, further (+25% -> +39%, +91% -> +118%).\n"
    "- NVIDIA, the MoE exchange under expert parallelism at the attention-DP layouts (issue "
    "34, 1d). The exchange is now timed per DeepEP kernel family (hardware/kernels.yaml "
    "ep_alltoall: the low-latency kernels, decode's; ep_alltoall_prefill: the normal ones, "
    "prefill's; DeepEP's README, aiconfigurator's collector contracts), each fitted alone: "
    "two calls at 256 tokens a rank on B200 (EP8, d 7,168, top-8) 157 µs against the "
    "measured 156.1, where the one curve fitted on both families read 242. The normal kernels "
    "send a token once per destination rank, 3.6 ranks for top-8 over 4, 5.25 over 8 "
    "(get_dispatch_layout; tests/legacy/test_intranode.py counts recv_x rows, "
    "deepseek-ai/DeepEP@dd758caf), not once per top-k copy as counted here, but the measured "
    "pairs do not follow the bytes: at 8,192 tokens a rank B200's pair takes 3.79 ms at d "
    "3,072 and 3.90 ms at 7,168 (x1.03 for x2.33 the bytes; H200 x1.38), and GB200's 4-rank "
    "pairs take as long as B200's 8-rank ones (3.84 against 3.79 ms at d 3,072). Fitted under "
    "the per-rank count the B200 fit improves (17.3% -> 14.2%) but reads GB200's 4-rank pairs "
    "30% too fast, every copy 8% (validation/kernel_a2a_check.py): the count stays. So the "
    "prefill gap to aiconfigurator is not the byte count. Qwen3-235B NVFP4 DEP4, one "
    "8,192-token prompt a rank: the simulator's exchange 2.32 ms a layer is below TensorRT-LLM's "
    "measured DeepEP pair at that size (3.8-4.0 ms, B200 8 ranks and GB200 4), while "
    "aiconfigurator charges 0.50 ms (moe_pre/post_dispatch 0.118 + 0.380, NCCL all-gather and "
    "reduce-scatter); DeepSeek-R1 at 8,192 a rank 4.53 against 1.82 ms (B200 DEP8), 3.91 "
    "against 0.88 (DEP4), 3.24 against 5.13 (H200 DEP8, where NCCL is the slower). "
    "TensorRT-LLM takes the all-gather path on an HGX node: select_alltoall_method_type "
    "returns NotEnabled whenever moe_ep_size <= top_k, as at every attention-DP layout here "
    "(EP2-8, top-4 to top-8), and DeepEP only with TRTLLM_CAN_USE_DEEP_EP=1 "
    "(fused_moe_cutlass.py, TensorRT-LLM 0.21-1.0). On the 23 TensorRT-LLM attention-DP rows "
    "the split moves the median |error| 18.8% -> 19.0% (B200 DEP4 DeepSeek-R1 1,024/1,024 "
    "-24% -> -17%, GB200 -27% -> -20%, Qwen3-235B 1,024/1,024 -14% -> -7%; the DEP8 guide "
    "runs -1%/+1% -> +9%/+14%, the layout cases' median 2.4% -> 5.4%): those rows had matched "
    "with a decode exchange charged 55% above DeepEP's measured kernels, and the all-gather "
    "path the engine takes by default moves them further (the item above). Qwen3-235B DEP4 "
    "8,192/1,024 stays -45% on B200 and -33% on H200 under all three exchanges (all-gather "
    "-35%): that row's gap is not the exchange.\n"
    "- Apple, llama.cpp batched (not scored: Apple stays uncalibrated at full load): the one "
    "batched table found, the batched-bench README's sample table (ggerganov/llama.cpp "
    "examples/batched-bench at ed78de20, written for PR #3545 in Oct 2023), names neither its "
    "model nor its machine (LLaMA 7B F16 on an M2 Ultra by its example command and its B = 1 "
    "row [uncertain]), and its Metal kernels have changed since (below), so its rows are not "
    "cases: read as that model and machine, 2-32 sequences of 128 prompt tokens and 128 or 256"
    " out would be over-predicted +73% to +150% in output tokens/s. The B = 1 row (not a "
    "point) is within 9% (128 / "
    "3.187 s = 40.2 t/s, the model 43.8), and the error is the step's floor past it: S_TG "
    "gives 39, 54, 57, 66 and 69 ms a step at 2, 4, 8, 16 and 32 sequences (B / S_TG), the "
    "model 22-29 ms (memory bound: 13.2 GB of weights at the family's share): 4-32 rows at "
    "nearly one cost, 426 GFLOP in 69 ms at 32 rows, 23% of the derived 27.2 TFLOPS. "
    "llama.cpp's own Metal history names the shape: its mat-mat kernel tiles 64 weight rows "
    "by 32 batch rows, so a batch under 32 is padded to 32 and launches ne01 / 64 "
    "threadgroups (64 for a 4,096-row weight on 76 GPU cores), which under-fills the GPU "
    "(ggml-org/llama.cpp PR #27441, 2026-08: 'on M3/M4, pp16 == pp32 in wall time'; PR "
    "#25377: the tile 'zero-pads 75% of the batch dimension at bs = 8'), and until Nov 2024 "
    "batches of 2-8 had no kernel of their own (PR #10491 moved 2-4 to the mat-vec kernels, "
    "'pp2' 9.1 -> 23.9 t/s for a 13B Q4_0 on an M1 Pro; PR #10581 added small-batch kernels "
    "for batches up to 8). Builds of late 2025 scale further at 2-4 (PR #16894's "
    "batched-bench, Metal, machine not named: Qwen2 7B Q8_0 79, 136 and 225 t/s at 1, 2 and 4"
    " sequences, 2.8x at 4 where this table gives 1.8x); the 9-32-row padding stands. Not "
    "modelled: the step has no per-engine GEMM tile (roofline/step, roofline/timing); a "
    "batched Apple run that names its machine, model and build, llama.cpp or MLX, would be "
    "the first Apple high-load case."
)


def mechanism_table(rs: list[ServingResult]) -> str:
    """Each mechanism: its cases' out-of-sample median |error| (signed) before -> after."""
    lines = [
        "| mechanism | n | sources | before (signed) | after (signed) | in sample |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    old = before()
    for text, pick in MECHANISMS:
        mine = [r for r in rs if pick(r)]
        if not mine:  # a mechanism no high-load case exercises (its text says where it acts)
            lines.append(f"| {text} | 0 | 0 | - | - | - |")
            continue
        was = [old[r.id] for r in mine if r.id in old]
        now = [r.error_out for r in mine]
        lines.append(
            f"| {text} | {len(mine)} | {len({r.group for r in mine})} | "
            f"{_pct(_med(was))} ({_spct(_signed(was))}) | "
            f"{_pct(_med(now))} ({_spct(_signed(now))}) | "
            f"{_pct(_med(r.error_in for r in mine))} |"
        )
    return "\n".join(lines)


def section() -> str:
    every = list(load()[0])
    rs = highload(every)
    old = before()
    return "\n".join(
        [
            f"`{HIGHLOAD}`: {len(rs)} published measurements at full load (every request sent "
            f"at once or an offline batch) from {len({r.group for r in rs})} sources, run as "
            "every serving case is (validation/serving_crossval.py). Out of sample is "
            "leave-one-source-out: every figure fitted on a source's cases is refitted without "
            "them. **Before** is validation/highload_before.csv, these rows before issue 34 "
            f"fitted anything on them ({len(old)} rows). A cell reads `out-of-sample median "
            "|error| (in-sample) points/sources`; `thin`: fewer than "
            f"{THIN} points or a single source.\n",
            "Which vendors the high-load points calibrate (20 points from 2 sources, as issue 34 "
            "asks of NVIDIA and AMD):\n",
            calibration_note(rs, every),
            "\n#### Per vendor and metric, out of sample before → after\n",
            class_table(rs),
            "\n#### Per vendor × engine × metric\n",
            vendor_table(rs),
            "\n#### Mechanisms, each on the high-load cases it acts on (out of sample)\n",
            mechanism_table(rs),
            "\n#### How far each median rests on one source\n",
            "Each vendor x metric median over every point, then with one source's points left "
            "out of the score (every figure as fitted), for each source in turn "
            "(validation/source_weight.py):\n",
            influence_table(rs, vendor, CLASSES),
            "\n#### One lab, one workload, two chips\n",
            "GPUStack's performance-lab pages run the same engine, flags and workload on H100s "
            "and on A100s. The ratio of a twin's requests/s, measured against modelled (in "
            "sample):\n",
            twin_table(rs),
            "\n" + twin_note(rs, _case_keys()),
            "\n" + LEFT,
            "\n" + AICONFIGURATOR,
        ]
    )


if __name__ == "__main__":
    print(f"wrote {BEFORE.name}: {write_before()} rows")

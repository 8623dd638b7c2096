"""The serving cases' in-sample and out-of-sample (leave-one-source-out) predictions.

Three case files, all published runs under traffic: validation/serving_cases.yaml (vLLM server
sweeps), validation/engine_sweeps.yaml (the engines' own benchmark tables and third-party
sweeps: TensorRT-LLM, vLLM, SGLang, AMD, TPU, Jetson) and validation/highload_cases.yaml (runs at
full load, issue 34). What they fit, each figure declared in
FITS with the source it was fitted on and its value without that source:
- vLLM's `request_latency_us`, the path a request takes outside the engine's steps: the
  concurrency-1 median TTFT of the ai.wmx.dev L4 sweep (27.0 ms) minus the engine side;
- vLLM's `api_token_slow_us`, the slow detokenizer's cost per streamed token: the 48-user median
  TTFT of the mushfiqrahman.dev RTX 4090 sweep (840 ms);
- TensorRT-LLM's `request_latency_us` (11 ms): the 12 QPS-2 rows of the v0.14 online table of
  TensorRT-LLM's performance overview (the perf-overview.md at commit 258c754).
Issue 34 added more (V0_FIT ... STACK_FIT below: per-sequence and API-server costs, Gaudi's
shares, AMD's MoE/MLA kernel factors), each refitted per left-out source as its fit script
prints. And the figures validation/calibrate.py fits on the step cases (each engine's cpu_step_us
and cpu_per_seq_us): a publication with cases both there and here (STEP_SOURCES: AMD's vLLM
0.10.0 MI300X tables, NIM's Llama-3.3-70B page) is one source, so leaving it out here refits them
without its step rows too (step_fits, computed when the cases run). Everything else a serving
case reads is fitted on no case here: the kernel curves (microbenchmarks: aiconfigurator, AITER's
tuner, collectives) and the other step sources' figures (vLLM's CI tables, llama.cpp and gpt-fast
runs, the speculative cases): out of sample for these cases.

In sample: every case under the catalog as shipped. Out of sample: leave-one-source-out as
validation/crossval.py does for the step cases: all cases citing one source (its URL, up to the
first parenthesis or comma) leave together, and each figure fitted on that source is refitted
without it: `ServingFit.refit(left-out source)` when the figure was fitted on several sources,
else (one source: no case left to fit it on) its `fallback`: vLLM's request latency 0 (the API
server's path not modelled, as before it was fitted), the slow detokenizer's cost the fast
path's, and TensorRT-LLM's request latency borrowed from vLLM's on the same device (as SGLang's
is: the catalog's rule for an engine with no light-load measurement). The other sources' cases
keep the catalog's figures (they played no part in the fit).

A case whose engine has no profile in the catalog is skipped and counted (`skipped`), never
dropped silently. `python validation/serving_crossval.py` evaluates every case once per figure
set (two worker processes) and writes validation/serving_errors.csv, which validation/bands.py,
validation/serving_tables.py (docs/ACCURACY.md) and the tests read without re-running the cases.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from roofline.timing.host import EngineProfile  # noqa: E402

CASE_FILES = (
    "validation/serving_cases.yaml",
    "validation/engine_sweeps.yaml",
    "validation/highload_cases.yaml",  # issue 34: full-load runs, validation/highload_tables.py
)
ERRORS = ROOT / "validation/serving_errors.csv"
TRTLLM_014 = (
    "https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/"
    "docs/source/performance/perf-overview.md"
)


@dataclass(frozen=True)
class ServingFit:
    """One engine figure fitted on the serving cases of some sources."""

    engine: str
    field: str  # EngineProfile attribute (seconds)
    groups: tuple[str, ...]  # the sources it was fitted on (source_group of their cases)
    # its value with no case left to fit it on, from its profile and the device's other engines
    fallback: Callable[[EngineProfile, dict[str, EngineProfile]], float]
    why: str
    # its value refitted without one of its sources (None: fitted on one source, so the
    # fallback applies); takes the profile and the source left out
    refit: Callable[[EngineProfile, str], float] | None = None

    def value_without(self, engines: dict[str, EngineProfile], group: str) -> float:
        prof = engines[self.engine]
        if self.refit is not None and len(self.groups) > 1:
            return self.refit(prof, group)
        return self.fallback(prof, engines)


# vLLM V0's per-sequence host cost (hardware/engines.yaml vllm-v0) refitted without each of the
# three sources it was fitted on, as `python -m validation.fit_engine_versions vllm-v0` prints
# [stale: that script now fits at the base engine's cpu_step, vllm's 1625 us, where vllm-v0 runs
# at 1450 (hardware/engines.yaml); at 1625 it prints 250 us without AMD's README, 225 here]
V0_FIT = {
    "https://github.com/LambdaLabsML/vllm-benchmark/blob/0e8fc5d0f9865a326666cb82aeb2d8dc74c82c5e/"
    "benchmark_v0.md": 50e-6,
    "https://github.com/saienduri/vllm-docs/blob/080d0ad63154d46325ced75a1633b7b2653b3d58/"
    "README.md": 225e-6,
    "https://github.com/vllm-project/vllm-project.github.io/blob/"
    "0b57588444565142727b814875d10e86626c399a/_posts/2024-10-23-vllm-serving-amd.md": 225e-6,
}

# vLLM V0's per-sequence host cost on AMD Instinct (issue 34) refitted on the family's own
# single-step V0 points without each of their four sources, as `python -m validation.fit_amd_v0`
# prints (all four: 70 us)
AMD_V0_FIT = {
    "https://blogs.oracle.com/cloud-infrastructure/post/"
    "serving-llama-31-405b-model-with-amd-mi300x-gpus": 75e-6,
    "https://github.com/ROCm/vllm/blob/b309ea79418c6fc9058a6b2dec312375d3c75753/docs/dev-docker/"
    "README.md": 40e-6,  # 35 as printed before; 40 on the catalog at fe8555f
    "https://github.com/saienduri/vllm-docs/blob/080d0ad63154d46325ced75a1633b7b2653b3d58/"
    "README.md": 70e-6,
    "https://github.com/vllm-project/vllm-project.github.io/blob/"
    "0b57588444565142727b814875d10e86626c399a/_posts/2024-10-23-vllm-serving-amd.md": 70e-6,
}


def _v0_without(p: EngineProfile, g: str) -> tuple[tuple[str, float], ...]:
    """vllm-v0's per-sequence costs with source `g` left out: the pooled figure (nvidia and the
    families it covers) from V0_FIT, amd-instinct's own from AMD_V0_FIT."""
    out = []
    for fam, s in p.cpu_per_seq_s:
        if fam == "amd-instinct":
            out.append((fam, AMD_V0_FIT.get(g, s)))
        else:
            out.append((fam, V0_FIT.get(g, s)))
    return tuple(out)


# SGLang's per-sequence host cost on NVIDIA datacenter parts (issue 34; hardware/engines.yaml sglang
# cpu_per_seq_us nvidia-datacenter, 40 us on all twelve sources) refitted without each source, as
# `python -m validation.fit_seq_cost sglang nvidia-datacenter` prints
SGLANG_SEQ_FAMILY = "nvidia-datacenter"
SGLANG_SEQ_FIT = {
    "https://github.com/datacrunch-research/h200-benchmarks/blob/"
    "c091ef530a525d2e788bc41c39a4450b09c9f2ad/sglang/outputs/deepseek_dp_mla_output.jsonl": 40e-6,
    "https://github.com/datacrunch-research/h200-benchmarks/blob/"
    "c091ef530a525d2e788bc41c39a4450b09c9f2ad/sglang/outputs/"
    "llama_3_3_70b_offline_output.jsonl": 40e-6,
    "https://github.com/datacrunch-research/h200-benchmarks/blob/"
    "c091ef530a525d2e788bc41c39a4450b09c9f2ad/sglang/outputs/"
    "llama_3_3_70b_online_output.jsonl": 125e-6,
    "https://github.com/datacrunch-research/h200-benchmarks/blob/"
    "c091ef530a525d2e788bc41c39a4450b09c9f2ad/sglang/outputs/llama_405b_online_output.jsonl": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "10e9444a07c73556f2ef0d10d2b2766bbf54c9c0/docs/performance-lab/qwen3-235b-a22b/h100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "10e9444a07c73556f2ef0d10d2b2766bbf54c9c0/docs/performance-lab/qwen3-32b/a100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "10e9444a07c73556f2ef0d10d2b2766bbf54c9c0/docs/performance-lab/qwen3-32b/h100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d/docs/performance-lab/qwen3-235b-a22b/a100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d/docs/performance-lab/qwen3-14b/a100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d/docs/performance-lab/qwen3-14b/h100.md": 40e-6,
    "https://github.com/gpustack/gpustack/blob/"
    "a5c9fafc3022e81779c2c5ade32c5b703ce2248c/docs/performance-lab/deepseek-r1/h200.md": 40e-6,
    "https://github.com/sgl-project/sglang/blob/"
    "120affb9613cc3f5bcd055ec09c7621d3ced0ebc/benchmark/benchmark_vllm_060/README.md": 40e-6,
}


def _sglang_seq_without(p: EngineProfile, g: str) -> tuple[tuple[str, float], ...]:
    """sglang's per-sequence costs with source `g` left out (SGLANG_SEQ_FIT; others as shipped)."""
    return tuple(
        (fam, SGLANG_SEQ_FIT.get(g, s) if fam == SGLANG_SEQ_FAMILY else s)
        for fam, s in p.cpu_per_seq_s
    )


# Intel Gaudi's scalar shares (hardware/families.yaml intel-gaudi: nvidia-datacenter's 0.79 and
# 0.81 times k = 0.72, issue 34; Gaudi 3 at its sustained matmul share, hardware/intel-gaudi3.yaml)
# refitted without each of Intel's two pages, as `python -m validation.fit_family_share
# intel-gaudi` prints with the family's shares set to the borrowed ones (k 0.59 and 0.72 before
# Gaudi 3's sustained ratio)
GAUDI_BORROWED = {"compute": 0.79, "memory": 0.81}
GAUDI_K = {
    "https://intel.com/content/www/us/en/developer/platform/gaudi/"
    "model-performance-gaudi2-inference.html": 0.71,
    "https://intel.com/content/www/us/en/developer/platform/gaudi/model-performance.html": 0.72,
}


# vLLM's API-server CPU time per request (issue 34, TTFT under load; hardware/engines.yaml vllm
# api_request_us, 7,750 us on all twelve sources, at most 9,900 us) refitted without each source, as
# `python -m validation.fit_api_request vllm` prints
GPUSTACK_LAB = "https://github.com/gpustack/gpustack/blob/"
_LAB_10E = GPUSTACK_LAB + "10e9444a07c73556f2ef0d10d2b2766bbf54c9c0/docs/performance-lab/"
_LAB_472 = GPUSTACK_LAB + "47277d79f4a5bae12a2d25e9ecbed2a2177a5f2d/docs/performance-lab/"
_LAB_R1 = (
    GPUSTACK_LAB
    + "a5c9fafc3022e81779c2c5ade32c5b703ce2248c/docs/performance-lab/deepseek-r1/h200.md"
)
_LAB_PAGES = (  # the gpustack performance-lab pages with bursts through an API server
    _LAB_10E + "qwen3-235b-a22b/h100.md",
    _LAB_10E + "qwen3-32b/a100.md",
    _LAB_10E + "qwen3-32b/h100.md",
    GPUSTACK_LAB
    + "72aee9dd195ff5c9bf3a4886add80038ce79aef8/docs/performance-lab/gpt-oss-120b/h100.md",
    _LAB_R1,
    _LAB_472 + "gpt-oss-120b/a100.md",
    _LAB_472 + "gpt-oss-20b/a100.md",
    _LAB_472 + "gpt-oss-20b/h100.md",
    _LAB_472 + "qwen3-235b-a22b/a100.md",
    _LAB_472 + "qwen3-14b/a100.md",
    _LAB_472 + "qwen3-14b/h100.md",
)
API_REQUEST_FIT = {
    **dict(
        zip(
            _LAB_PAGES,
            (9.75e-3, 7.5e-3, 7.5e-3, 7.75e-3, 7e-3, 7.75e-3, 7.75e-3, 8e-3, 7.5e-3, 7.5e-3, 7e-3),
            strict=True,
        )
    ),
    # dstack's vLLM 0.6.3 bursts on 8 MI300X (amd/tgi_vs_vllm), a twelfth source of the fit
    "https://github.com/dstackai/benchmarks/blob/ac24b9d12d571bc785ec86ab18e4ffbf34e68f08/"
    "amd/tgi_vs_vllm/vllm/data/result_vllm_short.csv": 7.5e-3,
}
# SGLang's (its tokenizer manager's; both profiles, sglang and sglang-v0.4: 3,500 us on all eight
# sources; its MXFP4 runs left out, validation/fit_engine_versions.py unmodelled_kernel), as
# `python -m validation.fit_api_request sglang` prints
SGLANG_API_REQUEST_FIT = {
    "https://github.com/datacrunch-research/h200-benchmarks/blob/"
    "c091ef530a525d2e788bc41c39a4450b09c9f2ad/sglang/outputs/"
    "llama_3_3_70b_offline_output.jsonl": 3.75e-3,
    _LAB_10E + "qwen3-235b-a22b/h100.md": 3.5e-3,
    _LAB_10E + "qwen3-32b/a100.md": 3.5e-3,
    _LAB_10E + "qwen3-32b/h100.md": 3.5e-3,
    _LAB_R1: 4.75e-3,
    _LAB_472 + "qwen3-235b-a22b/a100.md": 3.25e-3,
    _LAB_472 + "qwen3-14b/a100.md": 3.25e-3,
    _LAB_472 + "qwen3-14b/h100.md": 2.75e-3,
}


def _api_request_fit(engine: str, fits: dict[str, float]) -> ServingFit:
    """An engine profile's API-server time per request refitted without the source (`fits`)."""
    return ServingFit(
        engine,
        "api_request_s",
        tuple(fits),
        lambda p, e: 0.0,
        f"{engine} api_request_us refitted without the source (validation/fit_api_request.py)",
        refit=lambda p, g: fits[g],
    )


def _gaudi_share(field: str) -> ServingFit:
    return ServingFit(
        "family:intel-gaudi",
        field,
        tuple(GAUDI_K),
        lambda p, e: GAUDI_BORROWED[field],
        f"intel-gaudi {field} share refitted without the page (validation/fit_family_share.py)",
        refit=lambda p, g: GAUDI_BORROWED[field] * GAUDI_K[g],
    )


# The engines' own fused-MoE and MLA decode kernels on AMD Instinct (issue 34 mechanism (a);
# hardware/engines.yaml moe_time_factor / mla_decode_time_factor amd-instinct) refitted without each
# source, as `python -m validation.fit_stack_kernels <engine> amd-instinct` prints: (moe, mla). The
# Triton era (vllm-v0, sglang-v0.4) is derived from the AITER era's factors and AMD's own figures
# (validation/fit_stack_kernels.py triton_era), fitted on no case: nothing to refit.
STACK_FAMILY = "amd-instinct"
STACK_FIT: dict[str, dict[str, tuple[float, float]]] = {
    # vLLM >= 0.8 with AITER (issue 34; all of it: moe x2, mla x1): one source, so without it
    # nothing is left to fit on and the curves' own time (x1) stands (_stack_fit's fallback)
    "vllm": {
        "https://github.com/vllm-project/vllm-project.github.io/blob/"
        "c57a123e28b6d0a341ba49d9c3fe86f7c1d22e6a/_posts/2026-02-27-rocm-attention-backend.md": (
            1.0,
            1.0,
        ),
    },
}


def _stack_fit(engine: str, field: str) -> ServingFit:
    """One engine's MoE (field moe_time_factor) or MLA decode factor on amd-instinct, refitted
    without the source left out (STACK_FIT), the other families' entries as shipped."""
    i = 0 if field == "moe_time_factor" else 1

    def refit(p: EngineProfile, g: str) -> tuple[tuple[str, float], ...]:
        pairs = getattr(p, field)
        return tuple(
            (fam, STACK_FIT[engine][g][i] if fam == STACK_FAMILY else x) for fam, x in pairs
        )

    return ServingFit(
        engine,
        field,
        tuple(STACK_FIT[engine]),
        lambda p, e: (),
        f"{engine} {field} refitted without the source (validation/fit_stack_kernels.py)",
        refit=refit,
    )


FITS = (
    ServingFit(
        "vllm",
        "request_latency_s",
        ("https://ai.wmx.dev/benchmarks",),
        lambda p, e: 0.0,
        "vLLM request_latency_us 0: no unloaded measurement left",
    ),
    ServingFit(
        "vllm",
        "api_token_slow_s",
        ("https://mushfiqrahman.dev/?p=1668",),
        lambda p, e: p.api_token_fast_s,
        "api_token_slow_us = api_token_fast_us: no slow-detokenizer case left",
    ),
    ServingFit(
        "trtllm",
        "request_latency_s",
        (TRTLLM_014,),
        lambda p, e: e["vllm"].request_latency_s if "vllm" in e else 0.0,
        "TensorRT-LLM request_latency_us borrowed from vLLM: no unloaded measurement left",
    ),
    ServingFit(
        "vllm-v0",
        "cpu_per_seq_s",  # (family, seconds) pairs, not a float
        tuple(dict.fromkeys((*V0_FIT, *AMD_V0_FIT))),
        lambda p, e: p.cpu_per_seq_s,
        "vLLM V0 cpu_per_seq refitted without the source (validation/fit_engine_versions.py; "
        "amd-instinct's own: validation/fit_amd_v0.py)",
        refit=_v0_without,
    ),
    _api_request_fit("vllm", API_REQUEST_FIT),
    _api_request_fit("sglang", SGLANG_API_REQUEST_FIT),
    _api_request_fit("sglang-v0.4", SGLANG_API_REQUEST_FIT),
    _gaudi_share("compute"),
    _gaudi_share("memory"),
    ServingFit(
        "sglang",
        "cpu_per_seq_s",  # (family, seconds) pairs, not a float
        tuple(SGLANG_SEQ_FIT),
        lambda p, e: (),
        "SGLang cpu_per_seq refitted without the source (validation/fit_seq_cost.py)",
        refit=_sglang_seq_without,
    ),
    ServingFit(  # the releases before 0.4.4 carry the same per-sequence cost
        "sglang-v0.4",
        "cpu_per_seq_s",
        tuple(SGLANG_SEQ_FIT),
        lambda p, e: (),
        "SGLang cpu_per_seq refitted without the source (validation/fit_seq_cost.py)",
        refit=_sglang_seq_without,
    ),
    *(_stack_fit(e, f) for e in STACK_FIT for f in ("moe_time_factor", "mla_decode_time_factor")),
)


# validation/calibrate.py fits each engine's cpu_step_us and cpu_per_seq_us (and the scalar shares
# of the families without kernel curves) on the step cases of validation/public_cases.yaml and
# extra_cases.yaml, leave-one-source-out there (validation/crossval.py). A publication with cases
# both there and here is one source: leaving it out here refits those figures without its step
# cases too (step_fits). Keys: its source group here; values: its source group there
# (validation/crossval.py source_group; the two files name some sources differently).
ROCM_V1_TABLES = (  # AMD's vLLM 0.10.0 latency (step cases) and throughput (high-load) tables
    "https://github.com/ROCm/vllm/blob/040de12d45c16d6de6ad386cc57dd68b8c5b805e/docs/dev-docker/"
    "README.md"
)
STEP_SOURCES = {
    ROCM_V1_TABLES: ROCM_V1_TABLES,
    # NIM 1.8.0's Llama-3.3-70B page: its concurrency-1 rows are step cases, the rest serving ones
    "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md": (
        "NVIDIA NIM LLM benchmarking docs"
    ),
}


def _engine_figures(
    engine: str, full: dict[str, float], without: dict[str, float]
) -> dict[str, Callable[[EngineProfile], Any]]:
    """An engine's calibrate.py figures that leaving a step source out changes, as profile ->
    value: cpu_step_s (an engine with no case left takes the fitted engines' median, `cpu:*`, as
    validation/crossval.py predicts it) and cpu_per_seq_s (a family with no slope left pays 0;
    families calibrate.py does not fit keep the profile's, fitted by other scripts)."""
    out: dict[str, Callable[[EngineProfile], Any]] = {}
    cpu = f"cpu:{engine}"
    if cpu in full and without.get(cpu, without["cpu:*"]) != full[cpu]:
        value = without.get(cpu, without["cpu:*"])
        out["cpu_step_s"] = lambda p: value
    seq = f"seq:{engine}:"
    fams = {k.removeprefix(seq) for k in (*full, *without) if k.startswith(seq)}
    if any(full.get(seq + f, 0.0) != without.get(seq + f, 0.0) for f in fams):

        def per_seq(p: EngineProfile) -> tuple[tuple[str, float], ...]:
            kept = [(f, s) for f, s in p.cpu_per_seq_s if f not in fams]
            new = [(f, without[seq + f]) for f in fams if seq + f in without]
            return tuple(sorted([*kept, *new]))

        out["cpu_per_seq_s"] = per_seq
    return out


@cache
def step_fits() -> tuple[ServingFit, ...]:
    """The ServingFits of STEP_SOURCES: each engine figure validation/calibrate.py fits that
    changes when the source's step cases leave its fit, at its refitted value. A family share
    that changes is refused (nothing here patches one yet: add it before mapping such a source)."""
    from validation.calibrate import fits_without

    full, without = fits_without(tuple(STEP_SOURCES.values()))
    engines = sorted({k.split(":")[1] for k in full if k.startswith(("cpu:", "seq:"))} - {"*"})
    out = []
    for group, step in STEP_SOURCES.items():
        w = without[step]
        moved = [
            k
            for k in set(full) | set(w)
            if not k.startswith(("cpu:", "seq:")) and full.get(k) != w.get(k)
        ]
        if moved:
            raise ValueError(f"leaving out {step} moves family shares {sorted(moved)}")
        for engine in engines:
            for field, value in _engine_figures(engine, full, w).items():
                out.append(
                    ServingFit(
                        engine,
                        field,
                        (group,),
                        lambda p, e, value=value: value(p),
                        f"{engine} {field.removesuffix('_s')}_us refitted without the source's "
                        "step cases (validation/calibrate.py)",
                    )
                )
    return tuple(out)


def all_fits() -> tuple[ServingFit, ...]:
    """Every figure fitted on a scored source: FITS and the step-case fits (step_fits)."""
    return FITS + step_fits()


def source_group(case: dict[str, Any]) -> str:
    """The source a serving case cites, up to its first parenthesis or comma (as crossval)."""
    return str(case["source"]).strip().split(" (")[0].split(",")[0].strip()


class _Patched:
    """A catalog whose accelerators run some engine figures at other values."""

    def __init__(self, cat: Any, patch: dict[tuple[str, str], float]) -> None:
        self._cat, self._patch = cat, patch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cat, name)

    def accelerator(self, name: str):
        hw = self._cat.accelerator(name)
        engines = dict(hw.efficiency.engines or {})
        shares = {}  # ("family:<id>", field): a hardware family's scalar share
        for (eng, field), value in self._patch.items():
            if eng in engines:
                engines[eng] = replace(engines[eng], **{field: value})
            elif eng == f"family:{hw.family}":
                shares[field] = value
        return replace(hw, efficiency=replace(hw.efficiency, engines=engines, **shares))


def patch_without(
    group: str, hw: Any, fits: tuple[ServingFit, ...] = FITS
) -> tuple[dict[tuple[str, str], float], tuple[str, ...]]:
    """The engine figures to change when `group` is left out, and why (empty: none)."""
    patch, why = {}, []
    for f in fits:
        if group not in f.groups:
            continue
        engines = hw.efficiency.engines or {}
        if f.engine.startswith("family:"):  # a family's scalar share, refitted without `group`
            if f.engine == f"family:{hw.family}" and f.refit is not None:
                patch[(f.engine, f.field)] = f.refit(hw.efficiency, group)
                why.append(f.why)
            continue
        if f.engine in engines:
            patch[(f.engine, f.field)] = f.value_without(engines, group)
        why.append(f.why)
    return patch, tuple(why)


@dataclass(frozen=True)
class ServingResult:
    """One case in sample and out of sample (one row of validation/serving_errors.csv)."""

    file: str  # the case file, relative to the repository
    id: str
    group: str
    engine: str
    engine_version: str
    hardware: str
    family: str
    metric: str
    measured: float
    ideal: float
    in_sample: float
    out_of_sample: float
    refitted: tuple[str, ...]  # what the out-of-sample run changed (ServingFit.why)

    @property
    def error_in(self) -> float:
        return self.in_sample / self.measured - 1.0

    @property
    def error_out(self) -> float:
        return self.out_of_sample / self.measured - 1.0

    @property
    def bound_violation(self) -> bool:
        """The measurement beat the ideal (speed of light): faster time or higher rate."""
        time_like = self.metric.endswith("_ms")
        ratio = self.ideal / self.measured if time_like else self.measured / self.ideal
        return ratio > 1 + 1e-9


# ---- evaluation: each (case, figure set) once, in two worker processes --------------------
_CAT: Any = None


def _catalog() -> Any:
    global _CAT
    if _CAT is None:
        from roofline.catalog.load import load_catalog

        _CAT = load_catalog()
    return _CAT


def _evaluate(task: tuple[dict[str, Any], tuple[tuple[tuple[str, str], float], ...]]):
    """(ideal, expected) of one case under the catalog with the patch applied."""
    from roofline.cases.serving import run_serving_case

    case, patch = task
    cat = _catalog()
    r = run_serving_case(case, _Patched(cat, dict(patch)) if patch else cat)
    return r.ideal, r.expected


def _map(fn, tasks: list, workers: int) -> list:
    if workers <= 1 or len(tasks) < 50:
        return [fn(t) for t in tasks]
    import multiprocessing as mp

    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(fn, tasks, chunksize=8)


def cross_validate_serving(
    cases: list[tuple[str, dict[str, Any]]], cat: Any, workers: int = 2
) -> tuple[list[ServingResult], list[tuple[str, str, str]]]:
    """Every (file, case) in sample and with its source left out (see the module docstring);
    and the skipped ones as (file, id, why)."""
    from roofline.engines.engine import ENGINES

    kept, skipped = [], []
    fits = all_fits()
    for rel, c in cases:
        eng = str(c.get("engine", "vllm"))
        if eng.lower() not in ENGINES:
            skipped.append((rel, c["id"], f"engine '{eng}' has no profile in the catalog"))
        else:
            kept.append((rel, c))
    tasks: dict[tuple, tuple] = {}  # (id, patch) -> task: each case once per figure set
    plan = []
    for rel, c in kept:
        hw = cat.accelerator(c["hardware"])
        patch, why = patch_without(source_group(c), hw, fits)
        key_in, key_out = (rel, c["id"], ()), (rel, c["id"], tuple(sorted(patch.items())))
        tasks.setdefault(key_in, (c, ()))
        tasks.setdefault(key_out, (c, key_out[2]))
        plan.append((rel, c, hw, key_in, key_out, why))
    keys = list(tasks)
    got = dict(zip(keys, _map(_evaluate, [tasks[k] for k in keys], workers), strict=True))
    out = []
    for rel, c, hw, key_in, key_out, why in plan:
        (ideal, inside), (_, outside) = got[key_in], got[key_out]
        out.append(
            ServingResult(
                rel,
                c["id"],
                source_group(c),
                str(c.get("engine", "vllm")),
                str(c.get("engine_version", "")),
                hw.id,
                hw.family,
                c["metric"],
                float(c["measured"]),
                ideal,
                inside,
                outside,
                why,
            )
        )
    return out, skipped


# ---- the committed error file --------------------------------------------------------------
COLUMNS = (
    "file",
    "id",
    "group",
    "engine",
    "engine_version",
    "hardware",
    "family",
    "metric",
    "measured",
    "ideal",
    "in_sample",
    "out_of_sample",
    "refitted",
)


def write(results: list[ServingResult], skipped: list[tuple[str, str, str]], path: Path) -> None:
    """validation/serving_errors.csv: one row per case, then one '# skipped' line per case not
    evaluated."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in results:
            row = [getattr(r, k) for k in COLUMNS]
            row[8:12] = [f"{x:.6g}" for x in row[8:12]]
            row[12] = "; ".join(r.refitted)
            w.writerow(row)
        for rel, cid, why in skipped:
            fh.write(f"# skipped,{rel},{cid},{why}\n")


@cache
def load(path: Path = ERRORS) -> tuple[tuple[ServingResult, ...], tuple[tuple[str, ...], ...]]:
    """The results and skipped cases validation/serving_errors.csv holds (run this script to
    rewrite it after a catalog change)."""
    lines = path.read_text().splitlines()
    skipped = tuple(tuple(ln.split(",", 3)[1:]) for ln in lines if ln.startswith("# skipped,"))
    rows = csv.DictReader(ln for ln in lines if not ln.startswith("#"))
    results = tuple(
        ServingResult(
            **{k: r[k] for k in COLUMNS[:8]},
            **{k: float(r[k]) for k in COLUMNS[8:12]},
            refitted=tuple(x for x in r["refitted"].split("; ") if x),
        )
        for r in rows
    )
    return results, skipped


def main() -> None:
    import time

    from roofline.cases.casefiles import load_serving_cases

    t0 = time.monotonic()
    cat = _catalog()
    cases = [(rel, c) for rel in CASE_FILES for c in load_serving_cases(ROOT / rel)]
    results, skipped = cross_validate_serving(cases, cat)
    write(results, skipped, ERRORS)
    print(
        f"wrote {ERRORS.relative_to(ROOT)}: {len(results)} cases evaluated, {len(skipped)} "
        f"skipped (engine not in the catalog), {time.monotonic() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()

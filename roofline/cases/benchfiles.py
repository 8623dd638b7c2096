"""A user's own serving benchmark results, read by content (never by extension): what arrived, how
long the requests were, and the latencies and throughput the harness measured. Three formats:

- vLLM `vllm bench serve` / `benchmarks/benchmark_serving.py --save-result`: one JSON object
  (`--append-result` appends more, one per line). Read from vllm-project/vllm
  vllm/benchmarks/serve.py at 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1 (`main`'s result_json and
  `benchmark`'s result): `request_rate` (a number, or the string "inf": every request at t = 0),
  `burstiness`, `max_concurrency`, `completed`, `total_input_tokens`, `total_output_tokens`,
  `request_throughput`, `output_throughput`, `{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms` (the
  percentiles --metric-percentiles names, 99 by default), and with `--save-detailed` per request
  `input_lens`, `output_lens` (0 for a failed request), `ttfts` and `itls` in seconds and
  `start_times` (each request's time.perf_counter() as it is sent: with a rate and no
  concurrency cap, its arrival). A `ramp_up_strategy` run (a rate that changes) is refused.
- SGLang `python -m sglang.bench_serving --output-file F.jsonl`: one JSON line appended per run.
  Read from sgl-project/sglang python/sglang/bench_serving.py at
  0033168f0f58b2bc05aa0273bd475d9c01bafb1c (`benchmark`'s result): `backend`, `dataset_name`,
  `request_rate` (Python's float inf is written `Infinity`), `max_concurrency`, `completed`,
  `total_input_tokens`, `total_output_tokens`, `total_output_tokens_retokenized`,
  `request_throughput`, `output_throughput`, `{mean,median,std,p99}_{ttft,tpot}_ms`,
  `mean_e2e_latency_ms`, and with `--output-details` the same per-request lists as vLLM.
- genai-perf `profile` export `profile_export_genai_perf.json`. Read from
  triton-inference-server/perf_analyzer at 263c5f6e0c7a6c15472a54409174981f67930cfe:
  genai-perf/genai_perf/export_data/json_exporter.py (the statistics dict, plus `input_config`),
  metrics/llm_metrics.py and metrics/metrics.py (the metric names `time_to_first_token`,
  `inter_token_latency`, `output_token_throughput`, `request_throughput`, `request_count`,
  `input_sequence_length`, `output_sequence_length`), metrics/statistics.py (each a mapping with
  `unit`, `avg`, `min`, `max`, `std` and `p1` … `p99`; times in ms) and
  config/input/config_command.py (`input_config.perf_analyzer.stimulus` holds `concurrency` or
  `request_rate`). genai-perf's inter-token latency is per request (E2E − TTFT) / (output − 1),
  which is what vLLM and SGLang call TPOT.

Every figure is kept in the files' own units (ms, per second); a missing or malformed key is one
InputError naming the file, the line (for JSONL) and the key. Pure: no YAML, no rendering.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from roofline.catalog.files import read_text
from roofline.domain.errors import InputError

# the metrics compared, in the files' units; the same names as validation/serving_cases.yaml's
METRICS = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "output_tokens_per_s")
# vLLM and SGLang write the same keys for these (benchmark_serving's lineage)
_SERVING_KEYS = {
    "ttft_p50_ms": "median_ttft_ms",
    "ttft_p99_ms": "p99_ttft_ms",
    "tpot_p50_ms": "median_tpot_ms",
    "tpot_p99_ms": "p99_tpot_ms",
    "output_tokens_per_s": "output_throughput",
}
_GENAI_KEYS = {
    "ttft_p50_ms": ("time_to_first_token", "p50"),
    "ttft_p99_ms": ("time_to_first_token", "p99"),
    "tpot_p50_ms": ("inter_token_latency", "p50"),
    "tpot_p99_ms": ("inter_token_latency", "p99"),
    "output_tokens_per_s": ("output_token_throughput", "avg"),
}
TOOLS = {"vllm": "vLLM bench serve", "sglang": "SGLang bench_serving", "genai-perf": "genai-perf"}


@dataclass(frozen=True)
class BenchRun:
    """One measured run: its arrivals (a Poisson `rate` with vLLM's `burstiness`, a closed loop
    of `concurrency` users, or both None: every request at t = 0), its requests' lengths (per
    request when the file holds them, else the file's means) and the measured metrics."""

    where: str  # file, or file line N for a JSONL line
    tool: str  # a TOOLS key
    rate: float | None
    concurrency: int | None
    burstiness: float
    requests: int
    prompts: np.ndarray | None  # per-request lengths, when the file holds them
    outputs: np.ndarray | None
    prompt_mean: float
    output_mean: float
    measured: dict[str, float]  # METRICS name -> value, only those the file holds
    arrival_s: np.ndarray | None = None  # the requests' own send times, from 0, when held

    @property
    def per_request(self) -> bool:
        return self.prompts is not None

    @property
    def lengths_text(self) -> str:
        if self.per_request:
            return f"per request ({self.requests} from the file)"
        return (
            f"the file's means ({self.prompt_mean:.0f} in, {self.output_mean:.0f} out; "
            "it holds no per-request lengths)"
        )

    @property
    def arrivals_text(self) -> str:
        if self.arrival_s is not None:
            span = float(self.arrival_s.max())
            return (
                f"the file's send times ({self.requests} requests over {span:.3g} s; "
                f"request_rate {self.rate:g})"
            )
        if self.concurrency is not None:
            if self.rate is not None:
                return (
                    f"{self.rate:g} requests/s capped at {self.concurrency} in flight: "
                    f"served as a Poisson rate (the cap is not modelled)"
                )
            return f"closed loop, {self.concurrency} users"
        if self.rate is None:
            return "every request at t = 0 (request rate inf)"
        if self.burstiness != 1.0:
            return f"gamma, burstiness {self.burstiness:g}, {self.rate:g} requests/s"
        return f"Poisson, {self.rate:g} requests/s"


def _records(path: Path, text: str) -> list[tuple[str, Any]]:
    """(where, value): the whole file as one JSON value, else one per non-empty line."""
    try:
        return [(str(path), json.loads(text))]
    except json.JSONDecodeError:
        pass
    out = []
    for i, line in enumerate(text.splitlines()):
        if line.strip():
            where = f"{path} line {i + 1}"
            try:
                out.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not JSON ({exc.msg})") from None
    return out


def tool_of(rec: Any) -> str | None:
    """Which harness wrote a record, from its keys; None for anything else."""
    if not isinstance(rec, dict):
        return None
    if isinstance(rec.get("time_to_first_token"), dict):
        return "genai-perf"
    if "mean_ttft_ms" in rec or "median_ttft_ms" in rec:
        sglang = {"total_output_tokens_retokenized", "mean_e2e_latency_ms", "dataset_name"}
        return "sglang" if sglang & set(rec) else "vllm"
    return None


def is_bench_file(path: str | Path) -> bool:
    """True when the file's content is a vLLM, SGLang or genai-perf result (any extension)."""
    p = Path(path)
    if str(path) == "-" or not p.is_file():
        return False
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        recs = _records(p, text)
    except InputError:
        first = text.lstrip().splitlines()[0]
        try:
            return tool_of(json.loads(first)) is not None
        except json.JSONDecodeError:
            return False
    return bool(recs) and tool_of(recs[0][1]) is not None


def read_bench_file(path: str | Path) -> list[BenchRun]:
    """Every run a benchmark file holds (one per JSON object or line), strictly."""
    p = Path(path)
    text = read_text(p)
    recs = _records(p, text)
    if not recs:
        raise InputError(f"{p}: no benchmark results")
    out = []
    for where, rec in recs:
        tool = tool_of(rec)
        if tool is None:
            raise InputError(
                f"{where}: not a vLLM, SGLang or genai-perf result (no key 'mean_ttft_ms' or "
                "'time_to_first_token')"
            )
        out.append(
            _genai_run(where, rec) if tool == "genai-perf" else _serving_run(where, rec, tool)
        )
    return out


def _number(where: str, rec: dict[str, Any], key: str, positive: bool = True) -> float:
    if key not in rec:
        raise InputError(f"{where}: missing key '{key}'")
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise InputError(f"{where}: key '{key}' must be a finite number, got {v!r}")
    if v < 0 or (positive and v == 0):
        raise InputError(f"{where}: key '{key}' must be positive, got {v!r}")
    return float(v)


def _rate(where: str, v: Any, key: str = "request_rate") -> float | None:
    """A request rate; inf ("inf", Infinity or absent) is None: every request at t = 0."""
    if v is None or v == "inf" or (isinstance(v, float) and math.isinf(v) and v > 0):
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise InputError(f"{where}: key '{key}' must be a positive number or inf, got {v!r}")
    return float(v)


def _concurrency(where: str, v: Any, key: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InputError(f"{where}: key '{key}' must be a whole number of at least 1, got {v!r}")
    return int(v)


def _lengths(where: str, rec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per-request (prompt, output) lengths when the file holds both lists, and which requests
    completed; failed requests (output 0) are dropped, as the harness drops them from its
    metrics."""
    if "input_lens" not in rec and "output_lens" not in rec:
        return None
    lists = []
    for key in ("input_lens", "output_lens"):
        v = rec.get(key)
        if not isinstance(v, list) or not v:
            raise InputError(f"{where}: key '{key}' must be a non-empty list of token counts")
        for x in v:
            if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                raise InputError(f"{where}: key '{key}' holds {x!r}, not a token count")
        lists.append(np.asarray(v, dtype=np.int64))
    p, o = lists
    if len(p) != len(o):
        raise InputError(
            f"{where}: keys 'input_lens' and 'output_lens' differ in length ({len(p)}, {len(o)})"
        )
    ok = (o > 0) & (p > 0)
    if not ok.any():
        raise InputError(f"{where}: key 'output_lens' holds no completed request")
    return p[ok], o[ok], ok


def _send_times(where: str, rec: dict[str, Any], ok: np.ndarray) -> np.ndarray | None:
    """The completed requests' send times from 0 (vLLM `start_times`), when held."""
    v = rec.get("start_times")
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != len(ok):
        raise InputError(f"{where}: key 'start_times' must be a list as long as 'input_lens'")
    for x in v:
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            raise InputError(f"{where}: key 'start_times' holds {x!r}, not a time")
    t = np.asarray(v, dtype=float)[ok]
    return t - t.min()


def _serving_run(where: str, rec: dict[str, Any], tool: str) -> BenchRun:
    """A vLLM or SGLang result (the same keys for everything read here)."""
    if rec.get("ramp_up_strategy") is not None:
        raise InputError(f"{where}: key 'ramp_up_strategy': a run whose rate ramps is not modelled")
    rate = _rate(where, rec.get("request_rate"))
    conc = _concurrency(where, rec.get("max_concurrency"), "max_concurrency")
    burst = rec.get("burstiness", 1.0)
    if isinstance(burst, bool) or not isinstance(burst, int | float) or not 0 < burst < math.inf:
        raise InputError(f"{where}: key 'burstiness' must be a positive number, got {burst!r}")
    completed = int(_number(where, rec, "completed"))
    # a figure of 0 (TPOT of one-token answers) has no relative error: left out
    figures = {n: _number(where, rec, k, False) for n, k in _SERVING_KEYS.items() if k in rec}
    measured = {name: v for name, v in figures.items() if v > 0}
    if not measured:
        raise InputError(f"{where}: missing key 'median_ttft_ms' (no metric to compare)")
    lens = _lengths(where, rec)
    arrival = None
    p: np.ndarray | None
    o: np.ndarray | None
    if lens is not None:
        p, o, ok = lens
        p_mean, o_mean, n = float(p.mean()), float(o.mean()), len(p)
        if rate is not None and conc is None:
            arrival = _send_times(where, rec, ok)
    else:
        p_mean = _number(where, rec, "total_input_tokens") / completed
        o_mean = _number(where, rec, "total_output_tokens") / completed
        p = o = None
        n = completed
    return BenchRun(
        where, tool, rate, conc, float(burst), n, p, o, p_mean, o_mean, measured, arrival
    )


def _stat(where: str, rec: dict[str, Any], metric: str, stat: str, positive: bool = True) -> float:
    block = rec.get(metric)
    if not isinstance(block, dict):
        raise InputError(f"{where}: missing key '{metric}'")
    return _number(f"{where}: {metric}", block, stat, positive)


def _genai_run(where: str, rec: dict[str, Any]) -> BenchRun:
    """A genai-perf profile export: aggregates only (lengths are the means)."""
    cfg = rec.get("input_config")
    pa = cfg.get("perf_analyzer") if isinstance(cfg, dict) else None
    stim = pa.get("stimulus") if isinstance(pa, dict) else None
    if not isinstance(stim, dict) or not ({"concurrency", "request_rate"} & set(stim)):
        raise InputError(
            f"{where}: missing key 'input_config.perf_analyzer.stimulus' "
            "(with 'concurrency' or 'request_rate')"
        )
    key = "input_config.perf_analyzer.stimulus"
    if "request_rate" in stim:
        rate, conc = _rate(where, stim["request_rate"], f"{key}.request_rate"), None
        if rate is None:
            raise InputError(f"{where}: key '{key}.request_rate' must be a finite rate")
    else:
        rate, conc = None, _concurrency(where, stim["concurrency"], f"{key}.concurrency")
    measured = {}
    for name, (metric, stat) in _GENAI_KEYS.items():
        if metric in rec:
            value = _stat(where, rec, metric, stat, positive=False)
            if value > 0:  # 0 (TPOT of one-token answers) has no relative error
                measured[name] = value
    if "time_to_first_token" not in rec:
        raise InputError(f"{where}: missing key 'time_to_first_token'")
    n = int(_stat(where, rec, "request_count", "avg")) if "request_count" in rec else 0
    p_mean = _stat(where, rec, "input_sequence_length", "avg")
    o_mean = _stat(where, rec, "output_sequence_length", "avg")
    if n < 1:
        raise InputError(f"{where}: missing key 'request_count' (the requests the run sent)")
    return BenchRun(where, "genai-perf", rate, conc, 1.0, n, None, None, p_mean, o_mean, measured)

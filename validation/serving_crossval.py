"""The serving cases' in-sample and out-of-sample (leave-one-source-out) predictions.

What the serving cases (validation/serving_cases.yaml) fit: two figures of vLLM's API server in
hardware/engines.yaml, each set by hand on one row of one source (the comments there say how):
- `request_latency_us`, the path a request takes outside the engine's steps: the concurrency-1
  median TTFT of the ai.wmx.dev L4 sweep (27.0 ms) minus the engine side;
- `api_token_slow_us`, the slow detokenizer's cost per streamed token: the 48-user median TTFT of
  the mushfiqrahman.dev RTX 4090 sweep (840 ms).
Everything else a serving case reads (kernel curves, the engines' step costs, the families'
shares) is fitted on other sources (validation/crossval.py): out of sample for these cases.

In sample: every case under the catalog as shipped. Out of sample: leave-one-source-out as
validation/crossval.py does for the step cases: all cases citing one source leave together, and
each figure fitted on that source is refitted without it. Each was fitted on one source alone,
so leaving that source out leaves no case to fit it on and it takes its fallback:
`request_latency_us` 0 (no unloaded measurement: the API server's path is not modelled) and
`api_token_slow_us` the fast path's `api_token_fast_us` (sourced from vLLM's PRs, never fitted
on a case). The other sources' cases keep the catalog's figures (they played no part in the fit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from roofline.cases.serving import run_serving_case
from roofline.timing.host import EngineProfile


@dataclass(frozen=True)
class ServingFit:
    """One engine figure fitted on the serving cases of one source."""

    engine: str
    field: str  # EngineProfile attribute (seconds)
    group: str  # the source it was fitted on (crossval.source_group of its cases)
    fallback: Callable[[EngineProfile], float]  # its value with no case left to fit it on
    why: str


FITS = (
    ServingFit(
        "vllm",
        "request_latency_s",
        "https://ai.wmx.dev/benchmarks",
        lambda p: 0.0,
        "request_latency_us 0: no unloaded measurement left",
    ),
    ServingFit(
        "vllm",
        "api_token_slow_s",
        "https://mushfiqrahman.dev/?p=1668",
        lambda p: p.api_token_fast_s,
        "api_token_slow_us = api_token_fast_us: no slow-detokenizer case left",
    ),
)


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
        for (eng, field), value in self._patch.items():
            if eng in engines:
                engines[eng] = replace(engines[eng], **{field: value})
        return replace(hw, efficiency=replace(hw.efficiency, engines=engines))


@dataclass(frozen=True)
class ServingResult:
    case: dict[str, Any]
    group: str
    family: str
    in_sample: float
    out_of_sample: float
    refitted: tuple[str, ...]  # what the out-of-sample run changed (ServingFit.why)

    @property
    def measured(self) -> float:
        return float(self.case["measured"])

    @property
    def error_in(self) -> float:
        return self.in_sample / self.measured - 1.0

    @property
    def error_out(self) -> float:
        return self.out_of_sample / self.measured - 1.0


def cross_validate_serving(cases: list[dict[str, Any]], cat: Any) -> list[ServingResult]:
    """Every serving case in sample and with its source left out (see the module docstring)."""
    out = []
    for c in cases:
        group = source_group(c)
        fits = [f for f in FITS if f.group == group]
        inside = run_serving_case(c, cat).expected
        outside = inside
        if fits:
            hw = cat.accelerator(c["hardware"])
            patch = {}
            for f in fits:
                prof = (hw.efficiency.engines or {}).get(f.engine)
                if prof is not None:
                    patch[(f.engine, f.field)] = f.fallback(prof)
            if patch:
                outside = run_serving_case(c, _Patched(cat, patch)).expected
        family = cat.accelerator(c["hardware"]).family
        out.append(ServingResult(c, group, family, inside, outside, tuple(f.why for f in fits)))
    return out


@cache
def serving_results(path: Path) -> tuple[ServingResult, ...]:
    """cross_validate_serving on a case file under the shipped catalog, once per process."""
    from roofline.catalog import load_catalog
    from roofline.userfiles import load_serving_cases

    return tuple(cross_validate_serving(load_serving_cases(path), load_catalog()))

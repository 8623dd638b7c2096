"""One deployment of a `check` spec evaluated: its static limits (roofline.checks.run_checks),
its traffic limits served at the spec's rate (checks.serve_at, the run kept for `report`'s
latency and cost) and a day's traffic curve (roofline.curvechecks). Pure: the CLI parses the
spec into a SpecCase and renders the SpecResult."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline.checks import (
    Check,
    Limits,
    TrafficLimits,
    run_checks,
    serve_at,
    traffic_checks,
)
from roofline.hardware import Accelerator
from roofline.memory import Engine
from roofline.model import ModelArch
from roofline.ops import Deployment

if TYPE_CHECKING:
    from roofline.curvechecks import CurveLimits
    from roofline.serving.prefixcache import PrefixSpec
    from roofline.serving.serve import ServeResult, Slo


@dataclass(frozen=True)
class SpecCase:
    """A spec's deployment, parsed: what run_checks, serve_at and run_curve_checks take."""

    name: str
    model: ModelArch
    hw: Accelerator
    dep: Deployment
    eng: Engine
    gpus: int  # over all replicas
    replicas: int
    batch: int
    prompt: int
    output: int
    context: int
    limits: Limits
    traffic: TrafficLimits | None = None
    day: CurveLimits | None = None
    day_slo: Slo | None = None  # the p99 limits a replica's capacity across the curve holds
    capacity_bytes: float | None = None
    requests: int = 1000
    seed: int = 0
    prefix: PrefixSpec | None = None


@dataclass(frozen=True)
class SpecResult:
    checks: list[Check]
    served: ServeResult | None  # the run at traffic.rate; None without traffic limits

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def evaluate_spec(case: SpecCase, ideal: bool = False) -> SpecResult:
    """Every assertion of `case`: the static ones, the traffic ones on one serving run at the
    rate (returned as `served`, expected and ideal), the curve's."""
    c = case
    checks = run_checks(
        c.model, c.hw, c.dep, c.eng, batch=c.batch, prompt=c.prompt, output=c.output,
        context=c.context, limits=c.limits, replicas=c.replicas,
        capacity_bytes=c.capacity_bytes, ideal=ideal,
    )  # fmt: skip
    served = None
    if c.traffic is not None:
        served = serve_at(
            c.model, c.hw, c.dep, c.eng, prompt=c.prompt, output=c.output, limits=c.traffic,
            replicas=c.replicas, capacity_bytes=c.capacity_bytes, requests=c.requests,
            seed=c.seed, prefix=c.prefix,
        )  # fmt: skip
        checks += traffic_checks(served, c.traffic, ideal)
    if c.day is not None:
        from roofline.curvechecks import run_curve_checks
        from roofline.serving.serve import Slo

        checks += run_curve_checks(
            c.model, c.hw, c.dep, c.eng, prompt=c.prompt, output=c.output,
            slo=c.day_slo or Slo(None, None, 99.0), limits=c.day,
            capacity_bytes=c.capacity_bytes, ideal=ideal, requests=c.requests, seed=c.seed,
        )  # fmt: skip
    return SpecResult(checks, served)


__all__ = ["SpecCase", "SpecResult", "evaluate_spec"]

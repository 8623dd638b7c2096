"""A check spec file (YAML or JSON) read, strictly (unknown keys, wrong types fail with one line
naming the file, the deployment and the key), and one of its deployments evaluated: its static
limits (roofline.checks.limits.run_checks), its traffic limits served at the spec's rate
(checks.serve_at, the run kept for `report`'s latency and cost) and a day's traffic curve
(roofline.checks.day). Pure: the CLI parses the spec into a SpecCase and renders the SpecResult."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.catalog.files import parse_yaml, read_text
from roofline.catalog.schema import NUM
from roofline.catalog.schema import check as _check
from roofline.checks.limits import (
    Check,
    Limits,
    TrafficLimits,
    run_checks,
    traffic_checks,
)
from roofline.domain.errors import CatalogError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.engines.engine import Engine
from roofline.serving.router import DEFAULT_ROUTER
from roofline.step.ops import Deployment

if TYPE_CHECKING:
    from roofline.checks.day import DayLimits
    from roofline.serving.metrics import Slo
    from roofline.serving.serve import ServeResult
    from roofline.serving.sim.prefixcache import PrefixConfig


@dataclass(frozen=True)
class SpecCase:
    """A spec's deployment, parsed: what run_checks, serve_at and run_day_checks take."""

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
    day: DayLimits | None = None
    day_slo: Slo | None = None  # the p99 limits a replica's capacity across the curve holds
    capacity_bytes: float | None = None
    requests: int = 1000
    seed: int = 0
    prefix: PrefixConfig | None = None
    workload: Any = None  # serving.workload.Workload under traffic: lengths, arrivals, burstiness
    drafting: Any = None  # serving.sim.drafting.DraftConfig: the drafter the replicas run
    router: str = DEFAULT_ROUTER  # how requests reach the replicas (serving.router)
    kv: Any = None  # serving.sim.kvtiers.KvHierarchy: KV tiers below HBM and the retention
    context_given: bool = False  # `context` set (TPOT at it, as analyze --context), not defaulted


@dataclass(frozen=True)
class SpecResult:
    checks: list[Check]
    served: ServeResult | None  # the run at traffic.rate; None without traffic limits

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def serve_at(case: SpecCase, limits: TrafficLimits, expected_only: bool = False) -> ServeResult:
    """Serve the spec case's `requests` Poisson requests at limits.rate on its `replicas` replicas
    (the serving simulator, docs/METRICS.md; its `prefix`: a serving.sim.prefixcache.PrefixConfig,
    None: every request new), the limits at limits.pct as the per-request SLOs; its `workload` (a
    serving.workload.Workload: length distributions, burstiness, an arrival log) replaces the
    fixed prompt/output requests, `drafting` (serving.sim.drafting.DraftConfig) drafts,
    `router` deals the requests to the replicas and `kv` (serving.sim.kvtiers.KvHierarchy)
    holds KV below HBM: the replica and the capacity serve builds (serving.mixcapacity);
    `expected_only`: the expected run alone (serve's)."""
    from roofline.serving.metrics import Slo
    from roofline.serving.mixcapacity import mix_capacity
    from roofline.serving.serve import make_replica, serve
    from roofline.serving.workload import make_workload, with_prefix

    c = case
    w = c.workload
    if w is None:
        w = make_workload(
            max(c.prompt, 1), c.output, rate=limits.rate, requests=c.requests, seed=c.seed
        )
        w = with_prefix(w, c.prefix, c.seed)
    ctx = float(w.prompts.mean() + w.outputs.mean() / 2)
    rep = make_replica(c.model, c.hw, c.dep, c.eng, w.max_len, capacity_bytes=c.capacity_bytes,
                       drafting=c.drafting, draft_context=ctx)  # fmt: skip
    rep = rep if c.kv is None else replace(rep, kv=c.kv)
    slo = Slo(limits.max_ttft_p99_s, limits.max_tpot_p99_s, limits.pct)
    return serve(
        rep, w, slo, c.replicas, capacity=mix_capacity(rep, w), router=c.router,
        expected_only=expected_only,
    )  # fmt: skip


def evaluate_spec(case: SpecCase, ideal: bool = False) -> SpecResult:
    """Every assertion of `case`: the static ones, the traffic ones on one serving run at the
    rate (returned as `served`, expected and ideal), the curve's."""
    c = case
    checks = run_checks(
        c.model, c.hw, c.dep, c.eng, batch=c.batch, prompt=c.prompt, output=c.output,
        context=c.context, limits=c.limits, replicas=c.replicas, context_given=c.context_given,
        capacity_bytes=c.capacity_bytes, ideal=ideal,
    )  # fmt: skip
    served = None
    if c.traffic is not None:
        served = serve_at(c, c.traffic)
        queue = None
        e = c.traffic.edges
        if e is not None and not e.neutral and c.workload is not None:  # --confidence
            from roofline.serving.confidence import slowed

            slow = replace(c, workload=slowed(c.workload, e, c.seed))
            queue = serve_at(slow, c.traffic, expected_only=not ideal)  # the half it reads
        checks += traffic_checks(served, c.traffic, ideal, queue)
    if c.day is not None:
        from roofline.checks.day import run_day_checks
        from roofline.serving.metrics import Slo

        checks += run_day_checks(
            c.model, c.hw, c.dep, c.eng, prompt=c.prompt, output=c.output,
            slo=c.day_slo or Slo(None, None, 99.0), limits=c.day,
            capacity_bytes=c.capacity_bytes, ideal=ideal, requests=c.requests, seed=c.seed,
            workload=c.workload if c.workload is not None and c.workload.mix else None,
            router=c.router, kv=c.kv,
        )  # fmt: skip
    return SpecResult(checks, served)


_SPEC_KEYS: dict[str, tuple[Any, bool]] = {
    "name": (str, False),
    "model": (str, True),
    "hardware": (str, True),
    "tp": (int, False),
    "pp": (int, False),
    "ep": (int, False),
    "gpus": (int, False),
    "dp": (int, False),
    "weights": (str, False),
    "kv_dtype": (str, False),
    "engine": (str, False),
    "memory": ((str, int, float), False),
    "rate": ((str, int, float), False),
    "requests": (int, False),
    "seed": (int, False),
    "batch": (int, False),
    "prompt": ((str, int), False),
    "output": ((str, int), False),
    "context": ((str, int), False),
    "shared_prefix": ((str, int, float), False),
    "prefixes": (int, False),
    "turns": (int, False),
    "think_time": ((str, int, float), False),
    "checks": (dict, True),
    # across a day's traffic (roofline/checks/day.py): the curve file (relative to the spec's
    # directory), the share of capacity left unused, and the delay instead of the derived one
    "traffic_curve": (str, False),
    "headroom": (NUM, False),
    "scale_up_delay": ((str, int, float), False),
    # the traffic as serve and size take it (their options' names): length distributions, the
    # SLO percentile, burstiness, an arrival log (a file relative to the spec's directory)
    "prompt_dist": (str, False),
    "output_dist": (str, False),
    "slo_pct": (NUM, False),
    "burstiness": (NUM, False),
    "arrivals": (str, False),
    "speedup": (NUM, False),
    # the drafter (speculative decoding), as serve's and size's drafter options
    "drafter": (str, False),
    "draft": (str, False),
    "gamma": ((str, int), False),
    "acceptance": ((str, int, float), False),
    "decay": (NUM, False),
    "tau": (NUM, False),
    "tau_gamma": (int, False),
    "tree_tokens": ((str, int), False),
    "topk": (int, False),
    "draft_vocab": (int, False),
    "draft_weights": (str, False),
    # a user calibration: a catalog directory (relative to the spec), as --catalog
    "catalog": (str, False),
    # size to a confidence (issue 35): expected, or p90 (the error bands' pessimistic edge)
    "confidence": ((str, int, float), False),
    # a workload file's classes (relative to the spec), in place of the single-shape keys
    "workload": (str, False),
    # the fleet's router and the KV beyond HBM, as serve's --router, --kv-offload, --retention
    "router": (str, False),
    "kv_offload": (str, False),
    "retention": (str, False),
}
# keys naming files, read relative to the spec's own directory
_RELATIVE = ("traffic_curve", "arrivals", "catalog", "prompt_dist", "output_dist", "workload")


_SPEC_CHECK_KEYS: dict[str, tuple[Any, bool]] = {
    "min_batch": (int, False),
    "max_tpot": ((str, int, float), False),
    "max_ttft": ((str, int, float), False),
    "max_batch_prefill": ((str, int, float), False),
    "min_throughput": (NUM, False),
    "fits": (bool, False),
    "min_concurrency": (int, False),
    "max_ttft_p99": ((str, int, float), False),
    "max_tpot_p99": ((str, int, float), False),
    "min_goodput": (NUM, False),
    "max_gpu_hours_per_day": (NUM, False),  # across traffic_curve
    "min_slo_attainment": (NUM, False),  # across traffic_curve: a share of the requests, 0 to 1
    "min_prefix_hit_rate": (NUM, False),
}


def load_spec(path: str | Path, candidates: bool = False) -> list[dict[str, Any]]:
    """Deployments to check, from YAML or JSON ('-' reads stdin): one mapping, a list, or a
    mapping with a 'deployments' list. Keys are validated; values keep their human units.

    With `candidates` (`roofline report`): one mapping of the same keys (the question: model,
    traffic, checks) and a `candidates:` list of mappings that each override some of them
    (hardware, tp, weights, ...); one deployment per candidate, checked as above."""
    name = "<stdin>" if str(path) == "-" else str(path)
    text = read_text(path, stdin_dash=True)
    raw = parse_yaml(text, name, "YAML or JSON")
    if candidates:
        raw = _candidates(name, raw)
    if isinstance(raw, dict) and "deployments" in raw:
        extra = sorted(str(k) for k in raw if k != "deployments")
        if extra:
            raise CatalogError(
                f"{name}: unknown top-level key '{extra[0]}' (a spec is one deployment, a list,"
                " or a mapping with a 'deployments' list only)"
            )
        raw = raw["deployments"]
    entries = raw if isinstance(raw, list) else [raw]
    if not entries or raw is None:
        raise CatalogError(f"{name}: no deployments to check")
    out = []
    for i, entry in enumerate(entries):
        label = entry.get("name", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
        where = f"{name}: deployment '{label}'"
        d = _check(where, entry, _SPEC_KEYS)
        _check(f"{where}: checks", d["checks"], _SPEC_CHECK_KEYS)
        if str(path) != "-":  # files relative to the spec's own directory
            d = {**d, **_relative(Path(path).parent, d)}
        out.append({**d, "name": label, "spec_file": name})  # errors name the file
    labels = [d["name"] for d in out]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:  # two rows of one name in the report could not be told apart
        raise CatalogError(f"{name}: deployment '{twice[0]}' is named twice")
    return out


def _relative(base: Path, d: dict[str, Any]) -> dict[str, Any]:
    """The spec's file keys as paths from the spec's directory (a length distribution only when
    it names a file there, not lognormal:... or a list)."""
    out = {}
    for key in _RELATIVE:
        if key not in d:
            continue
        p = base / d[key]
        if key not in ("prompt_dist", "output_dist") or p.is_file():
            out[key] = str(p)
    return out


def _candidates(name: str, raw: Any) -> list[dict[str, Any]]:
    """A report spec's deployments: the shared keys merged under each candidate's own."""
    if not isinstance(raw, dict) or not isinstance(raw.get("candidates"), list):
        raise CatalogError(f"{name}: expected a mapping with a 'candidates' list")
    if not raw["candidates"]:
        raise CatalogError(f"{name}: candidates: the list is empty")
    base = {k: v for k, v in raw.items() if k != "candidates"}
    out = []
    for i, cand in enumerate(raw["candidates"]):
        if not isinstance(cand, dict):
            raise CatalogError(f"{name}: candidate #{i + 1}: expected a mapping")
        if "checks" in cand:
            raise CatalogError(f"{name}: candidate #{i + 1}: checks are shared; set them once")
        d = {**base, **cand}
        if "name" not in cand:
            d["name"] = _candidate_name(d)
        out.append(d)
    names = [d["name"] for d in out]  # two candidates one name: each told apart by its number
    for i, d in enumerate(out):
        if names.count(d["name"]) > 1 and "name" not in raw["candidates"][i]:
            d["name"] += f" #{i + 1}"
    return out


def _candidate_name(d: dict[str, Any]) -> str:
    """A candidate named by what sets it apart: its replicas (dp), chip, TP, PP and EP above 1,
    GPUs in all when given, and weights ("6 x b200 TP1 fp8"; was "b200 TP1 fp8" for any dp)."""
    dp = d.get("dp", 1)
    name = (f"{dp} x " if isinstance(dp, int) and dp > 1 else "") + str(d.get("hardware", "?"))
    name += f" TP{d.get('tp', 1)}"
    for key in ("pp", "ep"):
        if isinstance(d.get(key), int) and d[key] > 1:
            name += f" {key.upper()}{d[key]}"
    if d.get("gpus"):
        name += f" ({d['gpus']} GPUs)"
    return name + (f" {d['weights']}" if d.get("weights") else "")

"""A `check` spec's deployment parsed into speccheck.SpecCase, and its result as check's and
report's JSON draw it (the keys of docs/COMMANDS.md's check section)."""

import math
from typing import Any

from roofline.checks.limits import Limits, TrafficLimits
from roofline.checks.spec import SpecCase, SpecResult
from roofline.cli import convert
from roofline.cli import layout_options as lopt
from roofline.cli import options as opt
from roofline.cli import traffic_options as topt
from roofline.cli.app import catalog, catalog_dirs, register_calibrations
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.units import limit_seconds
from roofline.engines.engine import engine
from roofline.serving.metrics import Slo
from roofline.serving.router import DEFAULT_ROUTER, check_router
from roofline.serving.slosearch import slo_requests
from roofline.serving.workload import checked_requests

CURVE_KEYS = ("traffic_curve", "headroom", "scale_up_delay")  # a day's traffic (cli/curve.py)
CURVE_CHECKS = ("max_gpu_hours_per_day", "min_slo_attainment")


def _positive_rate(value: Any, name: str, unit: str) -> Any:
    """`value` unless it is given and not a positive finite number (InputError naming `name`)."""
    if value is not None and not (
        isinstance(value, int | float) and math.isfinite(value) and value > 0
    ):
        raise InputError(f"{name} must be a positive rate in {unit}, got {value}")
    return value


DRAFT_KEYS = ("draft", "gamma", "acceptance", "decay", "tau", "tau_gamma", "tree_tokens", "topk",
              "draft_vocab", "draft_weights")  # fmt: skip
TRAFFIC_KEYS = ("prompt_dist", "output_dist", "slo_pct", "burstiness", "arrivals", "speedup",
                "workload", "confidence", "router", "kv_offload", "retention")  # fmt: skip


def _catalog(d: dict[str, Any]):
    """The catalog a deployment reads: the command's, plus its `catalog` directory (a user
    calibration, as --catalog)."""
    if d.get("catalog") is None:
        return catalog()
    from pathlib import Path

    from roofline.catalog.load import load_catalog

    if not Path(d["catalog"]).is_dir():
        raise InputError(f"catalog: {d['catalog']} is not a directory")
    cat = load_catalog([*catalog_dirs(), d["catalog"]])
    register_calibrations(cat, add=True)
    return cat


def _drafting(cat, m, dep, d: dict[str, Any]):
    """The spec's drafter (serve's and size's drafter options, same names) as a DraftConfig;
    None without `drafter`."""
    from roofline.cli import draft_options as dopt

    if d.get("drafter") is None:
        given = [k for k in DRAFT_KEYS if d.get(k) is not None]
        if given:
            raise InputError(f"{', '.join(given)}: speculative decoding needs 'drafter'")
        return None
    o = dopt.DraftOptions(
        drafter=d["drafter"], draft=d.get("draft"), gamma=str(d.get("gamma", dopt.GAMMA)),
        acceptance=None if d.get("acceptance") is None else str(d["acceptance"]),
        decay=d.get("decay", 1.0),
        tau=d.get("tau"), tau_gamma=d.get("tau_gamma"),
        tree_tokens=str(d.get("tree_tokens", "auto")), topk=d.get("topk", 8),
        draft_vocab=d.get("draft_vocab"), draft_weights=d.get("draft_weights"),
    )  # fmt: skip
    return dopt.draft_config(cat, m, dep, o)


def spec_case(d: dict[str, Any]) -> SpecCase:
    """One deployment of a spec (userfiles.load_spec) parsed for speccheck.evaluate_spec (an
    InputError naming the deployment on bad input)."""
    where = f"deployment '{d['name']}'"
    if d.get("spec_file"):
        where = f"{d['spec_file']}: {where}"
    try:
        cat = _catalog(d)
        m, hw = cat.model(d["model"]), cat.accelerator(d["hardware"])
        dep = opt.deployment(
            d.get("weights", opt.WEIGHTS),
            d.get("kv_dtype", "bf16"),
            "bf16",
            d.get("tp", 1),
            d.get("pp", 1),
            d.get("ep", 1),
            None,
            None,
            model=m,
        )
        opt.check_formats(dep, hw)
        gpus, replicas = lopt.replicas(dep, d.get("gpus"), d.get("dp", 1))
        prompt = opt.tokens(str(d.get("prompt", "1k")), "prompt", 1)
        output = opt.tokens(str(d.get("output", "1k")), "output", 1)
        context = opt.tokens(str(d.get("context", prompt + output)), "context", 1)
        opt.positions(m, max(context, prompt + output))
        topt.traffic_rules(d)
        c = d["checks"]
        _positive_rate(c.get("min_throughput"), "min_throughput", "tokens/s")
        limits = Limits(
            min_batch=c.get("min_batch"),
            min_concurrency=c.get("min_concurrency"),
            max_tpot_s=None
            if c.get("max_tpot") is None
            else limit_seconds(str(c["max_tpot"]), "max_tpot"),
            max_ttft_s=None
            if c.get("max_ttft") is None
            else limit_seconds(str(c["max_ttft"]), "max_ttft"),
            max_batch_prefill_s=None
            if c.get("max_batch_prefill") is None
            else limit_seconds(str(c["max_batch_prefill"]), "max_batch_prefill"),
            min_throughput=c.get("min_throughput"),
            fits=bool(c.get("fits", False)),
        )
        traffic = _traffic_limits(d)
        router = check_router(str(d.get("router", DEFAULT_ROUTER)))
        drafting = _drafting(cat, m, dep, d)
        day = None
        if any(d.get(k) is not None for k in CURVE_KEYS) or any(
            d["checks"].get(k) is not None for k in CURVE_CHECKS
        ):
            from roofline.cli import day as day_cli

            day = day_cli.spec_limits(d, CURVE_CHECKS)
        if not (
            traffic is not None
            or day is not None
            or limits.fits
            or any(
                x is not None
                for x in (
                    limits.min_batch,
                    limits.min_concurrency,
                    limits.max_tpot_s,
                    limits.max_ttft_s,
                    limits.max_batch_prefill_s,
                    limits.min_throughput,
                )
            )
        ):
            raise InputError(
                "no assertion given (--fits, --min-batch, --max-tpot, --max-ttft, --min-throughput)"
            )
        if d.get("requests") is not None:  # before slo_requests raises a short run's count
            checked_requests(d["requests"], "requests")
        if limits.min_batch is not None and limits.min_batch < 1:
            raise InputError(f"min_batch must be at least 1, got {limits.min_batch}")
        batch = d["batch"] if d.get("batch") is not None else (limits.min_batch or 1)
        if not 1 <= batch <= 10**7:
            raise InputError(f"batch must be from 1 to 1e7, got {batch}")
        memory = d.get("memory")
        cap = opt.capacity(hw, None if memory is None else str(memory))
        eng = engine(d.get("engine", "auto"), hw)
        traffic, day = _confident(d, hw, eng, traffic, day)
    except RooflineError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None
    prefix, w, kv = None, None, None
    mix_day = day is not None and d.get("workload") is not None  # the classes across the day
    if traffic is not None or mix_day:
        try:
            prefix = topt.prefix_config(
                None if d.get("shared_prefix") is None else str(d["shared_prefix"]),
                d.get("prefixes", 1),
                d.get("turns", 1),
                str(d.get("think_time", "0s")),
                d.get("seed", 0),
            )
            w = _workload(d, traffic, prompt, output, prefix)
            kv = _kv(d, cat, hw, dep, w)
        except RooflineError as exc:
            raise InputError(f"{where}: {exc}", hint=exc.hint) from None
        if traffic is not None and traffic.rate != w.rate and w.rate:  # a log at its own pace
            from dataclasses import replace

            traffic = replace(traffic, rate=float(w.rate))
    elif stray := [
        k for k in TRAFFIC_KEYS if d.get(k) is not None and not (k == "confidence" and day)
    ]:  # a confidence may size a day's curve alone
        given = ", ".join(stray)
        raise InputError(f"{where}: {given}: traffic keys need rate and a traffic check")
    return SpecCase(
        d["name"], m, hw, dep, eng, gpus, replicas, batch, prompt, output, context, limits,
        traffic, day, None if day is None else day_cli.spec_slo(d), cap,
        d.get("requests") or 1000, d.get("seed", 0), prefix, w, drafting,
        router, kv, "context" in d,
    )  # fmt: skip


def _kv(d: dict[str, Any], cat, hw, dep, w):
    """The spec's kv_offload and retention (serve's --kv-offload and --retention, one parser:
    cli.kvtier_options) as the replica's KV hierarchy; None without them."""
    from roofline.cli.kvtier_options import KvTierOptions

    o = KvTierOptions(d.get("kv_offload"), str(d.get("retention", "cache")))
    return o.checked(hw, dep.gpus_per_replica, cat.tier, w)


def _confident(d: dict[str, Any], hw, eng, traffic, day):
    """The traffic and day limits with `confidence`'s band edges (cli.confidence: the
    accelerator's family bands under the engine), unchanged at `expected`."""
    if d.get("confidence") is None:
        return traffic, day
    from dataclasses import replace

    from roofline.cli.confidence import confidence_edges

    pct = traffic.pct if traffic is not None else 99.0
    e = confidence_edges(str(d["confidence"]), [hw], eng.profile_id, pct)[hw.id]
    return (
        None if traffic is None else replace(traffic, edges=e),
        None if day is None else replace(day, edges=e),
    )


def _workload(d: dict[str, Any], traffic: TrafficLimits | None, prompt: int, output: int, prefix):
    """The requests a traffic check serves, as serve builds them: fixed prompt/output, length
    distributions (prompt_dist/output_dist), an arrival log (its own pace unless `rate`), at
    `rate` shaped by `burstiness`; a workload file's classes (at `rate` arrivals/s over them,
    else the file's rates; `traffic` None: a day's, re-timed across the curve)."""
    if d.get("workload") is not None:
        from pathlib import Path

        from roofline.cli import workload as wf

        rate = None if d.get("rate") is None or traffic is None else traffic.rate
        return wf.load(Path(d["workload"]), d.get("requests"), d.get("seed", 0), rate)[1]
    log = d.get("arrivals") is not None
    assert traffic is not None, "only a workload file's classes are planned across a day alone"
    rate = None if log and d.get("rate") is None else traffic.rate
    lens = topt.LengthOptions(str(prompt), str(output), d.get("prompt_dist"), d.get("output_dist"))
    # a percentile judged as size's search judges it: on at least TAIL_REQUESTS requests beyond
    # it (5,000 at p99; serving.slosearch.slo_requests), however few `requests` asks for
    slo = Slo(traffic.max_ttft_p99_s, traffic.max_tpot_p99_s, traffic.pct)
    n = int(d.get("requests") or 1000)
    n = slo_requests(slo, n) if slo.ttft_s is not None or slo.tpot_s is not None else n
    return topt.serving_workload(
        lens, rate, None, None if log else n, None, d.get("seed", 0),
        float(d.get("burstiness", 1.0)), d.get("arrivals"), float(d.get("speedup", 1.0)),
        prefix,
    )  # fmt: skip


def spec_json(case: SpecCase, result: SpecResult) -> dict[str, Any]:
    """A deployment's checks as check's JSON draws them."""
    k, dep = case, case.dep
    e = (k.traffic.edges if k.traffic else None) or (k.day.edges if k.day else None)
    edges = {"confidence": {"level": e.level, "capacity": e.capacity, "ttft": e.ttft,
                            "tpot": e.tpot}} if e is not None else {}  # fmt: skip
    mix = k.workload.mix if k.workload is not None else None
    shape: dict[str, Any] = {"batch": k.batch, "prompt_tokens": k.prompt,
                             "output_tokens": k.output, "context_tokens": k.context}  # fmt: skip
    if mix is not None:  # a workload file's classes replace the one shape under traffic
        shape = {"workload": mix.where, "classes": ", ".join(c.name for c in mix.classes)}
        if k.limits != Limits():  # the one-step assertions still read the shape
            shape = {**shape, "batch": k.batch, "prompt_tokens": k.prompt,
                     "output_tokens": k.output, "context_tokens": k.context}  # fmt: skip
    elif k.workload is not None and k.workload.length_dists is None and k.limits == Limits():
        # lengths from a log or a trace (not the one shape): what was served, as serve says it
        d = k.workload.description
        keys = ("arrivals", "prompt_lengths", "output_lengths", "prompt_tokens_mean",
                "output_tokens_mean")  # fmt: skip
        shape = {x: d[x] for x in keys if d.get(x) is not None}
    return {
        "name": k.name,
        "model": k.model.id,
        "hardware": k.hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        **convert.formats_json(dep),
        **shape,
        "ok": result.ok,
        **edges,  # --confidence's band edges: capacity x, TTFT x and TPOT x the expected
        "checks": [
            {
                "name": c.name,
                "ok": c.ok,
                "limit": c.limit,
                "value": c.value,
                "unit": c.unit,
                "detail": c.detail,
            }
            for c in result.checks
        ],
    }


def _traffic_limits(d: dict[str, Any]) -> TrafficLimits | None:
    """--rate with --max-ttft-p99, --max-tpot-p99, --min-goodput (spec keys of the same names)."""
    c = d["checks"]
    keys = ("max_ttft_p99", "max_tpot_p99", "min_goodput", "min_prefix_hit_rate")
    given = {k: c.get(k) for k in keys if c.get(k) is not None}
    pct = d.get("slo_pct", 99.0)
    if not 0 < pct < 100:
        raise InputError(f"slo_pct must be above 0 and below 100, got {pct}")
    own = d.get("arrivals") is not None or d.get("workload") is not None
    curve = d.get("traffic_curve") is not None  # then the limits are the curve's SLOs
    if d.get("rate") is None and own and given and not curve:  # the log's pace (file's rates)
        return TrafficLimits(0.0, *_limits(given), pct=float(pct))
    if d.get("rate") is None:
        if given and d.get("traffic_curve") is not None:  # the SLOs of the curve's capacity
            return None
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise InputError(f"{flags}: requires --rate")
        return None
    rates = topt.rates(str(d["rate"]))
    if len(rates) != 1:
        raise InputError("check takes one --rate")
    if not given:
        raise InputError("--rate needs --max-ttft-p99, --max-tpot-p99 or --min-goodput")
    return TrafficLimits(rates[0], *_limits(given), pct=float(pct))


def _limits(given: dict[str, Any]) -> tuple[float | None, float | None, Any, Any]:
    """(max TTFT s, max TPOT s, min goodput, min prefix hit rate) of the traffic checks given."""
    g = _positive_rate(given.get("min_goodput"), "--min-goodput", "requests/s")
    hit = given.get("min_prefix_hit_rate")
    if hit is not None and not 0 <= hit <= 1:
        raise InputError(f"min_prefix_hit_rate is a share from 0 to 1, got {hit}")
    return (
        limit_seconds(given["max_ttft_p99"], "--max-ttft-p99") if "max_ttft_p99" in given else None,
        limit_seconds(given["max_tpot_p99"], "--max-tpot-p99") if "max_tpot_p99" in given else None,
        g,
        hit,
    )

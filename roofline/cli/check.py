"""`roofline check`: capacity and SLO assertions for CI, with exit codes (a spec file or options;
static limits through roofline.checks, traffic limits through the serving model)."""

import math
from typing import Annotated, Any

import typer

from roofline import render
from roofline.checks import Limits, TrafficLimits, run_checks, run_traffic_checks
from roofline.cli import options as opt
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded, note
from roofline.errors import InputError, RooflineError
from roofline.memory import engine
from roofline.units import parse_seconds
from roofline.userfiles import load_spec

CURVE_KEYS = ("traffic_curve", "headroom", "scale_up_delay")  # a day's traffic (cli/curve.py)
CURVE_CHECKS = ("max_gpu_hours_per_day", "min_slo_attainment")


def _positive_rate(value: Any, name: str, unit: str) -> Any:
    """`value` unless it is given and not a positive finite number (InputError naming `name`)."""
    if value is not None and not (
        isinstance(value, int | float) and math.isfinite(value) and value > 0
    ):
        raise InputError(f"{name} must be a positive rate in {unit}, got {value}")
    return value


def _evaluate_spec(d: dict[str, Any], ideal: bool) -> dict[str, Any]:
    cat = catalog()
    where = f"deployment '{d['name']}'"
    try:
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
        _, replicas = opt.replicas(dep, d.get("gpus"), d.get("dp", 1))
        prompt = opt.tokens(str(d.get("prompt", "1k")), "prompt", 1)
        output = opt.tokens(str(d.get("output", "1k")), "output", 1)
        context = opt.tokens(str(d.get("context", prompt + output)), "context", 1)
        c = d["checks"]
        _positive_rate(c.get("min_throughput"), "min_throughput", "tokens/s")
        limits = Limits(
            min_batch=c.get("min_batch"),
            min_concurrency=c.get("min_concurrency"),
            max_tpot_s=None
            if c.get("max_tpot") is None
            else parse_seconds(str(c["max_tpot"]), "max_tpot"),
            max_ttft_s=None
            if c.get("max_ttft") is None
            else parse_seconds(str(c["max_ttft"]), "max_ttft"),
            max_batch_prefill_s=None
            if c.get("max_batch_prefill") is None
            else parse_seconds(str(c["max_batch_prefill"]), "max_batch_prefill"),
            min_throughput=c.get("min_throughput"),
            fits=bool(c.get("fits", False)),
        )
        traffic = _traffic_limits(d)
        day = None
        if any(d.get(k) is not None for k in CURVE_KEYS) or any(
            d["checks"].get(k) is not None for k in CURVE_CHECKS
        ):
            from roofline.cli import curve as day_cli

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
        if limits.min_batch is not None and limits.min_batch < 1:
            raise InputError(f"min_batch must be at least 1, got {limits.min_batch}")
        batch = d["batch"] if d.get("batch") is not None else (limits.min_batch or 1)
        if not 1 <= batch <= 10**7:
            raise InputError(f"batch must be from 1 to 1e7, got {batch}")
        memory = d.get("memory")
        cap = opt.capacity(hw, None if memory is None else str(memory))
        eng = engine(d.get("engine", "auto"), hw)
    except RooflineError as exc:
        raise InputError(f"{where}: {exc}", hint=exc.hint) from None
    checks = run_checks(
        m,
        hw,
        dep,
        eng,
        batch=batch,
        prompt=prompt,
        output=output,
        context=context,
        limits=limits,
        replicas=replicas,
        capacity_bytes=cap,
        ideal=ideal,
    )
    if traffic is not None:
        checks += run_traffic_checks(
            m,
            hw,
            dep,
            eng,
            prompt=prompt,
            output=output,
            limits=traffic,
            replicas=replicas,
            capacity_bytes=cap,
            ideal=ideal,
            requests=d.get("requests") or 1000,
            seed=d.get("seed", 0),
            prefix=topt.prefix_spec(
                None if d.get("shared_prefix") is None else str(d["shared_prefix"]),
                d.get("prefixes", 1),
                d.get("turns", 1),
                str(d.get("think_time", "0s")),
                d.get("seed", 0),
            ),
        )
    if day is not None:
        from roofline.curvechecks import run_curve_checks

        checks += run_curve_checks(
            m,
            hw,
            dep,
            eng,
            prompt=prompt,
            output=output,
            slo=day_cli.spec_slo(d),
            limits=day,
            capacity_bytes=cap,
            ideal=ideal,
            requests=d.get("requests") or 1000,
            seed=d.get("seed", 0),
        )
    return {
        "name": d["name"],
        "model": m.id,
        "hardware": hw.id,
        "tp": dep.tp,
        "pp": dep.pp,
        "weights": dep.weights.name,
        "kv_dtype": dep.kv.name,
        "batch": batch,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "context_tokens": context,
        "ok": all(c.ok for c in checks),
        "checks": [
            {
                "name": c.name,
                "ok": c.ok,
                "limit": c.limit,
                "value": c.value,
                "unit": c.unit,
                "detail": c.detail,
            }
            for c in checks
        ],
    }


def _traffic_limits(d: dict[str, Any]) -> TrafficLimits | None:
    """--rate with --max-ttft-p99, --max-tpot-p99, --min-goodput (spec keys of the same names)."""
    c = d["checks"]
    keys = ("max_ttft_p99", "max_tpot_p99", "min_goodput", "min_prefix_hit_rate")
    given = {k: c.get(k) for k in keys if c.get(k) is not None}
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
    g = _positive_rate(given.get("min_goodput"), "--min-goodput", "requests/s")
    hit = given.get("min_prefix_hit_rate")
    if hit is not None and not 0 <= hit <= 1:
        raise InputError(f"min_prefix_hit_rate is a share from 0 to 1, got {hit}")
    return TrafficLimits(
        rates[0],
        parse_seconds(given["max_ttft_p99"], "--max-ttft-p99") if "max_ttft_p99" in given else None,
        parse_seconds(given["max_tpot_p99"], "--max-tpot-p99") if "max_tpot_p99" in given else None,
        g,
        hit,
    )


_SPEC_KEYS = ("tp", "pp", "ep", "gpus", "dp", "weights", "kv_dtype")
_CHECK_KEYS = (
    "min_batch", "min_concurrency", "max_tpot", "max_ttft", "max_batch_prefill",
    "min_throughput", "fits", "max_ttft_p99", "max_tpot_p99", "min_goodput",
    "max_gpu_hours_per_day", "min_slo_attainment",
)  # fmt: skip


def _options_spec(o: dict[str, Any]) -> dict[str, Any]:
    """`check MODEL HARDWARE --…`: the options as one deployment of a --spec file."""
    model, hardware, traffic_curve = o["model"], o["hardware"], o["traffic_curve"]
    d: dict[str, Any] = {"name": f"{model} on {hardware}", "model": model, "hardware": hardware}
    d.update({k: o[k] for k in _SPEC_KEYS})
    d.update(engine=o["engine_name"], prompt=o["prompt"], output=o["output"], batch=o["batch"])
    d["checks"] = {k: o[k] for k in _CHECK_KEYS}
    for key, value in (
        ("traffic_curve", traffic_curve),
        ("headroom", o["headroom"] if traffic_curve is not None else None),
        ("scale_up_delay", o["scale_up_delay"]),
    ):
        if value is not None:
            d[key] = value
    if traffic_curve is not None and o["dp"] == 1 and o["gpus"] is None:
        del d["dp"]  # --dp or --gpus given: the autoscaler's ceiling; else none
    if o["rate"] is not None:
        d["rate"] = o["rate"]
        d["requests"] = o["requests"]
        d["seed"] = o["seed"]
    if o["context"] is not None:
        d["context"] = o["context"]
    if o["memory"] is not None:
        d["memory"] = o["memory"]
    return d


@app.command()
@guarded
def check(
    model: Annotated[str | None, typer.Argument(help="model id (or use --spec)")] = None,
    hardware: Annotated[str | None, typer.Argument(help="accelerator id")] = None,
    spec: Annotated[
        str | None, typer.Option(help="YAML/JSON file of one or many deployments ('-' for stdin)")
    ] = None,
    tp: opt.Tp = 1,
    pp: opt.Pp = 1,
    ep: opt.Ep = 1,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    weights: opt.Weights = opt.WEIGHTS,
    kv_dtype: opt.KvDtype = opt.KV_DTYPE,
    batch: opt.BatchOrAuto = None,
    prompt: opt.Prompt = opt.PROMPT,
    output: opt.Output = opt.OUTPUT,
    context: opt.Context = None,
    engine_name: opt.Engine = opt.ENGINE,
    memory: opt.Memory = None,
    min_batch: Annotated[int | None, typer.Option(help="assert max batch ≥ N at --context")] = None,
    min_concurrency: Annotated[
        int | None,
        typer.Option(help="assert sequences in flight over all replicas ≥ N at --context"),
    ] = None,
    max_tpot: Annotated[str | None, typer.Option(help="assert TPOT ≤, e.g. 50ms")] = None,
    max_ttft: Annotated[
        str | None, typer.Option(help="assert one request's TTFT on an idle replica ≤, e.g. 2s")
    ] = None,
    max_batch_prefill: Annotated[
        str | None, typer.Option(help="assert the static --batch's prefill time ≤, e.g. 4s")
    ] = None,
    min_throughput: Annotated[
        float | None, typer.Option(help="assert output tokens/s (all replicas) ≥")
    ] = None,
    fits: Annotated[bool, typer.Option("--fits", help="assert weights + batch KV fit")] = False,
    rate: topt.Rate = None,
    requests: opt.Requests = None,
    seed: opt.Seed = 0,
    max_ttft_p99: Annotated[
        str | None, typer.Option(help="under --rate: assert p99 TTFT ≤, e.g. 2s")
    ] = None,
    max_tpot_p99: Annotated[
        str | None, typer.Option(help="under --rate: assert p99 TPOT ≤, e.g. 50ms")
    ] = None,
    min_goodput: Annotated[
        float | None, typer.Option(help="under --rate: assert goodput ≥ requests/s")
    ] = None,
    traffic_curve: topt.TrafficCurve = None,
    headroom: Annotated[
        float,
        typer.Option(help="with --traffic-curve: share of each replica's capacity left unused"),
    ] = 0.1,  # size's HEADROOM (tests/test_options.py holds every command's default alike)
    scale_up_delay: topt.ScaleUpDelay = None,
    max_gpu_hours_per_day: Annotated[
        float | None,
        typer.Option(help="with --traffic-curve: assert GPU-hours per day ≤ (autoscaled)"),
    ] = None,
    min_slo_attainment: Annotated[
        float | None,
        typer.Option(
            help="with --traffic-curve: assert the share of the day's requests within the ready"
            " replicas' capacity ≥, e.g. 0.99 (--max-ttft-p99/--max-tpot-p99: the SLOs; --dp or"
            " --gpus: the autoscaler's ceiling)"
        ),
    ] = None,
    ideal: opt.Ideal = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="report, never exit 1")] = False,
    fmt: opt.RowFormat = render.RowFmt.table,
) -> None:
    """Capacity and SLO assertions for CI, with exit codes.

    Exit 0 when all hold, 1 when any fails, 2 on bad input; --batch defaults to --min-batch (or 1).
    Example: roofline check llama-3.1-70b h100 --tp 4 --weights fp8 --context 32k
    --min-batch 64 --max-tpot 50ms --max-ttft 2s"""
    given = dict(locals())  # the options, as a one-deployment spec when there is no --spec
    if spec is not None:
        if model or hardware:
            raise InputError("give MODEL HARDWARE or --spec, not both")
        deployments = load_spec(spec)
    else:
        if not (model and hardware):
            raise InputError("give MODEL HARDWARE, or --spec FILE")
        deployments = [_options_spec(given)]
    if spec is not None and any(
        (d.get("checks") or {}).get("max_ttft") is not None and d.get("rate") is None
        for d in deployments
    ):
        note(
            "note: max_ttft is one request's TTFT on an idle replica (as analyze reports it); the"
            " static batch's prefill, its meaning until now, is max_batch_prefill"
        )
    results = [_evaluate_spec(d, ideal) for d in deployments]
    ok = all(r["ok"] for r in results)
    rows = [{"deployment": r["name"], **c} for r in results for c in r["checks"]]
    doc = render.document(
        "check", {"spec": spec, "ideal": ideal}, ok=ok, deployments=results, checks=rows
    )
    render.emit(doc, fmt, rows, render.check_table)
    if not ok:
        failed = [f"{r['deployment']}: {r['name']}" for r in rows if not r["ok"]]
        render.stderr_console().print(f"check failed: {', '.join(failed)}", markup=False)
        if not exit_zero:
            raise typer.Exit(1)

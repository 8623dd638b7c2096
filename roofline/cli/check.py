"""`roofline check`: capacity and SLO assertions for CI, with exit codes (a spec file or options;
static limits through roofline.checks.limits, traffic limits through the serving model)."""

from typing import Annotated, Any

import typer

from roofline import render
from roofline.checks.spec import evaluate_spec, load_spec
from roofline.cli import groups as grp
from roofline.cli import options as opt
from roofline.cli import traffic_options as topt
from roofline.cli.app import note
from roofline.cli.kvtier_options import KV_TIERS, KvTierOptions, spec_keys
from roofline.cli.specs import spec_case, spec_json
from roofline.cli.startup import EXIT_CHECK_FAILED
from roofline.domain.errors import InputError
from roofline.serving.router import DEFAULT_ROUTER

_CHECK_KEYS = (
    "min_batch", "min_concurrency", "max_tpot", "max_ttft", "max_batch_prefill",
    "min_throughput", "fits", "max_ttft_p99", "max_tpot_p99", "min_goodput",
    "max_gpu_hours_per_day", "min_slo_attainment", "min_prefix_hit_rate",
)  # fmt: skip


def _options_spec(o: dict[str, Any]) -> dict[str, Any]:
    """`check MODEL HARDWARE --…`: the options as one deployment of a --spec file."""
    model, hardware, traffic_curve = o["model"], o["hardware"], o["traffic_curve"]
    d: dict[str, Any] = {"name": f"{model} on {hardware}", "model": model, "hardware": hardware}
    dg, fm, en, rq = o["dg"], o["fm"], o["en"], o["rq"]
    d.update(tp=dg.tp, pp=dg.pp, ep=dg.ep, gpus=o["gpus"], dp=o["dp"])
    d.update(weights=fm.weights, kv_dtype=fm.kv_dtype)
    d.update(engine=en.engine_name, prompt=rq.prompt, output=rq.output, batch=o["batch"])
    d["checks"] = {k: o[k] for k in _CHECK_KEYS}
    for k, v in d["checks"].items():  # as a spec file's checks are refused (checks.spec)
        if isinstance(v, int | float) and not isinstance(v, bool) and not v >= 0:
            raise InputError(f"--{k.replace('_', '-')} must be a number of 0 or more, got {v}")
    for key, value in (
        ("traffic_curve", traffic_curve),
        ("headroom", o["headroom"] if traffic_curve is not None else None),
        ("scale_up_delay", o["scale_up_delay"]),
    ):
        if value is not None:
            d[key] = value
    if traffic_curve is not None and o["dp"] == 1 and o["gpus"] is None:
        del d["dp"]  # --dp or --gpus given: the autoscaler's ceiling; else none
    d.update(o["traffic"].spec_keys())  # an arrival log, a workload file, the confidence
    d.update(spec_keys(o["router"], o["kt"]))  # the router, KV beyond HBM
    if o["rate"] is not None or o["requests"] is not None:
        d["requests"] = o["requests"]  # with an arrival log: refused (topt.traffic_rules)
    if o["rate"] is not None:
        d["rate"] = o["rate"]
    d["seed"] = o["seed"]
    if rq.context is not None:
        d["context"] = rq.context
    if en.memory is not None:
        d["memory"] = en.memory
    return d


# with --spec, the options that apply to every deployment (the rest live in the file)
_WITH_SPEC = frozenset(
    ("spec", "fmt", "ideal", "exit_zero", "arrivals", "speedup", "burstiness", "workload",
     "confidence", "router", "kv_offload", "retention")
)  # fmt: skip


def _refuse_options_with_spec(ctx: typer.Context) -> None:
    """A deployment option given beside --spec would be dropped silently: refuse it, naming it."""
    given = [
        p.opts[0]
        for p in ctx.command.params
        if p.name not in _WITH_SPEC
        and getattr(ctx.get_parameter_source(p.name or ""), "name", None) == "COMMANDLINE"
    ]
    if given:
        raise InputError(
            f"with --spec, give {', '.join(given)} in the spec file (each deployment's keys);"
            " only the traffic, router and output options apply to every deployment"
        )


@grp.command()
def check(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Argument(help="model id (or use --spec)")] = None,
    hardware: Annotated[str | None, typer.Argument(help="accelerator id")] = None,
    spec: Annotated[
        str | None, typer.Option(help="YAML/JSON file of one or many deployments ('-' for stdin)")
    ] = None,
    dg: grp.Degrees = grp.DEGREES,
    gpus: opt.Gpus = None,
    dp: opt.Dp = 1,
    fm: grp.Formats = grp.FORMATS,
    batch: opt.BatchOrAuto = None,
    rq: grp.Request = grp.REQUEST,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
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
    rate: topt.OneRate = None,
    traffic: topt.ArrivalOptions = topt.ARRIVALS,
    router: topt.Router = DEFAULT_ROUTER,
    kt: KvTierOptions = KV_TIERS,
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
    min_prefix_hit_rate: Annotated[
        float | None,
        typer.Option(
            help="under --rate: assert the share of prompt tokens found in the prefix cache ≥"
            " (any tier), e.g. 0.5"
        ),
    ] = None,
    traffic_curve: topt.TrafficDayOption = None,
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
    Under traffic, --arrivals LOG, --workload FILE and --confidence p90 as size takes them, and
    --router, --kv-offload and --retention as serve takes them (with --spec: set for every
    deployment; spec keys of the same names). A p99 (a spec's slo_pct) limit is judged on at least
    50 requests beyond it, 5,000 at p99, as size judges it; --requests (default 1000) below
    that is raised, and each detail names the run.
    Example: roofline check llama-3.1-70b h100 --tp 4 --weights fp8 --context 32k
    --min-batch 64 --max-tpot 50ms --max-ttft 2s"""
    given = dict(locals())  # the options, as a one-deployment spec when there is no --spec
    del given["ctx"]
    if spec is not None:
        if model or hardware:
            raise InputError("give MODEL HARDWARE or --spec, not both")
        _refuse_options_with_spec(ctx)
        given_keys = {**traffic.spec_keys(), **spec_keys(router, kt)}
        deployments = [{**d, **given_keys} for d in load_spec(spec)]  # as report
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
    results = [spec_json(c, evaluate_spec(c, ideal)) for c in map(spec_case, deployments)]
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
            raise typer.Exit(EXIT_CHECK_FAILED)

"""`roofline report SPEC.yaml -o plan.html`: a whole plan as one HTML page. SPEC is the `check`
spec (model, traffic, checks; read by the same loader, userfiles.load_spec) with a
`candidates:` list of deployments to compare; each candidate is checked as `check` does and,
with a `rate`, served at it (the serving simulator, as `serve`) for its latency and cost."""

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from roofline import render
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded
from roofline.cli.check import _evaluate_spec
from roofline.cli.traffic_json import metrics_json
from roofline.errors import InputError, RooflineError
from roofline.memory import engine
from roofline.units import parse_seconds
from roofline.userfiles import load_spec


def _served(d: dict[str, Any]) -> dict[str, Any] | None:
    """The candidate served at the spec's rate (Poisson, `requests`, `seed`): serve's metrics
    with cost, or None without a rate."""
    from roofline.serving.search import replica_capacity
    from roofline.serving.serve import Slo, make_replica, serve
    from roofline.serving.workload import make_workload

    if d.get("rate") is None:
        return None
    cat = catalog()
    m, hw = cat.model(d["model"]), cat.accelerator(d["hardware"])
    dep = opt.deployment(
        d.get("weights", opt.WEIGHTS),
        d.get("kv_dtype", "bf16"),
        "bf16",
        d.get("tp", 1),
        d.get("pp", 1),
        d.get("ep", 1),
        model=m,
    )
    gpus, replicas = opt.replicas(dep, d.get("gpus"), d.get("dp", 1))
    prompt = opt.tokens(str(d.get("prompt", "1k")), "prompt", 1)
    output = opt.tokens(str(d.get("output", "1k")), "output", 1)
    rate = topt.rates(str(d["rate"]))[0]
    c = d["checks"]
    slo = Slo(
        parse_seconds(str(c["max_ttft_p99"]), "max_ttft_p99") if c.get("max_ttft_p99") else None,
        parse_seconds(str(c["max_tpot_p99"]), "max_tpot_p99") if c.get("max_tpot_p99") else None,
        99.0,
    )
    memory = d.get("memory")
    cap = opt.capacity(hw, None if memory is None else str(memory))
    rep = make_replica(
        m, hw, dep, engine(d.get("engine", "auto"), hw), prompt + output + 1, capacity_bytes=cap
    )
    w = make_workload(
        prompt, output, rate=rate, requests=d.get("requests") or 1000, seed=d.get("seed", 0)
    )
    res = serve(rep, w, slo, replicas, capacity=replica_capacity(rep, w))
    price = topt.price_table(cat, None).get(hw.id)
    return metrics_json(res.expected, price, gpus)


@app.command()
@guarded
def report(
    spec: Annotated[
        str, typer.Argument(help="YAML/JSON: a check spec with a candidates: list ('-': stdin)")
    ],
    out: pub.HtmlOut = None,
    fmt: pub.FormatOpt = pub.Fmt.table,
) -> None:
    """A plan's candidates compared, as one HTML page.

    SPEC is a check spec (model, rate, prompt, output, checks) with a candidates: list, each
    overriding the deployment (hardware, tp, weights, ...). Every candidate is checked as
    `check --spec` does and, with a rate, served at it for p99 TTFT/TPOT and $/Mtok; the
    cheapest that passes is the answer. Prints the page (or --format json/table); -o writes it.
    Example: roofline report examples/report.yaml -o plan.html"""
    pub.check_out(out)
    deployments = load_spec(spec, candidates=True)
    results = []
    for d in deployments:
        r = _evaluate_spec(d, ideal=False)
        try:
            r["expected"] = _served(d)
        except RooflineError as exc:
            raise InputError(f"deployment '{d['name']}': {exc}", hint=exc.hint) from None
        e = r["expected"] or {}
        r["gpus"] = e.get("gpus")
        r["cost_per_million_output_tokens"] = e.get("cost_per_million_output_tokens")
        results.append(r)
    passing = [r for r in results if r["ok"]]
    priced = [r for r in passing if r["cost_per_million_output_tokens"] is not None]
    best = min(priced, key=lambda r: r["cost_per_million_output_tokens"]) if priced else None
    best = best or (passing[0] if passing else None)
    first = deployments[0]
    checks = first["checks"]
    inputs = {
        "spec": spec,
        "model": results[0]["model"],
        "candidates": [r["name"] for r in results],
        "rate": topt.rates(str(first["rate"]))[0] if first.get("rate") is not None else None,
        "prompt_tokens": results[0]["prompt_tokens"],
        "output_tokens": results[0]["output_tokens"],
        "max_ttft_p99_s": _seconds(checks.get("max_ttft_p99")),
        "max_tpot_p99_s": _seconds(checks.get("max_tpot_p99")),
        "checks": {k: v for k, v in checks.items() if v is not None},
        "serving": "Poisson arrivals at rate, `requests` requests (default 1000), seed; expected"
        " step times; cost from the catalog's prices",
    }
    rows = [{"deployment": r["name"], **c} for r in results for c in r["checks"]]
    doc = render.document("report", inputs, best=best, candidates=results, checks=rows)
    pub.publish(doc, fmt, rows, _table, out)


def _table(doc: Mapping[str, Any]) -> None:
    """The candidates' checks as `check` draws them."""
    render.check_table(
        {**doc, "deployments": doc["candidates"], "ok": all(c["ok"] for c in doc["candidates"])}
    )


def _seconds(value: Any) -> float | None:
    return None if value is None else parse_seconds(str(value), "checks")


__all__ = ["report"]

"""`roofline report SPEC.yaml -o plan.html`: a whole plan as one HTML page. SPEC is the `check`
spec (model, traffic, checks; read by the same loader, userfiles.load_spec) with a
`candidates:` list of deployments to compare; each candidate is checked as `check` does and,
with a `rate`, served at it (the serving simulator, as `serve`) for its latency and cost."""

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from roofline import render
from roofline.checks.spec import evaluate_spec, load_spec
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import app, catalog, guarded
from roofline.cli.specs import spec_case, spec_json
from roofline.cli.traffic_json import metrics_json
from roofline.domain.units import parse_seconds


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
    prices = topt.price_table(catalog(), None)
    results = []
    for d in deployments:
        case = spec_case(d)
        res = evaluate_spec(case, ideal=False)
        r = spec_json(case, res)
        s = res.served  # at the spec's rate: serve's metrics with cost
        r["expected"] = metrics_json(s.expected, prices.get(case.hw.id), case.gpus) if s else None
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

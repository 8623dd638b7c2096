"""`roofline report SPEC.yaml -o plan.html`: a whole plan as one HTML page. SPEC is the `check`
spec (model, traffic, checks; read by the same loader, userfiles.load_spec) with a
`candidates:` list of deployments to compare; each candidate is checked as `check` does and,
with a `rate`, served at it (the serving simulator, as `serve`) for its latency and cost."""

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from roofline import render
from roofline.checks.spec import evaluate_spec, load_spec
from roofline.cli import groups as grp
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli.app import catalog
from roofline.cli.kvtier_options import KV_TIERS, KvTierOptions, spec_keys
from roofline.cli.specs import spec_case, spec_json
from roofline.cli.traffic_json import metrics_json
from roofline.domain.units import fmt_rate, fmt_seconds, parse_seconds
from roofline.serving.router import DEFAULT_ROUTER


@grp.command()
def report(
    spec: Annotated[
        str, typer.Argument(help="YAML/JSON: a check spec with a candidates: list ('-': stdin)")
    ],
    traffic: topt.ArrivalOptions = topt.ARRIVALS,
    router: topt.Router = DEFAULT_ROUTER,
    kt: KvTierOptions = KV_TIERS,
    out: pub.HtmlOut = None,
    fmt: pub.FormatOpt = pub.Fmt.table,
) -> None:
    """A plan's candidates compared, as one HTML page.

    SPEC is a check spec (model, rate, prompt, output, checks) with a candidates: list, each
    overriding the deployment (hardware, tp, weights, ...). Every candidate is checked as
    `check --spec` does and, with a rate, served at it for p99 TTFT/TPOT and $/Mtok; the
    cheapest that passes is the answer. Prints the page (or --format json/table); -o writes it.
    --arrivals, --speedup, --burstiness, --workload and --confidence set the spec's keys of the
    same names for every candidate (as `check` takes them), and so do --router, --kv-offload
    and --retention (as `serve` takes them).
    Example: roofline report examples/report.yaml -o plan.html"""
    pub.check_out(out)
    given = {**traffic.spec_keys(), **spec_keys(router, kt)}
    deployments = [{**d, **given} for d in load_spec(spec, candidates=True)]
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
        "prompt_tokens": results[0].get("prompt_tokens"),  # None: a workload file's classes
        "output_tokens": results[0].get("output_tokens"),
        "workload": results[0].get("workload"),
        "max_ttft_p99_s": _seconds(checks.get("max_ttft_p99")),
        "max_tpot_p99_s": _seconds(checks.get("max_tpot_p99")),
        "checks": {k: v for k, v in checks.items() if v is not None},
        "arrivals": _arrivals_text(first),
        "confidence": first.get("confidence") or "expected",
        "serving": f"{_arrivals_text(first)}, `requests` requests (default 1000; at least 50"
        " beyond the percentile judged, 5,000 at p99, as size judges it), seed;"
        " expected step times; cost from the catalog's prices",
    }
    rows = [{"deployment": r["name"], **c} for r in results for c in r["checks"]]
    doc = render.document("report", inputs, best=best, candidates=results, checks=rows)
    pub.publish(doc, fmt, rows, _table, out)


def _table(doc: Mapping[str, Any]) -> None:
    """The winner first (or that none passes), then the candidates' checks as `check` draws
    them."""
    render.stdout_console().print(winner_line(doc), markup=False, style="bold")
    render.check_table(
        {**doc, "deployments": doc["candidates"], "ok": all(c["ok"] for c in doc["candidates"])}
    )


def winner_line(doc: Mapping[str, Any]) -> str:
    """report's answer in one line: the cheapest candidate that passes every check, with its
    GPUs, $/Mtok and p99 TTFT/TPOT at the spec's rate, or that none passes."""
    b, n = doc.get("best"), len(doc["candidates"])
    level = doc["inputs"].get("confidence") or "expected"
    at_level = "" if level == "expected" else f" at confidence {level}"
    if b is None:
        return f"none of the {n} candidates passes every check{at_level}"
    e = b.get("expected") or {}
    usd = b.get("cost_per_million_output_tokens")
    parts = [f"{b['gpus']} GPUs" if b.get("gpus") else ""]
    parts.append(f"${usd:.3g}/Mtok" if usd is not None else "")
    for k in ("ttft", "tpot"):
        p99 = (e.get(f"{k}_s") or {}).get("p99")
        parts.append(f"p99 {k.upper()} {fmt_seconds(p99)}" if p99 is not None else "")
    rate = doc["inputs"].get("rate")
    own = doc["inputs"].get("arrivals") or ""  # a log or a workload file: at its own pace
    stationary = not own or own.startswith(("Poisson", "gamma"))
    at = f" at {fmt_rate(rate)} req/s" if rate else ("" if stationary else f" under {own}")
    figs = ", ".join(p for p in parts if p)
    return (
        f"best: {b['name']}{at}: {figs} (of {n} candidates, the cheapest passing every"
        f" check{at_level})"
    )


def _arrivals_text(d: Mapping[str, Any]) -> str:
    """The arrival process the candidates are served under, named (a log, a workload file's
    classes, gamma or Poisson arrivals at the rate)."""
    if d.get("arrivals") is not None:
        return f"arrivals replayed from {d['arrivals']}"
    if d.get("workload") is not None:
        return f"the classes of {d['workload']}"
    shape = float(d.get("burstiness", 1.0))
    return "Poisson arrivals at rate" if shape == 1.0 else f"gamma arrivals (shape {shape:g})"


def _seconds(value: Any) -> float | None:
    return None if value is None else parse_seconds(str(value), "checks")

"""`roofline fleet FLEET.yaml`: many models on owned and rented GPUs over a day (roofline.fleet):
the fleet file read, each model sized once per chip, every hour placed, the document built."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from roofline import render
from roofline.cli import publish as pub
from roofline.cli.app import app, catalog, catalog_dirs, guarded, note
from roofline.cli.fleetspread import check_spread, publish_spread, spread_doc
from roofline.cli.startup import EXIT_CHECK_FAILED, native_stdout_to_stderr
from roofline.cli.traffic_json import sized_json
from roofline.domain.errors import InputError, RooflineError
from roofline.domain.layout import node_gpus
from roofline.fleet.build import pools, price_sources, problem
from roofline.fleet.day import DayPlan, Problem, apart, owned_first_violations, plan
from roofline.fleet.fleetfile import FleetSpec, read_fleet
from roofline.fleet.sizing import Option, size_fleet, wake_times

PLACEMENT = (
    "per hour, a mixed-integer program (scipy.optimize.milp, HiGHS): the least marginal cost"
    " that serves each model's rate, owned GPUs at a marginal cost of 0, within each owned"
    " type's count and each rented type's limit, at most one rented type per model and hour"
    " (roofline/fleet/placement.py says why a solver and not a greedy fill)"
)
POOLING = (
    "pooling gain = sized apart $/day - the fleet's $/day; sized apart = each model placed alone"
    " on the rentable pools (same prices, spot, limits and autoscaling), the owned GPUs still"
    " paid; vs static = each model apart at its peak hour's replicas all day"
)
OWNED_FIRST = (
    "owned first = no rented GPU while owned GPUs that could serve the same work at a lower"
    " marginal cost (0: owned GPUs are paid whether busy or idle) sit idle; checked every hour"
)
ATTAINMENT = (
    "SLO attainment = share of the day's requests arriving while the ready replicas' capacity"
    " within the SLOs covers the rate (hourly; reactive scaling loses the requests of each ramp"
    " while new replicas start; an hour the pools cannot hold is lost whole); p99 = `size`'s"
    " figure for the model's deployment at its peak rate"
)
SHARING = (
    "sharing: two vLLM models sized on half of one GPU (--gpu-memory-utilization halved: weights"
    " and a KV cache in each half) may share a replica's GPUs, its time split as u_a / kappa'_a"
    " + u_b / kappa'_b <= 1 (kappa': each one's capacity within its SLOs alone on its half);"
    " a vLLM model sleeps (level 1: weights to host RAM) in its hours of rate 0, holding no GPU,"
    " and wakes on the owned GPUs it slept on in weights per GPU / host link instead of a cold"
    " start (an SGLang model does not sleep: no published resume time); LoRA adapter slots"
    " (slots x rank x (in + out) x layers x 2 B, each GPU holding its TP shard and its stage's"
    " layers as vLLM shards them) come out of the KV budget (roofline/fleet/sharing.py,"
    " roofline/step/lora.py)"
)
LEFT = [
    "the latency one engine's tokens lose waiting for the other's steps on a shared GPU is"
    " covered in the mean (time shares), not per token",
    "an SGLang model's sleep (no published resume time: it holds its GPUs in idle hours)",
    "a placement change moves replicas between chips without a cost beyond the ramp;"
    " during a predictive pre-start owned GPUs may be counted in two hours",
    "minute resolution",
]


@app.command()
@guarded
def fleet(
    fleet_file: Annotated[Path, typer.Argument(help="the fleet file (YAML): models, hardware")],
    requests: Annotated[
        int | None,
        typer.Option("--requests", help="requests per simulated point of each sizing search"),
    ] = None,
    out: pub.HtmlOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
    days: Annotated[
        int | None,
        typer.Option("--days", help="Monte-Carlo over N drawn days: percentiles over days"),
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="where --days runs: pool (processes) or ray")
    ] = "pool",
) -> None:
    """Many models on owned and rented GPUs, placed per hour.

    Reads a fleet file (models with their traffic, SLOs, engine and LoRA adapters; the GPUs
    owned, with an hourly cost or none; the GPUs one may rent, on demand and spot, with
    limits), sizes each model once per chip as `size` does at its peak rate, then places every
    hour at the least marginal cost (a MILP, HiGHS): replicas per model and chip, GPU-hours and
    $ per day per model and in all, SLO attainment, owned GPUs' utilisation, the pooling gain
    against each model sized apart, the sharing section (LoRA adapters, sleep/wake, co-location
    candidates) and each model's launch line. Definitions are printed.
    --days N draws N days around the file's (rates, arrivals, accuracy) and reports
    percentiles over days, on a process pool or, with --backend ray, on Ray (RAY_ADDRESS).
    Example: roofline fleet examples/fleet.yaml -o fleet.html"""
    pub.check_out(out)
    check_spread(days, backend)
    spec = read_fleet(fleet_file)
    if requests is not None and not 20 <= requests <= 100_000:
        raise InputError(f"--requests must be from 20 to 100000, got {requests}")
    cat = catalog()
    ids = _chip_ids(cat, spec)
    models = {}
    for i, m in enumerate(spec.models):  # unknown ids: exit 2 here, naming the entry
        try:
            models[m.name] = cat.model(m.model)
        except RooflineError as exc:
            raise InputError(
                f"{spec.path}: models[{i}] ({m.name}).model: {exc}", hint=exc.hint
            ) from None
    chips = _allowed(cat, spec, ids)
    from roofline.catalog.load import load_prices

    prices = load_prices()
    on_demand = {}
    for r in spec.rent:
        p = prices.get(ids[r.type])
        if r.on_demand is None and (p is None or p.usd_per_gpu_hour is None):
            raise InputError(
                f"{spec.path}: hardware.rent ({r.type}): no catalog price: give on_demand"
            )
        if p is not None and p.usd_per_gpu_hour is not None:
            on_demand[ids[r.type]] = p.usd_per_gpu_hour
    options, half = size_fleet(
        spec.models, chips, requests or spec.requests, spec.seed, spec.headroom,
        spec.scale_up_delay_s, tuple(catalog_dirs()),
    )  # fmt: skip
    pool_list = pools(spec, ids, on_demand, prices)
    wake = wake_times(spec.models, options, tuple(catalog_dirs()))
    prob = problem(spec, options, pool_list, half, wake)
    if days is not None:  # issue 40: the spread over days (roofline/cli/fleetspread.py)
        with native_stdout_to_stderr():  # HiGHS's own notes never reach stdout
            doc = spread_doc(prob, spec.seed, days, backend, tuple(catalog_dirs()), str(fleet_file))
        return publish_spread(doc, fmt, out)
    with native_stdout_to_stderr():
        day, sep = plan(prob), apart(prob)
    doc = _doc(cat, spec, models, options, prob, day, sep, str(fleet_file))
    from roofline.cli.fleet_sharing import sharing_json

    doc["sharing"] = sharing_json(cat, spec, models, options, doc["models"], prob, day, half)
    src = price_sources(spec, ids, prices)
    for pl in doc["inputs"]["pools"]:
        pl["price_source"] = src.get(pl["pool"], "")
    from roofline.render.fleet import fleet_rows, fleet_table

    pub.publish(doc, fmt, fleet_rows(doc), fleet_table, out)
    unplaced = [  # no deployment meets its SLOs, or none is placed in any hour
        r["name"] for r in doc["models"] if r.get("deployment") is None or not r["slo_attainment"]
    ]
    if unplaced:  # as size: the result printed, the answer is no (exit 1)
        note(f"fleet: {', '.join(unplaced)}: served within the SLOs in no hour on these GPUs")
        raise typer.Exit(EXIT_CHECK_FAILED)


def _int(a, i: int) -> int:
    return int(a[i]) if a is not None else 0


def _num(a, i: int) -> float:
    return float(a[i]) if a is not None else 0.0


def _sum(a) -> float:
    return float(a.sum()) if a is not None else 0.0


def _shared_places(prob: Problem, hr) -> list[dict[str, Any]]:
    """An hour's shared replicas: one entry per pair and pool, the rate each model is served."""
    out = []
    for k, sh in enumerate(prob.shared):
        for j, n in enumerate(hr.shared[k] if hr.shared else ()):
            if not n:
                continue
            ua, ub = hr.shared_rates[k][j]
            pl = prob.pools[j]
            out.append(
                {
                    "model": f"{prob.names[sh.a]} + {prob.names[sh.b]}",
                    "pool": pl.label,
                    "replicas": int(n),
                    "gpus": int(n * sh.gpus[j]),
                    "shared": [prob.names[sh.a], prob.names[sh.b]],
                    "rates": [ua, ub],
                    "owned": pl.kind == "owned",
                }
            )
    return out


def _chip_ids(cat, spec: FleetSpec) -> dict[str, str]:
    ids = {}
    for where, names in (
        ("owned", [o.type for o in spec.owned]),
        ("rent", [r.type for r in spec.rent]),
    ):
        for n in names:
            try:
                ids[n] = cat.accelerator(n).id
            except RooflineError as exc:
                raise InputError(
                    f"{spec.path}: hardware.{where} ({n}): {exc}", hint=exc.hint
                ) from None
    return ids


def _allowed(cat, spec: FleetSpec, ids: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Model name -> the pool chips it may run on (its `hardware`, else all)."""
    every = tuple(dict.fromkeys(ids.values()))
    out = {}
    for i, m in enumerate(spec.models):
        if not m.hardware:
            out[m.name] = every
            continue
        mine = []
        for h in m.hardware:
            try:
                hid = cat.accelerator(h).id
            except RooflineError as exc:
                msg = f"{spec.path}: models[{i}] ({m.name}).hardware: {exc}"
                raise InputError(msg, hint=exc.hint) from None
            if hid not in every:
                raise InputError(
                    f"{spec.path}: models[{i}] ({m.name}).hardware: {h} is neither owned"
                    " nor rentable"
                )
            mine.append(hid)
        out[m.name] = tuple(dict.fromkeys(mine))
    return out


def _main_option(prob: Problem, day: DayPlan, i: int, opts: list[Option]) -> Option | None:
    """The chip that carries most of model i's GPU-hours (its deployment and launch line)."""
    hours: dict[str, float] = {}
    for h in day.hours:
        for j, n in enumerate(h.replicas[i]):
            chip = prob.pools[j].chip
            hours[chip] = hours.get(chip, 0.0) + n * prob.gpus[i, j]
    by = {o.chip: o for o in opts if o.sized is not None}
    ranked = sorted((c for c in hours if c in by and hours[c] > 0), key=lambda c: -hours[c])
    if ranked:
        return by[ranked[0]]
    ok = [o for o in opts if o.sized is not None]
    return min(ok, key=lambda o: o.sized.cost_per_hour or 0.0) if ok else None  # type: ignore[union-attr]


def _launch(cat, m, spec_m, o: Option) -> dict[str, Any] | None:
    from roofline.catalog.engine_flags import engine_flags
    from roofline.engines.engine import engine
    from roofline.engines.launch import launch_json, launch_setup, model_len

    if o.sized is None:
        return None
    hw = cat.accelerator(o.chip)
    eng = engine(spec_m.engine, hw)
    row = sized_json(o.sized, None, hw.efficiency.family, False)
    max_len = model_len(m.max_position_embeddings, spec_m.prompt + spec_m.output, True)
    setup = launch_setup(
        m, row, max_len, eng.memory_fraction, spec_m.weights if spec_m.weights != "auto"
        else (m.native_weights or "bf16"), spec_m.kv_dtype, None, node_gpus(hw),
    )  # fmt: skip
    out = launch_json(engine_flags(), eng.name, setup, None)
    lo = spec_m.lora
    if out is not None and lo is not None and eng.name == "vllm" and out.get("argv"):
        # the adapter slots the KV budget was sized without (roofline/fleet/sharing.py)
        out["argv"] = [*out["argv"], "--enable-lora", "--max-loras", str(lo.gpu_slots),
                       "--max-lora-rank", str(lo.rank)]  # fmt: skip
    return out


def _doc(cat, spec, models, options, prob: Problem, day: DayPlan, sep, path: str) -> dict:
    pools_json = [
        {
            "pool": pl.label,
            "hardware": pl.chip,
            "kind": pl.kind,
            "marginal_usd_per_gpu_hour": pl.price,
            "limit_gpus": pl.limit,
            "spot_preemptions_per_hour": pl.preemptions_per_hour if pl.kind == "spot" else None,
        }
        for pl in prob.pools
    ]
    owned_cols = [j for j, pl in enumerate(prob.pools) if pl.kind == "owned"]
    owned_total = sum(prob.pools[j].limit or 0 for j in owned_cols)
    rows = []
    for i, ms in enumerate(spec.models):
        opts = [o for o in options if o.name == ms.name]
        main = _main_option(prob, day, i, opts)
        s = main.sized if main is not None else None
        e = s.expected if s is not None else None
        req_day = float(sum(ms.hourly)) * 3600.0
        rows.append(
            {
                "name": ms.name,
                "model": models[ms.name].id,
                "gpu_hours_per_day": float(day.gpu_hours[i]),
                "cost_per_day": float(day.cost[i]),
                "slo_attainment": float(day.slo_attainment[i]),
                "requests_per_day": req_day,
                "peak_rate": max(ms.hourly),
                "short_hours": int(day.short_hours[i]),
                "asleep_hours": _int(day.asleep_hours, i),
                "woken_replicas": _int(day.wakes, i),
                "shared_gpu_hours_per_day": _num(day.shared_gpu_hours, i),
                "apart_cost_per_day": sep.per_model[i],
                "static_cost_per_day": sep.static_per_model[i],
                "deployment": None
                if s is None or main is None
                else {
                    "hardware": main.chip,
                    "layout": s.layout,
                    "tp": s.tp,
                    "pp": s.pp,
                    "ep": s.ep,
                    "attention_dp": s.attention_dp,
                    "gpus_per_replica": main.gpus_per_replica,
                    "replicas_at_peak": s.replicas,
                    "max_rate_per_replica": s.max_rate_per_replica,
                    "planned_rate_per_replica": main.capacity,  # after headroom (kappa)
                    "ttft_p99_s": e.ttft_s.p99 if e else None,
                    "tpot_p99_s": e.tpot_s.p99 if e else None,
                    "meets_slo": s.meets_slo,
                    "scale_up_delay_s": main.delay_s,
                    "scale_up_delay_from": main.delay_from,
                    "launch": _launch(cat, models[ms.name], ms, main),
                },
                "options": [
                    {
                        "hardware": o.chip,
                        "layout": o.sized.layout if o.sized else None,
                        "gpus_per_replica": o.gpus_per_replica,
                        "planned_rate_per_replica": o.capacity,
                        "scale_up_delay_s": o.delay_s,
                        "note": o.note,
                    }
                    for o in opts
                ],
                "lora": None
                if ms.lora is None
                else {
                    "adapters": ms.lora.adapters,
                    "rank": ms.lora.rank,
                    "popularity": ms.lora.popularity,
                    "throughput_cost": ms.lora.throughput_cost,
                    "source": ms.lora.source or None,
                },
            }
        )
    hours = []
    for h, hr in enumerate(day.hours):
        place: list[dict[str, Any]] = [
            {
                "model": prob.names[i],
                "pool": prob.pools[j].label,
                "replicas": n,
                "gpus": int(n * prob.gpus[i, j]),
            }
            for i, row in enumerate(hr.replicas)
            for j, n in enumerate(row)
            if n
        ]
        place += _shared_places(prob, hr)
        hours.append(
            {
                "hour": h,
                "placements": place,
                "owned_gpus_used": int(day.owned_used[h].sum()),
                "rented_gpus": sum(
                    int(n * prob.gpus[i, j])
                    for i, row in enumerate(hr.replicas)
                    for j, n in enumerate(row)
                    if prob.pools[j].kind != "owned"
                )
                + sum(p["gpus"] for p in place if p.get("shared") and not p["owned"]),
                "marginal_cost": hr.cost,
                "short": [
                    {"model": prob.names[i], "rate_short": s}
                    for i, s in enumerate(hr.short)
                    if s > 0
                ],
                "below_min": [  # a minimum the pools cannot hold (placement.MIN_SHORT)
                    {"model": prob.names[i], "replicas": n}
                    for i, n in enumerate(hr.below_min)
                    if n > 0
                ],
                "asleep": [
                    n
                    for i, n in enumerate(prob.names)
                    if prob.sleeps and prob.sleeps[i] and prob.rates[i, h] <= 0
                ],
            }
        )
    violations = [v for h, hr in enumerate(day.hours) for v in owned_first_violations(prob, hr, h)]
    util = float(day.owned_used.sum()) / (owned_total * 24) if owned_total else None
    gain = None if sep.cost is None else sep.cost - day.total_cost
    gain_static = None if sep.static_cost is None else sep.static_cost - day.total_cost
    inputs = {
        "model": ", ".join(m.name for m in spec.models),  # the page's title: the fleet's names
        "fleet_file": path,
        "headroom": spec.headroom,
        "autoscaling": spec.policy,
        "scale_down_delay_s": spec.scale_down_delay_s,
        "scale_up_delay_s": spec.scale_up_delay_s,
        "requests": spec.requests,
        "seed": spec.seed,
        "resolution": "hourly: each hour's rate is the highest of its curve intervals",
        "placement": PLACEMENT,
        "models": [
            {"name": m.name, "model": models[m.name].id, "traffic": m.traffic,
             "hourly_rates": list(m.hourly), "prompt_tokens": m.prompt, "output_tokens": m.output,
             "slo_ttft_s": m.slo_ttft_s, "slo_tpot_s": m.slo_tpot_s, "slo_pct": m.slo_pct,
             "weights": m.weights, "kv_dtype": m.kv_dtype, "engine": m.engine,
             "min_replicas": m.min_replicas, "hardware": list(dict.fromkeys(
                 pl.chip for j, pl in enumerate(prob.pools) if prob.kappa[i, j] > 0))}
            for i, m in enumerate(spec.models)
        ],
        "pools": pools_json,
    }  # fmt: skip
    return render.document(
        "fleet",
        inputs,
        answer={
            "models": len(spec.models),
            "gpu_hours_per_day": float(day.gpu_hours.sum()),
            "cost_per_day": day.total_cost,
            "rented_cost_per_day": day.rented_cost,
            "autoscaling_cost_per_day": day.ramp_cost,
            "owned_cost_per_day": day.owned_cost,
            "owned_gpus": owned_total,
            "owned_utilisation": util,
            "apart_cost_per_day": sep.cost,
            "static_cost_per_day": sep.static_cost,
            "pooling_gain_per_day": gain,
            "pooling_gain_share": None if gain is None or not sep.cost else gain / sep.cost,
            "pooling_gain_vs_static_per_day": gain_static,
            "slo_attainment_min": float(day.slo_attainment.min()),
            "spot_preemptions_per_day": day.preemptions,
            "shared_gpu_hours_per_day": _sum(day.shared_gpu_hours),
            "owned_first": not violations,
        },
        models=rows,
        hours=hours,
        owned_first_violations=violations,
        definitions={
            "pooling_gain": POOLING,
            "owned_first": OWNED_FIRST,
            "slo_attainment": ATTAINMENT,
            "placement": PLACEMENT,
            "sharing": SHARING,
        },
        not_modelled=LEFT,
    )

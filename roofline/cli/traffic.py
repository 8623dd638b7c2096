"""Commands on serving under traffic: `serve` (a deployment under a request rate: percentiles,
goodput, saturation) and `size` (accelerators x layouts x replicas that meet the SLOs at a rate,
with cost). Metric names: docs/METRICS.md."""

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from roofline import render
from roofline.cli import draft_options as dopt
from roofline.cli import groups as grp
from roofline.cli import layout_options as lopt
from roofline.cli import loadbands as lb
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli import traffic_options as topt
from roofline.cli import workload as wf
from roofline.cli.answers_json import per_hardware_json, unsized_json
from roofline.cli.app import catalog, note
from roofline.cli.confidence import confidence_edges, confidence_level
from roofline.cli.kvtier_options import KV_TIERS, KvTierOptions
from roofline.cli.startup import EXIT_CHECK_FAILED
from roofline.cli.traffic_json import flat, serve_doc, size_doc, size_rows, sized_list
from roofline.cli.wired import wired_capacity
from roofline.domain.errors import InputError
from roofline.domain.layout import node_gpus
from roofline.domain.units import fmt_rate
from roofline.engines.engine import engine
from roofline.engines.scheduler import with_frontend
from roofline.serving.attention_dp import default_balance
from roofline.serving.kvtransfer import KvLink
from roofline.serving.loadbands import serve_load_bands
from roofline.serving.rates import serve_rates
from roofline.serving.router import DEFAULT_ROUTER, check_router
from roofline.serving.serve import make_replica
from roofline.serving.size import HEADROOM, chip_answers
from roofline.serving.sizepools import size_search

MaxBatchedTokens = Annotated[
    int | None,
    typer.Option(
        "--max-batched-tokens",
        help="scheduler's token budget per step (default: the engine's on this device, e.g."
        " vLLM 8192 at 70 GiB and more except A100, else 2048)",
    ),
]
Preemption = Annotated[str, typer.Option("--preemption", help="recompute or swap")]
Tokenizer = Annotated[
    str,
    typer.Option(
        "--tokenizer",
        help="the API server's detokenizer: fast, or slow (e.g. vLLM --tokenizer-mode mistral)",
    ),
]
SIZE_REQUESTS = 1000  # requests per simulated point of the size search (as serve)
SIZE_HARDWARE = "h100,h200,b200,mi300x"


def _one(values: list[int], what: str) -> int:
    if len(values) != 1:
        raise InputError(f"{what} takes one value here")
    return values[0]


@dataclass(frozen=True)
class Features:
    """What a request stream may use and is held to, one group (cli.groups) in serve and size:
    the prefix cache, KV-cache tiers, speculative drafting and the SLOs."""

    px: topt.PrefixOptions = topt.PREFIX
    kt: KvTierOptions = KV_TIERS
    so: dopt.DraftOptions = dopt.DRAFT
    sl: topt.SloOptions = topt.SLO


FEATURES = Features()


# ---- serve ----------------------------------------------------------------------------------
@grp.command()
def serve(
    pl: lopt.Placement,
    lens: topt.LengthOptions = topt.LENGTHS,
    rate: topt.Rate = None,
    tr: topt.ArrivalOptions = topt.ARRIVALS,
    concurrency: topt.Concurrency = None,
    requests: opt.Requests = None,
    duration: topt.Duration = None,
    seed: opt.Seed = 0,
    sv: Features = FEATURES,
    max_seqs: opt.MaxSeqs = None,
    max_batched_tokens: MaxBatchedTokens = None,
    chunked_prefill: topt.ChunkedPrefill = None,
    num_scheduler_steps: topt.SchedulerSteps = 1,
    preemption: Preemption = "recompute",
    tokenizer: Tokenizer = "fast",
    frontend: topt.Frontend = "api",
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    price: topt.Price = None,
    router: topt.Router = DEFAULT_ROUTER,
    saturation: Annotated[
        bool, typer.Option("--saturation/--no-saturation", help="search the saturation rate")
    ] = True,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="also write the rate chart to FILE.svg|png|pdf, or a report to FILE.html",
        ),
    ] = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """A deployment under a request rate: latency and goodput.

    TTFT, TPOT, ITL and E2E percentiles, throughput, goodput and SLO attainment, batch, queue,
    KV occupancy, utilisation, cost and energy.

    Requests arrive at --rate (Poisson; a list or range gives one row per rate and a chart of
    p99 TTFT and TPOT against rate) or from --concurrency users, and a continuous-batching
    scheduler (chunked prefill, paged KV, preemption) serves them on --dp replicas; the
    saturation rate is where the queue grows without bound. Metrics: docs/METRICS.md.
    --arrivals, --speedup, --burstiness and --workload as size, check and report take them.
    Example: roofline serve llama-3.1-70b h100 --tp 4 --weights fp8 --rate 1..16 --prompt 2k
    --output 500 --slo-ttft 2s --slo-tpot 50ms"""
    pub.check_out(out, charts=True)
    arrivals, speedup, burstiness, workload = tr.served(rate, concurrency, requests, duration, lens)
    cat = catalog()
    m, hw = pl.tg.load(cat)
    dep = pl.deployment(m)
    dep, lay, laid, n_gpus, n_rep = _laid_out(cat, m, hw, dep, pl.lo, en.engine_name)
    slo = sv.sl.slo()
    timed = arrivals is not None or topt.is_trace(lens.prompt_dist)
    if (rate is None) == (concurrency is None) and not timed and workload is None:
        raise InputError("give --rate (requests/s) or --concurrency (users)")
    rate_list: list[float | None] = [*topt.rates(rate)] if rate is not None else [None]
    _scheduler_options(preemption, max_batched_tokens)
    if workload is not None:  # a workload file's classes (roofline.cli.workload)
        mix, base, rate_list = wf.serve_base(workload, sv.px, lens, concurrency, arrivals,
                                              requests, seed, rate_list)  # fmt: skip
    else:
        base = topt.serving_workload(
            lens, rate_list[0], concurrency, requests, duration, seed, burstiness, arrivals,
            speedup, sv.px.config(seed),
        )  # fmt: skip
    opt.positions(m, int((base.prompts + base.outputs).max()))
    eng = with_frontend(engine(en.engine_name, hw), frontend)
    drafting = dopt.draft_config(cat, m, dep, sv.so)
    rep = sv.kt.apply(make_replica(
        m, hw, dep, eng, base.max_len,
        _one(opt.batch_sweep(max_seqs), "--max-seqs") if max_seqs else None, max_batched_tokens,
        chunked_prefill, preemption, cat.tier("pcie5-x16") if preemption == "swap" else None,
        wired_capacity(m, hw, dep, eng, en.memory),
        tokenizer=tokenizer, drafting=drafting,
        draft_context=float(base.prompts.mean() + base.outputs.mean() / 2),
        scheduler_steps=num_scheduler_steps,
    ), hw, cat.tier, base)  # fmt: skip  # with its KV tiers and retention (kvtier_options)
    _budget_holds(max_batched_tokens, rep.rules, dep.attention_dp)
    price = topt.price_table(cat, price).get(hw.id)
    search_sat = saturation and concurrency is None
    cap, results = serve_rates(
        rep, base, rate_list, slo, n_rep, seed, confirm=search_sat, router=check_router(router)
    )
    doc = serve_doc(
        m, hw, dep, lay, laid, n_gpus, n_rep, base,
        rate_list if rate is not None or workload is not None else None,
        concurrency, slo, eng, rep, rep.rules.chunked_prefill, tokenizer, preemption, cap,
        search_sat,
        price, dopt.draft_json(drafting, rep) if drafting is not None else None, results,
    )  # fmt: skip
    lb.attach(doc, serve_load_bands(rep, base, results, slo, cap if search_sat else None,
                                    hw.efficiency.family, eng.profile_id, router=router,
                                    seed=seed))  # fmt: skip
    table = wf.serve_table(doc, mix, base, rep) if workload is not None else render.serve_table
    rows = [{"rate": p["rate"], **flat(p["expected"])} for p in doc["points"]]
    pub.publish(doc, fmt, rows, table, out)
    for p in doc["points"]:
        why = (p["expected"].get("prefix_cache") or {}).get("hits_lost_to_eviction")
        if why:
            note(f"at {fmt_rate(p['rate'])} req/s: {why}" if p["rate"] else why)
    if out is not None and not pub.is_html(out):
        from roofline.render.charts import save_serve

        save_serve(doc, out)
        note(f"wrote {out}")


def _scheduler_options(preemption: str, max_batched_tokens: int | None) -> None:
    if preemption not in ("recompute", "swap"):
        raise InputError(f"--preemption must be recompute or swap, got {preemption}")
    if max_batched_tokens is not None and not 1 <= max_batched_tokens <= 10_000_000:
        raise InputError(
            f"--max-batched-tokens must be from 1 to 10,000,000, got {max_batched_tokens}"
        )


def _budget_holds(given: int | None, rules, attention_dp: int) -> None:
    """Under chunked prefill a step's token budget holds every running decode (vLLM's
    SchedulerConfig refuses max_num_batched_tokens below max_num_seqs): a smaller --max-batched-
    tokens would be raised silently, so it is refused (one attention-DP rank's budget: per rank)."""
    if given is None or attention_dp != 1:
        return
    if rules.chunked_prefill and given <= rules.max_seqs:
        raise InputError(
            f"--max-batched-tokens {given} must exceed the running sequences ({rules.max_seqs})"
            " under chunked prefill: raise it or lower --max-seqs"
        )


def _laid_out(cat, m, hw, dep, lo: lopt.LayoutOptions, engine_name: str | None = None):
    """serve's deployment with plan's layout options and rules: (deployment, layout, laid-out
    deployment, GPUs, replicas); the layout's links once a replica leaves its node."""
    opt.check_formats(dep, hw)
    n_gpus, n_rep = lopt.replicas(dep, lo.gpus, lo.dp)
    lay, laid = lopt.layout(cat, m, hw, dep, lo, engine_name)
    spans = lo.nd.nodes is not None or lo.nd.cross_node_tp or dep.gpus_per_replica > node_gpus(hw)
    dep = replace(dep, layout=laid.layout, links=laid.links if spans else None)
    return dep, lay, laid, n_gpus, n_rep


# ---- size -----------------------------------------------------------------------------------
@grp.command()
def size(
    model: opt.ModelArg,
    rate: topt.OneRate = None,
    tr: topt.ArrivalOptions = topt.ARRIVALS,
    hardware: topt.HardwareList = None,
    fm: grp.Formats = grp.FORMATS,
    lens: topt.LengthOptions = topt.LENGTHS,
    requests: opt.Requests = None,
    seed: opt.Seed = 0,
    sv: Features = FEATURES,
    engine_name: opt.Engine = opt.ENGINE,
    frontend: topt.Frontend = "api",
    price: topt.Price = None,
    minimize: topt.Minimize = "cost",
    router: topt.Router = DEFAULT_ROUTER,
    disagg: Annotated[
        bool,
        typer.Option("--disagg", help="also disaggregated prefill/decode pools (slower search)"),
    ] = False,
    link: Annotated[
        str, typer.Option(help="tier id the KV cache travels over between pools (--disagg)")
    ] = "infiniband-ndr",
    headroom: Annotated[
        float,
        typer.Option(help="share of each replica's capacity left unused (0.1: size to 90%)"),
    ] = HEADROOM,
    scale_out: opt.ScaleOut = opt.SCALE_OUT,
    attention_dp_balance: lopt.AttentionDpBalance = None,
    pools: Annotated[
        str | None,
        typer.Option(
            "--pools",
            help="with --disagg: the pool split P:D of one unit (e.g. 3:1); default: searched",
        ),
    ] = None,
    traffic_curve: topt.TrafficDayOption = None,
    scale_up_delay: topt.ScaleUpDelay = None,
    out: topt.SizeOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """Deployments that meet the SLOs at a rate, with cost.

    Searches accelerators x layouts (TP, PP, EP and attention-DP from the enumerator plan uses,
    one replica within a node or across up to four over --scale-out; the few that plan's
    estimate says could win are simulated) x replicas: a replica's capacity (its highest rate
    whose p-th percentile TTFT and TPOT meet the SLOs, or its saturation rate without SLOs)
    x (1 - --headroom) sets the replica count. Prints GPUs, $/hour, $/million output tokens,
    J/token and the frontier of tokens/s per GPU against tokens/s per user; the cheapest (or
    --minimize gpus) is marked best, with what sets its replica count and the engine's launch
    line (flags: hardware/engine_flags.yaml).
    With --traffic-curve FILE (rates per hour or minute, or an arrival log) each deployment
    sized at the curve's peak (or --rate) also gets its day: replicas per interval, GPU-hours
    and $ per day against static peak provisioning, SLO attainment; -o draws it.
    --confidence p90 sizes each fleet to its error bands' pessimistic edge (the rate ÷ the
    throughput band's low edge, the SLOs ÷ the TTFT/TPOT bands' high edge), the expected
    fleet's GPUs beside it.
    Example: roofline size llama-3.1-70b --rate 10 --hardware h100,h200,b200,mi300x
    --weights fp8 --prompt 2k --output 300 --slo-ttft 2s --slo-tpot 50ms"""
    from roofline.cli import day as day_cli

    arrivals, speedup, burstiness, workload, level = tr.sized(requests, traffic_curve, rate, lens)
    if workload is not None:  # a workload file's classes, together and apart (cli.workload)
        return _size_workload(dict(locals()))
    sv.kt.refuse("size without --workload")
    chart_out = None if pub.is_html(out) else out
    if traffic_curve is None or chart_out is None:
        pub.check_out(out)
    day_rates = day_cli.start(traffic_curve, scale_up_delay, chart_out)
    rate_rps = _size_rate(rate, day_rates, arrivals)  # None: an arrival log at its own pace
    cat = catalog()
    m = cat.model(model)
    hws = _accelerators(cat, hardware)
    base = opt.deployment(fm.weights, fm.kv_dtype, model=m).with_layout(
        attention_dp_balance=attention_dp_balance or default_balance(engine_name)
    )
    for hw in hws:
        opt.check_formats(base, hw)
    slo = sv.sl.slo()
    trace = topt.is_trace(lens.prompt_dist)  # a trace is replayed whole: never cut
    pfx = _size_checks(headroom, SIZE_REQUESTS if requests is None else requests, sv, seed, disagg)
    requests = SIZE_REQUESTS if requests is None and not trace and arrivals is None else requests
    w = topt.serving_workload(
        lens, rate_rps, None, requests, None, seed, burstiness, arrivals, speedup, pfx
    )  # fmt: skip
    rate_rps = float(w.rate or 0.0) if rate_rps is None else rate_rps
    opt.positions(m, int((w.prompts + w.outputs).max()))
    prices = topt.price_table(cat, price)
    eng = with_frontend(engine(engine_name, hws[0]), frontend)
    # a delay to derive needs the engine's figures: refuse before the search
    if day_rates is not None:
        day_cli.delays(m, hws, base, eng, scale_up_delay)
    drafting, net, tier = _size_links(cat, m, base, sv.so, disagg, scale_out, pools, link)
    edges = confidence_edges(level, hws, eng.profile_id, slo.pct)
    rows = size_search(
        m, hws, base, eng, w, slo, prices, minimize, seed, headroom, drafting, net,
        KvLink(tier) if tier is not None else None, topt.pool_split(pools), check_router(router),
        edges,
    )  # fmt: skip
    answers, unsized, rows = _split(rows, hws)
    deployments = sized_list(rows, prices, hws, drafting is not None, eng.profile_id)
    day_inputs, extra = {}, {}
    if day_rates is not None:
        delay = day_cli.parse_delay(scale_up_delay)
        day_inputs = day_cli.day_inputs(day_rates, str(traffic_curve), delay)
        extra["day"] = day_cli.add_days(
            m, hws, base, eng, w, slo, prices, rows, deployments, day_rates, headroom, delay, seed
        )
    doc = size_doc(
        m, hws, rate_rps, base, w, slo, eng, minimize, tier, headroom, net, pools, prices,
        deployments, day_inputs, extra, drafting, router, answers, unsized,
        confidence_level(level),
    )  # fmt: skip
    rows_out = size_rows(deployments, day_rates is not None)
    pub.publish(doc, fmt, rows_out, render.size_day_table if day_rates else render.size_table, out)
    if day_rates is not None and chart_out is not None:
        day_cli.chart(doc, chart_out)
    _drafter_paid(drafting, deployments)
    _none_found(doc, answers, slo, rate_rps)


def _drafter_paid(drafting, deployments: list[dict]) -> None:
    """A note when --drafter was asked for and no row drafts (plain decoding was cheaper)."""
    if drafting is not None and deployments and not any(d.get("speculation") for d in deployments):
        plain = "each layout decoding plainly served the rate for less, so no row drafts"
        note(f"note: --drafter {drafting.drafter} did not pay: {plain}")


def _size_links(cat, m, base, so, disagg: bool, scale_out: str, pools: str | None, link: str):
    """size's drafter, scale-out network and (--disagg) KV tier, each checked."""
    drafting = dopt.draft_config(cat, m, base, so)
    if drafting is not None and disagg:
        raise InputError("--disagg does not model speculative decoding: drop --drafter")
    net = grp.scale_out_network(cat, scale_out)
    if pools is not None and not disagg:
        raise InputError("--pools splits a disaggregated unit: give --disagg too")
    return drafting, net, cat.tier(link) if disagg else None


def _split(rows, hws):
    """size's rows as (each chip's answer, the layouts without a fleet, the fleets)."""
    answers = per_hardware_json(chip_answers(rows, [h.id for h in hws]))
    return answers, unsized_json(rows), [r for r in rows if r.gpus]


def _none_found(doc, answers, slo, rate: float) -> None:
    """Nothing found: the answer is no (exit 1), with each chip's reason on stderr."""
    if doc["best"] is not None:
        return
    why = "; ".join(f"{a['hardware']}: {a['reason']}" for a in answers if a["reason"])
    what = "within the SLOs" if slo.ttft_s or slo.tpot_s else "(no SLO given: on saturation)"
    note(f"size: no deployment serves {fmt_rate(rate)} req/s {what}: {why}")
    raise typer.Exit(EXIT_CHECK_FAILED)


def _size_workload(o: dict) -> None:
    """size --workload FILE: the classes together and apart (roofline.cli.workload.size_doc);
    size's options that do not apply to a workload file refused (exit 2)."""
    from roofline.cli import day as day_cli

    curve = o["traffic_curve"]
    unused = {
        "--disagg": o["disagg"], "--pools": o["pools"],
        "--out FILE.html (the day's chart: .svg, .png or .pdf)": pub.is_html(o["out"]),
        "--drafter": o["sv"].so.drafter, "--minimize gpus": o["minimize"] != "cost",
        "--headroom (without --traffic-curve)": o["headroom"] != HEADROOM and curve is None,
    }  # fmt: skip
    given = [k for k, v in unused.items() if v]
    if given:
        raise InputError(f"--workload sizes each class on its SLOs alone: drop {', '.join(given)}")
    lens, rate, sv = o["lens"], o["rate"], o["sv"]
    px, sl, kt = sv.px, sv.sl, sv.kt
    wf.refuse_shapes(px, lens, None, None)
    day_rates = day_cli.start(curve, o["scale_up_delay"], o["out"])
    cat = catalog()
    m, hws = cat.model(o["model"]), _accelerators(cat, o["hardware"])
    eng = with_frontend(engine(o["engine_name"], hws[0]), o["frontend"])
    one = _size_rate(rate, day_rates) if rate is not None or curve is not None else None
    slo, router = sl.slo(), check_router(o["router"])
    edges = confidence_edges(o["level"], hws, eng.profile_id, slo.pct)
    day = None
    if day_rates is not None:  # each deployment's day, the classes at their shares (cli.day)
        delay = day_cli.parse_delay(o["scale_up_delay"])
        day_cli.delays(m, hws, opt.deployment(o["fm"].weights, o["fm"].kv_dtype, model=m), eng,
                       o["scale_up_delay"])  # fmt: skip
        day = day_cli.mix_day(m, eng, day_rates, o["headroom"], delay, slo, o["seed"], router,
                              edges)  # fmt: skip
    doc = wf.size_doc(
        m, hws, o["fm"].weights, o["fm"].kv_dtype, eng, o["workload"], one, o["requests"],
        o["seed"], slo, topt.price_table(cat, o["price"]), router,
        kv=lambda rep, hw, w: kt.apply(rep, hw, cat.tier, w), day=day, edges=edges,
    )  # fmt: skip
    doc["inputs"]["confidence"] = confidence_level(o["level"])
    if day_rates is not None:
        doc["inputs"].update(day_cli.day_inputs(day_rates, str(curve), delay))
        doc["inputs"]["headroom"] = o["headroom"]
    pub.publish(doc, o["fmt"], doc["deployments"], render.workload_size_table, None)
    if day_rates is not None and o["out"] is not None:  # the best deployment's day, drawn
        best = doc["deployments"][0]
        label = f"{best['hardware']} TP{best['tp']}"
        day_doc = {
            "inputs": doc["inputs"],
            "day": best["day"] and {**best["day"], "deployment": label},
        }
        day_cli.chart(day_doc, o["out"])


def _size_rate(rate: str | None, day_rates, arrivals: str | None = None) -> float | None:
    """size's one rate: --rate, else the traffic curve's peak; None for an arrival log replayed
    at its own pace (its mean rate then sizes the fleet)."""
    if arrivals is not None and day_rates is not None:
        raise InputError(
            "--arrivals replays a log, --traffic-curve plays a day: give one (a log's day:"
            " --traffic-curve LOG, counted in windows of at least 100 requests)"
        )
    if rate is None and arrivals is not None:
        return None
    if rate is not None:
        r = topt.rates(rate)
    elif day_rates is not None:
        r = [float(day_rates.rate.max())]
    else:
        raise InputError("size needs --rate (requests/s)")
    if len(r) != 1:
        raise InputError("size takes one --rate")
    return r[0]


def _accelerators(cat, hardware: str | None) -> list:
    """--hardware's accelerators (size's four by default)."""
    names = opt.comma_items(SIZE_HARDWARE if hardware is None else hardware, "--hardware")
    if len(names) > 32:  # comma_items refuses an empty list
        raise InputError("--hardware: give 1 to 32 accelerators, e.g. h100,h200")
    return [cat.accelerator(h) for h in names]


def _size_checks(headroom, requests, sv: Features, seed: int, disagg: bool):
    """size's headroom, requests and prefix cache (not with --disagg); the prefix config."""
    if not 0 <= headroom < 1:
        raise InputError(f"--headroom must be a share from 0 to below 1, got {headroom}")
    if not 20 <= requests <= 100_000:
        raise InputError(f"--requests must be from 20 to 100000, got {requests}")
    pfx = sv.px.config(seed)
    if pfx is not None and disagg:
        raise InputError("--disagg does not model a prefix cache: drop --shared-prefix/--turns")
    return pfx

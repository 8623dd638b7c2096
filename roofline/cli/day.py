"""`size --traffic-curve`: each sized deployment's day under a rate curve (roofline.serving
.curve, .daysize), its scale-up delay (derived from the engine's catalog figures, or
--scale-up-delay), and the best one's intervals with p99 latency."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from roofline.checks.day import DayLimits
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.domain.units import parse_seconds
from roofline.engines.engine import Engine
from roofline.serving.day import DayRates, plan_day
from roofline.serving.dayfile import read_day
from roofline.serving.daysize import day_json, delay_for, intervals_json, latency_table
from roofline.serving.metrics import Slo
from roofline.serving.size import HEADROOM, Sized
from roofline.serving.workload import Workload
from roofline.step.ops import Deployment

MAX_DELAY_S = 86_400.0


def parse_delay(text: str | None) -> float | None:
    """--scale-up-delay: a time (90s, 2min) from 0 to a day, or None (derive it)."""
    if text is None:
        return None
    t = parse_seconds(str(text), "--scale-up-delay")
    if not (math.isfinite(t) and 0 <= t <= MAX_DELAY_S):
        raise InputError(f"--scale-up-delay must be from 0 to 24h, got {text}")
    return t


def add_days(
    model: ModelArch,
    hws: list[Accelerator],
    base: Deployment,
    eng: Engine,
    w: Workload,
    slo: Slo,
    prices: dict,
    rows: list[Sized],
    deployments: list[dict[str, Any]],
    c: DayRates,
    headroom: float,
    override: float | None,
    seed: int,
) -> dict[str, Any]:
    """Add each sized deployment's `day` to its JSON row (capacity from size's search, once per
    deployment); the best one's day with its intervals and p99 latency is returned."""
    by_id = {h.id: h for h in hws}
    best: dict[str, Any] = {}
    for row, d in zip(rows, deployments, strict=True):
        if not row.meets_slo or row.max_rate_per_replica <= 0 or row.prefill_replicas:
            d["day"] = None
            continue
        hw = by_id[row.hardware]
        dep = base.with_layout(tp=row.tp, pp=row.pp, ep=row.ep)
        delay, how = delay_for(model, hw, dep, eng, override)
        cap = row.max_rate_per_replica
        table = None
        if row.best:
            router = row.router or "round-robin"  # one replica: no routing
            table = latency_table(model, hw, dep, eng, w, slo, cap, seed, row.replicas, router)
        day = plan_day(c, cap, headroom, delay, table)
        e = row.expected
        tok_per_req = e.output_tokens_per_s / e.requests_per_s if e and e.requests_per_s else 0.0
        p = prices.get(row.hardware)
        per, usd = row.gpus // max(row.replicas, 1), p.usd_per_gpu_hour if p else None
        d["day"] = {**day_json(day, per, usd, tok_per_req), "scale_up_delay_from": how}
        cap_exp = row.rate_per_replica_expected
        if row.confidence != "expected" and 0 < cap_exp != cap:  # the expected day beside it
            exp = day_json(plan_day(c, cap_exp, headroom, delay), per, usd, tok_per_req)
            keys = ("gpu_hours_per_day", "cost_per_day", "slo_attainment", "max_replicas")
            d["day"]["expected"] = {k: exp[k] for k in keys}
        if row.best:
            best = {
                **d["day"],
                "deployment": f"{row.hardware} TP{row.tp}" + (f"PP{row.pp}" if row.pp > 1 else ""),
                "intervals": intervals_json(c, day),
                "latency_table": {
                    "rate_per_replica": table.rate_per_replica.tolist(),
                    "ttft_p99_s": table.ttft_p99_s.tolist(),
                    "tpot_p99_s": table.tpot_p99_s.tolist(),
                }
                if table is not None
                else None,
            }
    return best


def mix_day(
    model: ModelArch,
    eng: Engine,
    c: DayRates,
    headroom: float,
    override: float | None,
    slo: Slo,
    seed: int,
    router: str,
    edges: dict | None = None,
):
    """size --workload --traffic-curve: a deployment's day, the classes at their shares of the
    curve's rate (serving.mixday): (hw, replica, workload, $/GPU-hour) -> its `day`, with each
    class's and the intervals with their p99, the pool's and each class's; None when no rate
    meets every class's SLOs. `edges`: hardware id -> the band edges of --confidence
    (serving.confidence), the expected day's figures beside the confidence's."""
    from roofline.serving.classes import class_slo
    from roofline.serving.mixday import mix_day_capacity, mix_latency, plan_mix_day

    if not 0 <= headroom < 1:
        raise InputError(f"--headroom must be a share from 0 to below 1, got {headroom}")

    def day(hw: Accelerator, rep, w: Workload, usd: float | None) -> dict[str, Any] | None:
        delay, how = delay_for(model, hw, rep.dep, eng, override)
        cap = mix_day_capacity(rep, w, slo, seed, router, (edges or {}).get(hw.id))
        if cap.overall <= 0:
            return None
        names = [k.name for k in w.mix.classes]
        lat = mix_latency(rep, w, slo, cap, seed, router)
        d, classes = plan_mix_day(c, cap, names, headroom, delay, latency=lat)
        tok = sum(s * t for s, t in zip(cap.shares, cap.output_tokens_per_arrival, strict=True))
        slos = [class_slo(k, slo) for k in w.mix.classes]
        out = {
            **day_json(d, rep.gpus, usd, tok),
            "scale_up_delay_from": how,
            "rate_unit": "arrivals/s over all classes",
            "saturation_per_replica": cap.saturation,
            "confidence": cap.level,
            "classes": [
                {
                    "name": k.name,
                    "share": k.share,
                    "capacity_per_replica": k.capacity_per_replica,
                    "peak_arrivals_per_s": k.peak_arrivals_per_s,
                    "requests_per_day": k.requests_per_day,
                    "output_tokens_per_day": k.output_tokens_per_day,
                    "slo_attainment": k.slo_attainment,
                    "slo_ttft_s": s.ttft_s,
                    "slo_tpot_s": s.tpot_s,
                }
                for k, s in zip(classes, slos, strict=True)
            ],
            "intervals": intervals_json(c, d),
        }
        for i, iv in enumerate(out["intervals"]):  # each class's p99 in the interval
            iv["classes"] = [
                {"name": k.name, "ttft_p99_s": _finite_at(k.ttft_p99_s, i),
                 "tpot_p99_s": _finite_at(k.tpot_p99_s, i)}
                for k in classes
            ]  # fmt: skip
        if cap.expected is not None:  # sized to a confidence: the expected day beside it
            exp, _ = plan_mix_day(c, cap.expected, names, headroom, delay)
            e = day_json(exp, rep.gpus, usd, tok)
            keys = ("gpu_hours_per_day", "cost_per_day", "slo_attainment", "max_replicas",
                    "capacity_per_replica")  # fmt: skip
            out["expected"] = {k: e[k] for k in keys}
        return out

    return day


def _finite_at(a, i: int) -> float | None:
    """a[i] as JSON: None where NaN (no instant of the interval within capacity) or no table."""
    if a is None or not math.isfinite(float(a[i])):
        return None
    return float(a[i])


def day_inputs(c: DayRates, path: str, override: float | None) -> dict[str, Any]:
    return {
        "traffic_curve": path,
        "traffic_curve_read": c.description,
        "traffic_curve_intervals": int(c.rate.size),
        "traffic_curve_span_s": c.span_s,
        "traffic_curve_peak_rate": float(c.rate.max()),
        "traffic_curve_mean_rate": c.mean_rate,
        "scale_up_delay_s": override,  # --scale-up-delay (None: derived per deployment, in its day)
        "autoscaling": "reactive: replicas = max(1, ceil(rate / (capacity x (1 - headroom)))) per"
        " interval, ordered at its start and serving after the scale-up delay (derived per"
        " deployment: weight bytes / load bandwidth + engine start, unless --scale-up-delay);"
        " paid from the order; SLO attainment = share of the day's requests arriving while the"
        " rate is within the ready replicas' capacity; static = the peak's replicas all day",
    }


def spec_limits(d: dict[str, Any], checks: tuple[str, ...]) -> DayLimits:
    """check's spec keys across a day: traffic_curve with max_gpu_hours_per_day and/or
    min_slo_attainment; headroom and scale_up_delay beside them."""
    c = d["checks"]
    given = {k: c.get(k) for k in checks if c.get(k) is not None}
    path = d.get("traffic_curve")
    if path is None:
        keys = ", ".join(given) or "headroom, scale_up_delay"
        raise InputError(f"{keys}: requires traffic_curve (--traffic-curve FILE)")
    if not given:
        raise InputError(
            "traffic_curve needs max_gpu_hours_per_day or min_slo_attainment"
            " (--max-gpu-hours-per-day, --min-slo-attainment)"
        )
    gpu_h = given.get("max_gpu_hours_per_day")
    if gpu_h is not None and not (isinstance(gpu_h, int | float) and 0 < gpu_h < math.inf):
        raise InputError(f"max_gpu_hours_per_day must be a positive number, got {gpu_h}")
    att = given.get("min_slo_attainment")
    if att is not None and not (isinstance(att, int | float) and 0 <= att <= 1):
        raise InputError(f"min_slo_attainment must be a share from 0 to 1 (0.99), got {att}")
    headroom = d.get("headroom", HEADROOM)
    if not (isinstance(headroom, int | float) and 0 <= headroom < 1):
        raise InputError(f"headroom must be a share from 0 to below 1, got {headroom}")
    ceiling = None
    if "dp" in d or d.get("gpus") is not None:  # the spec's fleet: the autoscaler's ceiling
        ceiling = d["gpus"] // (d.get("tp", 1) * d.get("pp", 1)) if d.get("gpus") else d["dp"]
    return DayLimits(
        read_day(path),
        float(headroom),
        parse_delay(d.get("scale_up_delay")),
        ceiling,
        given.get("max_gpu_hours_per_day"),
        att,
    )


def spec_slo(d: dict[str, Any]) -> Slo:
    """The p99 limits as the SLOs a replica's capacity across the curve is found under."""
    c = d["checks"]
    ttft, tpot = c.get("max_ttft_p99"), c.get("max_tpot_p99")
    return Slo(
        None if ttft is None else parse_seconds(str(ttft), "max_ttft_p99"),
        None if tpot is None else parse_seconds(str(tpot), "max_tpot_p99"),
        99.0,
    )


def start(path: str | None, delay: str | None, out: Path | None) -> DayRates | None:
    """Check the curve options and read the curve before any work (bad input: one line)."""
    if path is None:
        for given, flag in ((delay, "--scale-up-delay"), (out, "--out")):
            if given is not None:
                raise InputError(f"size {flag} needs --traffic-curve")
        return None
    parse_delay(delay)
    if out is not None:
        from roofline.render.charts import check_output

        check_output(out)
    return read_day(path)


def delays(
    model: ModelArch, hws: list[Accelerator], base: Deployment, eng: Engine, text: str | None
) -> None:
    """Refuse before any work when a delay must be derived and an engine has no figures."""
    for hw in hws:
        delay_for(model, hw, base, eng, parse_delay(text))


FLAT_DAY = ("gpu_hours_per_day", "cost_per_day", "cost_per_million_output_tokens", "slo_attainment")


def flat_day(day: dict[str, Any] | None) -> dict[str, Any]:
    """The day's headline figures for a CSV/JSONL row (day_ prefixed)."""
    return {f"day_{k}": (day or {}).get(k) for k in FLAT_DAY}


def chart(doc: dict[str, Any], out: Path) -> None:
    from roofline.cli.app import note

    if not doc.get("day"):
        note(f"no chart written to {out}: no deployment meets the SLOs, so there is no day")
        return
    from roofline.render.charts import save_day

    save_day(doc, out)
    note(f"wrote {out}")

"""size's table: the answer line first, each chip asked for with its cheapest deployment or
why none, the deployments (fleets only) with a three-line legend (the rest under -v), the layouts
not searched, the best's launch line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from roofline.domain.units import fmt_rate
from roofline.render.core import VERBOSE, band_text, load_band_text
from roofline.render.launchlines import launch_block
from roofline.render.traffic import (
    _arrivals,
    _lat,
    _lengths,
    _pools,
    _short,
    _slo_text,
    _usd,
    brief,
)
from roofline.render.width import N, T, legend, print_rows, say, table_output


# ---- size -----------------------------------------------------------------------------------
def _band(d: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """A deployment's band of `name`: the fleet's under load at the rate (`load_bands`, as
    serve --dp N states it for the same fleet) where it has one, else the static band."""
    return (d.get("load_bands") or {}).get(name) or (d.get("bands") or {}).get(name)


def _top(d: Mapping[str, Any], name: str) -> str:
    """The top of a band's measured range above the expected figure, in percent ("342"); "∞"
    when the band's low-capacity edge is past saturation (a band under load, high null)."""
    b = _band(d, name)
    if b is None:
        return "-"
    if "rel" not in b and b.get("high") is None:
        return "∞"
    return f"{round((b.get('high', 1.0 + b.get('rel', 0.0)) - 1.0) * 100):d}"


def _pm(d: Mapping[str, Any], name: str) -> str:
    """A deployment's band of `name` as "-40%/+0%" (_band), or "" when it has none."""
    b = _band(d, name)
    if b is None:
        return ""
    return load_band_text(b) if "rel" not in b else band_text(b)


THIN = "†"  # a band resting on a thin fit (issue 34: under 5 points or one source)


def _thin(bands: Mapping[str, Any] | None, name: str) -> str:
    """THIN when the band of `name` rests on a thin fit (its `fit.thin`), else ""."""
    b = (bands or {}).get(name)
    return THIN if b is not None and b.get("fit", {}).get("thin") else ""


def _thin_note(deps: list[Mapping[str, Any]]) -> str:
    """The legend of THIN: which chip's bands are thin, with their points and sources."""
    seen: dict[str, str] = {}
    for d in deps:
        for name, b in (d.get("bands") or {}).items():
            fit = b.get("fit", {})
            label = {"throughput": "tok", "ttft_p99": "TTFT", "tpot_p99": "TPOT"}.get(name)
            if label and fit.get("thin"):
                key = f"{_short(d['hardware'])} {label}"
                seen.setdefault(key, f"{fit.get('n', 0)} points/{fit.get('sources', 0)} source(s)")
    if not seen:
        return ""
    return f"{THIN} thin fit (under 5 points or one source): " + ", ".join(
        f"{k} {v}" for k, v in seen.items()
    )


def _gpus(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def _chip_line(
    a: Mapping[str, Any], deps: Sequence[Mapping[str, Any]], level: str = "expected"
) -> str:
    """One accelerator's answer: its cheapest deployment meeting the SLOs, or why none; its
    layout named as its row and the best line name it (_pools); sized to a confidence
    (`level`), the same layout's GPUs at the expected figures and what set the count."""
    hw = _short(a["hardware"])
    if not a["meets_slo"]:
        return f"  {hw}: none: {a['reason']}"
    row = next((d for d in deps if d["hardware"] == a["hardware"] and d["meets_slo"]
                and (d["gpus"], d["tp"], d["pp"], d["ep"]) == (a["gpus"], a["tp"], a["pp"],
                                                               a["ep"])), None)  # fmt: skip
    layout = _pools(row).replace("\n ", " ") if row is not None else a["layout"]
    at = level != "expected" and a.get("gpus_expected") is not None
    return (
        f"  {hw}: {a['replicas']} x {layout} = {_gpus(a['gpus'])}"
        + (f" ({a['gpus_expected']:,} at expected)" if at else "")
        + f", {_usd(a['cost_per_hour'])}/h, p99 TTFT {_lat(a['ttft_p99_s'])}, "
        f"TPOT {_lat(a['tpot_p99_s'])}"
        + (f"; set by the {a['constraint']}" if at and a.get("constraint") else "")
    )


@table_output
def size_table(doc: Mapping[str, Any], con: Console) -> None:
    i, deps = doc["inputs"], doc["deployments"]
    rows, misses = [], []
    for d in deps:
        mark = ("*" if d["best"] else "") + ("f" if d["frontier"] else "")
        name = f"{_short(d['hardware'])} {_pools(d)}"
        if not d["meets_slo"]:
            misses.append(f"{name}: {d['gpus']:,} GPUs still miss the SLOs")
            continue
        e = d["expected"]
        at = i.get("confidence", "expected") != "expected"
        rows.append(
            (
                f"{name}{' ' + mark if mark else ''}",
                f"{d['gpus']:,}" + (f" ({d['confidence']['gpus_expected']:,})" if at else ""),
                _usd(d["cost_per_hour"]),
                _usd(d["cost_per_million_output_tokens"]),
                f"{e['throughput']['output_tokens_per_s_per_gpu']:,.0f}",
                f"{e['throughput']['output_tokens_per_s_per_user']:,.0f}",
                _pm(d, "throughput") + _thin(d.get("bands"), "throughput"),
                _top(d, "ttft_p99") + _thin(d.get("bands"), "ttft_p99"),
                _top(d, "tpot_p99") + _thin(d.get("bands"), "tpot_p99"),
            )
        )
    best = next((d for d in deps if d["best"]), None)
    arrivals = _arrivals(i)
    # the legend: at most three lines (width.legend); the rest under -v
    head, left = legend(
        con,
        [
            brief(arrivals[:1].upper() + arrivals[1:])
            + (f", {i['requests']:,} requests a fleet" if i.get("requests") else ""),
            _lengths(i, arrivals),
            _slo_text(i),
            f"* best ({i['minimize']}), f frontier",
            f"replicas routed {i.get('router') or 'round-robin'}",
            "GPUs = replicas x TP x PP"
            + (
                "; a P/D row: units x its servers' GPUs"
                if any(d.get("prefill_replicas") for d in deps)
                else ""
            ),
            "tok = output tokens/s",
            "TTFT/TPOT +% = how far a measured p99 reaches above the expected (∞: the queue"
            " grows without bound)",
        ],
        3,
    )
    more = (
        f"{arrivals[:1].upper() + arrivals[1:]}; prompts {i['prompt_lengths']}, outputs "
        f"{i['output_lengths']}. f = on the frontier of tok/s per GPU vs tok/s per user; ±tok = "
        "the band of tok/s, inverted for $/Mtok (-x%/+y%: the measured figure's 90% range; ±x: "
        "a symmetric one), TTFT/TPOT +% the top of the p99's band; each run through the fleet's "
        "queue at the rate, as serve --dp N states them (∞: at the throughput band's low edge "
        "a replica is offered more than it serves; a replayed log has no rate to scale: the "
        "static bands, as serve's); per hardware family and engine, "
        "docs/ACCURACY.md (a "
        "family or engine under 5 points takes the wider pool); more in --format json. Each "
        f"fleet evaluated whole, requests dealt {i.get('router', 'round-robin')} "
        f"({i.get('router_model', '')}), as serve --dp N does"
    )
    if i.get("confidence", "expected") != "expected":
        more += (
            f". Sized at confidence {i['confidence']}: the rate ÷ the throughput band's low edge"
            " within the SLOs ÷ the light-load TTFT/TPOT bands' high edges; (exp.) = GPUs at the"
            " expected figures"
        )
    if best is not None and best.get("sized_on"):
        more += (
            f". Each replica sized on its {best['sized_on']} x {1 - i.get('headroom', 0):.0%}"
            f" (headroom {i.get('headroom', 0):.0%}); the best's saturation"
            f" {best['saturation_rate_per_replica']:.3g} req/s per replica, bound by"
            f" {best['binding']}"
        )
        if best.get("constraint"):
            more += f"; its replica count is set by the {best['constraint']}"
        more += (
            f"; {best['max_seqs']:,} sequences and {best['max_batched_tokens']:,} tokens a step"
            + (" per attention-DP rank" if best.get("attention_dp", 1) > 1 else "")
        )
    if best is not None:
        layout = _pools(best).replace("\n ", " ")
        say(
            con,
            f"best: {best['replicas']} x {_short(best['hardware'])} {layout} ="
            f" {_gpus(best['gpus'])}, {_usd(best['cost_per_hour'])}/h,"
            f" {_usd(best['cost_per_million_output_tokens'])}"
            f"/Mtok{(' ' + _pm(best, 'cost_per_million_output_tokens')).rstrip()}, "
            f"for {fmt_rate(i['rate'])} "
            f"req/s of {i['model']}",
            "bold",
        )
    else:
        chips = ", ".join(_short(h) for h in i["hardware"])
        say(con, f"none: {_nothing(i)} on {chips}", "bold")
    for a in doc.get("per_hardware") or []:
        say(con, _chip_line(a, deps, i.get("confidence", "expected")))
    if rows:
        level = i.get("confidence", "expected")
        cols = (
            T("deployment"),
            N("GPUs") if level == "expected" else N(f"GPUs {level}\n(exp.)"),
            N("$/h"),
            N("$/Mtok"),
            N("tok/\nGPU"),
            N("tok/\nuser"),
            N("±tok"),
            N("TTFT\n+%"),
            N("TPOT\n+%"),
        )
        print_rows(con, "", cols, rows)
        say(con, head)
        if thin := _thin_note([d for d in deps if d["meets_slo"]]):
            say(con, thin)
    else:
        say(con, head)
    if VERBOSE["on"]:
        say(con, more + "".join(f"; {c}" for c in left))
    for line in misses:
        say(con, line)
    pruned = [f"{_short(d['hardware'])} {d['layout']}" for d in doc.get("not_searched") or []]
    if pruned:
        what = "GPUs" if i["minimize"] == "gpus" else "cost"
        say(
            con,
            f"not searched (a bound on their rate: no better {what} than their chip's best): "
            + ", ".join(pruned),
        )
    launch_block(con, (doc.get("best") or {}).get("launch"))
    if VERBOSE["on"]:
        say(con, f"energy: {i['energy_assumption']}")


def _nothing(i: Mapping[str, Any]) -> str:
    """What `size` found when no deployment serves the rate (within the SLOs, or saturation)."""
    if i.get("slo_ttft_s") is None and i.get("slo_tpot_s") is None:
        return (
            f"no deployment serves {fmt_rate(i['rate'])} req/s (no SLO given: sized on saturation)"
        )
    return "no deployment meets the SLOs"

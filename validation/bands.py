"""Error bands for the expected figures, from the out-of-sample errors of the published cases.

A band is drawn from the out-of-sample relative errors e = expected / measured − 1 of one metric
on one hardware family (hardware/families.yaml) and one engine profile (hardware/engines.yaml:
the profile the case was evaluated with, e.g. vllm-v0 for vLLM before 0.8), where that cell has
at least 5 points; else of the metric on the family (all engines); else of the metric on all
families pooled (roofline/catalog/bands.py says which). Each band carries:
- `rel`, the 90th percentile of |e|, rounded up to a whole percent (the ± of a roughly
  symmetric band, and what older readers use);
- `low`/`high`, the 90% interval of the measured figure relative to the expected one, from the
  5th and 95th percentiles e5 <= e95 of the signed errors. measured = expected / (1 + e) falls
  as e rises (e > −1 since both are positive), so e5 <= e <= e95 is
  expected / (1 + e95) <= measured <= expected / (1 + e5): low = 1 / (1 + e95) rounded down,
  high = 1 / (1 + e5) rounded up, to a hundredth. A rate is bounded by factors > 0, never by a
  negative figure (a symmetric ±110% would be).
Rounding outward keeps a band no narrower than the errors it comes from. Two steps make the
printed 90% band hold 90% of the points of a source it never saw (issue 35; coverage:
validation/coverage.py, docs/ACCURACY.md):
- a metric with fewer than MIN_POINTS points of its own (TPOT p99) is banded on its median's points
  and its own (SIBLING): a band on 2 points holds neither of them;
- the margin: a 5-95% interval fitted on some sources holds fewer than 90% of another's points
  (errors cluster by source). Each point is scored against the band fitted without its source (its
  cell's, as roofline/catalog/bands.py picks it): s = how far outside it lies in log terms,
  max(ln(low / r), ln(r / high), 0) with r = measured / expected = 1 / (1 + e); the margin m is the
  scores' 90% quantile, the ceil(0.9 n)-th smallest (split conformal, Vovk et al.,
  "Algorithmic Learning in a Random World", 2005; leave-one-group-out as in Barber et al.,
  "Predictive inference with the jackknife+", Ann. Statist. 2021), taken on the interval as it is
  printed: every cell of the metric is widened to [low · e^-m, high · e^m], rounded outward to a
  hundredth, and a cell symmetric within SYMMETRIC prints ±its wider side (render.core.band_text),
  so m is the least hundredth at which the printed intervals hold that many of the points (the
  scores' quantile rounded up can hold one more through the rounding and the ±: E2E p50 held 43 of
  45 at 0.24, 96%, where 0.23 holds 42). The conformal rank ceil(0.9 (n + 1)) is one point more:
  where several printed intervals cross the same hundredth it overshot (TPOT at light load, 76
  points: 69 held at 0.20, 74 (97%) at 0.21 for the 70th), so the band holds 90% of the points
  it was scored on, no more than the hundredth's step adds.
The points:
- the step cases, leave-one-source-out (validation/crossval.py via calibrate.run) and the
  held-out cases (validation/heldout_cases.yaml, never fitted);
- the parallel-layout and disaggregated-pool cases (validation/layout_cases.yaml,
  validation/disagg_cases.yaml: never used in a fit);
- the serving cases under traffic and the engines' published sweeps (validation/serving_cases.yaml
  and validation/engine_sweeps.yaml), leave-one-source-out: read from
  validation/serving_errors.csv, which validation/serving_crossval.py writes (run it first after
  a catalog change; `make accuracy` does).
Each case's metric counts toward one band (BAND_OF), and a TTFT or TPOT at light load (LIGHT: a
step case, or a serving run of one user at a time) toward its light-load band too; a rate that
is a time's inverse (decode tokens/s per user) enters as the time's error, 1 / (1 + error) − 1.

`python validation/bands.py` writes hardware/bands.json, which roofline/catalog/bands.py reads.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from validation.bandpoints import Point, case_list, cell_of  # noqa: E402  (after sys.path)

OUT = ROOT / "hardware/bands.json"
PERCENTILE = 90.0
INTERVAL = (5.0, 95.0)  # the signed errors' percentiles behind low/high: a 90% interval
MIN_POINTS = 5
# case metric -> (band, whether the case's metric is the inverse of the band's figure)
BAND_OF: dict[str, tuple[str, bool]] = {
    # step cases (roofline/cases/case.py METRICS); a static request's TTFT is its own median
    "ttft_ms": ("ttft_p50", False),
    "tpot_ms": ("tpot_p50", False),
    "decode_tokens_per_s_per_user": ("tpot_p50", True),
    "e2e_latency_ms": ("e2e_p50", False),
    "output_tokens_per_s": ("throughput", False),
    "output_tokens_per_s_per_gpu": ("throughput", False),
    "prefill_tokens_per_s_per_gpu": ("throughput", False),
    "decode_tokens_per_s_per_gpu": ("throughput", False),
    # serving cases (roofline/cases/serving.py METRICS); means count toward the median's band,
    # and the inter-token latency's median toward TPOT's
    "ttft_mean_ms": ("ttft_p50", False),
    "ttft_p50_ms": ("ttft_p50", False),
    "ttft_p99_ms": ("ttft_p99", False),
    "tpot_mean_ms": ("tpot_p50", False),
    "tpot_p50_ms": ("tpot_p50", False),
    "itl_p50_ms": ("tpot_p50", False),
    "tpot_p99_ms": ("tpot_p99", False),
    "e2e_p50_ms": ("e2e_p50", False),
    "requests_per_s": ("throughput", False),
}
KIND = {
    "validation/serving_cases.yaml": "serving",
    "validation/engine_sweeps.yaml": "engine sweeps",
    "validation/highload_cases.yaml": "high load",
}
BANDS = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2e_p50", "throughput",
         "ttft_light", "tpot_light")  # fmt: skip
# the step's own latency error, with no queue (issue 35: size --confidence scales the latencies
# of the queue run at the rate ÷ the throughput band's low edge by these, not by the p99 bands,
# whose points near capacity ARE the queue's response to a capacity error): a light-load point
# is one whose request meets no queue, a step case (a static batch: its TTFT is its prefill's,
# its TPOT its decode step's) or a serving run of one user at a time (closed loop or burst of
# concurrency 1: vLLM's `--max-concurrency 1`), every percentile and mean of TTFT and TPOT
LIGHT = {"ttft_p50": "ttft_light", "ttft_p99": "ttft_light"} | {
    "tpot_p50": "tpot_light",
    "tpot_p99": "tpot_light",
}
STEP_KINDS = ("step", "held out", "layout/disagg")
# a tail metric with under MIN_POINTS points of its own is banded on its median's points and its own
SIBLING = {"tpot_p99": "tpot_p50", "ttft_p99": "ttft_p50"}
COVERAGE = 0.90  # the share of an unseen source's points a band is widened to hold
SYMMETRIC = 0.05  # render.core.SYMMETRIC: an interval this near symmetric prints ±its wider side
SETS = ("validation/layout_cases.yaml", "validation/disagg_cases.yaml")


def _source(text: object) -> str:
    """A case's source up to its first parenthesis or comma (validation/serving_crossval.py)."""
    return str(text or "").strip().split(" (")[0].split(",")[0].strip()


def _point(
    case_id: str, metric: str, family: str, error: float, kind: str, engine: str, source: str = ""
) -> Point | None:
    if metric not in BAND_OF:
        return None
    band, inverse = BAND_OF[metric]
    err = 1.0 / (1.0 + error) - 1.0 if inverse else error
    return Point(case_id, band, family, err, kind, engine, _source(source))


def profile_of(name: str, version: object, hw: Any) -> str:
    """The engine profile a case runs under on `hw`, as its evaluation resolves it
    (roofline.engines.engine.engine: "auto" by the chip, a version to its version profile); an
    engine roofline does not model by name keeps its version profile, or its name."""
    from roofline.domain.errors import InputError
    from roofline.engines.engine import engine
    from roofline.engines.versions import pick_profile

    version = version if version not in (None, "") else None
    try:
        return _as_base(engine(name, hw, version).profile_id, hw)
    except InputError:
        try:
            return _as_base(pick_profile(name.lower(), version, hw.efficiency.engines or {}), hw)
        except InputError:
            return name.lower()


def _as_base(pid: str, hw: Any) -> str:
    """A version profile that runs on `hw`'s family exactly as its base engine does (sglang-v0.4
    on NVIDIA: its only own figures are AMD Instinct's kernel factors) shares the base's cell;
    one with figures of its own there (vllm-v0 everywhere, sglang-v0.4 on AMD) keeps its own."""
    engines = hw.efficiency.engines or {}
    prof = engines.get(pid)
    if prof is None or not prof.base or prof.base not in engines:
        return pid
    base, fam = engines[prof.base], hw.family

    def on_family(p: Any) -> Any:
        return replace(
            p,
            id="",
            source="",
            base="",
            versions="",
            moe_time_factor=tuple(x for x in p.moe_time_factor if x[0] == fam),
            mla_decode_time_factor=tuple(x for x in p.mla_decode_time_factor if x[0] == fam),
        )

    return prof.base if on_family(prof) == on_family(base) else pid


@cache
def points() -> tuple[Point, ...]:
    """Every out-of-sample error behind a band (see the module docstring), once per process."""
    from roofline.cases.case import case_engine
    from roofline.cases.casefiles import load_cases
    from roofline.cases.evaluate import evaluate
    from validation.calibrate import run
    from validation.serving_crossval import load

    cat, _, loso, never = run()
    accel = cat.accelerator
    out = [
        _point(
            r.base.case.id,
            r.base.case.metric,
            r.base.family,
            r.error_out,
            kind,
            profile_of(r.base.engine, None, accel(r.base.case.hardware)),
            r.base.case.source,
        )
        for rs, kind in ((loso, "step"), (never, "held out"))
        for r in rs
    ]
    for rel in SETS:
        for c in load_cases(ROOT / rel):
            host = cat.accelerator(c.offload["host"]) if c.offload else None
            hw = cat.accelerator(c.hardware)
            r = evaluate(c, cat.model(c.model), hw, host=host, catalog=cat)
            eng = profile_of(case_engine(c), None, hw)
            out.append(
                _point(c.id, c.metric, hw.family, r.error_expected, "layout/disagg", eng, c.source)
            )
    for s in load()[0]:
        eng = profile_of(s.engine, s.engine_version, accel(s.hardware))
        p = _point(s.id, s.metric, s.family, s.error_out, KIND[s.file], eng, s.group)
        out.append(p)
        if p is not None and p.band in LIGHT and s.id in one_user(s.file):
            out.append(replace(p, band=LIGHT[p.band]))
    got = [p for p in out if p is not None]
    return tuple(got) + tuple(
        replace(p, band=LIGHT[p.band]) for p in got if p.kind in STEP_KINDS and p.band in LIGHT
    )


@cache
def one_user(rel: str) -> frozenset[str]:
    """The ids of a serving case file's runs of one user at a time (LIGHT): closed-loop or
    burst arrivals of concurrency 1."""
    cases = case_list(rel)
    users = {  # serving_cases._workload's reading of each
        "closed": lambda c: c.get("concurrency"),
        "burst": lambda c: c.get("requests", c.get("concurrency")),
    }
    return frozenset(
        c["id"] for c in cases if c.get("arrivals") in users and users[c["arrivals"]](c) == 1
    )


def p90(errors: list[float]) -> float:
    """The 90th percentile of |error| (numpy's linear interpolation)."""
    return float(np.percentile(np.abs(errors), PERCENTILE))


def _round_up(x: float) -> float:
    """Up to a whole percent: a band is never narrower than the percentile it comes from."""
    return math.ceil(round(x * 100.0, 9)) / 100.0


def _round_down(x: float) -> float:
    return math.floor(round(x * 100.0, 9)) / 100.0


def interval(errors: list[float]) -> tuple[float, float]:
    """(low, high): the measured figure's 90% interval as factors of the expected one,
    1 / (1 + e95) and 1 / (1 + e5) of the signed errors' 5th and 95th percentiles (numpy's
    linear interpolation), rounded outward to a hundredth (module docstring)."""
    from roofline.catalog.bands import interval as factors

    e5, e95 = (float(v) for v in np.percentile(errors, INTERVAL))
    low, high = factors(e5, e95)
    return _round_down(low), _round_up(high)


def stats(errors: list[float], sources: int | None = None) -> dict[str, Any]:
    """One band's figures from its points' signed errors (and how many sources they come
    from: a cell on fewer than MIN_POINTS points or one source is a thin fit, issue 34)."""
    low, high = interval(errors)
    out = {
        "rel": _round_up(p90(errors)),
        "low": low,
        "high": high,
        "n": len(errors),
        "median_abs_error": round(float(np.median(np.abs(errors))), 4),
    }
    if sources is not None:
        out["sources"] = sources
    return out


def _stats(pts: list[Point]) -> dict[str, Any]:
    """stats, kept for the same errors: loso refits every cell, few of which lose a point."""
    return dict(_stats_of(tuple(p.error for p in pts), len({p.source for p in pts})))


_stats_of = cache(lambda errors, sources: stats(list(errors), sources))


def compute(pts: tuple[Point, ...] | list[Point]) -> dict:
    """The bands: per band, the pooled figure, each family's with n >= MIN_POINTS (the families
    with fewer points listed with their counts: they take the pooled figure) and, per family,
    each engine profile's with n >= MIN_POINTS (the others take the family's)."""
    out = {}
    for band in BANDS:
        mine = [p for p in pts if p.band == band]
        if not mine:
            continue
        fams: dict[str, list[Point]] = {}
        cells: dict[str, dict[str, list[Point]]] = {}
        for p in mine:
            fams.setdefault(p.family, []).append(p)
            cells.setdefault(p.family, {}).setdefault(p.engine, []).append(p)
        out[band] = {
            "pooled": _stats(mine),
            "families": {f: _stats(e) for f, e in sorted(fams.items()) if len(e) >= MIN_POINTS},
            "engines": {
                f: {g: _stats(e) for g, e in sorted(by.items()) if len(e) >= MIN_POINTS}
                for f, by in sorted(cells.items())
                if len(fams[f]) >= MIN_POINTS and any(len(e) >= MIN_POINTS for e in by.values())
            },
            "too_few": {f: len(e) for f, e in sorted(fams.items()) if len(e) < MIN_POINTS},
        }
    return out


def with_siblings(pts: tuple[Point, ...] | list[Point]) -> list[Point]:
    """The points, a metric with fewer than MIN_POINTS of its own joined by its median's (SIBLING),
    relabelled to it."""
    out = list(pts)
    for band, sib in SIBLING.items():
        if 0 < sum(p.band == band for p in pts) < MIN_POINTS:
            out += [replace(p, band=band) for p in pts if p.band == sib]
    return out


def score(cell: dict, error: float, margin: float = 0.0) -> float:
    """How far (log terms) the measured/expected ratio 1 / (1 + error) lies outside the cell's
    [low, high] widened by `margin`; 0 inside."""
    r = 1.0 / (1.0 + error)
    low, high = cell["low"] * math.exp(-margin), cell["high"] * math.exp(margin)
    return max(math.log(low / r), math.log(r / high), 0.0)


def loso(pts: list[Point]) -> dict[str, dict]:
    """The raw bands (compute) fitted without each source: source -> bands."""
    return {s: compute([p for p in pts if p.source != s]) for s in sorted({p.source for p in pts})}


def printed(cell: dict, margin: float = 0.0) -> tuple[float, float]:
    """The interval a cell widened by `margin` prints (widened, then render.core.band_text):
    [low, high], or [1 − x, 1 + x] with x its wider side when symmetric within SYMMETRIC."""
    c = widened(cell, margin) if margin else cell
    low, high = c["low"], c["high"]
    if abs((high - 1.0) - (1.0 - low)) <= SYMMETRIC:
        x = max(1.0 - low, high - 1.0)
        return 1.0 - x, 1.0 + x
    return low, high


def held(cell: dict, error: float, margin: float = 0.0) -> bool:
    """Whether the interval the cell prints, widened by `margin`, holds the point's
    measured/expected ratio 1 / (1 + error)."""
    lo, hi = printed(cell, margin)
    return lo - 1e-9 <= 1.0 / (1.0 + error) <= hi + 1e-9


def margins(pts: list[Point], fits: dict[str, dict] | None = None) -> dict[str, float]:
    """Per band, the split-conformal margin (module docstring) over the leave-one-source-out
    scores, on the printed interval: the least hundredth at which the cells, widened and
    printed, hold the ceil(0.9 n)-th smallest score's share of the points (at most the
    scores' quantile rounded up); a point whose source alone carries its metric has no band to
    score against."""
    fits = loso(pts) if fits is None else fits
    cells: dict[str, list[tuple[dict, float]]] = {}
    for p in pts:
        cell = cell_of(fits[p.source], p.band, p.family, p.engine)
        if cell is not None:
            cells.setdefault(p.band, []).append((cell, p.error))
    out = {}
    for band, items in cells.items():
        k = min(len(items), math.ceil(round(COVERAGE * len(items), 9)))
        top = _round_up(sorted(score(c, e) for c, e in items)[k - 1])
        m = 0.0
        while m < top and sum(held(c, e, m) for c, e in items) < k:
            m = round(m + 0.01, 2)
        out[band] = m
    return out


def widened(cell: dict, m: float) -> dict:
    """The cell widened by margin m: [low · e^-m, high · e^m], rounded outward."""
    low = _round_down(cell["low"] * math.exp(-m))
    return {**cell, "low": low, "high": _round_up(cell["high"] * math.exp(m))}


def widen(bands: dict, margin: dict[str, float]) -> dict:
    """Every cell of each band widened by its margin (widened)."""
    out = {}
    for band, entry in bands.items():
        m = margin.get(band, 0.0)
        out[band] = {
            "margin": m,
            "pooled": widened(entry["pooled"], m),
            "families": {f: widened(c, m) for f, c in entry["families"].items()},
            "engines": {
                f: {g: widened(c, m) for g, c in by.items()} for f, by in entry["engines"].items()
            },
            "too_few": entry["too_few"],
        }
    return out


def shipped(pts: tuple[Point, ...] | list[Point]) -> dict:
    """The bands hardware/bands.json ships: siblings joined, fitted, widened by the margins."""
    joined = with_siblings(pts)
    return widen(compute(joined), margins(joined))


def shares() -> dict[str, dict[str, str]]:
    """family -> {version profile: its base}, for the version profiles that run on the family as
    their base engine does (_as_base): roofline/catalog/bands.py reads their base's cell."""
    from roofline.catalog.load import load_catalog

    cat = load_catalog()
    out: dict[str, dict[str, str]] = {}
    seen: set[str] = set()
    for name in sorted(cat.accelerators):
        hw = cat.accelerator(name)
        if hw.family in seen:
            continue
        seen.add(hw.family)
        for pid, prof in sorted((hw.efficiency.engines or {}).items()):
            if prof.base and _as_base(pid, hw) == prof.base:
                out.setdefault(hw.family, {})[pid] = prof.base
    return out


def document(bands: dict, date: str, closed: dict | None = None) -> dict:
    return {
        "source": f"validation/bands.py (python validation/bands.py), {date}: per metric, hardware "
        "family and engine profile, the 90th percentile of |out-of-sample relative error| (rel, "
        "rounded up to a whole percent) and the measured/expected 90% interval from the signed "
        "errors' 5th and 95th percentiles (low, high); a cell with fewer than 5 points takes the "
        "family's figure, a family with fewer than 5 the pooled one; docs/ACCURACY.md",
        "percentile": PERCENTILE,
        "interval_percentiles": list(INTERVAL),
        "min_points": MIN_POINTS,
        "inherit": {"saturation": "throughput", "cost_per_million_output_tokens": "throughput"},
        "shares": shares(),
        "bands": bands,
        "closed_loop": closed or {},  # validation/closedbands.py: TTFT, TPOT margins
    }


def main() -> None:
    """Write hardware/bands.json, unless the bands it holds are already these (its date then
    stays the date they were derived)."""
    from validation import closedbands

    pts = points()
    joined = with_siblings(pts)
    fits = loso(joined)
    m = margins(joined, fits)
    bands = widen(compute(joined), m)
    closed = closedbands.margins(list(pts), {s: widen(b, m) for s, b in fits.items()})
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    current = old.get("bands") == bands and old.get("closed_loop") == closed
    if current and old.get("shares") == shares():
        print(f"{OUT.relative_to(ROOT)} is current")
        return
    doc = document(bands, _dt.date.today().isoformat(), closed)
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

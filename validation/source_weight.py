"""docs/ACCURACY.md, high-load section: how far each headline median rests on one source, and
what one lab's same-workload runs on two chips say about the chips' ratio (issue 34: an honest
accuracy doc).

- influence_table: per vendor x metric class, the out-of-sample median |error| over every point,
  then over every point but one source's, for each source in turn (the score only: every
  figure stays as fitted). The row names the source whose absence moves the median most and
  the range over all sources. A goal met or missed by one publication shows here.
- twin_table: twins are two runs of one lab that differ only in the chip (the same case id with
  the chip's name swapped: GPUStack's performance-lab pages run the same engine, flags and
  workload on one H100 and one A100, and on eight of each). The measured ratio of their
  requests/s against the modelled ratio (both in sample, so every fitted figure is common to
  the two and cancels where it acts alike): a chip-relative error that no engine or workload
  figure can absorb.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from validation.serving_crossval import ServingResult

TWIN_CHIPS = ("h100", "a100")  # the chips of the twins, faster first, as case ids spell them
TWIN_METRIC = "requests_per_s"


def median_abs(xs: Iterable[float]) -> float:
    """The median |error| of xs (nan when there is none): highload_tables' cells use it too."""
    a = np.abs(list(xs))
    return float(np.median(a)) if len(a) else float("nan")


def _short(group: str) -> str:
    """A source's URL cut to what tells it apart: a repository's owner/name and its file's last
    two path parts, else the host and path."""
    parts = group.split("://", 1)[-1].split("/")
    if parts[0] == "github.com" and len(parts) > 4:
        return f"{parts[1]}/{parts[2]} …/{'/'.join(parts[-2:])}"
    return "/".join(parts[:3])[:60]


def influence_rows(
    rs: list[ServingResult], vendor_of, classes
) -> list[tuple[str, str, int, int, float, float, float, str, float]]:
    """(vendor, class, points, sources, median, lowest and highest median with one source's
    points left out of the score, the source whose absence moves it most, the median without
    it), for cells of at least two sources."""
    out = []
    for v in dict.fromkeys(vendor_of(r) for r in rs):
        for label, metrics in classes:
            pts = [r for r in rs if vendor_of(r) == v and r.metric in metrics]
            groups = sorted({r.group for r in pts})
            if len(groups) < 2:
                continue
            full = median_abs(r.error_out for r in pts)
            without = {g: median_abs(r.error_out for r in pts if r.group != g) for g in groups}
            most = max(groups, key=lambda g: (abs(without[g] - full), g))
            lo, hi = min(without.values()), max(without.values())
            out.append((v, label, len(pts), len(groups), full, lo, hi, most, without[most]))
    return out


def influence_table(rs: list[ServingResult], vendor_of, classes) -> str:
    lines = [
        "| vendor | metric | points/sources | median \\|error\\| | one source left out: range "
        "| the source that moves it most (median without it) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for v, label, n, s, full, lo, hi, most, moved in influence_rows(rs, vendor_of, classes):
        lines.append(
            f"| {v} | {label} | {n}/{s} | {full * 100:.0f}% | {lo * 100:.0f}%-{hi * 100:.0f}% "
            f"| {_short(most)} ({moved * 100:.0f}%) |"
        )
    return "\n".join(lines)


def twins(rs: list[ServingResult]) -> list[tuple[ServingResult, ServingResult]]:
    """(run on the faster chip, its twin on the slower), matched by case id, on TWIN_METRIC."""
    fast, slow = (f"-{c}-" for c in TWIN_CHIPS)
    by_id = {r.id: r for r in rs if r.metric == TWIN_METRIC}
    return [
        (r, by_id[r.id.replace(fast, slow)])
        for r in by_id.values()
        if fast in r.id and r.id.replace(fast, slow) in by_id
    ]


def twin_ratio(a: ServingResult, b: ServingResult) -> tuple[float, float]:
    """(measured ratio a/b, modelled ratio a/b, in sample)."""
    return a.measured / b.measured, a.in_sample / b.in_sample


def twin_table(rs: list[ServingResult]) -> str:
    """Per model page and engine: the twins' measured and modelled ratios (median and range) and
    the modelled / measured ratio."""
    cells: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for a, b in twins(rs):
        page = a.group.rsplit("/", 2)[-2]  # GPUStack: .../performance-lab/<model>/<chip>.md
        cells.setdefault((page, a.engine), []).append(twin_ratio(a, b))
    fast, slow = (c.upper() for c in TWIN_CHIPS)
    lines = [
        f"| page | engine | twins | measured {fast}/{slow} | modelled {fast}/{slow} "
        "| modelled / measured (median, range) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (page, eng), xs in sorted(cells.items()):
        meas = np.array([m for m, _ in xs])
        mod = np.array([p for _, p in xs])
        q = mod / meas
        lines.append(
            f"| {page} | {eng} | {len(xs)} | {np.median(meas):.2f} ({meas.min():.2f}-"
            f"{meas.max():.2f}) | {np.median(mod):.2f} ({mod.min():.2f}-{mod.max():.2f}) | "
            f"{np.median(q):.2f} ({q.min():.2f}-{q.max():.2f}) |"
        )
    return "\n".join(lines)


def twin_note(rs: list[ServingResult], keys: dict[str, dict]) -> str:
    """One paragraph on the twins: modelled / measured over the one-GPU dense pages and over the
    multi-GPU ones (keys: case id -> its keys, for the GPU count and the model)."""

    def gpus(r: ServingResult) -> int:
        c = keys.get(r.id, {})
        return int(c.get("tp", 1)) * int(c.get("pp", 1)) * int(c.get("dp", 1))

    def quotient(sel: list[tuple[ServingResult, ServingResult]]) -> tuple[float, float, float, int]:
        q = np.array([p / m for m, p in (twin_ratio(a, b) for a, b in sel)])
        return float(np.median(q)), float(q.min()), float(q.max()), len(q)

    def is_moe(r: ServingResult) -> bool:
        from roofline import load_catalog

        model = keys.get(r.id, {}).get("model", "")
        return bool(model) and load_catalog().model(model).is_moe

    pairs = twins(rs)
    dense1 = [(a, b) for a, b in pairs if gpus(a) == 1 and not is_moe(a)]
    multi = [(a, b) for a, b in pairs if gpus(a) > 1]
    if not dense1 or not multi:
        return ""
    d, dlo, dhi, dn = quotient(dense1)
    m, mlo, mhi, mn = quotient(multi)
    fast, slow = (c.upper() for c in TWIN_CHIPS)
    engines = len({a.engine for a, _ in dense1})
    own = median_abs(b.error_in for _, b in dense1)
    return (
        f"On one GPU with a dense model ({dn} twins, {engines} engines) the model puts the {fast} "
        f"{d:.2f}x further ahead of the {slow} than the lab measured ({dlo:.2f}-{dhi:.2f}); on "
        f"its multi-GPU MoE page ({mn} twins) {m:.2f}x ({mlo:.2f}-{mhi:.2f}). A chip's kernel "
        "curves and datasheet are all that differ inside a twin, and the engines' fitted "
        "figures are common to both runs, so no such figure closes the first gap without "
        f"opening it on the {slow} runs (their own median |error| {own * 100:.0f}% in sample); "
        "the one engine default that differs, vLLM's 1,024 running sequences on an H100 "
        "against 256 on an A100, makes a per-sequence host cost weigh more on the H100, but "
        "vLLM at 50 µs a sequence on the family (tested 2026-12-07, not kept) moved those "
        "H100 runs' requests/s from +78% to +76% and their TPOT p50 from -46% to -37%. "
        "Either "
        f"that lab's single {fast} ran below an {fast} SXM (its pages say 'A single NVIDIA "
        f"{fast} SXM GPU'), or the {fast} curves are too fast for one-GPU dense serving at "
        "these shapes while right for the multi-GPU runs; the points stay scored as they are "
        "(choosing data by the answer is not done). Nor is it the chips' sustained clocks "
        "alone (tested 2026-12-07, not kept: the kernel tables are timed in short bursts, a "
        "serving run holds the power cap, so Hopper's compute share x0.88, about 1,750 of "
        "1,980 MHz, on the H100 and H200 under every engine, nothing refitted, as a user "
        "catalog's calibrations: entries): the twins' gap only goes from 1.47x to 1.42x, since "
        "decode is bound by the bandwidth; over every high-load point NVIDIA's TTFT p50 goes "
        "from 27.0% to 24.0% and TPOT p50 from 27.2% to 25.1%, capacity from 17.7% to 18.4%, "
        "every serving throughput from 17.8% to 15.8%, and TensorRT-LLM's own perf-overview "
        "(215 points, most of them Hopper) from 20.1% to 16.1%. Not adopted: no measurement of "
        "an H100's or H200's clock while serving to set the factor from, and a factor fitted "
        "on these runs instead would be a new per-family figure with its own leave-one-source-"
        "out fit (a next step). validation/fit_kernel_scale.py fits that figure and reports it "
        "without writing it: on the 673 serving points of the Hopper chips (19 sources) the "
        "median |error| is 26.4% at the curves' own compute (k 1), 24.7% at k 0.9, 23.0% at "
        "0.8, 25.1% at 0.6; the least median |log error| picks k 0.75 on every point and 0.70-"
        "0.75 leaving each source out, while least squares runs to the grid's floor (0.6: the "
        "runs far past capacity dominate a sum of squares). A quarter off every Hopper curve is "
        "more than clocks explain; the H100's four single-request TTFT cases (public and extra "
        "cases) sit 20-21% too fast as well. At k 0.75 on the seven Hopper chips (nothing "
        "refitted, the same day) the high-load points' TTFT p50 goes from 27.0% to 24.7% and "
        "TPOT p50 from 27.2% to 24.9%, but their capacity from 17.7% to 18.9%; every serving "
        "TPOT p50 from 21.1% to 18.8%, throughput from 17.8% to 15.3%. Capacity, the figure "
        "sizing rests on, gets worse, so it waits for a mechanism. Read as an H100 PCIe "
        "(2.0 TB/s, 756 TFLOPS; tested the same day, `roofline validate` on the two pages' 107 "
        "points with the chip swapped) they go from 48% to 30% median |error| (requests/s +78% "
        "-> +31%, TPOT p50 -46% -> -24%): the lab's single H100 measured slower than even a "
        "PCIe card is modelled."
    )

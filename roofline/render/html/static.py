"""The HTML report's answer and charts for the commands about one step: `analyze` (the roofline
with the workload's ops, where the bytes go), `plan` (layouts, where the decode step's time goes),
`speculate` (speed-up against batch) and `edge` (fit and speed per device). Read from the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline.render.html.parts import Content, chart_block, fmt, is_number, rows_table
from roofline.render.html.svg import Axis, Ref, Series, bar_chart, line_chart


def _sec(v: float) -> str:
    return fmt("x_s", v)


def _bytes(v: float) -> str:
    return fmt("x_bytes", v)


def _flops(v: float) -> str:
    return f"{v / 1e12:.3g} T" if v >= 1e12 else f"{v / 1e9:.3g} G"


def roofs(doc: Mapping[str, Any]) -> tuple[float, list[float]] | None:
    """(bandwidth B/s, the peak FLOP/s of each format the ops run in) as the ideal times imply
    them: a memory-bound op's ideal time is bytes / bandwidth, and each op's ridge is its
    format's peak / bandwidth (Williams et al. 2009, the roofline model). A step of compute-bound
    ops only reads the peak from flops / ideal time instead. None without an op to read."""
    ops = [
        op
        for phase in ("prefill", "decode")
        for op in doc.get(phase, {}).get("ops", [])
        if is_number(op.get("t_ideal_s")) and op["t_ideal_s"] > 0
        and is_number(op.get("ridge_flops_per_byte")) and op["ridge_flops_per_byte"] > 0
    ]  # fmt: skip
    memory = [
        op["bytes"] / op["t_ideal_s"]
        for op in ops
        if op.get("bound") == "memory" and op["bytes"] > 0 and not op.get("link_bytes")
    ]
    ridges = sorted({round(op["ridge_flops_per_byte"], 6) for op in ops})
    if memory:
        bw = max(memory)
    else:
        compute = [
            (op["flops"] / op["t_ideal_s"]) / op["ridge_flops_per_byte"]
            for op in ops
            if op.get("bound") == "compute" and op["flops"] > 0
        ]
        if not compute:
            return None
        bw = max(compute)
    return bw, [bw * r for r in ridges]


def analyze(doc: Mapping[str, Any]) -> Content:
    i = doc["inputs"]
    c = Content(
        figures=[
            ("GPUs", "inputs.gpus"),
            ("TTFT", "expected.ttft_s"),
            ("TPOT", "expected.tpot_s"),
            ("output tokens/s", "expected.output_tokens_per_s"),
            ("$ per million output tokens", "expected.cost_per_million_output_tokens"),
            ("max batch that fits", "memory.max_batch"),
            ("fits", "memory.fits"),
        ]
    )
    e = doc.get("expected", {})
    c.verdict = (
        f"{i.get('model')} on {i.get('gpus')} × {i.get('hardware')} at batch {i.get('batch')}: "
        f"TTFT {_sec(e.get('ttft_s'))}, TPOT {_sec(e.get('tpot_s'))}; prefill is "
        f"{doc['prefill']['bound']}-bound, decode {doc['decode']['bound']}-bound."
    )
    ops = [
        {"phase": ph, **{k: op[k] for k in ("name", "kind", "flops", "bytes", "bound")}}
        | {
            "arithmetic_intensity": op["arithmetic_intensity"],
            "flops_per_s": op["flops"] / op["t_expected_s"],
            "t_expected_s": op["t_expected_s"],
        }
        for ph in ("prefill", "decode")
        for op in doc[ph]["ops"]
        if op["flops"] > 0 and op["t_expected_s"] > 0 and op["arithmetic_intensity"] > 0
    ]
    r = roofs(doc)
    if ops and r:
        bw, peaks = r
        xs = [o["arithmetic_intensity"] for o in ops] + [p / bw for p in peaks]
        lo, hi = min(xs) / 4, max(xs) * 4
        roof_lines = [
            Series(
                f"roof: {_flops(p)}FLOP/s, {_bytes(bw)}/s",
                [(x, min(p, x * bw), "") for x in (lo, p / bw, hi)],
            )
            for p in peaks
        ]
        series = [
            Series(
                ph,
                [
                    (
                        o["arithmetic_intensity"],
                        o["flops_per_s"],
                        f"{o['name']}: {o['arithmetic_intensity']:.3g} FLOP/B, "
                        f"{_flops(o['flops_per_s'])}FLOP/s ({o['bound']}-bound)",
                    )
                    for o in ops
                    if o["phase"] == ph
                ],
                line=False,
            )
            for ph in ("prefill", "decode")
        ]
        svg = line_chart(
            "Roofline: the workload's ops at expected throughput",
            Axis("arithmetic intensity, FLOP/byte (log)", log=True),
            Axis("FLOP/s (log)", log=True, fmt=_flops),
            series,
            vlines=[Ref(p / bw, f"ridge {p / bw:,.0f}") for p in peaks],
            y_zero=False,
            roofs=roof_lines,
        )
        cols = ["phase", "name", "arithmetic_intensity", "flops_per_s", "bound", "t_expected_s"]
        c.charts.append(
            chart_block(
                "The roofline with the workload's ops",
                svg,
                rows_table(ops, cols),
                "Roofs read from the ideal op times; points at expected op times.",
            )
        )
    kinds = ("weight_bytes", "kv_bytes", "activation_bytes", "link_bytes")
    rows = [{"phase": ph, **{k: doc[ph][k] for k in kinds}} for ph in ("prefill", "decode")]
    svg = bar_chart(
        "Where the bytes go, per step",
        [r["phase"] for r in rows],
        [(k.replace("_bytes", ""), [r[k] for r in rows]) for k in kinds],
        Axis("bytes moved per step", fmt=_bytes),
    )
    c.charts.append(chart_block("Where the bytes go", svg, rows_table(rows, ["phase", *kinds])))
    mem = doc.get("memory") or {}
    parts = (
        ("weights", "weights_bytes_per_gpu"),
        ("activations", "activation_bytes"),
        ("runtime overhead", "runtime_overhead_bytes"),
        ("KV budget", "kv_budget_bytes"),
        ("KV at the batch's end", "kv_bytes_at_end"),
    )
    if all(is_number(mem.get(k)) for _, k in parts):
        rows = [{"memory": label, "bytes": mem[k]} for label, k in parts]
        budget = mem["kv_budget_bytes"]
        rows.append({"memory": "KV occupancy at the end", "bytes": None})
        occupancy = mem["kv_bytes_at_end"] / budget if budget else None
        cap = mem.get("capacity_bytes")
        svg = bar_chart(
            "Memory per GPU and the KV cache's share of its budget",
            [label for label, _ in parts],
            [("bytes per GPU", [mem[k] for _, k in parts])],
            Axis("bytes per GPU", fmt=_bytes),
            refs=[Ref(float(cap), f"capacity {_bytes(cap)}")] if is_number(cap) else [],
        )
        table = rows_table(rows[:-1]) + rows_table(
            [{"kv_occupancy": occupancy, "max_batch": mem.get("max_batch")}],
            labels={"max_batch": "max batch that fits"},
        )
        c.charts.append(chart_block("Memory and KV occupancy per GPU", svg, table))
    return c


def plan(doc: Mapping[str, Any]) -> Content:
    plans = [p for p in doc.get("plans") or [] if p.get("fits")]
    c = Content()
    if doc.get("best"):
        c.figures = [
            ("layout", "best.layout"),
            ("GPUs", "inputs.gpus"),
            ("output tokens/s", "best.output_tokens_per_s"),
            ("$ per million output tokens", "best.cost_per_million_output_tokens"),
            ("batch prefill (all its prompts)", "best.batch_prefill_s"),
            ("TPOT at the batch", "best.tpot_s"),
            ("meets the SLO", "best.meets_slo"),
        ]
    c.verdict = str(doc.get("explanation") or "No layout fits.")
    if not plans:
        return c
    top = plans[:16]
    svg = bar_chart(
        "Output tokens/s per layout",
        [p["layout"] for p in top],
        [("tokens/s", [p["output_tokens_per_s"] for p in top])],
        Axis("output tokens/s at the batch that fits"),
    )
    cols = ["layout", "batch_per_replica", "output_tokens_per_s", "tpot_s", "meets_slo"]
    c.charts.append(chart_block("Throughput per layout", svg, rows_table(top, cols)))
    terms = (doc.get("best") or {}).get("decode_terms_s") or {}
    if terms:
        rows = [{"term": k, "t_s": v} for k, v in terms.items()]
        svg = bar_chart(
            "Where the best layout's decode step goes",
            [r["term"] for r in rows],
            [("seconds", [r["t_s"] for r in rows])],
            Axis("seconds per decode step", fmt=_sec),
        )
        c.charts.append(chart_block("Where the decode step's time goes", svg, rows_table(rows)))
    return c


def speculate(doc: Mapping[str, Any]) -> Content:
    rows = doc.get("by_batch") or []
    first = "by_batch.0.speedup_expected"
    c = Content(
        figures=[
            ("best draft length (γ)", "best_gamma"),
            (f"speed-up at batch {rows[0]['batch']}" if rows else "speed-up", first),
            ("TPOT with speculation", "by_batch.0.tpot_expected_s"),
            ("TPOT without", "by_batch.0.tpot_baseline_s"),
            ("crossover batch", "crossover_batch"),
        ]
    )
    cb = doc.get("crossover_batch")
    if rows:
        c.verdict = (
            f"At batch {rows[0]['batch']} speculation speeds decode up "
            f"{rows[0]['speedup_expected']:.2f}×"
            + (f"; from batch {cb} on it stops paying." if cb else "; it pays at every batch.")
        )
        series = [
            Series(
                name,
                [(r["batch"], r[k], f"batch {r['batch']}: {r[k]:.2f}×") for r in rows],
            )
            for name, k in (("expected", "speedup_expected"), ("ideal", "speedup_ideal"))
        ]
        svg = line_chart(
            "Speculative decoding: speed-up against batch",
            Axis("batch (log)", log=True),
            Axis("speed-up ×"),
            series,
            hlines=[Ref(1.0, "no gain")],
            vlines=[Ref(float(cb), f"crossover {cb}")] if is_number(cb) else [],
        )
        cols = ["batch", "best_gamma", "speedup_expected", "speedup_ideal", "tpot_expected_s"]
        c.charts.append(chart_block("Speed-up against batch", svg, rows_table(rows, cols)))
    return c


def edge(doc: Mapping[str, Any]) -> Content:
    rows = doc.get("rows") or []
    c = Content()
    if rows:
        c.figures = [
            ("device", "rows.0.hardware"),
            ("fits", "rows.0.fits"),
            ("decode tokens/s", "rows.0.decode_tokens_per_s"),
            ("TTFT", "rows.0.ttft_s"),
            ("memory needed", "rows.0.needed_bytes"),
            ("memory usable", "rows.0.usable_bytes"),
        ]
        r0 = rows[0]
        c.verdict = (
            f"{doc['inputs'].get('model')} on {r0['hardware']}: fits {r0['fits']}, "
            f"{fmt('decode_tokens_per_s', r0.get('decode_tokens_per_s'))} tokens/s decode."
        )
        speeds = [r.get("decode_tokens_per_s") for r in rows]
        svg = bar_chart(
            "Decode tokens/s per device",
            [str(r["hardware"]) for r in rows],
            [("decode tokens/s", [v if is_number(v) else None for v in speeds])],
            Axis("decode tokens/s"),
        )
        cols = ["hardware", "placement", "fits", "decode_tokens_per_s", "ttft_s", "needed_bytes"]
        c.charts.append(chart_block("Speed per device", svg, rows_table(rows, cols)))
    return c


CONTENT = {"analyze": analyze, "plan": plan, "speculate": speculate, "edge": edge}

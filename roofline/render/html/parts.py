"""Pieces of the HTML report: values formatted by what their key says they carry, tables of
rows and of nested mappings, headline figures tied to their place in the JSON document, and
uncertainty bands (`band` or `*_band*` fields) shown beside the value they bound."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, TypeGuard

from roofline.domain.units import fmt_bytes, fmt_seconds
from roofline.render.core import band_text, load_band_text, num

_PERCENT_WORDS = ("fraction", "occupancy", "utilisation", "attainment", "share", "error_band")
_MONEY_WORDS = ("cost_per", "usd", "price")


# column headings for people (the key itself where none is given)
LABELS = {
    "cost_per_million_output_tokens": "$/Mtok",
    "cost_per_hour": "$/hour",
    "meets_slo": "meets SLO",
    "ttft_p50_s": "p50 TTFT",
    "ttft_p99_s": "p99 TTFT",
    "tpot_p50_s": "p50 TPOT",
    "tpot_p99_s": "p99 TPOT",
    "max_rate_per_replica": "req/s per replica in SLO",
    "saturation_rate_per_replica": "saturation req/s per replica",
    "kv_occupancy": "KV occupancy",
    "kv_occupancy_at_rate": "KV occupancy at the sized rate",
    "binding_at_saturation": "binding at saturation",
    "output_tokens_per_s": "output tokens/s",
    "output_tokens_per_s_per_gpu": "tokens/s per GPU",
    "arithmetic_intensity": "FLOP/byte",
    "flops_per_s": "FLOP/s",
    "t_expected_s": "time (expected)",
    "batch_per_replica": "batch per replica",
    "decode_tokens_per_s": "decode tokens/s",
    "ttft_s": "TTFT",
    "tpot_s": "TPOT",
    "gpus": "GPUs",
    "capacity_per_gpu": "capacity per GPU, req/s",
}


def is_number(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt(key: str, value: Any) -> str:
    """A value as text for people, by the unit its key names: `_s` seconds, `_bytes` bytes,
    cost and price in dollars, fractions and shares as percentages; other numbers to 3
    significant figures (render.core.num), lists joined, None as an em dash."""
    k = key.lower().split(".")[-1]
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        if all(is_number(v) for v in value) and "band" in k:
            return " – ".join(fmt(k.replace("_band", ""), v) for v in value)
        return ", ".join(fmt(k, v) for v in value)
    if isinstance(value, Mapping):
        return "; ".join(f"{a}: {fmt(a, b)}" for a, b in value.items())
    if not is_number(value):
        return str(value)
    if k.endswith("per_s") or "_per_s_" in k:
        return num(value)
    if k.endswith("_s") or (k in ("p50", "p90", "p99", "mean") and "_s." in key):
        return fmt_seconds(float(value)) if value else "0 s"
    if k.endswith("bytes") or "_bytes_" in k:
        return fmt_bytes(float(value))
    if any(w in k for w in _MONEY_WORDS):
        return f"${value:,.2f}" if abs(value) >= 0.01 or value == 0 else f"${value:.3g}"
    if any(w in k for w in _PERCENT_WORDS) and abs(value) <= 1.5:
        return f"{value:.1%}"
    return num(value)


def lookup(doc: Any, path: str) -> Any:
    """The value at a dotted path ('best.expected.ttft_s.p99', 'points.3.rate'), or None."""
    cur = doc
    for part in path.split("."):
        if isinstance(cur, Mapping):
            cur = cur.get(part)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def band_path(doc: Any, path: str) -> str | None:
    """The path of the band bounding the value at `path`, if the document carries one: the
    sibling `name_band_unit` (tpot_s -> tpot_band_s), `name_band`, or a `band` beside it."""
    head, _, key = path.rpartition(".")
    stem, _, unit = key.rpartition("_")
    names = [f"{stem}_band_{unit}"] if stem else []
    names += [f"{key}_band", "band"]
    for name in names:
        p = f"{head}.{name}" if head else name
        if _band_bounds(lookup(doc, p)) is not None:
            return p
    return None


def relative_band(doc: Any, path: str) -> tuple[str, str] | None:
    """(its path, its text as the tables print it: "±28%" or "-45%/+20%") of a band in a
    `bands` mapping beside the value or above it (`{"name": {"rel": 0.28, "low": 0.55,
    "high": 1.2, "applies_to": ["ttft_s.p99"], ...}}`) whose applies_to names the value's path,
    or its end."""
    parts = path.split(".")
    load = _load_band(doc, parts)
    if load is not None:
        return load
    for i in range(len(parts) - 1, -1, -1):
        where = ".".join([*parts[:i], "bands"])
        bands = lookup(doc, where)
        if not isinstance(bands, Mapping):
            continue
        for name, b in bands.items():
            if not isinstance(b, Mapping) or not is_number(b.get("rel")):
                continue
            if any(path == a or path.endswith(f".{a}") for a in b.get("applies_to") or []):
                return f"{where}.{name}", band_text(b)
    return None


def _load_band(doc: Any, parts: list[str]) -> tuple[str, str] | None:
    """serve's (and size's fleets') band under load (`load_bands` beside `expected`,
    roofline/cli/loadbands.py) of an expected TTFT or TPOT percentile, or of the cost a token
    beside it or in it: (its path, "-76%/unbounded")."""
    cost = "cost_per_million_output_tokens"
    if len(parts) >= 3 and parts[-3] == "expected" and parts[-2] in ("ttft_s", "tpot_s"):
        where = ".".join([*parts[:-3], "load_bands", f"{parts[-2][:4]}_{parts[-1]}"])
    elif parts[-1] == cost:
        where = ".".join([*parts[: -2 if parts[-2:-1] == ["expected"] else -1], "load_bands", cost])
    else:
        return None
    b = lookup(doc, where)
    return (where, load_band_text(b)) if isinstance(b, Mapping) else None


def _band_bounds(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(map(is_number, value)):
        return float(value[0]), float(value[1])
    if isinstance(value, Mapping):
        for lo, hi in (("low", "high"), ("lo", "hi"), ("min", "max"), ("p10", "p90")):
            if is_number(value.get(lo)) and is_number(value.get(hi)):
                return float(value[lo]), float(value[hi])
    return None


def figure(doc: Any, label: str, path: str) -> str:
    """One headline figure: its label, its value as text (with its band when the document has
    one), and the JSON path and raw value in data attributes (the browser test reads them back
    and compares them with the document)."""
    value = lookup(doc, path)
    raw = escape(json.dumps(value), quote=True)
    text = escape(fmt(path, value))
    bp = band_path(doc, path)
    band = ""
    rel = relative_band(doc, path)
    metrics = path.rsplit(".", 2)[0] if path.count(".") >= 2 else ""
    if value is None and metrics and lookup(doc, f"{metrics}.unbounded"):
        text, rel, bp = "unbounded", None, None  # past saturation (metrics' reason), as tables say
    if rel is not None:
        where = escape(rel[0], quote=True)
        band = f' <span class="band" data-json="{where}">({escape(rel[1])})</span>'
    elif bp is not None:
        lo, hi = _band_bounds(lookup(doc, bp)) or (0.0, 0.0)
        band = (
            f' <span class="band" data-json="{escape(bp, quote=True)}">'
            f"({escape(fmt(path, lo))} – {escape(fmt(path, hi))})</span>"
        )
    return (
        f'<div class="fig"><div class="lab">{escape(label)}</div>'
        f'<div class="val"><span data-json="{escape(path, quote=True)}" data-value="{raw}">'
        f"{text}</span>{band}</div></div>"
    )


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as dotted keys (lists of plain values stay one cell)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        elif isinstance(v, list) and v and isinstance(v[0], Mapping):
            out[f"{prefix}{k}"] = f"{len(v)} entries (in the JSON)"
        else:
            out[f"{prefix}{k}"] = v
    return out


def kv_table(d: Mapping[str, Any], caption: str = "") -> str:
    """A two-column table of a mapping's (flattened) keys and values."""
    rows = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(fmt(k, v))}</td></tr>" for k, v in flatten(d).items()
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<div class="scroll"><table class="kv">{cap}{rows}</table></div>'


def rows_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    caption: str = "",
    labels: Mapping[str, str] | None = None,
) -> str:
    """A table with one row per mapping (nested values flattened to dotted columns)."""
    flat = [flatten(r) for r in rows]
    cols = list(columns or dict.fromkeys(k for r in flat for k in r))
    labels = {**LABELS, **(labels or {})}
    head = "".join(f'<th scope="col">{escape(labels.get(c, c))}</th>' for c in cols)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"n" if is_number(r.get(c)) else "t"}">{escape(fmt(c, r.get(c)))}</td>'
            for c in cols
        )
        + "</tr>"
        for r in flat
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table>{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


@dataclass
class Content:
    """What a command's page says: the answer's figures (label, JSON path), one sentence that
    states it, and the charts that explain it (each with its table)."""

    figures: list[tuple[str, str]] = field(default_factory=list)
    verdict: str = ""
    charts: list[str] = field(default_factory=list)


def chart_block(title: str, svg: str, table: str, note: str = "") -> str:
    """A chart with its numbers in a table beside it (below it on a narrow screen)."""
    p = f'<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'<figure class="chartblock"><figcaption>{escape(title)}</figcaption>{p}'
        f'<div class="pair"><div class="svgbox">{svg}</div>'
        f'<div class="numbers">{table}</div></div></figure>'
    )

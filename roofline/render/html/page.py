"""The HTML report: one self-contained page rendered from a command's JSON document (the dict
`--format json` prints), so its numbers are the JSON's. In order: the question (model, traffic,
SLOs, chips), the answer (the deployment, GPUs, $/Mtok, p99 TTFT/TPOT, with their bands when the
document carries them), the why (inline SVG charts, each with its numbers in a table beside it),
every result, the inputs, the provenance, the tool's version and the JSON schema version.

No script (but the launch lines' copy buttons: one inline onclick each, html/launch.py), no
network: styles inline, charts as SVG with `<title>` tooltips, the document itself
embedded as application/json. A print stylesheet; no horizontal scroll at 390 px.
Per-command content: `traffic` (serve, size, cliff, disagg), `static` (analyze, plan, speculate,
edge), `report` (report); charts `svg`; pieces `parts`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from roofline import __version__
from roofline.render.html.parts import Content, figure, flatten, fmt, kv_table, rows_table

QUESTION = (
    ("model", "model"),
    ("hardware", "chips"),
    ("prefill_hardware", "prefill chip"),
    ("decode_hardware", "decode chip"),
    ("candidates", "candidates"),
    ("gpus", "GPUs"),
    ("tp", "TP"),
    ("weights", "weights"),
    ("kv_dtype", "KV cache"),
    ("rate", "rate, requests/s"),
    ("rates", "rates, requests/s"),
    ("arrivals", "arrivals"),
    ("concurrency", "users"),
    ("batch", "batch"),
    ("prompt_lengths", "prompt tokens"),
    ("prompt_tokens", "prompt tokens"),
    ("output_lengths", "output tokens"),
    ("output_tokens", "output tokens"),
    ("context_tokens", "context tokens"),
    ("slo_ttft_s", "SLO TTFT"),
    ("slo_tpot_s", "SLO TPOT"),
    ("slo_pct", "SLO percentile"),
    ("max_ttft_s", "SLO TTFT"),
    ("max_tpot_s", "SLO TPOT"),
    ("max_ttft_p99_s", "SLO p99 TTFT"),
    ("max_tpot_p99_s", "SLO p99 TPOT"),
)
_SKIP_IF = {"prompt_tokens": "prompt_lengths", "output_tokens": "output_lengths"}
_PROVENANCE_WORDS = ("source", "method", "search", "assumption", "note", "calibration", "kind")

CSS = """
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--accent:#0072b2;--soft:#f6f8fa}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
main{max-width:1160px;margin:0 auto;padding:12px 16px 40px}
h1{font-size:1.25rem;margin:.2rem 0 .4rem}
h2{font-size:1.05rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.question{display:flex;flex-wrap:wrap;gap:4px 6px;margin:0 0 .6rem;padding:0;list-style:none;
font-size:.82rem}
.question li{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:1px 6px;
overflow-wrap:anywhere}
.question b{font-weight:600;color:var(--muted);margin-right:4px}
#answer{border:2px solid var(--accent);border-radius:6px;padding:10px 12px;margin:.4rem 0 1rem}
.verdict{font-size:1.02rem;margin:0 0 .6rem;font-weight:500}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:6px}
.fig{background:var(--soft);border-radius:4px;padding:4px 8px;min-width:0}
.fig .lab{font-size:.75rem;color:var(--muted)}
.fig .val{font-size:1.1rem;font-weight:600;overflow-wrap:anywhere}
.band{font-size:.8rem;font-weight:400;color:var(--muted)}
figure{margin:0 0 1.4rem;break-inside:avoid}
figcaption{font-weight:600;margin-bottom:.3rem}
.note{color:var(--muted);font-size:.85rem;margin:.1rem 0 .4rem;overflow-wrap:anywhere}
.pair{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:14px;align-items:start}
.svgbox{min-width:0}
svg.chart{width:100%;height:auto;display:block}
svg .plot{fill:#fff;stroke:var(--line)}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg .tick{font-size:11px;fill:var(--muted)}
svg .axis{font-size:12px;fill:var(--fg)}
svg .lg{font-size:11px;fill:var(--fg)}
svg .roof{fill:none;stroke:#8c959f;stroke-width:2;stroke-dasharray:6 3}
svg .ref line{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:5 4}
svg .ref text{font-size:11px;fill:#cf222e}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.8rem;width:100%}
th,td{border-bottom:1px solid var(--line);padding:2px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv th{font-weight:500;color:var(--muted);width:40%;overflow-wrap:anywhere}
table.kv td{overflow-wrap:anywhere}
caption{text-align:left;font-weight:600;padding:2px 0}
.cmd{position:relative}.cmd pre{background:var(--soft);border:1px solid var(--line);
border-radius:4px;padding:6px 8px;margin:0 0 .4rem;overflow-x:auto;user-select:all;font-size:.8rem}
.copy{position:absolute;top:4px;right:4px;font-size:.75rem}
summary{cursor:pointer;color:var(--accent);margin:.2rem 0}
footer{margin-top:2rem;font-size:.8rem;color:var(--muted)}
@media (max-width:760px){.pair{grid-template-columns:minmax(0,1fr)}
main{padding:8px 10px 30px}.figs{grid-template-columns:repeat(2,minmax(0,1fr))}}
@media print{body{font-size:10pt}main{max-width:none;padding:0}
#answer{border-color:#000}.scroll{overflow:visible}.pair{grid-template-columns:1fr}
a{color:inherit}h2{break-after:avoid}table{break-inside:auto}tr{break-inside:avoid}}
"""


def _content(doc: Mapping[str, Any]) -> Content:
    from roofline.render.html import fleet, fleetspread, report, static, traffic

    table: dict[str, Callable[[Mapping[str, Any]], Content]] = {
        **traffic.CONTENT,
        **static.CONTENT,
        **report.CONTENT,
        **fleet.CONTENT,
        **fleetspread.CONTENT,
    }
    fn = table.get(str(doc.get("command")))
    return fn(doc) if fn else Content()


def question(doc: Mapping[str, Any]) -> str:
    """The question as a row of labelled inputs (each tied to its JSON path)."""
    inputs = doc.get("inputs") or {}
    items = []
    for key, label in QUESTION:
        v = inputs.get(key)
        if v is None or v == [] or (key in _SKIP_IF and inputs.get(_SKIP_IF[key]) is not None):
            continue
        raw = escape(json.dumps(v), quote=True)
        items.append(
            f'<li><b>{escape(label)}</b><span data-json="inputs.{key}" data-value="{raw}">'
            f"{escape(fmt(key, v))}</span></li>"
        )
    return f'<ul class="question">{"".join(items)}</ul>'


def provenance(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Every source, method and assumption the document names (dotted path -> text)."""
    out: dict[str, Any] = {}
    for k, v in flatten(doc).items():
        last = k.split(".")[-1]
        named = isinstance(v, str) and any(w in last for w in _PROVENANCE_WORDS)
        if named or (".calibration." in f".{k}" and k.count(".") <= 3):
            out[k] = v
    return out


def results_tables(doc: Mapping[str, Any]) -> list[str]:
    """Every list of result rows in the document, whole (nested values as dotted columns)."""
    out = []
    for key, value in doc.items():
        if key == "inputs" or not isinstance(value, list) or not value:
            continue
        if all(isinstance(v, Mapping) for v in value):
            out.append(rows_table(value, caption=f"{key} ({len(value)})"))
    scalars = {
        k: v
        for k, v in doc.items()
        if k not in ("inputs", "schema_version", "command") and not isinstance(v, list)
    }
    if scalars:
        out.insert(0, kv_table(scalars, "results"))
    return out


def _calibration(doc: Mapping[str, Any]) -> str:
    """The user calibration the page's figures were computed with, named under the answer."""
    cal = doc.get("user_calibration")
    if not cal:
        return ""
    from roofline.render.core import calibration_line

    return f'<p class="note" id="user-calibration">{escape(calibration_line(cal))}</p>'


def _collapsed(summary: str, body: str) -> str:
    """A section's long tables, collapsed: the page keeps its answer and charts in view."""
    return f"<details><summary>{escape(summary)}</summary>{body}</details>"


def page(doc: Mapping[str, Any], command_line: Sequence[str] | None = None) -> str:
    """The whole page for one command's JSON document."""
    c = _content(doc)
    inputs = doc.get("inputs") or {}
    command = str(doc.get("command", ""))
    heading = f"roofline {command}: {inputs.get('model', '')}"
    figs = "".join(figure(doc, label, path) for label, path in c.figures)
    charts = "".join(c.charts) or "<p>This command has no chart; its numbers follow.</p>"
    data = json.dumps(doc, allow_nan=False)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        data = data.replace(char, code)  # JSON still; nothing in it can end the element
    cmd = f"<p>Command: <code>{escape(' '.join(command_line))}</code></p>" if command_line else ""
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{escape(heading)}</title><style>{CSS}</style></head><body><main>",
            f"<h1>{escape(heading)}</h1>",
            '<section id="question" aria-label="the question">',
            question(doc),
            "</section>",
            '<section id="answer" aria-label="the answer">',
            f'<p class="verdict">{escape(c.verdict)}</p>' if c.verdict else "",
            f'<div class="figs">{figs}</div>',
            _calibration(doc),
            "</section>",
            '<section id="why"><h2>Why: the charts and their numbers</h2>',
            charts,
            "</section>",
            '<section id="results"><h2>Every result</h2>',
            _collapsed("every row and column, as in --format json", "".join(results_tables(doc))),
            "</section>",
            '<section id="inputs"><h2>Inputs</h2>',
            _collapsed("every input", kv_table(inputs)),
            "</section>",
            '<section id="provenance"><h2>Provenance</h2>',
            _collapsed("every source, method and assumption", kv_table(provenance(doc))),
            "</section>",
            f'<footer>Made by roofline <span id="tool-version">{escape(__version__)}</span>',
            f' · JSON schema version <span id="schema-version">'
            f"{escape(str(doc.get('schema_version')))}</span>",
            f" · command <code>{escape(command)}</code>. The same numbers as "
            f"<code>--format json</code>; the document is embedded below.{cmd}</footer>",
            f'<script type="application/json" id="roofline-json">{data}</script>',
            "</main></body></html>\n",
        ]
    )

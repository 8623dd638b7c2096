"""The launch lines on the HTML page (size, disagg): each command as the shell takes it, in a
`<pre>` block with a copy button (one inline onclick copying the block's text, the page's only
script besides the embedded JSON; without script a click on the block selects it whole), the
TensorRT-LLM options file as YAML, each node's and the router's command, the note."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import yaml

from roofline.render.launchlines import wrap_command

COPY = "navigator.clipboard.writeText(this.nextElementSibling.textContent)"


def command_text(argv: list[str]) -> str:
    """The argv as a shell command, continued lines ending in a backslash (what the terminal
    prints, unindented)."""
    lines = wrap_command(argv, 78)
    return "\n".join(x[2:] if x.startswith("  ") else x for x in lines)


def _block(label: str, text: str) -> str:
    cap = f'<p class="note">{escape(label)}</p>' if label else ""
    return (
        f'{cap}<div class="cmd"><button type="button" class="copy" onclick="{COPY}">copy'
        f"</button><pre><code>{escape(text)}</code></pre></div>"
    )


def _server(launch: Mapping[str, Any]) -> str:
    out = []
    nodes = launch.get("nodes") or []
    for n in nodes:
        out.append(_block(f"on {n['where']}:", command_text(n["argv"])))
    if not nodes and launch.get("argv"):
        out.append(_block("", command_text(launch["argv"])))
    if launch.get("options_file"):
        text = yaml.safe_dump(launch["options_file"], sort_keys=False, default_flow_style=False)
        out.append(_block("its --extra_llm_api_options file:", text.rstrip()))
    if launch.get("router") and not launch.get("prefill"):
        out.append(_block("router:", command_text(launch["router"])))
    if launch.get("note"):
        out.append(f'<p class="note">{escape(launch["note"])}</p>')
    return "".join(out)


def launch_html(launch: Mapping[str, Any] | None) -> str:
    """The launch block of a size or disagg page ("" without a launch line)."""
    if not launch:
        return ""
    body = []
    if launch.get("prefill"):  # disaggregated: each pool's servers, then the router
        for pool in ("prefill", "decode"):
            body.append(f'<p class="note">{pool} pool, each server:</p>')
            body.append(_server(launch[pool]))
        body.append(_block("router:", command_text(launch["router"] or [])))
        if launch.get("router_config"):
            text = yaml.safe_dump(launch["router_config"], sort_keys=False)
            body.append(_block("disagg_config.yaml:", text.rstrip()))
        if launch.get("note"):
            body.append(f'<p class="note">{escape(launch["note"])}</p>')
    else:
        body.append(_server(launch))
    title = f"Launch ({launch.get('version', '')})"
    return (
        f'<figure class="launch"><figcaption>{escape(title)}</figcaption>{"".join(body)}</figure>'
    )

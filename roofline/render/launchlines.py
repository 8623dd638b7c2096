"""The engine's launch lines as a terminal prints them: each server's command wrapped for a shell
at the table's width (a flag kept with its value), under its engine version, each node's when a
replica spans nodes, then a disaggregated deployment's router (roofline.engines.launch builds
them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from roofline.render.core import stdout_console
from roofline.render.width import say


def launch_table(doc: Mapping[str, Any]) -> None:
    """The document's launch lines on stdout (disagg prints them after its table)."""
    launch_block(stdout_console(), doc.get("launch"))


def launch_block(con: Console, launch: Mapping[str, Any] | None) -> None:
    """A launch line (roofline.engines.launch.launch_json) under its engine version: the server's
    command, each node's when it spans nodes; for disaggregated pools each pool's, then the
    router's."""
    if not launch:
        return
    say(con, f"launch ({launch['version']}):")
    if launch.get("prefill"):  # disaggregated: each pool's servers, then the router
        for pool in ("prefill", "decode"):
            say(con, f"  {pool} pool, each server:")
            _launch_lines(con, launch[pool])
        say(con, "  router:")
        _launch_lines(con, {"argv": launch["router"], "note": launch["note"]})
        if launch.get("router_config"):
            say(con, f"  disagg_config.yaml: {launch['router_config']}")
    else:
        _launch_lines(con, launch)


def _launch_lines(con: Console, launch: Mapping[str, Any]) -> None:
    """One server's launch: its command (each node's when it spans nodes), options, note."""
    width = min(con.width, 80)
    commands = [(n["where"], n["argv"]) for n in launch.get("nodes") or []]
    if not commands and launch.get("argv"):
        commands = [("", launch["argv"])]
    for where, argv in commands:
        if where:
            say(con, f"  on {where}:")
        for line in wrap_command(argv, width):
            con.print(line, overflow="ignore", crop=False, soft_wrap=True, markup=False)
    if launch.get("options_file"):
        say(con, f"  its --extra_llm_api_options file: {launch['options_file']}")
    if launch.get("router") and not launch.get("prefill"):  # N replicas' router (SGLang)
        say(con, "  router:")
        for line in wrap_command(launch["router"], width):
            con.print(line, overflow="ignore", crop=False, soft_wrap=True, markup=False)
    if launch.get("note"):
        say(con, f"  ({launch['note']})")


def wrap_command(argv: list[str], width: int = 78) -> list[str]:
    """A command as shell lines of at most `width` columns where the words allow: a flag stays
    with its value unless the two overflow a line, every line but the last ends in a backslash,
    the rest indented."""
    quoted = [f"'{a}'" if any(c in a for c in ' {}"') else a for a in argv]
    words: list[str] = []
    for a in quoted:
        pair = f"{words[-1]} {a}" if words else a
        if words and not a.startswith("-") and words[-1].startswith("-") and len(pair) <= width - 6:
            words[-1] = pair
        else:
            words.append(a)
    lines, cur = [], ""
    for w in words:
        pieces = _pieces(w, width - 6)
        if len(pieces) > 1:  # inside the quotes a line ends without a backslash
            if cur:
                lines.append(cur + " \\")
            lines += ["    " + p for p in pieces[:-1]]
            cur = "    " + pieces[-1]
        elif cur and len(cur) + 1 + len(w) > width - 2:
            lines.append(cur + " \\")
            cur = "    " + w
        else:
            cur = f"{cur} {w}" if cur else "  " + w
    lines.append(cur)
    return lines


def _pieces(word: str, room: int) -> list[str]:
    """A word too long for a line, split where the shell and its reader allow: a quoted JSON
    after its commas (a newline inside single quotes is kept, and JSON allows it)."""
    if len(word) <= room or not word.startswith("'") or "," not in word:
        return [word]
    parts = word.split(",")
    return [p + "," for p in parts[:-1]] + [parts[-1]]

"""The HTML report, one self-contained page per command, grouped as cli/ groups the commands.

One self-contained page per command's JSON document (`page`), its pieces (`parts`), inline SVG
charts (`svg`) and each group of commands' answer and charts: `traffic` (serve, size, cliff,
disagg), `static` (analyze, plan, speculate, edge), `report` (report)."""

from roofline.render.html.page import page

__all__ = ["page"]

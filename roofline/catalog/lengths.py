"""Shipped request-length tables: models/lengths/*.csv, rows of `prompt,output` token counts in the
order a benchmark harness sends them (`#` lines carry the source). One table today: sharegpt.csv,
ShareGPT as vLLM's and SGLang's benchmark samplers draw it (validation/sharegpt_lengths.py builds
it; its header names the dataset, the tokenizer and the sampler's rules)."""

from __future__ import annotations

from functools import cache

import numpy as np

from roofline.catalog.files import read_text
from roofline.catalog.load import shipped_dirs
from roofline.domain.errors import CatalogError

TABLES = ("sharegpt",)


@cache
def length_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(prompts, outputs) of the shipped table `name`, row by row (a prompt and its answer share
    a row: drawn together, never independently)."""
    if name not in TABLES:
        raise CatalogError(f"no length table '{name}' (known: {', '.join(TABLES)})")
    path = shipped_dirs()[1] / "lengths" / f"{name}.csv"
    lines = [x for x in read_text(path).split("\n") if x.strip() and not x.startswith("#")]
    if not lines or lines[0].replace(" ", "") != "prompt,output":
        raise CatalogError(f"{path}: expected a 'prompt,output' header")
    try:
        rows = np.array([[int(v) for v in x.split(",")] for x in lines[1:]], dtype=np.int64)
    except ValueError:
        raise CatalogError(f"{path}: every row must be two whole numbers") from None
    if rows.ndim != 2 or rows.shape[1] != 2 or len(rows) == 0 or np.any(rows < 1):
        raise CatalogError(f"{path}: rows must be two positive token counts")
    return rows[:, 0], rows[:, 1]

"""hardware/engine_flags.yaml read and checked: every flag names its source (repo, path,
commit). Launch lines (roofline.engines.launch) are handed this table."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from roofline.catalog.files import read_text, safe_load_yaml
from roofline.domain.errors import CatalogError

FLAGS_FILE = "engine_flags.yaml"


@lru_cache(maxsize=4)
def engine_flags(path: str | None = None) -> dict[str, dict[str, Any]]:
    """hardware/engine_flags.yaml by engine id, checked: every flag, options-file key and
    speculative-config key names its source."""
    if path is None:
        from roofline.catalog.load import shipped_dirs

        path = str(shipped_dirs()[0] / FLAGS_FILE)
    raw = safe_load_yaml(read_text(Path(path)))
    if not isinstance(raw, dict) or not isinstance(raw.get("engines"), list):
        raise CatalogError(f"{path}: expected a top-level 'engines' list")
    out = {}
    for e in raw["engines"]:
        for f in e.get("flags", []) + e.get("options", []) + e.get("speculative", []):
            src = f.get("source") or {}
            if not all(src.get(k) for k in ("repo", "path", "commit")):
                name = f.get("flag") or f.get("key")
                raise CatalogError(f"{path}: {e.get('id')} {name}: source needs repo, path, commit")
        out[e["id"]] = e
    return out

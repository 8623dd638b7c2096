"""An accelerator's hardware family checked against the catalog's families: an unknown one (a
typo, a family no file defines) would run the chip with no calibration at all, so it is refused
at load and listed by `catalog validate`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from roofline.catalog.files import read_text, safe_load_yaml, yaml
from roofline.domain.errors import CatalogError

# the family of entries with no shared efficiency block: host CPUs carry their own
OWN_FAMILY = "cpu"


def family_problem(where: str, family: Any, known: Iterable[str]) -> str | None:
    """The problem of an accelerator's `family`, or None: it names a family of the catalog (or
    'cpu', whose entries carry their own efficiency); an unknown one would run uncalibrated."""
    names = {*known, OWN_FAMILY}
    if not isinstance(family, str) or family in names:
        return None
    from difflib import get_close_matches  # only on an error

    close = get_close_matches(family, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (
        f"{where}: unknown family '{family}' ({hint}it would run with no calibration; "
        f"families: {', '.join(sorted(names))})"
    )


def family_problems(files: Iterable[Path], known: set[str]) -> list[str]:
    """The unknown families of every accelerator in `files`, read raw: an entry with another
    problem has its family checked too (the loader skips such an entry)."""
    out = []
    for path in files:
        try:
            raw = safe_load_yaml(read_text(path))
        except (CatalogError, yaml.YAMLError):
            continue  # reported by the loader
        entries = raw.get("accelerators") if isinstance(raw, dict) else None
        for i, e in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(e, dict):
                where = f"{path}: accelerator '{e.get('id', f'#{i + 1}')}'"
                problem = family_problem(where, e.get("family"), known)
                if problem is not None:
                    out.append(problem)
    return out

"""Engine versions: which profile of hardware/engines.yaml a stated engine version runs under.

An engine entry may have version profiles: entries with `base: <engine>` and `versions: <range>`
(e.g. vLLM V0, `base: vllm`, `versions: ">=0.5,<0.8"`: the engine before V1 became the default
in 0.8.0, vLLM release notes). The engine's own entry holds the current version (its `versions`
range, if any, names which). A version picks the profile whose range holds it; no version, or
one that names no release ("main", "latest", "nightly"), the current one. A version no range
holds is an error naming the ranges known. Stated versions are read from their leading number
("0.7.3.dev138+g21f6ca217" is 0.7.3, "0.6.0 (ROCm fork)" is 0.6.0). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from roofline.domain.errors import InputError
from roofline.timing.host import EngineProfile

CURRENT = ("main", "latest", "nightly", "current", "none", "")
_NUM = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_BOUND = re.compile(r"^\s*(>=|<=|==|>|<)\s*v?(\d+(?:\.\d+)*)\s*$")

Version = tuple[int, ...]


def parse_version(text: object) -> Version | None:
    """The version a stated string names: its leading dotted number as a tuple; None for the
    current version (nothing stated, or a branch name such as "main as of 2024-03-28").
    Raises InputError for any other text."""
    s = "" if text is None else str(text).strip()
    m = _NUM.match(s)
    if m:
        return tuple(int(p) for p in m.group(1).split("."))
    if s.split(" ")[0].split(",")[0].lower() in CURRENT:
        return None
    raise InputError(f"cannot read an engine version from '{s}'", hint="give e.g. 0.6 or 0.6.3")


def _cmp(a: Version, b: Version) -> int:
    """Compare two versions, the shorter padded with zeros (0.6 == 0.6.0)."""
    n = max(len(a), len(b))
    pa, pb = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def check_range(bounds: str) -> None:
    """Raise ValueError unless `spec` is comma-separated bounds such as ">=0.5,<0.8"."""
    if not bounds.strip():
        raise ValueError("an empty version range")
    for part in bounds.split(","):
        if not _BOUND.match(part):
            raise ValueError(f"bad version bound '{part.strip()}' (use e.g. >=0.5,<0.8)")


def in_range(version: Version, bounds: str) -> bool:
    """True when `version` meets every bound of `spec` (">=0.5,<0.8": 0.5 <= v < 0.8)."""
    ops = {
        ">=": lambda c: c >= 0,
        ">": lambda c: c > 0,
        "<=": lambda c: c <= 0,
        "<": lambda c: c < 0,
        "==": lambda c: c == 0,
    }
    for part in bounds.split(","):
        m = _BOUND.match(part)
        if m is None:
            raise ValueError(f"bad version bound '{part.strip()}'")
        bound = tuple(int(p) for p in m.group(2).split("."))
        if not ops[m.group(1)](_cmp(version, bound)):
            return False
    return True


def split_name(name: str) -> tuple[str, str | None]:
    """'vllm@0.6' -> ('vllm', '0.6'); 'vllm' -> ('vllm', None)."""
    if "@" not in name:
        return name, None
    eng, ver = name.split("@", 1)
    return eng, ver


def versions_of(engine: str, profiles: Mapping[str, EngineProfile]) -> list[EngineProfile]:
    """The engine's own profile (if catalogued) and its version profiles, in catalog order."""
    return [p for p in profiles.values() if p.id == engine or p.base == engine]


def pick_profile(engine: str, version: object, profiles: Mapping[str, EngineProfile]) -> str:
    """The id of the profile `engine` at `version` runs under (module docstring): the version
    profile whose range holds it, the engine's own when none is stated or its range holds it.
    An engine without version profiles takes every version as its own. Raises InputError for a
    version no range holds, naming the ranges known."""
    ranged = [p for p in versions_of(engine, profiles) if p.versions]
    if not ranged:
        return engine
    v = parse_version(version)
    if v is None:
        return engine
    for p in ranged:
        if in_range(v, p.versions):
            return p.id
    if engine in profiles and not profiles[engine].versions:
        return engine  # the current profile holds every version the others do not
    known = ", ".join(f"{p.id} ({p.versions})" for p in ranged)
    raise InputError(
        f"no profile of engine '{engine}' holds version {version}", hint=f"known: {known}"
    )

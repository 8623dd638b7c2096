"""The catalog: files combined into one Catalog (overrides, aliases, families applied), lookups
with 'did you mean', Hugging Face configs, prices (user files such as cases and specs:
userfiles.py). One file's entries are parsed and validated by catalog_entries.py; duplicate ids
across a directory and alias collisions are checked here, each naming the file and the entry.

Search order: the shipped catalogs (inside the wheel, or `hardware/` and `models/` of a source
checkout), then every directory in ROOFLINE_CATALOG (os.pathsep-separated), then each --catalog DIR.
A later entry with the same id replaces an earlier one.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from copy import copy
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from roofline.catalog.cache import ParseCache, files_key, load_snapshot, save_snapshot, tree_key
from roofline.catalog.calibrations import ChipCalibration, calibrated
from roofline.catalog.entries import (
    _ALIAS_SECTIONS,
    Family,
    _load_file,
    _model,
)
from roofline.catalog.families import family_problem, family_problems
from roofline.catalog.files import parse_yaml, read_text, yaml
from roofline.catalog.kernels import KernelEntry
from roofline.catalog.schema import NUM
from roofline.catalog.schema import check as _check
from roofline.catalog.schema import positive as _positive
from roofline.catalog.spot import SPOT_KEYS, spot_fields
from roofline.domain.errors import CatalogError, InputError, UnknownEntryError, did_you_mean
from roofline.domain.hardware import Accelerator, Efficiency, Price, Tier
from roofline.domain.model import ModelArch
from roofline.timing.collectives import LinkSet
from roofline.timing.host import EngineProfile

_PARSED = ParseCache()


def _load_file_cached(path: Path, problems: list[str] | None = None) -> dict[str, list[Any]]:
    """_load_file through the parse cache."""
    try:
        hit = _PARSED.get(path)
    except OSError:
        hit = None
    if hit is not None:
        return hit
    found: list[str] = []
    sections = _load_file(path, found if problems is not None else None)
    if problems is not None:
        problems.extend(found)
    if not found:
        _PARSED.put(path, sections)
    return sections


def _yaml_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.yaml")) + sorted(directory.rglob("*.yml"))


@dataclass
class Catalog:
    """Accelerators, tiers and models by id, with aliases and 'did you mean' lookups."""

    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    tiers: dict[str, Tier] = field(default_factory=dict)
    models: dict[str, ModelArch] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # "section:id" -> file path
    own_efficiency: set[str] = field(default_factory=set)  # accelerators that set their own
    kernels: dict[str, KernelEntry] = field(default_factory=dict)
    engines: dict[str, EngineProfile] = field(default_factory=dict)
    links: dict[str, LinkSet] = field(default_factory=dict)
    calibrations: dict[str, ChipCalibration] = field(default_factory=dict)  # user fits
    # an own-efficiency accelerator's resolved efficiency before its calibration was applied
    uncalibrated: dict[str, Efficiency] = field(default_factory=dict)

    def add_dir(self, directory: Path, problems: list[str] | None = None) -> None:
        """Load every *.yaml below a directory; ids repeated inside it are an error, ids already
        in the catalog from an earlier directory are overridden. With a `problems` list every
        problem is recorded there instead of raising the first."""
        if not directory.is_dir():
            raise CatalogError(f"{directory}: catalog directory does not exist")
        seen: dict[str, Path] = {}
        for path in _yaml_files(directory):
            if path.name in (PRICES_FILE, ENGINE_FLAGS_FILE):
                continue  # read by load_prices, and by roofline.engines.launch
            try:
                sections = _load_file_cached(path, problems)
            except CatalogError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
                continue
            for section, entries in sections.items():
                table = getattr(self, section)
                for entry in entries:
                    key = f"{section}:{entry.id}"
                    if key in seen:
                        duplicate = CatalogError(
                            f"{path}: {section[:-1]} '{entry.id}': duplicate id "
                            f"(also in {seen[key]})"
                        )
                        if problems is None:
                            raise duplicate
                        problems.append(str(duplicate))
                        continue
                    seen[key] = path
                    table[entry.id] = entry
                    self.origin[key] = str(path)
                    if section == "accelerators":
                        self.uncalibrated.pop(entry.id, None)
                        own = entry.efficiency != Efficiency()
                        (self.own_efficiency.add if own else self.own_efficiency.discard)(entry.id)
        alias_problems = self.alias_problems()
        _PARSED.save()
        if alias_problems and problems is None:
            raise CatalogError(alias_problems[0])
        if problems is not None:
            problems.extend(p for p in alias_problems if p not in problems)
        self._apply_families(problems)

    def _apply_families(self, problems: list[str] | None = None) -> None:
        """Give every accelerator without its own efficiency block its family's, then attach the
        kernel curves of its GPU generation (hardware/kernels.yaml: measured, or borrowed) and
        the engine profiles (hardware/engines.yaml), then apply its calibrations (a user's fit:
        catalog_calibration.py)."""
        by_chip: dict[str, list[ChipCalibration]] = {}
        for cal in self.calibrations.values():
            by_chip.setdefault(cal.hardware.lower(), []).append(cal)
        for hw_id, hw in list(self.accelerators.items()):
            family = self.families.get(hw.family)
            eff = self.uncalibrated.get(hw_id, hw.efficiency)
            if hw_id not in self.own_efficiency and family is not None:
                eff = family.efficiency
            kernels = None
            for entry in self.kernels.values():
                if hw_id in entry.accelerators or hw_id in entry.borrowed_by:
                    kernels = replace(
                        entry.kernels,
                        borrowed=hw_id not in entry.accelerators,
                        compute_ref=eff.compute,
                        memory_ref=eff.memory,
                    )
            eff = replace(eff, kernels=kernels, engines=dict(self.engines), family=hw.family)
            own = tuple(ls for ls in self.links.values() if hw_id in ls.accelerators)
            rest = tuple(ls for ls in self.links.values() if not ls.accelerators)
            eff = replace(eff, links=own + rest)  # an accelerator's own measurements first
            cals = [c for n in (hw_id, *hw.aliases) for c in by_chip.get(n.lower(), [])]
            if cals:
                self.uncalibrated[hw_id] = eff
                eff = self._calibrated(hw_id, eff, cals, problems)
            self.accelerators[hw_id] = replace(hw, efficiency=eff)

    def _calibrated(
        self, hw_id: str, eff: Efficiency, cals: list[ChipCalibration], problems: list[str] | None
    ) -> Efficiency:
        """The chip's efficiency under its calibrations; two that set its shares conflict (the
        shares are the chip's under every engine)."""
        with_shares = [c for c in cals if {"compute", "memory"} & set(c.values)]
        if len(with_shares) > 1:
            a, b = with_shares[:2]
            clash = CatalogError(
                f"{self.origin[f'calibrations:{b.id}']}: calibration '{b.id}': sets the shares "
                f"of {hw_id}, as '{a.id}' does (a chip's shares apply under every engine: "
                "keep one)"
            )
            if problems is None:
                raise clash
            problems.append(str(clash))
        for cal in cals:
            eff = calibrated(eff, cal)
        return eff

    def unknown_calibrated(self, also: Catalog | None = None) -> list[str]:
        """Every calibration naming an accelerator or an engine this catalog (and `also`)
        lacks."""
        out = []
        hws = [*self.accelerators.values(), *(also.accelerators.values() if also else ())]
        chips = {n.lower() for hw in hws for n in (hw.id, *hw.aliases)}
        engines = {*self.engines, *(also.engines if also else ())}
        for cal in self.calibrations.values():
            where = f"{self.origin[f'calibrations:{cal.id}']}: calibration '{cal.id}'"
            if cal.hardware.lower() not in chips:
                out.append(f"{where}: unknown hardware '{cal.hardware}'")
            if cal.engine not in engines:
                out.append(f"{where}: unknown engine '{cal.engine}'")
        return out

    def unknown_families(self) -> list[str]:
        """Every accelerator whose family is in no catalog (it would run uncalibrated)."""
        out = []
        for hw_id, hw in self.accelerators.items():
            where = f"{self.origin.get(f'accelerators:{hw_id}', '?')}: accelerator '{hw_id}'"
            problem = family_problem(where, hw.family, self.families)
            if problem is not None:
                out.append(problem)
        return out

    def alias_problems(self) -> list[str]:
        """Every alias that two entries of one section claim (an id always wins over an alias)."""
        problems = []
        for section in _ALIAS_SECTIONS:
            table = getattr(self, section)
            owner: dict[str, str] = {}
            for entry in table.values():
                for alias in entry.aliases:
                    if alias in table and alias != entry.id:
                        continue  # an id always wins over an alias (a user override)
                    if alias in owner and owner[alias] != entry.id:
                        problems.append(
                            f"{self.origin[f'{section}:{entry.id}']}: {section[:-1]} "
                            f"'{entry.id}': alias '{alias}' is also used by '{owner[alias]}'"
                        )
                        continue
                    owner[alias] = entry.id
        return problems

    def _get(self, section: str, what: str, name: str) -> Any:
        """An entry by id or alias (any case), else UnknownEntryError with a 'did you mean'."""
        table = getattr(self, section)
        if name in table:
            return table[name]
        lowered = name.lower()
        for entry in table.values():
            if lowered == entry.id.lower() or lowered in (a.lower() for a in entry.aliases):
                return entry
        names = list(table) + [a for e in table.values() for a in e.aliases]
        hint = did_you_mean(name, names, f"see `roofline {_LISTED_BY[section]}`")
        raise UnknownEntryError(f"unknown {what} '{name}'", hint=hint)

    def with_user(self, user: Catalog) -> Catalog:
        """A copy of this catalog with `user`'s entries added over it (by id, as add_dir adds a
        later directory's): what alias_problems of the combination sees."""
        out = Catalog(**{f.name: copy(getattr(self, f.name)) for f in fields(Catalog)})
        for section in _ALIAS_SECTIONS:
            getattr(out, section).update(getattr(user, section))
        out.origin.update(user.origin)
        return out

    def accelerator(self, name: str) -> Accelerator:
        return self._get("accelerators", "hardware", name)

    def tier(self, name: str) -> Tier:
        return self._get("tiers", "tier", name)

    def model(self, name: str) -> ModelArch:
        """A model by id or alias, straight from a Hugging Face config.json path, or by Hub repo
        id (`org/name`, not a catalog id) from the local Hugging Face cache."""
        if name.endswith(".json") and Path(name).is_file():
            return model_from_config(name)
        try:
            return self._get("models", "model", name)
        except UnknownEntryError:
            if name.endswith(".json"):  # a config.json path, not an id: the file is missing
                raise InputError(f"{name}: no such file (a config.json path)") from None
            from roofline.catalog.hfcache import is_repo_id  # Hugging Face only for unknown names

            if not is_repo_id(name):
                raise
        return model_from_config(name)


# the command that lists a section's ids (named in an unknown id's hint)
_LISTED_BY = {"accelerators": "hardware list", "tiers": "hardware tiers", "models": "models list"}


def _config_json(p: Path, text: str) -> Any:
    """json.loads of a config.json, refusing by name what JSON reads and no config holds: NaN
    and Infinity, and an integer too long for int() (4,300 digits)."""

    def refuse(name: str) -> None:
        raise CatalogError(f"{p}: {name} is not a number a config may hold")

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > 4300:
            raise CatalogError(f"{p}: a number of {len(digits)} digits is not one a config holds")
        return int(digits)

    try:
        return json.loads(text, parse_constant=refuse, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{p}: is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise CatalogError(f"{p}: JSON nested too deep to be a model config") from None


def read_hf_config(path: str | Path, model_id: str | None = None) -> dict[str, Any]:
    """A catalog entry (dict) from a local Hugging Face config.json, a folder holding one, or a
    Hub repo id (`org/name`) found in the local Hugging Face cache; never the network."""
    from roofline.catalog.hfcache import cached_config, is_repo_id
    from roofline.catalog.hfconfig import entry_from_config

    p, source = Path(path), None
    if p.is_dir():
        p = p / "config.json"
    elif not p.exists() and is_repo_id(str(path)):
        repo = str(path)
        p = cached_config(repo)
        model_id = model_id or repo.split("/")[1].lower()
        source = f"{repo} config.json (Hugging Face cache {p.parent.name[:12]})"
    cfg = _config_json(p, read_text(p))
    if not isinstance(cfg, dict):
        raise CatalogError(f"{p}: expected a JSON object")
    stem = p.parent.name if p.name == "config.json" else p.stem
    return entry_from_config(cfg, model_id or stem.lower(), str(p), source)


def model_from_config(path: str | Path, model_id: str | None = None) -> ModelArch:
    """A validated ModelArch from a config.json, through the same checks as the catalog."""
    entry = read_hf_config(path, model_id)
    return _model(f"{path}: model '{entry['id']}'", entry)


def model_yaml(entry: dict[str, Any]) -> str:
    """The catalog YAML of one imported entry."""
    return yaml.safe_dump({"models": [entry]}, sort_keys=False, width=100)


def shipped_dirs() -> list[Path]:
    """The catalogs that ship with the package: inside the wheel, else the source checkout."""
    package = Path(__file__).resolve().parents[1]  # roofline/
    packaged = package / "_catalog"  # the wheel maps the catalogs here
    root = packaged if packaged.is_dir() else package.parent
    return [root / "hardware", root / "models"]


def dirs_in_use(extra: Iterable[str | Path] = ()) -> list[Path]:
    """Every catalog directory a command reads: the shipped ones, then the user's."""
    return shipped_dirs() + user_dirs(extra)


def catalog_dir(path: str | Path) -> Path:
    """A catalog directory given by name; an empty name (which Path reads as the current
    directory, whose YAML files would all be read as catalog files) is refused."""
    if isinstance(path, str) and not path.strip():
        raise InputError(
            f"catalog directory {path!r}: an empty path names no directory (give one, e.g. "
            "--catalog ./my-catalog)"
        )
    return Path(path)


def user_dirs(extra: Iterable[str | Path] = ()) -> list[Path]:
    """ROOFLINE_CATALOG (os.pathsep-separated; empty segments skipped) then --catalog
    directories, in that order."""
    env = os.environ.get("ROOFLINE_CATALOG", "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [catalog_dir(p) for p in extra]


@cache
def _shipped() -> Catalog:
    """The shipped catalog, resolved (families applied, kernel curves attached): from the cache's
    snapshot while no shipped file changed, else built from the files (each through the parse
    cache) and snapshotted."""
    dirs = shipped_dirs()
    key = tree_key(dirs, (".yaml", ".yml"))
    cat = load_snapshot("shipped", key)
    if isinstance(cat, Catalog):
        return cat
    cat = Catalog()
    for directory in dirs:
        cat.add_dir(directory)
    save_snapshot("shipped", key, cat)
    return cat


def load_catalog(extra: Iterable[str | Path] = ()) -> Catalog:
    """The shipped catalog plus user directories (ROOFLINE_CATALOG, then `extra`)."""
    dirs = user_dirs(extra)
    base = _shipped()
    if not dirs:
        return base
    cat = Catalog(
        dict(base.accelerators),
        dict(base.tiers),
        dict(base.models),
        dict(base.families),
        dict(base.origin),
        set(base.own_efficiency),
        dict(base.kernels),
        dict(base.engines),
        dict(base.links),
        dict(base.calibrations),
        dict(base.uncalibrated),
    )
    for directory in dirs:
        cat.add_dir(directory)
    unknown = cat.unknown_calibrated() + cat.unknown_families()
    if unknown:
        raise CatalogError(unknown[0])
    return cat


def validate_dirs(dirs: Iterable[Path]) -> list[str]:
    """Check catalog directories as the loader would combine them; return every problem found:
    bad YAML, bad entries (each entry's problem), duplicate ids, alias collisions (empty: all
    good), and calibrations naming a chip or an engine neither they nor the shipped catalog hold."""
    problems: list[str] = []
    cat = Catalog()
    for directory in dirs:
        if not directory.is_dir():
            problems.append(f"{directory}: catalog directory does not exist")
            continue
        cat.add_dir(directory, problems)
        if (directory / PRICES_FILE).is_file():
            try:
                load_prices(directory / PRICES_FILE)
            except CatalogError as exc:
                problems.append(str(exc))
    if cat.calibrations:  # a user directory's calibrations name shipped chips and engines
        problems.extend(p for p in cat.unknown_calibrated(_shipped()) if p not in problems)
    # an alias a user entry shares with a shipped one is refused at load (load_catalog): here too
    problems.extend(p for p in _shipped().with_user(cat).alias_problems() if p not in problems)
    files = [p for d in dirs if d.is_dir() for p in _yaml_files(d)]
    problems.extend(family_problems(files, {*cat.families, *_shipped().families}))
    return problems


# ---- prices, power and serving traces (roofline.serving) -----------------------------------
PRICES_FILE = "prices.yaml"
ENGINE_FLAGS_FILE = "engine_flags.yaml"  # the engines' launch flags (roofline.engines.launch)
_OFFER_KEYS = {
    "cloud": (str, True),
    "usd_per_gpu_hour": (NUM, True),
    "date": ((str, _dt.date), True),
    "source": (str, True),
}
_PRICE_KEYS = {
    "id": (str, True),
    "usd_per_gpu_hour": (NUM, True),
    "offers": (list, True),
    "board_power_w": (NUM, True),
    "power_source": (str, True),
    "uncertain": (list, False),
    "notes": (str, False),
    "spot": (dict, False),
}


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """GPU-hour prices and board power by accelerator id (hardware/prices.yaml), strictly."""
    if path is None:
        path = shipped_dirs()[0] / PRICES_FILE
    path = Path(path)
    key = files_key([path]) if path.is_file() else None
    hit = load_snapshot("prices", key)  # this file's prices, checked before and unchanged
    if isinstance(hit, dict):
        return hit
    raw = cached = _PARSED.get(path) if path.is_file() else None  # parsed before, unchanged
    if raw is None:
        text = read_text(path)
        raw = parse_yaml(text, str(path))
    if not isinstance(raw, dict) or set(raw) != {"prices"} or not isinstance(raw["prices"], list):
        raise CatalogError(f"{path}: expected one top-level key 'prices' holding a list")
    out: dict[str, Price] = {}
    for i, entry in enumerate(raw["prices"]):
        name = entry.get("id", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
        where = f"{path}: price '{name}'"
        d = _check(where, entry, _PRICE_KEYS)
        for j, offer in enumerate(d["offers"]):
            _check(f"{where}: offer #{j + 1}", offer, _OFFER_KEYS)
        if d["id"] in out:
            raise CatalogError(f"{where}: duplicate id")
        spot = d.get("spot")
        if spot is not None:
            _check(f"{where}: spot", spot, SPOT_KEYS)
            for j, offer in enumerate(spot["offers"]):
                _check(f"{where}: spot offer #{j + 1}", offer, _OFFER_KEYS)
        out[d["id"]] = Price(
            d["id"],
            _positive(where, "usd_per_gpu_hour", d["usd_per_gpu_hour"]),
            _positive(where, "board_power_w", d["board_power_w"]),
            f"{path.name}: median of {len(d['offers'])} on-demand offers; {d['power_source']}",
            *spot_fields(where, spot, path.name),
        )
    if cached is None:  # only a file without problems is cached
        _PARSED.put(path, raw)
        _PARSED.save()
    save_snapshot("prices", key, out)
    return out

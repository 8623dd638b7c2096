"""Load, validate and resolve catalog entries (user files such as cases and specs: userfiles.py).

Catalog files hold human-scale numbers with the unit in the key (`bandwidth_tb_s: 3.35`);
this module converts them to SI once. Loading is strict: unknown keys, wrong types, missing
fields, duplicate ids and non-positive numbers fail with a CatalogError naming the file,
the entry and the key.

Search order: the shipped catalogs (inside the wheel, or `hardware/` and `models/` of a source
checkout), then every directory in ROOFLINE_CATALOG (os.pathsep-separated), then each --catalog DIR.
A later entry with the same id replaces an earlier one.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from roofline.cache import ParseCache, files_key, load_snapshot, save_snapshot
from roofline.catalog_kernels import KernelEntry, engine_profile, kernel_entry, link_set
from roofline.efficiency import EngineProfile, LinkSet
from roofline.errors import CatalogError, RooflineError, UnknownEntryError
from roofline.files import read_text, yaml
from roofline.files import safe_load_yaml as _safe_load
from roofline.hardware import Accelerator, Efficiency, Tier
from roofline.model import MODEL_TYPES, ModelArch
from roofline.precision import weight_format
from roofline.schema import NUM
from roofline.schema import check as _check
from roofline.schema import positive as _positive
from roofline.serving.cost import Price
from roofline.units import GB, TB, TFLOPS, US, MiB

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# key -> (accepted types, required). bool is rejected where a number is expected.
_LINK_KEYS = {
    "name": (str, True),
    "bandwidth_gb_s": (NUM, True),
    "latency_us": (NUM, False),
    "domain_gpus": (int, False),
    "source": (str, False),
}
_MEMORY_KEYS = {
    "type": (str, False),
    "capacity_gb": (NUM, True),
    "bandwidth_tb_s": (NUM, True),
    "usable_mib": (NUM, False),
}
_EFFICIENCY_KEYS = {
    "compute": (NUM, False),
    "memory": (NUM, False),
    "memory_weight_only": (NUM, False),
    "step_overhead_us": (NUM, False),
    "cases": (int, False),
    "error_band": (NUM, False),
    "source": (str, True),
}
_FAMILY_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "efficiency": (dict, True),
    "source": (str, True),
    "notes": (str, False),
}
_ACCELERATOR_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "vendor": (str, True),
    "family": (str, True),
    "aliases": (list, False),
    "memory": (dict, True),
    "dense_tflops": (dict, True),
    "sparsity_2_4": (bool, True),
    "scale_up": (dict, False),
    "host_link": (dict, False),
    "gpu_memory_fraction": (NUM, False),
    "efficiency": (dict, False),
    "source": (str, True),
    "notes": (str, False),
    "uncertain": (list, False),
}
_TIER_KEYS = {
    "id": (str, True),
    "name": (str, True),
    "kind": (str, True),
    "bandwidth_gb_s": (NUM, True),
    "latency_us": (NUM, False),
    "capacity_gb": (NUM, False),
    "aliases": (list, False),
    "source": (str, True),
    "notes": (str, False),
    "uncertain": (list, False),
}
_MODEL_KEYS: dict[str, tuple[Any, bool]] = {
    "id": (str, True),
    "name": (str, True),
    "aliases": (list, False),
    "source": (str, True),
    "notes": (str, False),
    "uncertain": (list, False),
    "published": (dict, False),
    "model_type": (str, True),
    "hidden_size": (int, True),
    "num_hidden_layers": (int, True),
    "num_attention_heads": (int, True),
    "vocab_size": (int, True),
    "intermediate_size": (int, True),
    "num_key_value_heads": (int, False),
    "head_dim": (int, False),
    "max_position_embeddings": (int, False),
    "tie_word_embeddings": (bool, False),
    "attention_bias": (bool, False),
    "qkv_bias": (bool, False),
    "use_qk_norm": (bool, False),
    "weights": (str, False),
    "n_routed_experts": (int, False),
    "num_experts_per_tok": (int, False),
    "moe_intermediate_size": (int, False),
    "n_shared_experts": (int, False),
    "first_k_dense_replace": (int, False),
    "interleave_moe_layer_step": (int, False),
    "intermediate_size_mlp": (int, False),
    "q_lora_rank": ((int, type(None)), False),
    "kv_lora_rank": (int, False),
    "qk_nope_head_dim": (int, False),
    "qk_rope_head_dim": (int, False),
    "v_head_dim": (int, False),
    "sliding_window": ((int, type(None)), False),
    "sliding_window_pattern": (int, False),
    "layer_types": (list, False),
    "num_nextn_predict_layers": (int, False),
    "index_topk": (int, False),
}
_PUBLISHED_KEYS = {"params_total_b": (NUM, False), "params_active_b": (NUM, False)}
_TIER_KINDS = ("link", "memory", "storage", "network")
_SECTIONS = ("accelerators", "tiers", "models", "families", "kernels", "engines", "links")
_ALIAS_SECTIONS = ("accelerators", "tiers", "models", "families")


def _link(where: str, data: Any, id_: str) -> Tier:
    d = _check(where, data, _LINK_KEYS)
    latency = d.get("latency_us")
    return Tier(
        id=id_,
        name=d["name"],
        kind="link",
        bandwidth_bytes_per_s=_positive(where, "bandwidth_gb_s", d["bandwidth_gb_s"]) * GB,
        latency_s=None if latency is None else latency * US,
        source=d.get("source", ""),
        domain_gpus=_domain(where, d.get("domain_gpus")),
    )


def _domain(where: str, value: int | None) -> int | None:
    if value is not None and not 1 <= value <= 100_000:
        raise CatalogError(f"{where}: key 'domain_gpus' must be from 1 to 100000, got {value}")
    return value


def _efficiency(where: str, data: Any) -> Efficiency:
    e = _check(where, data, _EFFICIENCY_KEYS)
    for key in ("compute", "memory", "memory_weight_only"):
        if key in e and not 0 < e[key] <= 1:
            raise CatalogError(f"{where}: key '{key}' must be in (0, 1], got {e[key]}")
    wo = e.get("memory_weight_only")
    return Efficiency(
        compute=float(e.get("compute", 1.0)),
        memory=float(e.get("memory", 1.0)),
        memory_weight_only=None if wo is None else float(wo),
        step_overhead_s=float(e.get("step_overhead_us", 0.0)) * US,
        source=e["source"],
        cases=int(e.get("cases", 0)),
        error_band=None if "error_band" not in e else float(e["error_band"]),
    )


@dataclass(frozen=True)
class Family:
    """A hardware family and the efficiencies its members share unless they set their own."""

    id: str
    name: str
    efficiency: Efficiency
    source: str
    aliases: tuple[str, ...] = ()


def _family(where: str, data: Any) -> Family:
    d = _check(where, data, _FAMILY_KEYS)
    return Family(
        d["id"], d["name"], _efficiency(f"{where}: efficiency", d["efficiency"]), d["source"]
    )


def _accelerator(where: str, data: Any) -> Accelerator:
    d = _check(where, data, _ACCELERATOR_KEYS)
    mem = _check(f"{where}: memory", d["memory"], _MEMORY_KEYS)
    peaks = _check(f"{where}: dense_tflops", d["dense_tflops"], dict.fromkeys(DTYPES, (NUM, False)))
    if not peaks:
        raise CatalogError(f"{where}: dense_tflops needs at least one dtype")
    eff_data = d.get("efficiency")
    eff = Efficiency() if eff_data is None else _efficiency(f"{where}: efficiency", eff_data)
    fraction = float(d.get("gpu_memory_fraction", 1.0))
    if not 0 < fraction <= 1:
        raise CatalogError(f"{where}: key 'gpu_memory_fraction' must be in (0, 1], got {fraction}")
    return Accelerator(
        id=d["id"],
        name=d["name"],
        vendor=d["vendor"],
        family=d["family"],
        memory_capacity_bytes=(
            _positive(where, "memory.usable_mib", mem["usable_mib"]) * MiB
            if "usable_mib" in mem
            else _positive(where, "memory.capacity_gb", mem["capacity_gb"]) * GB
        ),
        memory_nominal_bytes=_positive(where, "memory.capacity_gb", mem["capacity_gb"]) * GB,
        memory_bandwidth_bytes_per_s=_positive(
            where, "memory.bandwidth_tb_s", mem["bandwidth_tb_s"]
        )
        * TB,
        memory_type=mem.get("type", ""),
        peak_flops_per_s={
            k: _positive(where, f"dense_tflops.{k}", v) * TFLOPS for k, v in peaks.items()
        },
        sparsity_2_4=d["sparsity_2_4"],
        scale_up=_link(f"{where}: scale_up", d["scale_up"], "scale-up")
        if "scale_up" in d
        else None,
        host_link=_link(f"{where}: host_link", d["host_link"], "host")
        if "host_link" in d
        else None,
        gpu_memory_fraction=fraction,
        efficiency=eff,
        aliases=tuple(str(a) for a in d.get("aliases", [])),
        source=d["source"],
        notes=d.get("notes", ""),
    )


def _tier(where: str, data: Any) -> Tier:
    d = _check(where, data, _TIER_KEYS)
    if d["kind"] not in _TIER_KINDS:
        raise CatalogError(f"{where}: key 'kind' must be one of {', '.join(_TIER_KINDS)}")
    capacity, latency = d.get("capacity_gb"), d.get("latency_us")
    return Tier(
        id=d["id"],
        name=d["name"],
        kind=d["kind"],
        bandwidth_bytes_per_s=_positive(where, "bandwidth_gb_s", d["bandwidth_gb_s"]) * GB,
        latency_s=None if latency is None else latency * US,
        capacity_bytes=None if capacity is None else capacity * GB,
        aliases=tuple(str(a) for a in d.get("aliases", [])),
        source=d["source"],
        notes=d.get("notes", ""),
    )


def _model(where: str, data: Any) -> ModelArch:
    d = dict(_check(where, data, _MODEL_KEYS))
    if d["model_type"] not in MODEL_TYPES:
        raise CatalogError(
            f"{where}: model_type '{d['model_type']}' is not supported "
            f"(supported: {', '.join(MODEL_TYPES)})"
        )
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        _positive(where, key, d[key])
    published = _check(f"{where}: published", d.pop("published", {}), _PUBLISHED_KEYS)
    if d.get("n_routed_experts") and not d.get("num_experts_per_tok"):
        raise CatalogError(f"{where}: MoE model needs key 'num_experts_per_tok'")
    if d.get("kv_lora_rank") and not all(
        d.get(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    ):
        raise CatalogError(
            f"{where}: MLA needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim "
            "with kv_lora_rank"
        )
    types = d.get("layer_types")
    if types is not None:
        bad = [t for t in types if t not in ("sliding_attention", "full_attention")]
        if bad or len(types) != d["num_hidden_layers"]:
            raise CatalogError(
                f"{where}: key 'layer_types' needs num_hidden_layers entries of "
                "'sliding_attention' or 'full_attention'"
            )
        d["layer_types"] = tuple(types)
    d.pop("uncertain", None)
    if "weights" in d:  # the format the checkpoint ships in (set by `models import`)
        try:
            d["native_weights"] = weight_format(d.pop("weights")).name
        except RooflineError as exc:
            raise CatalogError(f"{where}: key 'weights': {exc}") from None
    d["aliases"] = tuple(str(a) for a in d.get("aliases", []))
    total, active = published.get("params_total_b"), published.get("params_active_b")
    d["published_params_total"] = None if total is None else total * 1e9
    d["published_params_active"] = None if active is None else active * 1e9
    return ModelArch(**d)


_BUILDERS = {
    "accelerators": _accelerator,
    "tiers": _tier,
    "models": _model,
    "families": _family,
    "kernels": kernel_entry,
    "engines": engine_profile,
    "links": link_set,  # measured collectives per link kind (hardware/links.yaml)
}


def _load_file(path: Path, problems: list[str] | None = None) -> dict[str, list[Any]]:
    """Parse one YAML file into {section: [entries]} with validation. With a `problems` list,
    a bad entry is recorded there and skipped, so one pass finds every bad entry; without it the
    first problem raises."""
    text = read_text(path)
    try:
        raw = _safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise CatalogError(
            f"{path}:{line} is not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: expected a mapping with one of {', '.join(_SECTIONS)}")
    out: dict[str, list[Any]] = {}
    for section, entries in raw.items():
        if section not in _BUILDERS:
            raise CatalogError(
                f"{path}: unknown top-level key '{section}' (expected {', '.join(_SECTIONS)})"
            )
        if not isinstance(entries, list):
            raise CatalogError(f"{path}: '{section}' must be a list of entries")
        built = []
        for i, entry in enumerate(entries):
            name = entry.get("id", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
            try:
                built.append(_BUILDERS[section](f"{path}: {section[:-1]} '{name}'", entry))
            except CatalogError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
        out[section] = built
    return out


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

    def add_dir(self, directory: Path, problems: list[str] | None = None) -> None:
        """Load every *.yaml below a directory; ids repeated inside it are an error, ids already
        in the catalog from an earlier directory are overridden. With a `problems` list every
        problem is recorded there instead of raising the first."""
        if not directory.is_dir():
            raise CatalogError(f"{directory}: catalog directory does not exist")
        seen: dict[str, Path] = {}
        for path in _yaml_files(directory):
            if path.name == PRICES_FILE:
                continue  # read by load_prices
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
                        own = entry.efficiency != Efficiency()
                        (self.own_efficiency.add if own else self.own_efficiency.discard)(entry.id)
        alias_problems = self.alias_problems()
        _PARSED.save()
        if alias_problems and problems is None:
            raise CatalogError(alias_problems[0])
        if problems is not None:
            problems.extend(p for p in alias_problems if p not in problems)
        self._apply_families()

    def _apply_families(self) -> None:
        """Give every accelerator without its own efficiency block its family's, then attach the
        kernel curves of its GPU generation (hardware/kernels.yaml: measured, or borrowed) and
        the engine profiles (hardware/engines.yaml)."""
        for hw_id, hw in list(self.accelerators.items()):
            family = self.families.get(hw.family)
            eff = hw.efficiency
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
            self.accelerators[hw_id] = replace(hw, efficiency=eff)

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
        table = getattr(self, section)
        if name in table:
            return table[name]
        lowered = name.lower()
        for entry in table.values():
            if lowered == entry.id.lower() or lowered in (a.lower() for a in entry.aliases):
                return entry
        names = list(table) + [a for e in table.values() for a in e.aliases]
        from difflib import get_close_matches  # only on an error

        close = get_close_matches(lowered, names, n=3, cutoff=0.5)
        hint = (
            f"did you mean {' or '.join(repr(c) for c in close)}?"
            if close
            else f"see `roofline {what} list`"
        )
        raise UnknownEntryError(f"unknown {what} '{name}'", hint=hint)

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
            return self._get("models", "models", name)
        except UnknownEntryError:
            from roofline.hfcache import is_repo_id  # Hugging Face only for unknown names

            if not is_repo_id(name):
                raise
        return model_from_config(name)


def _no_constant(path: Path):
    """json.loads accepts NaN and Infinity; a config.json holding them is refused by name."""

    def refuse(name: str) -> None:
        raise CatalogError(f"{path}: {name} is not a number a config may hold")

    return refuse


def read_hf_config(path: str | Path, model_id: str | None = None) -> dict[str, Any]:
    """A catalog entry (dict) from a local Hugging Face config.json, a folder holding one, or a
    Hub repo id (`org/name`) found in the local Hugging Face cache; never the network."""
    from roofline.hfcache import cached_config, is_repo_id
    from roofline.hfconfig import entry_from_config

    p, source = Path(path), None
    if p.is_dir():
        p = p / "config.json"
    elif not p.exists() and is_repo_id(str(path)):
        repo = str(path)
        p = cached_config(repo)
        model_id = model_id or repo.split("/")[1].lower()
        source = f"{repo} config.json (Hugging Face cache {p.parent.name[:12]})"
    text = read_text(p)
    try:
        cfg = json.loads(text, parse_constant=_no_constant(p))
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{p}: is not valid JSON (line {exc.lineno}: {exc.msg})") from None
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
    packaged = Path(__file__).resolve().parent / "_catalog"  # the wheel maps the catalogs here
    root = packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent
    return [root / "hardware", root / "models"]


def user_dirs(extra: Iterable[str | Path] = ()) -> list[Path]:
    """ROOFLINE_CATALOG (os.pathsep-separated) then --catalog directories, in that order."""
    env = os.environ.get("ROOFLINE_CATALOG", "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [Path(p) for p in extra]


@cache
def _shipped() -> Catalog:
    """The shipped catalog, resolved (families applied, kernel curves attached): from the cache's
    snapshot while no shipped file changed, else built from the files (each through the parse
    cache) and snapshotted."""
    dirs = shipped_dirs()
    key = files_key([p for d in dirs if d.is_dir() for p in _yaml_files(d)])
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
    )
    for directory in dirs:
        cat.add_dir(directory)
    return cat


def validate_dirs(dirs: Iterable[Path]) -> list[str]:
    """Check catalog directories as the loader would combine them; return every problem found:
    bad YAML, bad entries (each entry's problem), duplicate ids, alias collisions (empty: all
    good)."""
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
    return problems


# ---- prices, power and serving traces (roofline.serving) -----------------------------------
PRICES_FILE = "prices.yaml"
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
}


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """GPU-hour prices and board power by accelerator id (hardware/prices.yaml), strictly."""
    if path is None:
        path = shipped_dirs()[0] / PRICES_FILE
    path = Path(path)
    raw = cached = _PARSED.get(path) if path.is_file() else None  # parsed before, unchanged
    if raw is None:
        text = read_text(path)
        try:
            raw = _safe_load(text)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", exc)
            raise CatalogError(f"{path}: is not valid YAML ({problem})") from None
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
        out[d["id"]] = Price(
            d["id"],
            _positive(where, "usd_per_gpu_hour", d["usd_per_gpu_hour"]),
            _positive(where, "board_power_w", d["board_power_w"]),
            f"{path.name}: median of {len(d['offers'])} on-demand offers; {d['power_source']}",
        )
    if cached is None:  # only a file without problems is cached
        _PARSED.put(path, raw)
        _PARSED.save()
    return out

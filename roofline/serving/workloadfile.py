"""A workload file (YAML): the classes of traffic one pool serves, each with its rate, lengths,
SLOs and priority, and the reasoning and agent fields (docs/COMMANDS.md "Workload files").

    rate: 40                 # arrivals/s over all classes (requests, parents, sessions)
    classes:
      - name: chat
        share: 0.7           # or rate: 28 (then the top-level rate may be left out)
        prompt: 1000         # tokens, or a distribution levers.kvcache.parse_lengths reads
        output: 200
        slo_ttft: 1s
        slo_tpot: 50ms
        priority: 0          # lower is served first (vLLM's convention)
      - name: reasoning
        prompt: 2000
        output: 300          # the answer after the thinking
        thinking_budget: 8000  # thinking tokens, at most (the whole budget unless thinking_tokens)
        thinking_share: 1.0  # share of requests that think (the on/off mix)
        n: 4                 # parallel samples sharing the prompt's KV (vLLM n, SGLang fork)
      - name: agent
        system_prompt: 8000  # tokens every session starts with, shared through the prefix cache
        turns: 10            # requests per session; each turn's prompt holds the history
        tool_wait: lognormal:median=2s,sigma=0.8   # or a fixed time: 2s
        fan_out: 4           # sub-agents fanned out from each session's first context
        retention: pinned    # its KV between turns: cache, pinned, offload or drop (--retention)

Every error names the file, the class and the key. The builder is roofline.serving.mix.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.units import latency_limit, parse_seconds
from roofline.serving.workload import MAX_RATE, MIN_RATE

TOP_KEYS = {"rate", "classes", "description"}
CLASS_KEYS = {
    "name", "share", "rate", "prompt", "output", "slo_ttft", "slo_tpot", "priority",
    "thinking_budget", "thinking_tokens", "thinking_share", "n", "share_prompt",
    "system_prompt", "turns", "tool_wait", "fan_out", "retention",
}  # fmt: skip
MAX_CLASSES = 32


@dataclass(frozen=True)
class Wait:
    """A wait in seconds: fixed, or lognormal with `median_s` and log-space `sigma`."""

    median_s: float = 0.0
    sigma: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.sigma == 0.0:
            return np.full(n, self.median_s)
        return self.median_s * np.exp(self.sigma * rng.standard_normal(n))

    def text(self) -> str:
        if self.sigma == 0.0:
            return f"{self.median_s:g} s"
        return f"lognormal, median {self.median_s:g} s, sigma {self.sigma:g}"


@dataclass(frozen=True)
class ClassSpec:
    """One class of traffic. `rate` its arrivals/s (None: `share` of the file's rate); an
    arrival is one request, the parent of `n` samples, or one agent session of `turns` turns."""

    name: str
    share: float | None = None
    rate: float | None = None
    prompt: str | int = 1000
    output: str | int = 1000  # as --output (1k)
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    priority: int = 0
    thinking_budget: int = 0
    thinking_tokens: str | int | None = None  # None: the whole budget
    thinking_share: float = 1.0
    n: int = 1
    share_prompt: bool = True
    system_prompt: int = 0
    turns: int = 1
    tool_wait: Wait = Wait()
    fan_out: int = 0  # sub-agents per session, fanned out from its first turn's context
    retention: str | None = None  # KV between turns (serving.sim.kvtiers; None: --retention)

    @property
    def sequences_per_arrival(self) -> int:
        return self.n * self.turns + self.fan_out


@dataclass(frozen=True)
class WorkloadMix:
    """The classes and the rate they share (arrivals/s over all classes)."""

    classes: tuple[ClassSpec, ...]
    rate: float
    where: str = "workload"

    def class_rates(self, rate: float | None = None) -> list[float]:
        """Arrivals/s of each class at a total of `rate` (the file's when None): shares of the
        rate, a class with its own rate scaled with the total."""
        scale = 1.0 if rate is None else rate / self.rate
        return [
            (c.rate if c.rate is not None else (c.share or 0.0) * self.rate) * scale
            for c in self.classes
        ]

    def sequences_per_s(self, rate: float | None = None) -> float:
        rates = self.class_rates(rate)
        return sum(r * c.sequences_per_arrival for r, c in zip(rates, self.classes, strict=True))

    def only(self, i: int) -> WorkloadMix:
        """Class i alone, at its own rate."""
        c = self.classes[i]
        r = self.class_rates()[i]
        one = ClassSpec(**{**c.__dict__, "share": 1.0, "rate": None})
        return WorkloadMix((one,), r, self.where)


def read_workload(path: str | Path) -> WorkloadMix:
    """Read and check a workload file; InputError naming the file, class and key."""
    from roofline.catalog.files import read_yaml

    return parse_workload(read_yaml(path), str(path))


def parse_workload(doc: Any, where: str = "workload") -> WorkloadMix:
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a mapping with 'classes' (and 'rate')")
    _unknown(doc, TOP_KEYS, where)
    raw = doc.get("classes")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_CLASSES:
        raise InputError(f"{where}: 'classes' must be a list of 1 to {MAX_CLASSES} classes")
    classes = tuple(_class(c, i, where) for i, c in enumerate(raw))
    names = [c.name for c in classes]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise InputError(f"{where}: class '{dup[0]}' is named twice")
    rate = doc.get("rate")
    if rate is not None:
        rate = _number(rate, f"{where}: rate", 1e-6, 1e6)
    shares = [c.share for c in classes if c.rate is None]
    if any(s is None for s in shares) and len(classes) > 1:
        bad = next(c.name for c in classes if c.rate is None and c.share is None)
        raise InputError(f"{where}: class '{bad}': give share (of the rate) or rate")
    own = sum(c.rate for c in classes if c.rate is not None)
    if shares:
        total = sum(s if s is not None else 1.0 for s in shares)
        if rate is None:
            raise InputError(f"{where}: rate: needed for the classes given by share")
        if own == 0 and abs(total - 1.0) > 1e-6:
            raise InputError(f"{where}: the classes' shares add up to {total:g}, not 1")
        classes = tuple(
            c if c.rate is not None or c.share is not None else _with_share(c) for c in classes
        )
    elif rate is None:
        rate = own
    return WorkloadMix(classes, float(rate), where)


def _with_share(c: ClassSpec) -> ClassSpec:
    return ClassSpec(**{**c.__dict__, "share": 1.0})


def _class(c: Any, i: int, where: str) -> ClassSpec:
    if not isinstance(c, dict):
        raise InputError(f"{where}: class {i + 1}: expected a mapping of keys")
    name = c.get("name", f"class{i + 1}")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", name):
        raise InputError(f"{where}: class {i + 1}: name must be 1 to 32 letters, digits, _ . -")
    at = f"{where}: class '{name}'"
    _unknown(c, CLASS_KEYS, at)
    if "share" in c and "rate" in c:
        raise InputError(f"{at}: give share or rate, not both")
    kw: dict[str, Any] = {"name": name}
    if "share" in c:
        kw["share"] = _number(c["share"], f"{at}: share", 1e-9, 1.0)
    if "rate" in c:
        kw["rate"] = _number(c["rate"], f"{at}: rate", MIN_RATE, MAX_RATE)
    for key in ("prompt", "output"):
        if key in c:
            kw[key] = _lengths(c[key], f"{at}: {key}")
    for key in ("slo_ttft", "slo_tpot"):
        if key in c:
            kw[f"{key}_s"] = latency_limit(_seconds(c[key], f"{at}: {key}"), f"{at}: {key}")
    ints = {"priority": (-1_000_000, 1_000_000), "thinking_budget": (0, 1_000_000),
            "n": (1, 64), "system_prompt": (0, 1_000_000), "turns": (1, 100),
            "fan_out": (0, 64)}  # fmt: skip
    for key, (lo, hi) in ints.items():
        if key in c:
            v = c[key]
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"{at}: {key} must be a whole number from {lo} to {hi}")
            kw[key] = v
    if "thinking_tokens" in c:
        if not kw.get("thinking_budget"):
            raise InputError(f"{at}: thinking_tokens needs thinking_budget (the cap)")
        kw["thinking_tokens"] = _lengths(c["thinking_tokens"], f"{at}: thinking_tokens")
    if "thinking_share" in c:
        kw["thinking_share"] = _number(c["thinking_share"], f"{at}: thinking_share", 0.0, 1.0)
    if "share_prompt" in c:
        if not isinstance(c["share_prompt"], bool):
            raise InputError(f"{at}: share_prompt must be true or false")
        kw["share_prompt"] = c["share_prompt"]
    if "tool_wait" in c:
        kw["tool_wait"] = _wait(c["tool_wait"], f"{at}: tool_wait")
        if kw.get("turns", 1) == 1:
            raise InputError(f"{at}: tool_wait needs turns (the waits are between turns)")
    if "retention" in c:
        from roofline.serving.sim.kvtiers import RETENTIONS

        if c["retention"] not in RETENTIONS:
            raise InputError(f"{at}: retention must be one of {', '.join(RETENTIONS)}")
        if kw.get("turns", 1) == 1:
            raise InputError(f"{at}: retention needs turns (it is the KV kept between them)")
        kw["retention"] = c["retention"]
    if kw.get("fan_out") and kw.get("n", 1) > 1:
        raise InputError(f"{at}: fan_out is for agent sessions; n samples and fan_out together"
                         " are not modelled")  # fmt: skip
    if kw.get("n", 1) > 1 and kw.get("turns", 1) > 1:
        raise InputError(f"{at}: n samples and turns together are not modelled; pick one")
    return ClassSpec(**kw)


def _unknown(d: dict, keys: set[str], at: str) -> None:
    extra = sorted(set(map(str, d)) - keys)
    if extra:
        raise InputError(f"{at}: unknown key '{extra[0]}' (use {', '.join(sorted(keys))})")


def _number(v: Any, at: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise InputError(f"{at}: must be a number from {lo:g} to {hi:g}")
    if not lo <= v <= hi:
        raise InputError(f"{at}: must be from {lo:g} to {hi:g}, got {v:g}")
    return float(v)


def _lengths(v: Any, at: str) -> str | int:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise InputError(f"{at}: a number of tokens or a distribution (lognormal:mean=…,sigma=…)")
    if isinstance(v, int):
        if not 1 <= v <= 10_000_000:
            raise InputError(f"{at}: must be from 1 to 10,000,000 tokens, got {v}")
        return v
    from roofline.domain.units import parse_count
    from roofline.levers.kvcache import parse_lengths

    try:  # "2k" reads as 2000
        n = int(parse_count(v, at))
    except InputError:  # a distribution: read here, so its errors name the file's key
        parse_lengths(v, 10_000_000, n=1, what=at)
        return v.strip()
    return _lengths(n, at)


def _seconds(v: Any, at: str) -> float:
    """A time written with its unit ('2s', '50ms'); a bare number is refused, as on the command
    line and in check specs (50 would be 50 seconds where 50 ms was meant)."""
    if isinstance(v, bool) or not isinstance(v, str):
        raise InputError(f"{at}: a time with its unit, such as 2s or 50ms, got {v!r}")
    t = parse_seconds(v, at)
    if not (math.isfinite(t) and t > 0):
        raise InputError(f"{at}: must be a positive time, got {v}")
    return t


def _wait(v: Any, at: str) -> Wait:
    """'2s' (fixed) or 'lognormal:median=2s,sigma=0.8'."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return Wait(_seconds(f"{v}s", at))
    if not isinstance(v, str):
        raise InputError(f"{at}: a time (2s) or lognormal:median=2s,sigma=0.8")
    if not v.startswith("lognormal:"):
        return Wait(parse_seconds(v, at))
    params = dict(item.partition("=")[::2] for item in v[len("lognormal:") :].split(","))
    if set(params) != {"median", "sigma"}:
        raise InputError(f"{at}: lognormal takes median= and sigma=, got {v}")
    sigma = _number(_float(params["sigma"], at), f"{at}: sigma", 0.0, 5.0)
    return Wait(parse_seconds(params["median"], at), sigma)


def _float(s: str, at: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise InputError(f"{at}: cannot read '{s}' as a number") from None

"""A serving workload: when requests arrive and how long their prompts and answers are.

Arrivals: a Poisson process at `rate` requests/s (exponential gaps, the usual open-loop model of
independent users; vLLM's benchmark_serving draws the same), or a closed loop of `concurrency`
users who each send their next request when the last one finishes (no think time), or the
arrival times of a trace. Lengths: fixed, or anything `roofline.levers.kvcache.parse_lengths` reads
(a list, a file of numbers, sharegpt, alpaca, lognormal:…, uniform:…, fixed:…), or a trace's.
Gaps are drawn at unit rate and divided by the rate, so one seed gives the same requests at every
rate, only closer together or further apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from roofline.domain.errors import InputError
from roofline.domain.units import fmt_rate
from roofline.levers.kvcache import parse_lengths
from roofline.serving.sim.prefixcache import PrefixConfig, PrefixInfo

MAX_REQUESTS = 1_000_000
# The offered rates a run takes, requests (or arrivals) per second: from about nine a day (below
# it a replica idles between requests, and its $/Mtok is the idle GPU's) to a million a second
MIN_RATE, MAX_RATE = 1e-4, 1e6


def checked_requests(n: object, what: str) -> int:
    """`n` if a whole number of requests from 1 to MAX_REQUESTS, else an InputError naming
    `what` (true is not 1 request)."""
    x = float(n) if isinstance(n, (int, float, np.number)) and not isinstance(n, bool) else 0.0
    if not (math.isfinite(x) and x == int(x) and 1 <= x <= MAX_REQUESTS):
        raise InputError(f"{what} must be a whole number from 1 to {MAX_REQUESTS:,}, got {n}")
    return int(x)


def checked_rate(rate: float, what: str) -> float:
    """`rate` (requests/s) if from MIN_RATE to MAX_RATE, else an InputError naming `what`."""
    if not (math.isfinite(rate) and MIN_RATE <= rate <= MAX_RATE):
        why = f"from {MIN_RATE:g} (about nine a day) to {MAX_RATE:g} requests/s"
        raise InputError(f"{what} must be {why}, got {rate:g}")
    return rate


MAX_TOKENS = 10_000_000


@dataclass(frozen=True)
class Workload:
    """Requests sorted by arrival. `concurrency` set: a closed loop (arrival_s of the first
    `concurrency` requests is 0, the rest are released as requests finish, until duration_s)."""

    arrival_s: np.ndarray
    prompts: np.ndarray
    outputs: np.ndarray
    rate: float | None
    concurrency: int | None
    duration_s: float | None
    description: dict[str, Any]
    # (prompt, output) as given: a length or a distribution to draw from (None: a trace)
    length_dists: tuple[str | int, str | int] | None = None
    burstiness: float = 1.0  # gamma-distributed gaps of shape `burstiness` (1: Poisson)
    prefix: PrefixInfo | None = None  # shared prefixes and conversations (with_prefix)
    prefix_config: PrefixConfig | None = None
    drawn: tuple[np.ndarray, np.ndarray] | None = None  # the lengths before with_prefix
    replay: bool = False  # arrival times replayed from a log or trace (not a stationary process)
    # a workload file's classes (roofline.serving.mix): each request's class and priority (None:
    # one priority), the file, and how it was drawn (about mix_requests sequences, mix_rate
    # arrivals/s over the classes; `rate` above counts sequences/s)
    klass: np.ndarray | None = None
    priority: np.ndarray | None = None
    mix: Any = None
    mix_requests: int = 0
    mix_rate: float = 0.0
    mix_retime: Any = None  # (rate, seed) -> the classes redrawn at `rate` arrivals/s (mix.py)

    @property
    def stationary(self) -> bool:
        """Open-loop arrivals of a stationary process (Poisson or gamma gaps at `rate`): its
        queue has a steady state below the saturation rate and none above it."""
        return self.rate is not None and self.concurrency is None and not self.replay

    @property
    def n(self) -> int:
        return len(self.prompts)

    @property
    def max_len(self) -> int:
        """The longest prompt plus the longest output: the tokens a replica must hold."""
        return int(self.prompts.max() + self.outputs.max())

    def offered_to(self, n: int, replicas: int) -> float | None:
        """The requests/s `n` of a fleet's `replicas` replicas are offered (None: a closed loop,
        or no rate)."""
        offered = self.rate if self.concurrency is None else None
        return offered * n / replicas if offered else None


def _count(rate: float | None, requests: int | None, duration_s: float | None, conc) -> int:
    if requests is not None:
        return checked_requests(requests, "--requests")
    if duration_s is not None:
        if not (math.isfinite(duration_s) and duration_s > 0):
            raise InputError(f"--duration must be a positive time, got {duration_s}")
        if rate is not None:
            n = math.ceil(rate * duration_s)
            if n > MAX_REQUESTS:
                raise InputError(
                    f"--rate × --duration asks for {n:,} requests; at most {MAX_REQUESTS:,}"
                )
            return max(n, 1)
        return min(MAX_REQUESTS, max(10 * (conc or 1), 10_000))  # released until the duration
    return 1000


def draw_lengths(lengths: str | int, n: int, seed: int, what: str) -> tuple[np.ndarray, str]:
    if isinstance(lengths, int | np.integer):
        if not 1 <= lengths <= MAX_TOKENS:
            raise InputError(f"--{what} must be from 1 to {MAX_TOKENS:,} tokens, got {lengths}")
        return np.full(n, int(lengths), dtype=np.int64), f"fixed {lengths}"
    values, desc = parse_lengths(lengths, MAX_TOKENS, n, seed)
    if len(values) < n:  # a list or file shorter than the run is repeated in order
        values = np.resize(values, n)
    return values[:n].astype(np.int64), desc


def make_workload(
    prompt: str | int = 1000,
    output: str | int = 200,
    rate: float | None = None,
    concurrency: int | None = None,
    requests: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
    burstiness: float = 1.0,
) -> Workload:
    """Build a workload; exactly one of `rate` and `concurrency`; `burstiness` shapes an open
    loop's gaps (unit_gaps). Sizes and parameters are checked before anything is allocated."""
    burstiness = check_burstiness(burstiness)
    if (rate is None) == (concurrency is None):
        raise InputError("give a request rate (--rate) or a number of users (--concurrency)")
    if rate is not None and not (math.isfinite(rate) and 0 < rate <= 1e6):
        raise InputError(f"--rate must be a positive number of requests/s up to 1e6, got {rate}")
    if concurrency is not None and not 1 <= concurrency <= 100_000:
        raise InputError(f"--concurrency must be from 1 to 100000, got {concurrency}")
    if not 0 <= seed < 2**32:
        raise InputError(f"--seed must be from 0 to 2^32 − 1, got {seed}")
    n = _count(rate, requests, duration_s, concurrency)
    prompts, p_desc = draw_lengths(prompt, n, seed + 1, "prompt")
    outputs, o_desc = draw_lengths(output, n, seed + 2, "output")
    if rate is not None:  # the first request arrives at t = 0
        arrival = np.cumsum(unit_gaps(np.random.default_rng(seed), n, burstiness)) / rate
        arrivals = arrivals_text(rate, burstiness)
    else:
        arrival = np.zeros(n)
        arrivals = f"closed loop, {concurrency} users, no think time"
    desc = {
        "arrivals": arrivals,
        "requests": n,
        "duration_s": duration_s,
        "seed": seed,
        "prompt_lengths": p_desc,
        "output_lengths": o_desc,
        "prompt_tokens_mean": float(prompts.mean()),
        "output_tokens_mean": float(outputs.mean()),
    }
    specs = (prompt, output)
    return Workload(
        arrival, prompts, outputs, rate, concurrency, duration_s, desc, specs, burstiness
    )


def workload_from_trace(records: list[dict[str, Any]], where: str = "trace") -> Workload:
    """A workload from trace records {input_tokens, output_tokens, optional arrival_s}; records
    without arrival times need `with_rate` (Poisson) afterwards, or arrive at t = 0."""
    if not records:
        raise InputError(f"{where}: no requests")
    if len(records) > MAX_REQUESTS:
        raise InputError(f"{where}: at most {MAX_REQUESTS:,} requests, got {len(records):,}")
    keys = {"input_tokens", "output_tokens", "arrival_s"}
    p = np.empty(len(records), dtype=np.int64)
    o = np.empty(len(records), dtype=np.int64)
    a = np.zeros(len(records))
    timed = None
    for i, rec in enumerate(records):
        line = f"{where} line {i + 1}"
        if not isinstance(rec, dict):
            raise InputError(f"{line}: expected an object")
        extra = set(rec) - keys
        if extra:
            raise InputError(f"{line}: unknown key '{sorted(extra)[0]}' (use {sorted(keys)})")
        for key, arr in (("input_tokens", p), ("output_tokens", o)):
            v = rec.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_TOKENS:
                raise InputError(f"{line}: {key} must be a whole number from 1 to {MAX_TOKENS:,}")
            arr[i] = v
        has = "arrival_s" in rec
        if timed is None:
            timed = has
        elif timed != has:
            raise InputError(f"{line}: give arrival_s on every line or on none")
        if has:
            v = rec["arrival_s"]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise InputError(f"{line}: arrival_s must be a number of seconds")
            if v < 0:
                raise InputError(f"{line}: arrival_s must not be negative")
            a[i] = v
    arrivals = f"trace ({where})" if timed else "trace without times: all at t = 0"
    lengths = f"{len(records)} from {where}"
    return replayed(a, p, o, arrivals, lengths, lengths)


def replayed(
    t: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    arrivals: str,
    prompt_lengths: str,
    output_lengths: str,
    speedup: float = 1.0,
    duration_s: float | None = None,
) -> Workload:
    """Requests at times `t` (seconds, any order) replayed from the first one, sorted by time and
    divided by `speedup`, at the rate their span implies ((n − 1) / span; None when all arrive at
    once); the description says where they came from (`arrivals`, `*_lengths`)."""
    order = np.argsort(t, kind="stable")
    t = (t[order] - t.min()) / speedup
    span = float(t[-1] - t[0])
    desc = {
        "arrivals": arrivals,
        "requests": len(t),
        "duration_s": duration_s,
        "seed": None,
        "prompt_lengths": prompt_lengths,
        "output_lengths": output_lengths,
        "prompt_tokens_mean": float(prompts.mean()),
        "output_tokens_mean": float(outputs.mean()),
    }
    rate = (len(t) - 1) / span if span > 0 else None
    return Workload(t, prompts[order], outputs[order], rate, None, None, desc, replay=True)


def unit_gaps(rng: np.random.Generator, n: int, burstiness: float = 1.0) -> np.ndarray:
    """n gaps of mean 1, the first 0: exponential (a Poisson process), or gamma of shape
    `burstiness` and scale 1/burstiness, vLLM benchmark_serving's --burstiness (coefficient of
    variation 1/sqrt(burstiness): below 1 burstier than Poisson, above 1 more regular)."""
    if burstiness == 1.0:
        gaps = rng.exponential(1.0, n)
    else:
        gaps = rng.gamma(burstiness, 1.0 / burstiness, n)
    gaps[0] = 0.0
    return gaps


def arrivals_text(rate: float | list[float], burstiness: float = 1.0) -> str:
    """The arrival process named as every label names it: Poisson or gamma (with its
    burstiness and CV) at `rate`, or at each of several rates (a serve sweep's)."""
    rates = [rate] if isinstance(rate, (int, float)) else list(rate)
    at = (
        f"{fmt_rate(rates[0])} requests/s"
        if len(rates) == 1
        else f"at each of {len(rates)} rates, {fmt_rate(min(rates))} to"
        f" {fmt_rate(max(rates))} requests/s"
    )
    if burstiness == 1.0:
        return f"Poisson, {at}"
    cv = 1.0 / math.sqrt(burstiness)
    return f"gamma, burstiness {burstiness:g} (CV {cv:.2g}), {at}"


def check_burstiness(burstiness: float) -> float:
    if not (math.isfinite(burstiness) and 0.01 <= burstiness <= 100):
        raise InputError(f"--burstiness must be from 0.01 to 100 (1: Poisson), got {burstiness}")
    return float(burstiness)


def with_rate(w: Workload, rate: float, seed: int = 0) -> Workload:
    """The same requests arriving at `rate` with the workload's burstiness (Poisson at 1), for
    a rate sweep; a workload file's classes at `rate` arrivals/s over them."""
    if not (math.isfinite(rate) and 0 < rate <= 1e6):
        raise InputError(f"--rate must be a positive number of requests/s up to 1e6, got {rate}")
    if w.mix_retime is not None:  # a workload file's classes: `rate` arrivals/s over them
        return w.mix_retime(rate, seed)
    if w.prefix_config is not None:
        return with_prefix(with_rate(unprefixed(w), rate, seed), w.prefix_config, seed)
    gaps = unit_gaps(np.random.default_rng(seed), w.n, w.burstiness)
    desc = {**w.description, "arrivals": arrivals_text(rate, w.burstiness)}
    arrival = np.cumsum(gaps) / rate
    return Workload(
        arrival, w.prompts, w.outputs, rate, None, None, desc, w.length_dists, w.burstiness
    )


def unprefixed(w: Workload) -> Workload:
    """`w` before with_prefix: its drawn lengths, every request on its own."""
    if w.prefix_config is None or w.drawn is None:
        return w
    p, o = w.drawn
    desc = {k: v for k, v in w.description.items() if k != "prefix_caching"}
    n = {"requests": len(p), "prompt_tokens_mean": float(p.mean())}
    arrival = w.arrival_s if w.prefix_config.turns == 1 else np.zeros(len(p))
    return replace(
        w,
        arrival_s=arrival,
        prompts=p,
        outputs=o,
        description={**desc, **n},
        prefix=None,
        prefix_config=None,
        drawn=None,
    )


def with_prefix(w: Workload, lengths: PrefixConfig | None, seed: int = 0) -> Workload:
    """`w`'s requests with a shared prefix and in conversations (PrefixConfig.build): the first
    turns arrive as `w` says (conversations start at rate / turns, the same burstiness; a closed
    loop's users each hold one conversation at a time; without a rate all at t = 0), the later
    ones when released."""
    if lengths is None:
        return w
    if lengths.shared_tokens >= int(w.prompts.max(initial=0)) > 0:  # would be cut to fit each
        raise InputError(
            f"a shared prefix of {lengths.shared_tokens:,} tokens is no shorter than the prompts"
            f" ({int(w.prompts.max()):,} tokens at most): the prefix is part of the prompt"
        )
    prompts, outputs, info = lengths.build(w.prompts, w.outputs)
    c = info.n_first
    if lengths.turns == 1:
        arrival = w.arrival_s
    else:  # the later turns wait for their predecessors
        arrival = np.full(len(prompts), math.inf)
        arrival[:c] = 0.0
        if w.rate is not None and w.concurrency is None:
            gaps = unit_gaps(np.random.default_rng(seed), c, w.burstiness)
            arrival[:c] = np.cumsum(gaps) / (w.rate / lengths.turns)
    desc = {
        **w.description,
        "requests": len(prompts),
        "prefix_caching": lengths.text(),
        **(
            {"arrivals": f"{w.description.get('arrivals')}: conversations start at rate / turns"}
            if lengths.turns > 1 and w.rate is not None and w.concurrency is None
            else {}
        ),
        "prompt_tokens_mean": float(prompts.mean()),
        "output_tokens_mean": float(outputs.mean()),
    }
    return replace(
        w,
        arrival_s=arrival,
        prompts=prompts,
        outputs=outputs,
        description=desc,
        prefix=info,
        prefix_config=lengths,
        drawn=(w.prompts, w.outputs),
    )

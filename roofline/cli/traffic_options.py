"""The traffic options of serve, size, disagg and check, declared once (arrivals, SLOs, prices),
and their parsers; the rest of the shared vocabulary is in roofline/cli/options.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from roofline.cli.options import (
    CONFIDENCE,
    OUTPUT,
    PROMPT,
    Confidence,
    Output,
    OutputDist,
    Prompt,
    PromptDist,
    comma_items,
    tokens,
)
from roofline.cli.traffic_rules import traffic_rules
from roofline.domain.errors import InputError
from roofline.domain.units import parse_seconds

Rate = Annotated[
    str | None,
    typer.Option("--rate", help="requests/s, Poisson arrivals: 4 | 1,2,4 | 0.5..20:0.5"),
]
OneRate = Annotated[str | None, typer.Option("--rate", help="requests/s, Poisson: one, e.g. 4")]
WorkloadFile = Annotated[
    str | None,
    typer.Option(
        "--workload",
        help="a workload file (YAML): classes with their rates, lengths, SLOs, priorities,"
        " reasoning (thinking, n samples) and agent sessions, in place of the single-shape"
        " options; --rate then scales the arrivals/s over all classes",
    ),
]
Burstiness = Annotated[
    float,
    typer.Option(
        "--burstiness",
        help="arrival gaps gamma-distributed with this shape, as vLLM's benchmark_serving: 1"
        " Poisson, below 1 burstier (CV = 1/sqrt(burstiness))",
    ),
]
Arrivals = Annotated[
    str | None,
    typer.Option(
        "--arrivals",
        help="replay an arrival log: Azure LLM trace CSV, BurstGPT CSV, Mooncake JSONL or"
        " roofline JSONL (arrival_s, input_tokens, output_tokens); detected by content",
    ),
]
TrafficDayOption = Annotated[
    str | None,
    typer.Option(
        "--traffic-curve",
        help="a day's traffic: CSV hour,rate | minute,rate | time_s,rate, a YAML/JSON list of"
        " the same, or an arrival log (binned); replicas, GPU-hours and $ per day",
    ),
]
ScaleUpDelay = Annotated[
    str | None,
    typer.Option(
        "--scale-up-delay",
        help="seconds from ordering a replica to serving, e.g. 90s (default: weight bytes /"
        " load bandwidth + engine start, hardware/engines.yaml)",
    ),
]
SizeOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="an HTML report to FILE.html; with --traffic-curve, the day's chart to "
        "FILE.svg|png|pdf (plot extra)",
    ),
]
Speedup = Annotated[
    float, typer.Option("--speedup", help="divide an arrival log's times (2: twice the rate)")
]
Concurrency = Annotated[
    int | None,
    typer.Option(
        "--concurrency", help="closed loop: N users, each sends its next request when one ends"
    ),
]
Duration = Annotated[
    str | None,
    typer.Option("--duration", help="simulate this long instead of --requests, e.g. 600s, 10min"),
]
SloTtft = Annotated[str | None, typer.Option("--slo-ttft", help="SLO on TTFT, e.g. 2s")]
SloTpot = Annotated[str | None, typer.Option("--slo-tpot", help="SLO on TPOT, e.g. 50ms")]
SloPct = Annotated[float, typer.Option("--slo-pct", help="percentile the SLOs must hold at")]
Price = Annotated[
    str | None,
    typer.Option("--price", help="USD per GPU-hour, overriding hardware/prices.yaml: h100=2.49"),
]
Router = Annotated[
    str,
    typer.Option(
        "--router",
        help="how requests reach the replicas: least-loaded (vLLM's data-parallel balancer,"
        " what vllm serve --data-parallel-size gets), round-robin, affinity (a session on one"
        " replica) or cache-aware (SGLang's router)",
    ),
]
Minimize = Annotated[str, typer.Option("--minimize", help="mark the cheapest (cost) or gpus")]
HardwareList = Annotated[
    str | None,
    typer.Option("--hardware", help="accelerators to consider (default h100,h200,b200,mi300x)"),
]
ChunkedPrefill = Annotated[
    bool | None,
    typer.Option(
        "--chunked-prefill/--no-chunked-prefill",
        help="prefill chunks share steps with running decodes (default: the engine version's;"
        " on for vLLM V1, off for V0)",
    ),
]
SchedulerSteps = Annotated[
    int,
    typer.Option(
        "--num-scheduler-steps",
        min=1,
        help="vLLM V0's multi-step scheduling (--engine vllm@0.6): schedule once every N decode"
        " steps",
    ),
]
Frontend = Annotated[
    str,
    typer.Option(
        "--frontend",
        help="what sends the requests: api (the engine's API server: HTTP, tokenization,"
        " streamed detokenization) or none (an offline harness such as vLLM's LLM class or"
        " trtllm-bench: no API-server cost)",
    ),
]
SharedPrefix = Annotated[
    str | None,
    typer.Option(
        "--shared-prefix",
        help="the first tokens of every prompt are one cached prefix (a system prompt): 2k, or a"
        " share of the prompt below 1 (0.5); the prompt includes it",
    ),
]
Prefixes = Annotated[
    int,
    typer.Option("--prefixes", help="distinct shared prefixes, one drawn per conversation"),
]
Turns = Annotated[
    int,
    typer.Option(
        "--turns",
        help="turns per conversation: each turn's prompt = the last turn's prompt + output +"
        " --prompt new tokens (less the shared prefix), cached",
    ),
]
ThinkTime = Annotated[
    str, typer.Option("--think-time", help="between a turn's last token and the next turn, e.g. 5s")
]
SLO_PCT = 99.0


@dataclass(frozen=True)
class LengthOptions:
    """Request lengths, one group (cli.groups) in serve, size and disagg: fixed or drawn."""

    prompt: Prompt = PROMPT
    output: Output = OUTPUT
    prompt_dist: PromptDist = None
    output_dist: OutputDist = None

    def once(self, arrivals: str | None = None, workload: str | None = None) -> None:
        """Each length from one source (issue 33 item 4: options that cannot apply are errors):
        --prompt/--output given beside what holds the lengths (a workload file, an arrival log,
        a trace in --prompt-dist, or a --prompt-dist/--output-dist to draw from) are an
        InputError, not silently left out. Given = not the default (an explicit --prompt 1k is
        indistinguishable from none, and harmless)."""
        fixed = {"--prompt": self.prompt != PROMPT, "--output": self.output != OUTPUT}
        given = [k for k, v in fixed.items() if v]
        if not given:
            return
        holder = (
            "--workload: the file holds the classes' lengths"
            if workload is not None
            else "--arrivals: the log holds each request's lengths"
            if arrivals is not None
            else "--prompt-dist: the trace holds each request's lengths"
            if is_trace(self.prompt_dist)
            else None
        )
        if holder is not None:
            raise InputError(f"{holder}; drop {' and '.join(given)}")
        for flag, dist in (("--prompt", self.prompt_dist), ("--output", self.output_dist)):
            if flag in given and dist:
                raise InputError(f"{flag}-dist draws the lengths {flag} would fix: give one")


LENGTHS_DEFAULT = LengthOptions()


@dataclass(frozen=True)
class PrefixOptions:
    """Shared prefixes and conversations, one group (cli.groups) in serve and size."""

    shared_prefix: SharedPrefix = None
    prefixes: Prefixes = 1
    turns: Turns = 1
    think_time: ThinkTime = "0s"

    def config(self, seed: int = 0):
        """The core PrefixConfig (prefix_config), or None when no option is given."""
        return prefix_config(self.shared_prefix, self.prefixes, self.turns, self.think_time, seed)


@dataclass(frozen=True)
class SloOptions:
    """The SLOs, one group (cli.groups) in serve, size and disagg."""

    slo_ttft: SloTtft = None
    slo_tpot: SloTpot = None
    slo_pct: SloPct = SLO_PCT

    def slo(self):
        """The core Slo (slo)."""
        return slo(self.slo_ttft, self.slo_tpot, self.slo_pct)


@dataclass(frozen=True)
class ArrivalOptions:
    """The traffic a command sizes or checks against, one group (cli.groups) in check (and its
    spec keys of the same names, which report reads): an arrival log replayed as it came
    (--arrivals, --speedup), gamma arrivals (--burstiness), a workload file's classes
    (--workload), and the confidence sized to (--confidence). Which of them can apply together
    is decided once, for options and spec keys alike (traffic_rules)."""

    arrivals: Arrivals = None
    speedup: Speedup = 1.0
    burstiness: Burstiness = 1.0
    workload: WorkloadFile = None
    confidence: Confidence = CONFIDENCE

    def spec_keys(self) -> dict[str, object]:
        """The options given, as a check spec's keys (defaults left out)."""
        given: dict[str, object] = {"arrivals": self.arrivals, "workload": self.workload}
        given["speedup"] = None if self.speedup == 1.0 else self.speedup
        given["burstiness"] = None if self.burstiness == 1.0 else self.burstiness
        given["confidence"] = None if self.confidence == CONFIDENCE else self.confidence
        return {k: v for k, v in given.items() if v is not None}

    def served(
        self,
        rate: str | None,
        concurrency: int | None,
        requests: int | None,
        duration: str | None,
        lens: LengthOptions = LENGTHS_DEFAULT,
    ):
        """serve's (arrivals, speedup, burstiness, workload), under the rule size, check and
        report apply (traffic_rules); serve reports the expected figures with their bands, so a
        confidence to size to does not apply."""
        if self.confidence != CONFIDENCE:
            raise InputError(
                "--confidence sizes a fleet to its error bands (size, check, report); serve"
                " reports the expected figures: drop --confidence"
            )
        keys = {**self.spec_keys(), "rate": rate, "requests": requests, "duration": duration,
                "concurrency": concurrency}  # fmt: skip
        traffic_rules({k: v for k, v in keys.items() if v is not None})
        lens.once(self.arrivals, self.workload)
        return self.arrivals, self.speedup, self.burstiness, self.workload

    def sized(
        self,
        requests: int | None,
        traffic_curve: str | None,
        rate: str | None = None,
        lens: LengthOptions = LENGTHS_DEFAULT,
    ):
        """size's (arrivals, speedup, burstiness, workload, confidence), under the rule check
        and report apply (traffic_rules)."""
        keys = {**self.spec_keys(), "requests": requests, "traffic_curve": traffic_curve,
                "rate": rate}  # fmt: skip
        traffic_rules({k: v for k, v in keys.items() if v is not None}, sizes=True)
        lens.once(self.arrivals, self.workload)
        return self.arrivals, self.speedup, self.burstiness, self.workload, self.confidence


LENGTHS, PREFIX, SLO = LengthOptions(), PrefixOptions(), SloOptions()
ARRIVALS = ArrivalOptions()
SERVE_REQUESTS = 1000


def rates(text: str) -> list[float]:
    """'4' | '1,2,4' | '0.5..20:0.5' (a step) | '1..64' (doubling): requests/s, at most 200."""
    items = None if ".." in text else comma_items(text, "--rate")  # its own message, not read's
    try:
        if items is None:
            lo_text, _, rest = text.partition("..")
            hi_text, _, step_text = rest.partition(":")
            lo, hi = float(lo_text), float(hi_text)
            if step_text:
                step = float(step_text)
                count = int(np.floor((hi - lo) / step + 1e-9)) + 1 if step > 0 else 0
                values = [lo + i * step for i in range(min(count, 201))]
            else:
                values = [lo]
                while 0 < values[-1] * 2 <= hi * (1 + 1e-9) and len(values) <= 200:
                    values.append(values[-1] * 2)
        else:
            values = [float(v) for v in items]
    except ValueError:
        raise InputError(f"cannot read --rate {text!r}: use 4, 1,2,4 or 0.5..20:0.5") from None
    if ".." in text and hi < lo:
        raise InputError(f"--rate {text!r}: the range runs backwards ({lo:g} > {hi:g})")
    if not values or len(values) > 200:
        raise InputError(f"--rate {text!r}: give 1 to 200 rates")
    from roofline.serving.workload import checked_rate  # not on analyze's import path

    return [checked_rate(v, f"--rate {text!r}: each rate") for v in values]


def slo(ttft: str | None, tpot: str | None, pct: float):
    """The SLOs (core object) from --slo-ttft, --slo-tpot and --slo-pct."""
    from roofline.serving.metrics import Slo

    return Slo(
        parse_seconds(ttft, "--slo-ttft") if ttft is not None else None,
        parse_seconds(tpot, "--slo-tpot") if tpot is not None else None,
        pct,
    )


def prefix_config(
    shared: str | None, prefixes: int = 1, turns: int = 1, think: str = "0s", seed: int = 0
):
    """The prefix-caching options as a core PrefixConfig, or None when none is given (then every
    request is new, as without a cache)."""
    from roofline.serving.sim.prefixcache import PrefixConfig

    think_s = parse_seconds(think, "--think-time")
    if shared is None and turns == 1:
        if prefixes != 1 or think_s:
            raise InputError("--prefixes needs --shared-prefix; --think-time needs --turns")
        return None
    n, f = 0, 0.0
    if shared is not None:
        try:
            value = float(shared)
        except ValueError:
            value = None
        if value is not None and 0 < value < 1:
            f = value
        else:
            n = tokens(shared, "--shared-prefix", 1)
    return PrefixConfig(n, f, turns, think_s, prefixes, seed)


def serving_workload(
    lengths: LengthOptions,
    rate: float | None,
    concurrency: int | None,
    requests: int | None,
    duration: str | None,
    seed: int,
    burstiness: float = 1.0,
    arrivals: str | None = None,
    speedup: float = 1.0,
    prefix=None,
):
    """The workload of serve/size/disagg: --prompt/--output fixed, --prompt-dist/--output-dist
    drawn, or a JSONL trace (`--prompt-dist trace.jsonl`: input_tokens, output_tokens and
    optionally arrival_s per line; its arrival times win unless --rate is given); open-loop
    gaps shaped by --burstiness; `prefix` (prefix_config) shares prefixes and builds
    conversations."""
    from roofline.serving.workload import with_prefix

    w = _workload(
        lengths, rate, concurrency, requests, duration, seed, burstiness, arrivals, speedup
    )
    if prefix is not None and prefix.turns > 1 and w.length_dists is None:
        raise InputError("--turns builds conversations from --prompt/--output, not from a trace")
    return with_prefix(w, prefix, seed)


def _workload(
    lengths: LengthOptions,
    rate,
    concurrency,
    requests,
    duration,
    seed,
    burstiness,
    arrivals,
    speedup,
):
    from dataclasses import replace

    from roofline.catalog.files import read_jsonl
    from roofline.serving.workload import (
        check_burstiness,
        make_workload,
        with_rate,
        workload_from_trace,
    )

    prompt, output, prompt_dist, output_dist = (
        lengths.prompt, lengths.output, lengths.prompt_dist, lengths.output_dist
    )  # fmt: skip
    if arrivals is not None:  # an arrival log: Azure, BurstGPT, Mooncake or roofline's JSONL
        from roofline.serving.arrivals import read_arrivals

        if requests is not None or duration is not None:
            raise InputError(
                "--arrivals replays the whole log: drop --requests/--duration (trim the file,"
                " or --speedup to compress its time)"
            )
        if prompt_dist or output_dist:
            raise InputError("--arrivals brings its own lengths: drop --prompt-dist/--output-dist")
        w = read_arrivals(arrivals, speedup)
        if rate is not None:
            return with_rate(replace(w, burstiness=check_burstiness(burstiness)), rate, seed)
        if w.rate is None:
            raise InputError(f"{arrivals}: every request at one time: give --rate")
        return w
    if speedup != 1.0:
        raise InputError("--speedup time-scales an arrival log: give --arrivals FILE")
    if prompt_dist and is_trace(prompt_dist):
        w = _trace(prompt_dist, read_jsonl, workload_from_trace)
        if output_dist:
            raise InputError(
                "a trace in --prompt-dist brings its output lengths: drop --output-dist"
            )
        if requests is not None and requests < w.n:
            raise InputError("--requests cannot cut a trace; trim the file instead")
        if rate is not None:
            return with_rate(replace(w, burstiness=check_burstiness(burstiness)), rate, seed)
        if w.rate is None:
            raise InputError(f"{prompt_dist} has no arrival_s: give --rate")
        return w
    dur = parse_seconds(duration, "--duration") if duration is not None else None
    if requests is None and dur is None:
        requests = SERVE_REQUESTS
    p = prompt_dist if prompt_dist else tokens(prompt, "--prompt", 1)
    o = output_dist if output_dist else tokens(output, "--output", 1)
    return make_workload(p, o, rate, concurrency, requests, dur, seed, burstiness)


def is_trace(prompt_dist: str | None) -> bool:
    """--prompt-dist names a file of requests (JSONL or CSV), not a distribution."""
    return bool(prompt_dist) and str(prompt_dist).lower().endswith((".jsonl", ".csv"))


def _trace(path: str, read_jsonl, workload_from_trace):
    """A --prompt-dist trace: roofline's JSONL (input_tokens, output_tokens, optional
    arrival_s), or a published log read as --arrivals reads it (Azure or BurstGPT CSV, Mooncake
    JSONL; serving.arrivals), any length up to its limit."""
    from roofline.serving.arrivals import read_arrivals

    if path.lower().endswith(".csv"):
        return read_arrivals(path)
    recs = read_jsonl(path)
    first = recs[0] if recs and isinstance(recs[0], dict) else {}
    if "input_tokens" in first or "output_tokens" in first or not recs:
        return workload_from_trace(recs, path)
    return read_arrivals(path)


def price_table(cat, text: str | None) -> dict:
    """Prices by accelerator id: hardware/prices.yaml with --price overrides (ids or aliases,
    checked against the catalog)."""
    from roofline.catalog.load import load_prices
    from roofline.domain.hardware import Price
    from roofline.serving.cost import parse_price_overrides

    table = dict(load_prices())
    for key, usd in parse_price_overrides(text).items():
        hw = cat.accelerator(key)
        base = table.get(hw.id)
        table[hw.id] = Price(hw.id, usd, base.board_power_w if base else None, "--price")
    return table


def pool_split(text: str | None) -> tuple[int, int] | None:
    """'14:4' -> (14, 4): prefill and decode replicas of one disaggregated unit."""
    if text is None:
        return None
    p, sep, d = text.partition(":")
    if not (sep and p.strip().isdigit() and d.strip().isdigit()):
        raise InputError(f"--pools: use P:D, prefill:decode replicas, e.g. 14:4 (got {text!r})")
    n_p, n_d = int(p), int(d)
    if not (1 <= n_p <= 1024 and 1 <= n_d <= 1024):
        raise InputError(f"--pools: each pool has 1 to 1024 replicas, got {text}")
    return n_p, n_d

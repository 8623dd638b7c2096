"""Which traffic options (and check spec keys of the same names) can apply together: one rule
for serve, size, check and report (cli.traffic_options.ArrivalOptions)."""

from __future__ import annotations

from typing import Any

from roofline.domain.errors import InputError

# keys a workload file's classes replace (their lengths, prefixes, turns and arrival processes)
WORKLOAD_REPLACES = ("prompt_dist", "output_dist", "arrivals", "burstiness", "shared_prefix",
                     "turns", "speedup")  # fmt: skip


def traffic_rules(d: dict[str, Any], sizes: bool = False) -> None:
    """Which traffic keys (check's options of the same names, cli.traffic_options
    .ArrivalOptions) can apply together; the rest is an InputError naming why. An arrival log
    is replayed whole at its own times: `requests` (`duration`) cannot cut it, `burstiness`
    shapes it only re-timed at a `rate`, and `speedup` compresses a log's own times only (not
    beside a `rate`, nor without a log); a workload file holds its classes' lengths, prefixes
    and arrivals (no closed loop, `concurrency`); a confidence sizes traffic or a day's curve
    (`sizes`: `size`, which always does)."""
    log, given = d.get("arrivals") is not None, [k for k in WORKLOAD_REPLACES if k in d]
    if d.get("workload") is not None and d.get("concurrency") is not None:
        given.append("concurrency")  # the classes arrive at their rates: no closed loop
    if d.get("workload") is not None and given:
        raise InputError(f"--workload: the file holds the classes' lengths and arrivals; drop"
                         f" {', '.join(given)}")  # fmt: skip
    if d.get("requests") is not None and d.get("duration") is not None:
        raise InputError("--requests and --duration both set the run's length: give one")
    for key in ("requests", "duration"):
        if log and d.get(key) is not None:
            raise InputError(f"--arrivals: a log is replayed whole; --{key} cannot cut it")
    if log and d.get("concurrency") is not None:
        raise InputError(
            "--arrivals replays a log's times, --concurrency is a closed loop: give one"
        )
    if log and d.get("burstiness", 1.0) != 1.0 and d.get("rate") is None:
        raise InputError(
            "--arrivals: a log keeps its own gaps; --burstiness shapes arrivals at a --rate"
        )
    if log and d.get("speedup", 1.0) != 1.0 and d.get("rate") is not None:
        raise InputError(
            "--arrivals: --rate re-times the log's requests, --speedup compresses its own"
            " times: give one"
        )
    if not log and d.get("speedup", 1.0) != 1.0:
        raise InputError("--speedup compresses an arrival log's times: give --arrivals too")
    if log and d.get("traffic_curve") is not None:
        raise InputError(
            "--arrivals replays a log, --traffic-curve plays a day: give one (a log's day: the log"
            " as --traffic-curve, counted in windows of at least 100 requests)"
        )
    if d.get("confidence") is not None and not sizes:
        checks = d["checks"]
        if d.get("traffic_curve") is None and not any(
            checks.get(k) is not None for k in ("max_ttft_p99", "max_tpot_p99", "min_goodput")
        ):
            raise InputError(
                "--confidence sizes traffic checks (--max-ttft-p99, --max-tpot-p99,"
                " --min-goodput) or a day (--traffic-curve); none given"
            )

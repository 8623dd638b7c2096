"""`roofline fleet FLEET.yaml --days N`: the fleet's spread over N drawn days
(roofline.fleet.spread) on a process pool or on Ray (roofline.fleet.runners), as percentiles
over days."""

from __future__ import annotations

import os
from typing import Any

from roofline import render
from roofline.cli import publish as pub
from roofline.domain.errors import InputError
from roofline.fleet.day import Problem
from roofline.fleet.runners import BACKENDS, run
from roofline.fleet.spread import (
    ACCURACY,
    PERCENTILES,
    RATE_ASSUMPTION,
    SIGMA_RATE,
    Shared,
    one_day,
    percentiles,
    prepare,
)
from roofline.serving.workers import jobs

MAX_DAYS = 100_000


def check_spread(days: int | None, backend: str) -> None:
    """--days and --backend checked before any sizing (one line, exit 2)."""
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise InputError(f"--days must be from 1 to {MAX_DAYS}, got {days}")
    if backend not in BACKENDS:
        raise InputError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


def spread_doc(
    prob: Problem, seed: int, days: int, backend: str, dirs: tuple[str, ...], path: str
) -> dict[str, Any]:
    """The spread's document: inputs, percentiles over days, each day's figures. RAY_ADDRESS
    (a running cluster's address) is read here, never in the core."""
    check_spread(days, backend)
    address = os.environ.get("RAY_ADDRESS") or None
    out = run(prepare, one_day, Shared(prob, seed, dirs), range(days), backend, jobs(), address)
    inputs = {
        "model": ", ".join(prob.names),
        "fleet_file": path,
        "days": days,
        "seed": seed,
        "rate_sigma": SIGMA_RATE,
        "percentiles": list(PERCENTILES),
    }
    return render.document(
        "fleet-days",
        inputs,
        answer=percentiles(out),
        days=[vars(d) for d in out],
        assumptions={"rates": RATE_ASSUMPTION, "accuracy": ACCURACY},
    )


def publish_spread(doc: dict[str, Any], fmt: Any, out: Any) -> None:
    from roofline.render.fleetspread import spread_rows, spread_table

    pub.publish(doc, fmt, spread_rows(doc), spread_table, out)

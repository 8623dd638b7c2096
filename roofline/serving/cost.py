"""Cost and energy of a deployment.

- $/hour = GPU-hour price × GPUs (hardware/prices.yaml, or --price).
- $/million output tokens = $/hour / (output tokens/s × 3600) × 10⁶.
- Energy: each GPU draws its board power (TDP) while its replica runs a step and nothing while
  it is idle: J/s = board power × GPUs × utilisation, so J per output token = board power × GPUs
  × utilisation / output tokens/s. An upper bound while busy (memory-bound decode draws less
  than TDP) and a lower bound when idle (idle boards draw tens of watts); stated in every output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline.errors import InputError

ENERGY_ASSUMPTION = (
    "board power (TDP) × GPUs × utilisation: full board power while a step runs, none when idle"
)


@dataclass(frozen=True)
class Price:
    hardware: str
    usd_per_gpu_hour: float | None
    board_power_w: float | None
    source: str


def cost_per_hour(price: Price | None, gpus: int) -> float | None:
    if price is None or price.usd_per_gpu_hour is None:
        return None
    return price.usd_per_gpu_hour * gpus


def cost_per_million_output_tokens(
    usd_per_hour: float | None, output_tokens_per_s: float
) -> float | None:
    if usd_per_hour is None or not output_tokens_per_s > 0:
        return None
    return usd_per_hour / (output_tokens_per_s * 3600.0) * 1e6


def joules_per_output_token(
    price: Price | None, gpus: int, utilisation: float, output_tokens_per_s: float
) -> float | None:
    if price is None or price.board_power_w is None or not output_tokens_per_s > 0:
        return None
    return price.board_power_w * gpus * utilisation / output_tokens_per_s


def parse_price_overrides(spec: str | None) -> dict[str, float]:
    """`h100=2.49,b200=5.5` -> {"h100": 2.49, "b200": 5.5} (USD per GPU-hour)."""
    out: dict[str, float] = {}
    for item in filter(None, (spec or "").split(",")):
        key, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = math.nan
        if not sep or not key.strip() or not (math.isfinite(price) and price > 0):
            raise InputError(f"--price: cannot read '{item}' (use hardware=USD per GPU-hour)")
        out[key.strip()] = price
    return out

"""Cost and energy of a deployment.

- $/hour = GPU-hour price × GPUs (hardware/prices.yaml, or --price).
- $/million output tokens = $/hour / (output tokens/s × 3600) × 10⁶.
- Energy: each GPU draws an idle floor plus a share of the rest of its board power (TDP):
  P = idle + (TDP − idle) × (c + m × (u − c)), with c the share of its time the requests' FLOPs
  need at peak (tensor cores busy: full power), u the share of time a step runs (u − c:
  memory-bound work, drawing the share m) and idle the rest. J per output token = P × GPUs /
  output tokens/s. idle = IDLE_POWER_SHARE × TDP and m = MEMORY_POWER_SHARE, both below with
  their sources; stated in every output.
"""

from __future__ import annotations

import math

from roofline.domain.errors import InputError
from roofline.domain.hardware import Price

# A served but idle GPU: an H200 SXM with a vLLM server up reads 80 W of its 700 W (11%;
# nvidia-smi, api.serialalice.pt's H200 benchmark, June 2026); a loaded model keeps the CUDA
# context's DVFS state, 26-50 W above bare idle on HBM parts (H100, A100: Vadari, "The Model
# Parking Tax", arXiv:2605.23918, 2026), so 10-14% of an H100's 700 W [uncertain: one reading]
IDLE_POWER_SHARE = 0.11
# Memory-bound decode on an H200 draws 137-300 W of 700 W across GQA, MLA and SSM models (Ma et
# al., "The Illusion of Power Capping in LLM Decode", arXiv:2605.11999, 2026): (300 - 80) /
# (700 - 80) = 0.35 of the power above idle at saturated HBM bandwidth, the top of that range.
MEMORY_POWER_SHARE = 0.35
ENERGY_ASSUMPTION = (
    f"per GPU: idle {IDLE_POWER_SHARE:.0%} of board power (TDP), plus the rest × (share of time"
    f" at peak FLOP/s + {MEMORY_POWER_SHARE:.2f} × other busy time); J/token = power × GPUs /"
    " output tokens/s"
)


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


def power_w(board_power_w: float, power_share: float) -> float:
    """One GPU's mean draw: the idle floor plus `power_share` of the board power above it."""
    idle = IDLE_POWER_SHARE * board_power_w
    return idle + (board_power_w - idle) * min(max(power_share, 0.0), 1.0)


def joules_per_output_token(
    price: Price | None, gpus: int, power_share: float, output_tokens_per_s: float
) -> float | None:
    """power_w × GPUs / output tokens/s (`power_share`: ServeMetrics.power_share)."""
    if price is None or price.board_power_w is None or not output_tokens_per_s > 0:
        return None
    return power_w(price.board_power_w, power_share) * gpus / output_tokens_per_s


MAX_USD_PER_GPU_HOUR = 10_000.0  # past it a price is a typo (list prices: $1-15 a GPU-hour)


def parse_price_overrides(text: str | None) -> dict[str, float]:
    """`h100=2.49,b200=5.5` -> {"h100": 2.49, "b200": 5.5} (USD per GPU-hour)."""
    out: dict[str, float] = {}
    for item in filter(None, (text or "").split(",")):
        key, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = math.nan
        if not sep or not key.strip() or not math.isfinite(price):
            raise InputError(f"--price: cannot read '{item}' (use hardware=USD per GPU-hour)")
        if not 0 < price <= MAX_USD_PER_GPU_HOUR:  # 0 would make every deployment free
            raise InputError(
                f"--price {item}: a GPU-hour must cost more than $0 and at most"
                f" ${MAX_USD_PER_GPU_HOUR:,.0f}"
            )
        out[key.strip()] = price
    return out

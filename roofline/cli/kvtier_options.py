"""The KV-beyond-HBM options, one group (cli.groups) in serve, size, check and report (and the
spec keys kv_offload and retention): tiers below HBM and what a session keeps between turns
(roofline.serving.sim.kvtiers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated

import numpy as np
import typer

from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator, Tier
from roofline.levers.tiers import tier_bandwidth
from roofline.serving.router import DEFAULT_ROUTER
from roofline.serving.sim.kvtiers import (
    RETENTIONS,
    TIER_ALIASES,
    KvHierarchy,
    KvTier,
    check_retention,
    parse_offload,
)

KvOffload = Annotated[
    str | None,
    typer.Option(
        "--kv-offload",
        help="KV tiers below HBM per replica, fastest first: cpu:200GB,ssd:2TB (cpu, cxl, ssd,"
        " remote or a tier id from `roofline hardware tiers`)",
    ),
]
Retention = Annotated[
    str,
    typer.Option(
        "--retention",
        help="a session's KV between turns: cache (the engine's prefix cache, evictable),"
        " pinned, offload (to the first --kv-offload tier) or drop",
    ),
]


@dataclass(frozen=True)
class KvTierOptions:
    """--kv-offload and --retention."""

    kv_offload: KvOffload = None
    retention: Retention = "cache"

    def hierarchy(
        self, hw: Accelerator, gpus: int, tier: Callable[[str], Tier]
    ) -> KvHierarchy | None:
        """The tiers (bandwidth per GPU: roofline.levers.tiers.tier_bandwidth, the replica's
        GPUs sharing the tier) and the retention, or None when neither option is given."""
        check_retention(self.retention)
        if self.kv_offload is None and self.retention == "cache":
            return None
        if self.retention == "offload" and self.kv_offload is None:
            raise InputError("--retention offload needs --kv-offload (the tier to offload to)")
        tiers = []
        for label, size in parse_offload(self.kv_offload or "") if self.kv_offload else []:
            t = tier(TIER_ALIASES.get(label, label))
            if t.kind not in ("memory", "storage", "network"):
                raise InputError(f"--kv-offload {label}: {t.id} is a {t.kind}, not a memory tier")
            share = 1 if t.kind == "network" else max(gpus, 1)  # a NIC per GPU; a shared socket
            bw = tier_bandwidth(hw, t, sharing=share)
            tiers.append(KvTier(label, t.id, size, bw, t.source))
        return KvHierarchy(tuple(tiers), self.retention)

    def refuse(self, where: str) -> None:
        """An error when the options are given where they cannot apply."""
        if self.kv_offload is not None or self.retention != "cache":
            raise InputError(f"--kv-offload and --retention do not apply to {where}")

    def apply(self, rep, hw: Accelerator, tier: Callable[[str], Tier], w=None):
        """`rep` (serving.serve.Replica) with the hierarchy (checked)."""
        kv = self.checked(hw, rep.gpus, tier, w)
        return rep if kv is None else replace(rep, kv=kv)

    def checked(
        self, hw: Accelerator, gpus: int, tier: Callable[[str], Tier], w=None
    ) -> KvHierarchy | None:
        """The hierarchy of a replica of `gpus` GPUs; an error when workload `w` reuses no KV,
        or when a class of it offloads between turns with no tier to offload to."""
        kv = self.hierarchy(hw, gpus, tier)
        info = None if w is None else w.prefix
        if kv is not None and w is not None and info is None:
            raise InputError(
                "--kv-offload and --retention need KV that is reused: --shared-prefix, --turns,"
                " a workload file with a system prompt, samples or sessions, or a Mooncake log"
                " with hash_ids"
            )
        codes = None if info is None else info.retention
        no_tier = kv is None or not kv.tiers
        if codes is not None and no_tier and np.any(codes == RETENTIONS.index("offload")):
            raise InputError("a workload class has retention: offload; give --kv-offload")
        return kv


KV_TIERS = KvTierOptions()


def spec_keys(router: str, kt: KvTierOptions) -> dict[str, object]:
    """--router, --kv-offload and --retention as a check spec's keys of the same names (defaults
    left out), as check and report hand them to every deployment."""
    keys = {"router": None if router == DEFAULT_ROUTER else router, "kv_offload": kt.kv_offload,
            "retention": None if kt.retention == "cache" else kt.retention}  # fmt: skip
    return {k: v for k, v in keys.items() if v is not None}

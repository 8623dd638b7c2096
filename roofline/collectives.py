"""Measured collectives (hardware/kernels.yaml per GPU generation, hardware/links.yaml per
link kind): an all-reduce or all-to-all per GPU count as a per-call latency plus bytes over a
share of the link's catalog bandwidth. roofline/parallel.py prices the collectives with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

# collectives per link kind (issue 11: PCIe, xGMI, InfiniBand/RoCE)
LINK_KINDS = ("nvlink", "pcie", "xgmi", "infiniband", "roce")


@dataclass(frozen=True)
class LinkCurve:
    """Measured all-reduce per GPU count: per-call latency α and the achieved bus bandwidth as a
    share of the measured chip's catalog link bandwidth (so a sibling with a slower link scales)."""

    latency_s: Mapping[int, float]
    bandwidth_share: Mapping[int, float]

    def at(self, ranks: int) -> tuple[float, float]:
        """(α, share) at `ranks` GPUs: the measured count, else interpolated in log2(ranks) and
        held at the ends."""
        ns = sorted(self.latency_s)
        x, xs = np.log2(ranks), np.log2(ns)
        a = float(np.interp(x, xs, [self.latency_s[n] for n in ns]))
        b = float(np.interp(x, xs, [self.bandwidth_share[n] for n in ns]))
        return a, b


@dataclass(frozen=True)
class LinkSet:
    """Measured collectives on one kind of link (hardware/links.yaml): the all-reduce (and
    all-to-all) per GPU count, as latency + bytes / (share · the link's catalog bandwidth).
    `accelerators` empty: any accelerator whose link is of this kind; else only those listed
    (a generation measured on its own platform, preferred over the generic entry)."""

    id: str
    kind: str
    allreduce: LinkCurve
    alltoall: LinkCurve | None = None
    accelerators: tuple[str, ...] = ()
    source: str = ""

"""Collectives for tensor, pipeline and expert parallelism: the alpha-beta ideal, the measured
curves (hardware/kernels.yaml per GPU generation, hardware/links.yaml per link kind: a per-call
latency plus bytes over a share of the link's catalog bandwidth, per GPU count).

Ring all-reduce over n ranks of M bytes (Thakur, Rabenseifner & Gropp, "Optimization of collective
communication operations in MPICH", IJHPCA 2005; scaling book, Appendix on collectives):
    t = α · 2(n−1) + 2(n−1)/n · M / W
with W the per-direction link bandwidth and α the start latency of one step. Under tensor
parallelism a decoder layer does two all-reduces of its activations (after attention and after
the FFN; Megatron-LM, Shoeybi et al. 2019). Expert parallelism does an all-to-all dispatch and an
all-to-all combine per MoE layer: t = α · (n−1) + (n−1)/n · M / W each.

Links other than NVLink (PCIe, xGMI, InfiniBand, RoCE) take their measured curves from
hardware/links.yaml, by link kind (`link_kind`), in the same form; a pipeline send is timed by the
2-rank all-reduce of its link, which moves the same M bytes per rank (2(n−1)/n = 1):
t = α(2) + M / (s(2)·W) [uncertain: a send skips the reduction].

Expected (measured) all-reduce, where the GPU generation has nccl-tests-style data
(hardware/kernels.yaml, fitted by validation/calibrate_kernels.py on aiconfigurator-core's NCCL
timings): t = α(n) + 2(n−1)/n · M / (s(n)·W) (all-to-all: (n−1)/n), with α(n) the measured
per-call latency (the whole call, not one ring step) and s(n) the achieved share of the link's
bandwidth ("bus bandwidth" in nccl-tests' PERFORMANCE.md terms), both per GPU count n. The ideal
keeps the α-β ring above; an expected collective is never faster than it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from roofline.timing.roofline import FloatArray

# collectives per link kind (issue 11: PCIe, xGMI, InfiniBand/RoCE)
LINK_KINDS = ("nvlink", "pcie", "xgmi", "infiniband", "roce")


class Link(Protocol):
    """What a collective reads of its link (a hardware.Tier): one direction's bandwidth, the start
    latency (None: DEFAULT_LINK_LATENCY_S), and the catalog id and name its kind comes from."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def bandwidth_bytes_per_s(self) -> float: ...
    @property
    def latency_s(self) -> float | None: ...


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


DEFAULT_LINK_LATENCY_S = 1e-6  # used only when a link entry gives no latency


def _alpha(link: Link) -> float:
    return link.latency_s if link.latency_s is not None else DEFAULT_LINK_LATENCY_S


def allreduce_time_s(link: Link, ranks: int, message_bytes: ArrayLike) -> FloatArray:
    """Ring all-reduce: α·2(n−1) + 2(n−1)/n · M / W. Zero for a single rank."""
    m = np.asarray(message_bytes, dtype=float)
    if ranks <= 1:
        return np.zeros_like(m)
    steps = 2 * (ranks - 1)
    return _alpha(link) * steps + steps / ranks * m / link.bandwidth_bytes_per_s


def alltoall_time_s(link: Link, ranks: int, message_bytes: ArrayLike) -> FloatArray:
    """All-to-all of M bytes per rank: α·(n−1) + (n−1)/n · M / W. Zero for a single rank."""
    m = np.asarray(message_bytes, dtype=float)
    if ranks <= 1:
        return np.zeros_like(m)
    return _alpha(link) * (ranks - 1) + (ranks - 1) / ranks * m / link.bandwidth_bytes_per_s


def is_latency_bound(link: Link, ranks: int, message_bytes: ArrayLike) -> np.ndarray:
    """True where the start latencies cost more than moving the bytes (small messages)."""
    m = np.asarray(message_bytes, dtype=float)
    return _alpha(link) * (ranks - 1) > (ranks - 1) / max(ranks, 1) * m / link.bandwidth_bytes_per_s


def send_time_s(link: Link, message_bytes: ArrayLike) -> FloatArray:
    """Point-to-point send of M bytes (a pipeline stage's activations to the next stage): one
    start latency plus the bytes at the link's per-direction bandwidth, α + M / W (the alpha-beta
    model of one message; Hockney 1994)."""
    m = np.asarray(message_bytes, dtype=float)
    return _alpha(link) + m / link.bandwidth_bytes_per_s


def measured_allreduce_time_s(
    link: Link, curve: LinkCurve, ranks: int, message_bytes: ArrayLike
) -> FloatArray:
    """α(n) + 2(n−1)/n · M / (s(n)·W) from measured per-call latency and bus-bandwidth share."""
    return _measured(link, curve, ranks, message_bytes, 2.0)


def measured_alltoall_time_s(
    link: Link, curve: LinkCurve, ranks: int, message_bytes: ArrayLike
) -> FloatArray:
    """α(n) + (n−1)/n · M / (s(n)·W) from measured NCCL all-to-all latency and bandwidth share."""
    return _measured(link, curve, ranks, message_bytes, 1.0)


def _measured(
    link: Link, curve: LinkCurve, ranks: int, message_bytes: ArrayLike, passes: float
) -> FloatArray:
    """α(n) + passes · (n−1)/n · M / (s(n)·W): a collective over `ranks` from the measured
    per-call latency α(n) and bus-bandwidth share s(n) (LinkCurve.at); `passes` is 2 for a ring
    all-reduce (reduce-scatter then all-gather), 1 for an all-to-all."""
    m = np.asarray(message_bytes, dtype=float)
    if ranks <= 1:
        return np.zeros_like(m)
    alpha, share = curve.at(ranks)
    return alpha + passes * (ranks - 1) / ranks * m / (share * link.bandwidth_bytes_per_s)


# ---- collectives per link kind (hardware/links.yaml) --------------------------------------------
# words of a link's catalog name or id -> its kind, most specific first (NVLink-C2C joins a CPU and
# a GPU: no GPU collective runs over it)
_KIND_WORDS = (
    ("c2c", ""),
    ("nvlink", "nvlink"),
    ("infinity fabric", "xgmi"),
    ("xgmi", "xgmi"),
    ("infiniband", "infiniband"),
    ("roce", "roce"),
    ("pcie", "pcie"),
)


def link_kind(link: Link) -> str:
    """The kind of a link from its catalog name and id: nvlink, xgmi, infiniband, roce, pcie, or
    "" (ICI, NVLink-C2C, ...: no measured collective applies)."""
    text = f"{link.id} {link.name}".lower()
    for word, kind in _KIND_WORDS:
        if word in text:
            return kind
    return ""


def link_set_for(links: tuple[LinkSet, ...], link: Link) -> LinkSet | None:
    """The first measured link set of the link's kind (the accelerator's own come first)."""
    kind = link_kind(link)
    return next((ls for ls in links if ls.kind == kind), None) if kind else None


def measured_send_time_s(link: Link, curve: LinkCurve, message_bytes: ArrayLike) -> FloatArray:
    """A pipeline send of M bytes timed by the link's measured 2-rank all-reduce (the same M
    bytes per rank): α(2) + M / (s(2)·W)."""
    alpha, share = curve.at(2)
    m = np.asarray(message_bytes, dtype=float)
    return alpha + m / (share * link.bandwidth_bytes_per_s)


def measured_collective_time_s(
    kind: str,
    link: Link,
    allreduce: LinkCurve | None,
    alltoall: LinkCurve | None,
    ranks: int,
    message_bytes: ArrayLike,
) -> FloatArray | None:
    """One collective op (allreduce, alltoall or p2p: a send timed by the all-reduce curve) on a
    link with measured curves; None when the curve it needs was not measured."""
    if kind in ("p2p", "allreduce") and allreduce is not None:
        if kind == "p2p":
            return measured_send_time_s(link, allreduce, message_bytes)
        return measured_allreduce_time_s(link, allreduce, ranks, message_bytes)
    if kind == "alltoall" and alltoall is not None:
        return measured_alltoall_time_s(link, alltoall, ranks, message_bytes)
    return None


# ---- end of collectives per link kind -----------------------------------------------------------


def collective_curves(
    link: Link,
    home: Link | None,
    kernels: Any,
    links: tuple[LinkSet, ...],
    engine_allreduce: str | None = None,
    phase: str = "decode",
) -> tuple[LinkCurve | None, LinkCurve | None, LinkCurve | None]:
    """The measured (all-reduce, all-to-all, the engine's own all-reduce) curves a collective on
    `link` takes. A GPU generation's curves (`kernels`: its hardware.KernelSet, or None) were
    measured on its own NVLink, so only the GPU's own link (`home`: scale-up, else host) of
    NVLink kind takes them: NCCL's all-reduce, the engine's one-shot all-reduce where it has one
    (`engine_allreduce`: EngineProfile.allreduce_kernel) and the all-to-all DeepEP's where
    measured, else NCCL's: in `phase` "prefill" its high-throughput ("normal") kernels' curve
    where fitted apart, else the low-latency kernels' (DeepEP's normal kernels serve training and
    inference prefilling, the low-latency ones inference decoding: deepseek-ai/DeepEP README;
    aiconfigurator's collector times TensorRT-LLM's DeepEP for the context phase and
    DeepEPLowLatency for generation, DEEPEP_COLLECTOR_CONTRACTS). Other links (PCIe, xGMI,
    InfiniBand) take hardware/links.yaml by kind (`links`); a link with none keeps the
    alpha-beta ideal."""
    if link is home and link_kind(link) == "nvlink":
        if kernels is None:
            return None, None, None
        ep = kernels.ep_alltoall
        if phase == "prefill" and kernels.ep_alltoall_prefill is not None:
            ep = kernels.ep_alltoall_prefill
        a2a = (ep or kernels.alltoall) if kernels.alltoall else None
        own = kernels.engine_allreduce.get(engine_allreduce) if engine_allreduce else None
        return kernels.allreduce, a2a, own
    ls = link_set_for(links, link)
    return (ls.allreduce, ls.alltoall, None) if ls is not None else (None, None, None)


def collective_time_s(
    kind: str,
    link: Link,
    ranks: int,
    message_bytes: ArrayLike,
    layers: float,
    curves: tuple[LinkCurve | None, LinkCurve | None, LinkCurve | None],
) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """(ideal, expected, bound) of one collective op (allreduce, alltoall or p2p) over `layers`
    layers: the alpha-beta ideal; the measured curve (collective_curves), the engine's own
    all-reduce where faster, never below the ideal (a one-shot kernel can beat the ring's
    per-step latencies, not the wire); bound "latency" where the start latencies cost more than
    moving the bytes, else "link"."""
    if kind == "p2p":
        t_ideal = send_time_s(link, message_bytes) * layers
    else:
        timer = alltoall_time_s if kind == "alltoall" else allreduce_time_s
        t_ideal = timer(link, ranks, message_bytes) * layers
    t = t_ideal
    allreduce, alltoall, own = curves
    t_link = measured_collective_time_s(kind, link, allreduce, alltoall, ranks, message_bytes)
    if t_link is not None:
        if kind == "allreduce" and own is not None:
            t_own = measured_allreduce_time_s(link, own, ranks, message_bytes)
            t_link = np.minimum(t_link, t_own)
        t = np.maximum(t_link * layers, t_ideal)
    latency = is_latency_bound(link, ranks, message_bytes)
    return t_ideal, t, np.where(latency, "latency", "link")

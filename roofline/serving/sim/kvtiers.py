"""KV beyond HBM in the serving simulator: lower tiers under the prefix cache, and what a session
keeps between its turns.

Tiers (`--kv-offload cpu:200GB,ssd:2TB`): host DRAM (`cpu`, the catalog's ddr5-socket-spr), a CXL
expander (`cxl`, cxl2-x16), local NVMe (`ssd`, nvme-gen5) and a remote store (`remote`: a
Mooncake-style pool of other hosts' DRAM reached over each GPU's own 400 Gb/s NIC, infiniband-ndr;
Qin et al., "Mooncake", FAST'25, Mooncake Store), or any catalog tier id, each with a capacity
per replica. This is the shape of LMCache's local CPU and disk backends
(docs.lmcache.ai, "CPU RAM" and "Local storage" backends: KV stored in chunks as the prefill
writes it, looked up by prefix hash on the next request), vLLM's CPU KV offload connector
(OffloadingConnector) and SGLang's HiCache (a host-memory tier under the radix tree, Zheng et
al. and the HiCache docs). Blocks the HBM prefix cache evicts go to the first tier (LRU there);
a tier's overflow goes to the next, and past the last it is gone. A request whose prefix is not
in HBM but in a tier loads it back: blocks × block_tokens × KV bytes per token per GPU over the
tier's per-GPU bandwidth, min(host link, tier bandwidth / GPUs of the replica sharing it; a
network tier is each GPU's own NIC, not shared) (roofline.levers.tiers.tier_bandwidth). The
load stalls the engine (the serial bound of roofline.levers.tiers: nothing hidden behind
compute; LMCache's and vLLM's layer-wise loads can hide part of it, so TTFTs here are an upper
bound of the offload's). A tier whose block loads
slower than the replica recomputes one (its prefill time per token at a 2,048-token prompt) is
not loaded from, its hits recomputed: a hit never costs more than recomputing it.

Retention (`--retention`) of a session's own KV when a turn ends and its next turn will come
(agent sessions waiting on a tool, chat turns):

- cache (the default): the engine's prefix cache keeps it, evictable least recently freed
  first (vLLM's free-block queue; SGLang's radix tree LRU), spilled to the tiers when given;
- pinned: held in HBM until the next turn, not evictable (the memory it takes is withheld from
  the running batch, as a pinned radix node in SGLang's tree is); when nothing runs and a
  waiting request needs the room, the pins yield to the evictable cache, oldest first, rather
  than stall the engine;
- offload: written to the first tier at once and freed from HBM (LMCache's store on finish);
  the next turn loads it back;
- drop: discarded; the next turn recomputes it (a stateless deployment).

The shared system prompt (a prefix group) stays in the HBM cache under every policy; only a
conversation's own blocks move between tiers.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from dataclasses import dataclass

from roofline.domain.errors import InputError

RETENTIONS = ("cache", "pinned", "offload", "drop")
TIER_ALIASES = {
    "cpu": "ddr5-socket-spr",
    "cxl": "cxl2-x16",
    "ssd": "nvme-gen5",
    "remote": "infiniband-ndr",
}
_UNITS = {"": 1.0, "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?B?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class KvTier:
    """One tier below HBM: its label, catalog tier, capacity per replica and the bandwidth one
    GPU reads it at."""

    label: str
    tier_id: str
    capacity_bytes: float
    bandwidth_bytes_per_s: float
    source: str = ""


@dataclass(frozen=True)
class KvHierarchy:
    """The tiers under HBM, fastest first, and the retention policy between turns."""

    tiers: tuple[KvTier, ...] = ()
    retention: str = "cache"

    def text(self) -> str:
        tiers = " + ".join(f"{t.label} {t.capacity_bytes / 1e9:,.0f} GB" for t in self.tiers)
        return f"KV retention {self.retention}" + (f", offload to {tiers}" if tiers else "")


def parse_size_bytes(text: str, what: str) -> float:
    """'200GB' -> 2e11 (decimal units, as the tiers command takes them)."""
    m = _SIZE.match(text)
    if not m:
        raise InputError(f"{what}: a size such as 200GB or 2TB, got {text!r}")
    unit = m.group(2).upper()
    value = float(m.group(1)) * _UNITS[unit if not unit or unit.endswith("B") else unit + "B"]
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{what}: the size must be above 0, got {text!r}")
    return value


def parse_offload(spec: str) -> list[tuple[str, float]]:
    """'cpu:200GB,ssd:2TB' -> [('cpu', 2e11), ('ssd', 2e12)], fastest first as given."""
    out = []
    for part in spec.split(","):
        name, sep, size = part.strip().partition(":")
        if not sep or not name:
            raise InputError(
                f"--kv-offload takes TIER:SIZE[,TIER:SIZE], e.g. cpu:200GB, got {spec}"
            )
        out.append((name.strip().lower(), parse_size_bytes(size, f"--kv-offload {name}")))
    return out


def check_retention(retention: str) -> str:
    if retention not in RETENTIONS:
        raise InputError(f"--retention must be one of {', '.join(RETENTIONS)}, got {retention}")
    return retention


class TierStore:
    """The tiers' contents in one simulation: per tier an LRU map key -> blocks (a
    conversation's KV from token 0), capacity in blocks, and the seconds to load one block."""

    def __init__(self, capacity_blocks: list[float], load_s_per_block: list[float]) -> None:
        self.cap = capacity_blocks
        self.load_s = load_s_per_block
        self.levels: list[OrderedDict[int, int]] = [OrderedDict() for _ in capacity_blocks]
        self.used = [0] * len(capacity_blocks)
        self.dropped = 0
        self.worth = [True] * len(capacity_blocks)  # loading beats recomputing (choose)

    def choose(self, recompute_s_per_block: float) -> None:
        """A tier whose block loads slower than the engine recomputes one is not loaded from:
        its hits are recomputed (a hit never costs more than recomputing it)."""
        self.worth = [t <= recompute_s_per_block for t in self.load_s]

    @classmethod
    def build(cls, kv: KvHierarchy, block: int, kv_bytes_per_token: float, gpus: int) -> TierStore:
        """Capacities in blocks of the replica's KV (per-GPU bytes × `gpus`), and the load time
        of one block at a GPU's share of the tier's bandwidth (each GPU loads its shard)."""
        per_block = block * kv_bytes_per_token
        caps = [t.capacity_bytes / (per_block * max(gpus, 1)) for t in kv.tiers]
        return cls(caps, [per_block / t.bandwidth_bytes_per_s for t in kv.tiers])

    def put(self, key: int, blocks: int, level: int = 0) -> None:
        """Store `blocks` under `key` in tier `level` (replacing a shorter copy anywhere);
        the least recently stored entries overflow to the next tier."""
        if blocks <= 0:
            return
        for lv in range(len(self.levels)):
            old = self.levels[lv].pop(key, None)
            if old is not None:
                self.used[lv] -= old
                blocks = max(blocks, old)
        while level < len(self.levels) and blocks > self.cap[level]:
            level += 1  # larger than the whole tier: straight to the next
        if level >= len(self.levels):
            self.dropped += blocks
            return
        self.levels[level][key] = blocks
        self.used[level] += blocks
        while self.used[level] > self.cap[level]:
            k, b = self.levels[level].popitem(last=False)
            self.used[level] -= b
            if level + 1 < len(self.levels):
                self.put(k, b, level + 1)
            else:
                self.dropped += b

    def take(self, key: int) -> tuple[int, int]:
        """(tier, blocks) of `key`'s copy, removed (it moves back to HBM); (-1, 0) if none."""
        for lv, level in enumerate(self.levels):
            b = level.pop(key, None)
            if b is not None:
                self.used[lv] -= b
                return lv, b
        return -1, 0

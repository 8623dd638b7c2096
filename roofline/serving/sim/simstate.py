"""The state one serving simulation (roofline.serving.sim.scheduler._Sim) keeps and its mixins
(Decoders, Admission) read and write: annotations only, for the type checker; _Sim.__init__
sets every attribute."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from roofline.engines.scheduler import EngineRules
    from roofline.serving.sim.prefixcache import PrefixCache
    from roofline.serving.sim.steps import StepModel


class SimState:
    """Per-request lists are indexed by request; the decoders' closed form is in decoders.py."""

    steps: StepModel
    rules: EngineRules
    cache: PrefixCache | None
    now: float
    # per request
    prompts: list[int]
    outputs: list[int]
    gen: list[int]  # tokens generated (decoders: see base)
    pf_left: list[int]
    pf_total: list[int]
    pf_skip: list[int]
    res_blocks: list[float]
    recompute_pass: list[bool]
    kv_ready: list[bool]
    admitted_s: list[float]
    last_tok: list[float]
    # the queue and the running sets
    waiting: deque[int]
    active: list[int]
    prefilling: list[int]
    swapped: set[int]
    reserved: float
    committed: float  # blocks committed to the active requests' whole sequences ("completion")
    commit: list[float]
    preemptions: int
    recomputed: int
    # the decoders in closed form (decoders.py)
    decoding: dict[int, None]
    base: dict[int, int]
    base_arr: np.ndarray | None  # base in decoding order, None when the set has changed
    fin: dict[int, int]
    heap: list[tuple[int, int]]
    fresh: list[int]
    S: int
    G: int
    F: int  # Σ fin over the decoders
    spans: int
    last_shared: float
    simple_kv: bool
    arr: list[float]
    prio: list[int] | None  # per request, lower first (None: first come, first served)
    prio_preempt: int | None  # SGLang's threshold for preempting to admit (None: never)

    if TYPE_CHECKING:  # defined by Decoders and _Sim

        def join(self, r: int) -> None: ...
        def leave(self, r: int) -> None: ...
        def ctx(self) -> np.ndarray: ...
        def blocks_sum(self, ctx: np.ndarray, extra: int) -> float: ...
        def blocks_ahead(self, extra: int) -> float: ...
        def swap_stall(self, r: int) -> None: ...

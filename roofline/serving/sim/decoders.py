"""The decoding sequences of one serving simulation (roofline.serving.sim.scheduler._Sim) in closed
form: sequence r holds context base[r] + G, where G counts the decode steps so far, so a span of
k steps adds k to G and touches no sequence; Σ contexts = S + n·G; each sequence's last step is
G = fin[r] (a heap orders them), F = Σ fin[r]."""

from __future__ import annotations

from heapq import heappush

import numpy as np

from roofline.serving.sim.simstate import SimState


class Decoders(SimState):
    """join/leave the decoding set and count its KV blocks; the state lives in the simulation
    (base, fin, heap, decoding, fresh, S, G, gen, prompts, outputs, rules, steps)."""

    def join(self, r: int) -> None:
        b = self.prompts[r] + self.gen[r] - self.G
        self.base[r] = b
        self.S += b
        f = self.G + self.outputs[r] - self.gen[r]
        self.fin[r] = f
        self.F += f
        heappush(self.heap, (f, r))
        self.decoding[r] = None
        self.fresh.append(r)
        self.base_arr = None

    def leave(self, r: int) -> None:
        b = self.base.pop(r)
        self.gen[r] = b + self.G - self.prompts[r]
        self.S -= b
        self.F -= self.fin.pop(r)
        del self.decoding[r]
        self.base_arr = None
        if r in self.fresh:
            self.fresh.remove(r)
        elif self.spans:
            self.last_tok[r] = self.last_shared

    def ctx(self) -> np.ndarray:
        """Every decoding sequence's context, in joining order: the bases (kept as an array
        until a sequence joins or leaves) + G."""
        arr = self.base_arr
        if arr is None:
            base = self.base
            arr = self.base_arr = np.fromiter((base[r] for r in self.decoding), np.int64, len(base))
        return arr + self.G

    def blocks_sum(self, ctx: np.ndarray, extra: int) -> float:
        blk = self.rules.block_tokens
        if self.simple_kv:
            return float(((ctx + (extra + blk - 1)) // blk).sum())
        return float(self.steps.blocks(ctx + extra, blk).sum())

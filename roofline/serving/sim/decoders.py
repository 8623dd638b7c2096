"""The decoding sequences of one serving simulation (roofline.serving.sim.scheduler._Sim) in closed
form: sequence r holds context base[r] + G, where G counts the decode steps so far, so a span of
k steps adds k to G and touches no sequence; Σ contexts = S + n·G; each sequence's last step is
G = fin[r] (a heap orders them), F = Σ fin[r].

With every layer's KV whole and uncapped (simple_kv), the blocks the set holds G + x steps on are
counted from the bases' blocks and remainders: base = q·blk + m gives ceil((base + G + x) / blk)
= q + C + [m ≥ blk − c] for G + x + blk − 1 = C·blk + c (0 ≤ c < blk), so Σ over the set =
Σq + n·C + the sequences whose m ≥ blk − c, from a count per remainder kept on join and leave:
the same integer as the sum over the set, without a pass over it."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush

import numpy as np

from roofline.serving.sim.simstate import SimState


class Decoders(SimState):
    """join/leave the decoding set and count its KV blocks; the state lives in the simulation
    (base, fin, heap, decoding, fresh, S, G, gen, prompts, outputs, rules, steps). The bases
    are also kept in a numpy buffer in joining order (a slot per join, a leaver's slot marked
    dead, the dead squeezed out when the buffer fills), so ctx() costs one masked copy rather
    than a Python pass over the set. A simulation that never asks for the contexts (every
    layer's KV whole and uncapped: simple_kv, no window) keeps no buffer (_track False), and
    bases() reads them from `base`, whose order is the same (a join inserts, a leave pops)."""

    _track = True  # keep the buffer
    _buf: np.ndarray | None = None  # bases by slot, in joining order
    _alive: np.ndarray  # slot still decoding
    _who: list[int]  # request per slot
    _slot: dict[int, int]  # slot per decoding request
    _top = 0  # slots used
    _ahead: dict[int, float]  # blocks_ahead's figures by G + extra, for the current set
    _qsum = 0  # simple_kv: Σ base // blk over the set
    _rem: list[int] | None = None  # simple_kv: sequences of the set per base % blk

    def _squeeze(self) -> np.ndarray:
        """The live slots moved to the front, in order, with room for as many again."""
        if self._buf is None:
            keep: list[int] = []
            old = np.zeros(0, np.int64)
        else:
            keep = np.flatnonzero(self._alive[: self._top]).tolist()
            old = self._buf
        size = max(64, 2 * (len(keep) + 1))
        buf = np.zeros(size, np.int64)
        buf[: len(keep)] = old[keep]
        self._alive = np.zeros(size, bool)
        self._alive[: len(keep)] = True
        self._who = [self._who[i] for i in keep]
        self._slot = {r: i for i, r in enumerate(self._who)}
        self._top = len(keep)
        self._buf = buf
        return buf

    def join(self, r: int) -> None:
        g, G = self.gen[r], self.G
        b = self.prompts[r] + g - G
        self.base[r] = b
        if self._track:
            buf, top = self._buf, self._top
            if buf is None or top == len(buf):
                buf, top = self._squeeze(), self._top
            buf[top] = b  # the next slot
            self._alive[top] = True
            self._who.append(r)
            self._slot[r] = top
            self._top = top + 1
        self.S += b
        rem = self._rem
        if rem is None and self.simple_kv:  # the first join sets up the count per remainder
            rem = self._rem = [0] * self.rules.block_tokens
        if rem is not None:  # simple_kv (module docstring)
            q, m = divmod(b, len(rem))
            self._qsum += q
            rem[m] += 1
        f = G + self.outputs[r] - g
        self.fin[r] = f
        self.F += f
        heappush(self.heap, (f, r))
        self.decoding[r] = None
        self.fresh.append(r)
        self.base_arr = None

    def leave(self, r: int) -> None:
        b = self.base.pop(r)
        if self._track:
            self._alive[self._slot.pop(r)] = False
        self.gen[r] = b + self.G - self.prompts[r]
        self.S -= b
        rem = self._rem
        if rem is not None:  # simple_kv (join set up the count)
            q, m = divmod(b, len(rem))
            self._qsum -= q
            rem[m] -= 1
        self.F -= self.fin.pop(r)
        del self.decoding[r]
        self.base_arr = None
        fresh = self.fresh
        if fresh and r in fresh:
            fresh.remove(r)
        elif self.spans:
            self.last_tok[r] = self.last_shared

    def ctx(self) -> np.ndarray:
        """Every decoding sequence's context, in joining order: the bases (kept as an array
        until a sequence joins or leaves) + G."""
        return self.bases() + self.G

    def bases(self) -> np.ndarray:
        """The decoders' bases in joining order, kept until a sequence joins or leaves."""
        arr = self.base_arr
        if arr is None and not self._track:
            arr = self.base_arr = np.fromiter(self.base.values(), np.int64, len(self.base))
            self._ahead = {}
        elif arr is None:
            top = self._top
            buf = self._buf if self._buf is not None else self._squeeze()
            arr = self.base_arr = buf[:top][self._alive[:top]]
            self._ahead = {}  # blocks_ahead's figures were the old set's
        return arr

    def blocks_sum(self, ctx: np.ndarray, extra: int) -> float:
        blk = self.rules.block_tokens
        if self.simple_kv:
            return float(((ctx + (extra + blk - 1)) // blk).sum())
        return self.steps.blocks_total(ctx + extra, blk)

    def steps_within(self, k: int, room: float) -> int:
        """The most steps x in 1 … k whose blocks_ahead(x) fit in `room`, 0 when none: the
        binary search of a span the KV budget cuts short (blocks_ahead grows with x). With
        simple_kv each figure is blocks_ahead's own integer, qsum + n·C + the sequences of the
        remainders blk − c and up, the latter read from suffix sums made once for the search
        instead of a sum per figure."""
        ahead: Callable[[int], float] = self.blocks_ahead
        if self.simple_kv:
            blk = self.rules.block_tokens
            rem = self._rem or [0] * blk
            suffix = [0] * (blk + 1)  # suffix[j] = sum(rem[j:])
            for j in range(blk - 1, -1, -1):
                suffix[j] = suffix[j + 1] + rem[j]
            qsum, n, top = self._qsum, len(self.decoding), self.G + blk - 1

            def from_suffix(x: int) -> float:
                c_whole, c = divmod(top + x, blk)
                return float(qsum + n * c_whole + suffix[blk - c])

            ahead = from_suffix

        lo, hi = 0, k
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if ahead(mid) <= room else (lo, mid - 1)
        return lo

    def blocks_ahead(self, extra: int) -> float:
        """blocks_sum(self.ctx(), extra), bit for bit, in fewer passes over the decoders: each
        sequence's whole blocks ceil((base + G + extra) / block) from the bases at once (the
        same integers), looked up (StepModel.blocks_of_whole) and summed in the same order. It
        depends only on G + extra while the set is unchanged, so each figure is kept until a
        sequence joins or leaves (the KV search of a span and the admissions after it ask
        again for the same). With simple_kv, from the counts kept (module docstring)."""
        if self.simple_kv:
            blk = self.rules.block_tokens
            c_whole, c = divmod(self.G + extra + blk - 1, blk)
            rem = self._rem or [0]
            return float(self._qsum + len(self.decoding) * c_whole + sum(rem[blk - c :]))
        arr = self.bases()  # (a new set clears the figures kept)
        at = self.G + extra
        got = self._ahead.get(at)
        if got is None:
            blk = self.rules.block_tokens
            whole = arr + (at + blk - 1)
            whole //= blk
            got = self.steps.blocks_of_whole(whole, blk)  # (simple_kv returned above)
            self._ahead[at] = got
        return got

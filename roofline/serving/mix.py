"""A workload of several classes (a workload file, roofline.serving.workloadfile) as one stream of
requests for the serving simulator: each class arrives as its own Poisson process at its rate,
over one common span, so the classes overlap as they would in one pool.

- Reasoning: a request that thinks (a share `thinking_share` of the class) generates its thinking
  tokens (the whole `thinking_budget`, or `thinking_tokens` drawn and capped there) before its
  answer (`output`): its output is thinking + answer.
- `n` samples of one prompt (vLLM's `n`: vllm/v1/engine/parallel_sampling.py ParentRequest fans
  a request out into n child requests of the same prompt, whose full prompt blocks the prefix
  cache shares; SGLang's `n`/fork: tokenizer_manager.py "Cache the common prefix for parallel
  sampling" sends the prompt once with max_new_tokens 0, then the n samples, which hit it in the
  radix cache) arrive together and share one copy of the prompt's KV: they are one prefix group
  (roofline.serving.sim.prefixcache: a group's blocks are pinned once however many sequences use
  them, a hit covers at most floor((L − 1) / block) blocks), each holding its own output.
  `share_prompt: false` sends them as n independent requests (the comparison).
- Agents: a session of `turns` requests; turn k's prompt is turn k − 1's prompt + output + its
  own new tokens (`prompt`, the tool's result or the user's message), sent a tool wait after turn
  k − 1's last token (`tool_wait`, drawn per turn); every session starts with the class's
  `system_prompt`, one prefix group for the class. `fan_out` K: each session's first turn
  fans out K sub-agents arriving with it (a lead agent dispatching parallel sub-agents, as in
  Anthropic's multi-agent research system, "How we built our multi-agent research system",
  2025, 3-5 sub-agents in parallel), each a one-turn request whose prompt is the lead's first
  context (system prompt + task) + its own `prompt` tokens, with its own `output`. The lead and
  its K sub-agents share one copy of that context as a prefix group (the lead computes it, the
  sub-agents hit it while it is cached; the lead's later turns hang from it as a conversation
  hangs from its system prompt). Simplification: the cache here is two-level (a group, then a
  conversation: serving.sim.prefixcache), so each session's context group holds its own copy
  of the class's system prompt (a radix cache would share it across sessions too).
Samples and sessions stay on one replica (PrefixInfo.session routes them). A class's `priority`
orders the engine's queue (roofline.serving.sim.priority).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from roofline.domain.errors import InputError
from roofline.serving.sim.prefixcache import PrefixInfo
from roofline.serving.workload import Workload, checked_requests, draw_lengths, unit_gaps
from roofline.serving.workloadfile import ClassSpec, WorkloadMix


@dataclass
class _Part:
    """One class's sequences, its first requests first (arrival order), then its later turns."""

    arrival: np.ndarray
    prompts: np.ndarray
    outputs: np.ndarray
    group: np.ndarray
    shared: np.ndarray
    conv: np.ndarray
    history: np.ndarray
    succ: np.ndarray  # local index of the next turn (−1: none)
    wait: np.ndarray
    turn: np.ndarray
    session: np.ndarray
    n_first: int


def mix_workload(
    mix: WorkloadMix, requests: int = 1000, seed: int = 0, rate: float | None = None
) -> Workload:
    """The requests of `mix` at a total of `rate` arrivals/s (None: the file's): about
    `requests` sequences in all, over a span every class shares."""
    checked_requests(requests, "--requests")
    if rate is not None and not (math.isfinite(rate) and 0 < rate <= 1e6):
        raise InputError(f"--rate must be a positive number of arrivals/s up to 1e6, got {rate}")
    rates = mix.class_rates(rate)
    seq_rate = mix.sequences_per_s(rate)
    span_s = requests / seq_rate
    parts = []
    for k, (c, r) in enumerate(zip(mix.classes, rates, strict=True)):
        units = max(1, round(r * span_s))
        parts.append(_class_part(c, r, units, seed + 7919 * (k + 1)))
    return _merge(mix, parts, rates, seq_rate, requests, seed, rate)


def _class_part(c: ClassSpec, rate: float, units: int, seed: int) -> _Part:
    """Class `c`'s sequences; group ids local to the class (0: its system prompt)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(unit_gaps(rng, units)) / rate
    n, turns = c.n, c.turns
    m = units * n * turns
    prompts, _ = draw_lengths(c.prompt, m, seed + 1, "prompt")
    outputs, _ = draw_lengths(c.output, m, seed + 2, "output")
    if c.thinking_budget:
        thinks = rng.random(m) < c.thinking_share
        if c.thinking_tokens is None:
            budget = np.full(m, c.thinking_budget, dtype=np.int64)
        else:
            drawn, _ = draw_lengths(c.thinking_tokens, m, seed + 3, "thinking_tokens")
            budget = np.minimum(drawn, c.thinking_budget)
        outputs = outputs + np.where(thinks, budget, 0)
    none = np.full(m, -1, dtype=np.int64)
    zeros = np.zeros(m, dtype=np.int64)
    idx = np.arange(m, dtype=np.int64)
    if c.fan_out:
        return _fan_out(c, rate, units, seed, rng, t)
    if turns == 1:  # requests, or the n samples of each (sample j of unit u at u·n + j)
        unit = idx // n
        prompts = prompts[unit * n]  # the samples of a unit share its prompt
        shared_on = n > 1 and c.share_prompt
        group = 1 + unit if shared_on else none
        if c.system_prompt:
            prompts = prompts + c.system_prompt
            group = np.where(group >= 0, group, 0)  # one system prompt for the class
        shared = np.where(group >= 0, prompts if shared_on else c.system_prompt, 0)
        return _Part(t[unit], prompts, outputs, group, shared.astype(np.int64), idx, zeros, none,
                     np.zeros(m), zeros, unit, m)  # fmt: skip
    # sessions: request k·units + s is turn k + 1 of session s (the first turns come first)
    sess = idx % units
    turn = idx // units
    full = prompts.copy()
    full[:units] += c.system_prompt
    history = zeros.copy()
    for k in range(1, turns):
        cur, prev = slice(k * units, (k + 1) * units), slice((k - 1) * units, k * units)
        history[cur] = full[prev] + outputs[prev]
        full[cur] = history[cur] + prompts[cur]
    succ = idx + units
    succ[succ >= m] = -1
    group = np.full(m, 0 if c.system_prompt else -1, dtype=np.int64)
    shared = np.full(m, c.system_prompt, dtype=np.int64)
    wait = np.where(turn > 0, c.tool_wait.draw(rng, m), 0.0)
    arrival = np.full(m, math.inf)
    arrival[:units] = t
    return _Part(arrival, full, outputs, group, shared, sess, history, succ, wait, turn, sess,
                 units)  # fmt: skip


def _fan_out(c: ClassSpec, rate: float, units: int, seed: int, rng, t) -> _Part:
    """Sessions (as _class_part's, any number of turns) and each one's `fan_out` sub-agents,
    arriving with its first turn: the first turns, then the sub-agents (sub-agent j of session
    s at units + s·K + j), then the later turns."""
    base = _class_part(ClassSpec(**{**c.__dict__, "fan_out": 0}),
                       rate, units, seed) if c.turns > 1 else None  # fmt: skip
    k = c.fan_out
    m_sub = units * k
    own, _ = draw_lengths(c.prompt, m_sub + units, seed + 11, "prompt")
    outs, _ = draw_lengths(c.output, m_sub + units, seed + 12, "output")
    if base is None:  # one turn: the lead's request is its session
        lead = own[:units] + c.system_prompt
        z = np.zeros(units, dtype=np.int64)
        base = _Part(t, lead, outs[:units], z, z, np.arange(units), z, np.full(units, -1),
                     np.zeros(units), z, np.arange(units), units)  # fmt: skip
    first = base.prompts[:units]  # the lead's first prompt: system prompt + task
    # every turn of the lead hangs from the context group its sub-agents share
    base = replace(base, group=1 + base.session, shared=first[base.session])
    sess = np.repeat(np.arange(units), k)
    context = first[sess]
    idx = np.arange(m_sub)
    sub = (t[sess], context + own[units:], outs[units:], 1 + sess, context,
           base.conv.max() + 1 + idx, np.zeros(m_sub, dtype=np.int64),
           np.full(m_sub, -1), np.zeros(m_sub), np.zeros(m_sub, dtype=np.int64), sess)  # fmt: skip
    shift = np.where(base.succ >= units, base.succ + m_sub, base.succ)  # later turns move down
    cols = (base.arrival, base.prompts, base.outputs, base.group, base.shared, base.conv,
            base.history, shift, base.wait, base.turn, base.session)  # fmt: skip
    o = [np.concatenate([a[:units], b, a[units:]]) for a, b in zip(cols, sub, strict=True)]
    return _Part(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], units + m_sub)


def _retention_code(c: ClassSpec) -> int:
    """The class's retention as an index of kvtiers.RETENTIONS (-1: the deployment's)."""
    from roofline.serving.sim.kvtiers import RETENTIONS

    return RETENTIONS.index(c.retention) if c.retention else -1


def _merge(mix, parts, rates, seq_rate, requests, seed, rate) -> Workload:
    """One request stream: every class's first requests sorted by arrival, then the later
    turns; groups, conversations, sessions and successors renumbered."""
    n_first = sum(p.n_first for p in parts)
    start_first = np.cumsum([0] + [p.n_first for p in parts])
    start_later = n_first + np.cumsum([0] + [len(p.prompts) - p.n_first for p in parts])
    pieces: list[list[np.ndarray]] = [[] for _ in range(12)]
    chunks = []
    g0 = c0 = s0 = 0
    for k, p in enumerate(parts):
        m = len(p.prompts)
        local = np.arange(m)
        glob = np.where(local < p.n_first, start_first[k] + local,
                        start_later[k] + local - p.n_first)  # fmt: skip
        succ = np.where(p.succ >= 0, glob[np.maximum(p.succ, 0)], -1)
        group = np.where(p.group >= 0, p.group + g0, -1)
        cols = (p.arrival, p.prompts, p.outputs, group, p.shared, p.conv + c0, p.history, succ,
                p.wait, p.turn, p.session + s0, np.full(m, k, dtype=np.int64))  # fmt: skip
        chunks.append((cols, p.n_first))
        g0 += int(p.group.max()) + 1 if m and p.group.max() >= 0 else 0
        c0 += int(p.conv.max()) + 1
        s0 += int(p.session.max()) + 1
    for first in (True, False):
        for cols, nf in chunks:
            for i, col in enumerate(cols):
                pieces[i].append(col[:nf] if first else col[nf:])
    (arrival, prompts, outputs, group, shared, conv, history, succ, wait, turn, session,
     klass) = (np.concatenate(x) for x in pieces)  # fmt: skip
    perm = np.concatenate([np.argsort(arrival[:n_first], kind="stable"),
                           np.arange(n_first, len(arrival))])  # fmt: skip
    where = np.empty(len(arrival), dtype=np.int64)  # position before sorting -> after
    where[perm] = np.arange(len(arrival))
    succ = np.where(succ >= 0, where[np.maximum(succ, 0)], -1)[perm]
    arrival, prompts, outputs = arrival[perm], prompts[perm], outputs[perm]
    group, shared, conv, history = group[perm], shared[perm], conv[perm], history[perm]
    wait, turn, session, klass = wait[perm], turn[perm], session[perm], klass[perm]
    info = PrefixInfo(group, shared, conv, history, succ, 0.0, n_first, turn, wait, session)
    codes = np.array([_retention_code(c) for c in mix.classes], dtype=np.int64)
    if np.any(codes >= 0):  # a class's own retention between turns
        info = replace(info, retention=codes[klass])
    prio = np.array([c.priority for c in mix.classes], dtype=np.int64)[klass]
    desc = {
        "arrivals": f"{len(mix.classes)} classes from {mix.where}, Poisson each, "
        f"{sum(rates):g} arrivals/s ({seq_rate:.3g} sequences/s)",
        "requests": len(prompts),
        "duration_s": None,
        "seed": seed,
        "prompt_lengths": "per class (workload file)",
        "output_lengths": "per class (workload file)",
        "prompt_tokens_mean": float(prompts.mean()),
        "output_tokens_mean": float(outputs.mean()),
    }
    cached = bool(np.any(group >= 0)) or n_first < len(prompts)
    return Workload(
        arrival, prompts, outputs, seq_rate, None, None, desc,
        prefix=info if cached else None,
        klass=klass, priority=prio if len(set(prio.tolist())) > 1 else None,
        mix=mix, mix_requests=requests, mix_rate=float(sum(rates)),
        mix_retime=lambda r, s: mix_workload(mix, requests, s, r),
    )  # fmt: skip

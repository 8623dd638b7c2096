"""The API server between the client and the engine as one first-come-first-served queue.

policy.Frontend holds its costs: `request_s` per request (parse, tokenize, hand to the engine),
`token_s` per streamed output token (detokenize, build the server-sent event) and the fixed path
`latency_s`. One Python event loop does both kinds of work, so they queue behind each other: a
new request reaches the engine after the work already handed to the server, and the tokens of a
step reach the client after the tokens of the steps before them (vLLM V1's AsyncLLM output
handler, vllm/v1/engine/async_llm.py). The scheduler (roofline.serving.sim.scheduler) hands it the
requests and the tokens of every span; with zero costs nothing queues.
"""

from __future__ import annotations

import numpy as np

from roofline.engines.scheduler import Frontend


class ApiQueue:
    """The API server's queue in one simulation: `busy_s` is when it clears the work it has been
    handed so far."""

    def __init__(self, front: Frontend | None) -> None:
        self.latency_s = front.latency_s if front is not None else 0.0
        self.request_s = front.request_s if front is not None else 0.0
        self.token_s = front.token_s if front is not None else 0.0
        self.busy_s = 0.0
        self.queues = self.request_s > 0 or self.token_s > 0  # False: no wait ever

    def tokenize_sent(self, arrival: np.ndarray, upto: int) -> None:
        """The requests sent so far (arrival[:upto], in send order) reach the engine each
        `request_s` after the server is free and it has arrived (in place); requests sent at the
        same instant (a burst) share the event loop, each handler resuming in turn at every await
        (parse, chat template, tokenize, hand-off), so they reach the engine together when the
        last is done: processor sharing among equal jobs (gpustack's 984-request bursts of
        128-token prompts, vllm bench serve: TTFT p50 5.5 s and p99 5.8 s, where one after
        another would spread them from 0 to p99)."""
        if self.request_s <= 0:
            return
        sent = arrival[:upto].tolist()  # (Python floats: the same doubles, 10x faster to walk)
        free, i, per = 0.0, 0, self.request_s
        while i < upto:
            a, j = sent[i], i + 1
            while j < upto and sent[j] == a:
                j += 1
            free = max(a, free) + (j - i) * per
            sent[i:j] = [free] * (j - i)
            i = j
        arrival[:upto] = sent

    def wait_s(self, now: float) -> float:
        """How long a token the engine emits at `now` waits for the work ahead of it."""
        if not self.queues:
            return 0.0
        ahead = self.busy_s - now
        return 0.0 if ahead < 0.0 else ahead  # max(ahead, 0.0)

    def resend(self, now: float, wait: float) -> tuple[float, float]:
        """A closed-loop client saw its request end (the last token, emitted at `now`, waited
        `wait`) and sends the next: (sent, reaches the engine). The server parses and tokenizes
        it after the work still ahead of it; that parse, one request among the streams, does not
        hold back the tokens behind it (the loop interleaves them): the unloaded path of the
        closed loops request_latency_us was fitted on (issue 34: charging it to the token
        stream desynchronised those loops, ai.wmx.dev's L4 sweep at 32 users 21% -> 62% too
        fast)."""
        sent = now + wait + self.latency_s
        arrival = sent + max(self.busy_s - sent, 0.0) + self.request_s
        self.busy_s = max(self.busy_s, now)
        return sent, arrival

    def stream(self, now: float, t_span: float, tokens: float, last: float) -> None:
        """The server is handed `tokens` output tokens over the span of `t_span` that ends at
        `now` (`last` of them at its last step): a fluid first-come-first-served queue, so the
        tokens of the last step are ready at the client after the backlog ahead of them."""
        if self.token_s <= 0 or tokens <= 0:
            return
        start = now - t_span
        ahead = self.busy_s - start  # max(·, 0.0) and max(backlog, ·) as comparisons
        backlog = (0.0 if ahead < 0.0 else ahead) + tokens * self.token_s - t_span
        tail = last * self.token_s
        self.busy_s = now + (tail if tail > backlog else backlog)

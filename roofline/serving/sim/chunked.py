"""The prompts one span of chunked prefill reaches (roofline.serving.sim.scheduler): the token
budget goes to the prompts in prefill first come, first served (vLLM's chunked prefill), so a
span of k steps with `room` prefill tokens a step reaches only the head of the queue whose
tokens left first cover k × room; the prompts behind it get none. Every prompt in prefill has at
least one token left (PrefixCache.admit and BlockCache.admit find at most prompt − 1 cached), so
a prompt behind the head would neither advance nor finish in the span: the span's time, its
tokens and the prompts it completes are those of the whole queue (StepModel.span_s)."""

from __future__ import annotations


def chunk_head(prefilling: list[int], pf_left: list[int], budget: int) -> tuple[list, list]:
    """(requests, tokens left) of the prompts in prefill, in queue order, up to the first whose
    tokens left, with those before it, reach `budget`."""
    x = pf_left[prefilling[0]] if prefilling else 0
    if x >= budget and prefilling:  # the head alone reaches it (the common span)
        return [prefilling[0]], [x]
    pfr: list[int] = []
    lens: list[int] = []
    cum = 0
    for r in prefilling:
        x = pf_left[r]
        pfr.append(r)
        lens.append(x)
        cum += x
        if cum >= budget:
            break
    return pfr, lens

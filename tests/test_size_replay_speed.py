"""size's fleet on a replayed log (serving.size, fleet) tries each replica count on the expected
half alone and serves the count it settles on in full once (issue 32): its answer is still the
full evaluation's (serve --dp n, ideal and expected, each replica's own figures)."""

from __future__ import annotations

import pytest

import roofline.serving.size as sz
from roofline.engines.engine import engine
from roofline.serving.arrivals import read_arrivals
from roofline.serving.metrics import Slo
from roofline.serving.search import replica_capacity
from roofline.step.ops import Deployment

STEADY_THEN_BURST = [float(i) for i in range(40)] + [40 + i * 0.01 for i in range(30)]
BURST = [i * 0.05 for i in range(60)]  # 20 requests/s for 3 s: met at once, fewer tried


def _log(path, times: list[float]) -> str:
    """An Azure-format log: a request of a 4,000-token prompt and 100 output tokens at each time."""
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    rows += [f"2023-11-16 18:{int(t // 60):02d}:{t % 60:09.6f},4000,100" for t in times]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.mark.parametrize("times, way", [(STEADY_THEN_BURST, "up"), (BURST, "down")])
def test_replay_counts_run_expected_alone_and_the_answer_is_the_full_run(
    cat, tmp_path, monkeypatch, times, way
):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    w = read_arrivals(_log(tmp_path / "log.csv", times))
    slo = Slo(ttft_s=0.5, tpot_s=0.05)
    calls: list[tuple] = []
    real = sz.serve

    def spy(rep, wl, sl, n, **k):
        calls.append((rep, wl, sl, n, k))
        return real(rep, wl, sl, n, **k)

    monkeypatch.setattr(sz, "serve", spy)
    rows = [r for r in sz.size(m, [hw], Deployment(), engine("vllm", hw), w, slo, {}) if r.replicas]
    assert rows
    for row in rows:
        mine = [c for c in calls if c[0].gpus * row.replicas == row.gpus]
        full = [c for c in mine if not c[4].get("expected_only")]
        tried = [c[3] for c in mine if c[4].get("expected_only")]
        assert len(full) == 1 and full[0][3] == row.replicas  # one full run, at the count found
        rep, wl, sl, _, k = full[0]

        def fresh(n: int, rep=rep, wl=wl, sl=sl, router=k["router"]):
            """The full run at n, on a capacity of its own (no runs read back)."""
            return real(rep, wl, sl, n, capacity=replica_capacity(rep, wl), router=router)

        at = fresh(row.replicas)
        assert at.expected.meets_slo and row.meets_slo
        assert (row.expected, row.ideal) == (at.expected, at.ideal)
        assert at.ideal is not at.expected  # the ideal half was run, not the expected repeated
        assert row.replicas == 1 or not fresh(row.replicas - 1).expected.meets_slo  # the fewest
        assert row.replicas - 1 in tried or row.replicas == 1
        step = 1 if way == "up" else -1  # up: replicas added from the mean rate's count
        assert tried == list(range(tried[0], tried[-1] + step, step))
        assert (tried[0] < row.replicas) == (way == "up")
    # by hand: 30 prompts of 4,000 tokens in 0.29 s; 2 x 8.0e9 x 4,000 = 64 TFLOP each, over
    # 0.065 s at an H100's 989 TFLOP/s dense bf16 peak. On 2 TP1 replicas one takes >= 15 of
    # them: its last starts decoding >= 15 x 0.065 - 0.29 = 0.68 s after it came, and the two
    # slowest of 70 (the p99) are both past 0.5 s: TP1 needs >= 3 replicas
    tp1 = next(r for r in rows if r.tp == 1)
    assert way != "up" or tp1.replicas >= 3

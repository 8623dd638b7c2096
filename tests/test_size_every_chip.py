"""size answers every chip asked for (issue 33 item 3): its cheapest deployment or why none, with
the bound that ruled it out; never a 0-GPU row; a pruned layout only in `not_searched`; nothing
found exits 1 with the reason, the answer line first."""

from __future__ import annotations

import re

import pytest

from roofline.render.html.page import page

# 70B in fp8 at 15 ms a token: an H100 or B200 node holds it, a TPU v5e's eight chips cannot stream
# its weights that fast (70e9 bytes / (8 x 819e9 B/s) = 10.7 ms is only the weights' floor)
ARGS = ("size", "llama-3.1-70b", "--rate", "2", "--hardware", "h100,tpu-v5e,b200",
        "--weights", "fp8", "--prompt", "1k", "--output", "200", "--slo-ttft", "2s",
        "--slo-tpot", "15ms", "--slo-pct", "90", "--requests", "100")  # fmt: skip


@pytest.fixture(scope="module")
def doc():
    from typer.testing import CliRunner

    from roofline.cli.app import app

    r = CliRunner().invoke(app, [*ARGS, "-f", "json"])
    assert r.exit_code == 0, r.output
    import json

    return json.loads(r.stdout)


def test_every_chip_asked_for_has_its_answer(doc):
    chips = [a["hardware"] for a in doc["per_hardware"]]
    assert chips == ["nvidia-h100-sxm", "google-tpu-v5e", "nvidia-b200-hgx"]  # order asked
    prices = doc["inputs"]["prices"]
    for a in doc["per_hardware"]:
        mine = [d for d in doc["deployments"] if d["hardware"] == a["hardware"] and d["meets_slo"]]
        if not a["meets_slo"]:
            assert not mine and a["reason"]
            continue
        # its answer is the cheapest of its own deployments, priced by hand
        assert a["cost_per_hour"] == pytest.approx(a["gpus"] * prices[a["hardware"]])
        assert a["gpus"] == a["replicas"] * a["tp"] * a["pp"]
        assert a["cost_per_hour"] == min(d["cost_per_hour"] for d in mine)


def test_a_chip_with_none_says_the_bound(doc):
    tpu = next(a for a in doc["per_hardware"] if a["hardware"] == "google-tpu-v5e")
    assert not tpu["meets_slo"]
    m = re.search(r"takes ([\d.]+) ms a token > 15 ms", tpu["reason"])
    assert m, tpu["reason"]
    # no faster than streaming the weights once over 8 chips' HBM: 70.6e9 / (8 x 819e9) s
    assert float(m.group(1)) >= 70.6e9 / (8 * 819e9) * 1e3
    assert float(m.group(1)) > 15


def test_no_zero_gpu_row_and_pruned_apart(doc):
    assert doc["deployments"] and all(d["gpus"] > 0 for d in doc["deployments"])
    shown = {(d["hardware"], d["layout"]) for d in doc["deployments"]}
    prices = doc["inputs"]["prices"]
    best = {a["hardware"]: a["cost_per_hour"] for a in doc["per_hardware"] if a["meets_slo"]}
    for p in doc["not_searched"]:
        assert (p["hardware"], p["layout"]) not in shown
        # pruned only against its own chip's best: its bound is no cheaper than that best
        assert p["gpus_at_rate_bound"] * prices[p["hardware"]] >= best[p["hardware"]] - 1e-9
    assert all(r["reason"] for r in doc["ruled_out"])


def test_the_html_names_every_chip(doc):
    html = page(doc)
    body = html.split('id="why"')[1].split('id="results"')[0]
    for chip in ("h100-sxm", "tpu-v5e", "b200-hgx"):
        assert chip in body
    assert "no deployment meets the SLOs on tpu-v5e" in body


def test_nothing_found_exits_1_with_the_reason(run):
    args = [*ARGS]
    args[args.index("15ms")] = "5ms"
    args[args.index("h100,tpu-v5e,b200")] = "h100,tpu-v5e"
    r = run(*args)
    assert r.code == 1
    assert r.stdout.splitlines()[0].startswith("none: no deployment meets the SLOs")
    assert "size: no deployment serves 2 req/s within the SLOs" in r.stderr
    # the H100's fastest layout, TP8, still streams 70.6e9 bytes over 8 x 3.35e12 B/s a token
    m = re.search(r"nvidia-h100-sxm: .*takes ([\d.]+) ms a token > 5 ms", r.stderr)
    assert m and float(m.group(1)) >= 70.6e9 / (8 * 3.35e12) * 1e3


def test_a_chip_without_scale_up_names_that_bound(run):
    """size runs a replica on one GPU of a chip with no scale-up link (candidates.replica_sizes);
    an L4's 24 GiB holds no 70B model (141 GB of bf16 weights), which is the bound, not "up to
    4 nodes" (plan lays the model out over 8 L4s on PCIe)."""
    r = run("size", "llama-3.1-70b", "--rate", "1", "--hardware", "l4", "--slo-tpot", "200ms")
    assert r.code == 1
    assert "nvidia-l4 has no scale-up link" in r.stderr and "up to 4 nodes" not in r.stderr


def test_the_html_says_when_occupancy_and_binding_hold(doc):
    """The capacity table put "KV occupancy 16%" (at the sized rate) beside "binding KV
    capacity" (at saturation) with nothing saying when each holds; each heading says it now."""
    body = page(doc).split('id="why"')[1].split('id="results"')[0]
    assert "KV occupancy at the sized rate" in body and "binding at saturation" in body


def test_a_chip_line_names_its_layout_as_its_row_does():
    """DeepSeek-R1 on H100: the best line and the table named the answer TP8 PP2 EP8 ADP8, the
    chip's line TP8 PP2×m2 EP8 ADP8 (plan's name); one name on the page."""
    from roofline.render.sizing import _chip_line

    a = {"hardware": "nvidia-h100-sxm", "meets_slo": True, "layout": "TP8 PP2×m2 EP8 ADP8",
         "tp": 8, "pp": 2, "ep": 8, "replicas": 1, "gpus": 16, "cost_per_hour": 63.8,
         "ttft_p99_s": 0.2, "tpot_p99_s": 0.066}  # fmt: skip
    row = {**a, "attention_dp": 8, "prefill_replicas": 0}
    assert "1 x TP8 PP2 EP8 ADP8 = 16 GPUs" in _chip_line(a, [row])
    assert "1 x TP8 PP2×m2 EP8 ADP8" in _chip_line(a, [])  # no row: the JSON's own name

"""validation/source_weight.py: the per-source influence on a median and the twins' ratios,
on hand-made rows whose answers are counted here."""

from validation.serving_crossval import ServingResult
from validation.source_weight import influence_rows, twin_ratio, twins


def row(id_, group, metric, measured, model, vendor_hw="nvidia-h100-sxm"):
    return ServingResult(
        "validation/highload_cases.yaml", id_, group, "vllm", "", vendor_hw,
        "nvidia-datacenter", metric, measured, measured, model, model, (),
    )  # fmt: skip


def test_influence_names_the_source_that_moves_the_median_most():
    """|errors| 10%, 20% from source a, 30% from b, 80% and 90% from c: median 30%; without a
    the median of 30, 80, 90 is 80%, without b of 10, 20, 80, 90 is 50%, without c 20%."""
    rs = [
        row("a1", "a", "requests_per_s", 1.0, 1.1),
        row("a2", "a", "requests_per_s", 1.0, 0.8),
        row("b1", "b", "requests_per_s", 1.0, 1.3),
        row("c1", "c", "requests_per_s", 1.0, 1.8),
        row("c2", "c", "requests_per_s", 1.0, 0.1),
    ]
    classes = (("capacity", ("requests_per_s",)),)
    ((v, label, n, s, full, lo, hi, most, moved),) = influence_rows(rs, lambda r: "NVIDIA", classes)
    assert (v, label, n, s) == ("NVIDIA", "capacity", 5, 3)
    assert abs(full - 0.3) < 1e-12 and abs(lo - 0.2) < 1e-12 and abs(hi - 0.8) < 1e-12
    assert most == "a" and abs(moved - 0.8) < 1e-12


def test_a_cell_of_one_source_has_no_influence_row():
    rs = [row("a1", "a", "requests_per_s", 1.0, 1.1), row("a2", "a", "requests_per_s", 1.0, 1.2)]
    assert influence_rows(rs, lambda r: "NVIDIA", (("capacity", ("requests_per_s",)),)) == []


def test_twins_match_the_same_case_on_the_other_chip_and_ratio_both_ways():
    """H100 6 req/s measured, 12 modelled; its A100 twin 3 and 4: measured 2x, modelled 3x."""
    h = row("lab-m-h100-vllm-x-rps", "p/h100.md", "requests_per_s", 6.0, 12.0)
    a = row(
        "lab-m-a100-vllm-x-rps", "p/a100.md", "requests_per_s", 3.0, 4.0, "nvidia-a100-80gb-sxm"
    )
    lone = row("lab-m-h100-vllm-y-rps", "p/h100.md", "requests_per_s", 5.0, 5.0)
    tpot = row("lab-m-h100-vllm-x-tpot", "p/h100.md", "tpot_p50_ms", 5.0, 5.0)
    assert twins([h, a, lone, tpot]) == [(h, a)]
    assert twin_ratio(h, a) == (2.0, 3.0)

"""The link a collective runs over when a deployment carries no layout (validation cases, the
serving simulator): a group wider than the scale-up domain leaves it. On a box of NVLink-bridged
pairs (A100 PCIe: domain 2, PCIe Gen4 x16 host link) TP2 stays on the bridge and TP4 rings over
PCIe; across nodes the network takes over."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases.case import with_case_links
from roofline.catalog.load import load_catalog
from roofline.domain.layout import Layout, Links, links
from roofline.step.ops import Deployment
from roofline.step.phases import decode

CAT = load_catalog()
A100_PCIE = CAT.accelerator("nvidia-a100-80gb-pcie")
H100 = CAT.accelerator("nvidia-h100-sxm")
IB = CAT.tier("infiniband-ndr")
MODEL = CAT.model("llama-3.3-70b")


def test_nvlink_pairs_bridged_over_pcie():
    # the catalog: an NVLink bridge joins 2 cards; the host link is PCIe Gen4 x16
    assert links(Layout(2), A100_PCIE).tp is A100_PCIE.scale_up
    assert links(Layout(4), A100_PCIE).tp is A100_PCIE.host_link
    assert links(Layout(8), A100_PCIE).tp is A100_PCIE.host_link
    # TP2 x PP2: the all-reduce stays in the pair, the stage-to-stage send crosses PCIe
    both = links(Layout(2, pp=2), A100_PCIE)
    assert both.tp is A100_PCIE.scale_up and both.pp is A100_PCIE.host_link


def test_an_hgx_box_stays_on_nvlink_and_the_network_joins_boxes():
    assert links(Layout(8), H100).tp is H100.scale_up
    # TP8 x PP2 over 16 GPUs: the sends between the two boxes go over the network
    assert links(Layout(8, pp=2, scale_out=IB), H100).pp is IB
    assert links(Layout(8, pp=2), H100).pp is None  # no network named: no link


def _allreduce_s(dep: Deployment, batch: int) -> float:
    d = decode(MODEL, A100_PCIE, dep, batch, 256, 1, engine="vllm")
    return sum(float(r.t_ideal_s) for r in d.ops if r.op.kind == "allreduce")


def test_a_deployment_without_layout_rings_tp4_over_pcie():
    # ideal ring all-reduce (Thakur et al. 2005): 2(n-1) steps of the link latency plus
    # 2(n-1)/n * M / W. Llama-3.3-70B, batch 8: M = 8 x 8192 x 2 B = 131,072 B; PCIe Gen4 x16:
    # W = 32 GB/s, latency 1 us (hardware/nvidia-a100-80gb-pcie.yaml). n = 4:
    # 6 x 1 us + 1.5 x 131072 / 32e9 = 6 us + 6.144 us = 12.144 us per call, 2 per layer x 80.
    dep = Deployment(layout=Layout(tp=4))
    assert _allreduce_s(dep, 8) == pytest.approx(160 * 12.144e-6, rel=1e-6)
    # the same as the CLI's layout path (links set from the validated layout)
    lay = Layout(tp=4)
    explicit = Deployment(links=links(lay, A100_PCIE), layout=Layout(tp=4))
    assert _allreduce_s(explicit, 8) == pytest.approx(_allreduce_s(dep, 8), rel=1e-12)


def test_tp2_in_the_pair_keeps_the_bridge():
    # NVLink 3 bridge: 300 GB/s, latency 0.5 us; n = 2, M = 131,072 B:
    # 2 x 0.5 us + 1 x 131072 / 300e9 = 1 us + 0.437 us = 1.437 us per call, 160 calls
    assert _allreduce_s(Deployment(layout=Layout(tp=2)), 8) == pytest.approx(
        160 * 1.43691e-6, rel=1e-4
    )


def test_validation_cases_get_the_network_between_nodes():
    dep = with_case_links(Deployment(layout=Layout(tp=8, pp=2)), H100, IB)
    assert dep.links is not None and dep.links.pp is not None
    assert dep.links.pp.id == IB.id and dep.links.tp is H100.scale_up
    kept = Deployment(links=links(Layout(tp=4), A100_PCIE), layout=Layout(tp=4))
    assert with_case_links(kept, A100_PCIE, IB) is kept  # a deployment with its links keeps them


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([2, 4, 8]), st.integers(1, 256))
def test_leaving_the_bridge_never_speeds_a_collective_up(tp, batch):
    # PCIe (32 GB/s) is slower than the bridge (300 GB/s): a group that leaves the pair can only
    # take longer than it would on the bridge
    up = A100_PCIE.scale_up
    on_bridge = Deployment(links=Links(up, up, up, 8), layout=Layout(tp=tp))
    spanned = Deployment(layout=Layout(tp=tp))
    assert _allreduce_s(spanned, batch) >= _allreduce_s(on_bridge, batch) * (1 - 1e-12)
    assert np.isfinite(_allreduce_s(spanned, batch))

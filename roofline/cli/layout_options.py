"""The layout options (one group, cli.groups: TP, PP, EP, GPUs or DP, attention-DP, micro-batches,
nodes, the scale-out link), the validated layout they give, its JSON and the replica count."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

import typer

from roofline.catalog.load import Catalog
from roofline.cli import groups as grp
from roofline.cli.convert import named
from roofline.cli.options import (
    ACT_DTYPE,
    MAX_GPUS,
    AttentionDp,
    Dp,
    Ep,
    Gpus,
    Microbatches,
    Pp,
    Tp,
    deployment,
)
from roofline.domain.errors import InputError
from roofline.domain.hardware import Accelerator
from roofline.domain.layout import Layout
from roofline.domain.layout import links as layout_links
from roofline.domain.layout import validate as validate_layout
from roofline.domain.model import ModelArch
from roofline.serving.attention_dp import default_balance
from roofline.step.ops import Deployment

AttentionDpBalance = Annotated[
    str | None,
    typer.Option(
        "--attention-dp-balance",
        help="attention-DP prompt scheduling: serialised (each rank at its own steps) or "
        "balanced (TRT-LLM enable_balance, SGLang --enable-prefill-delayer); default: the "
        "engine's, serialised",
    ),
]


def replicas(dep: Deployment, gpus: int | None, dp: int = 1) -> tuple[int, int]:
    """(GPUs in all, data-parallel replicas) from --gpus or --dp."""
    if not 1 <= dp <= MAX_GPUS:
        raise InputError(f"--dp must be from 1 to {MAX_GPUS}, got {dp}")
    per = dep.gpus_per_replica
    if gpus is None:
        return per * dp, dp
    if not 1 <= gpus <= MAX_GPUS:
        raise InputError(f"--gpus must be from 1 to {MAX_GPUS}, got {gpus}")
    if gpus % per:
        raise InputError(f"--gpus {gpus} must be a multiple of TP x PP = {per}")
    if dp != 1 and gpus != per * dp:
        raise InputError(f"--gpus {gpus} disagrees with TP x PP x DP = {per * dp}")
    return gpus, gpus // per


@dataclass(frozen=True)
class LayoutOptions:
    """The layout options, one group (cli.groups) in analyze, capacity and serve."""

    tp: Tp = 1
    pp: Pp = 1
    ep: Ep = 1
    gpus: Gpus = None
    dp: Dp = 1
    attention_dp: AttentionDp = 1
    microbatches: Microbatches = None
    nd: grp.NodeOptions = grp.NODES
    attention_dp_balance: AttentionDpBalance = None


LAYOUT = LayoutOptions()


@dataclass(frozen=True)
class Placement:
    """MODEL HARDWARE laid out by the layout options, in the number formats (analyze, capacity,
    serve; no defaults: a command takes it first, as `pl`)."""

    tg: grp.Target
    lo: LayoutOptions = LAYOUT
    fm: grp.Formats = grp.FORMATS

    def deployment(
        self,
        model: ModelArch,
        act_dtype: str = ACT_DTYPE,
        sparsity: str | None = None,
        compute: str | None = None,
    ) -> Deployment:
        """The formats on the layout's TP, PP and EP (options.deployment)."""
        lo, fm = self.lo, self.fm
        return deployment(
            fm.weights, fm.kv_dtype, act_dtype, lo.tp, lo.pp, lo.ep, sparsity, compute, model=model
        )


def layout(
    cat: Catalog,
    m: ModelArch,
    hw: Accelerator,
    dep: Deployment,
    lo: LayoutOptions = LAYOUT,
    engine_name: str | None = None,
) -> tuple[Layout, Deployment]:
    """The validated layout (roofline.domain.layout) and the deployment carrying it: GPUs from
    --gpus or --dp, attention-DP and its scheduler (--attention-dp-balance, default the
    engine's: roofline.serving.attention_dp), micro-batches, nodes and each collective's link."""
    attention_dp = lo.attention_dp
    if not 1 <= attention_dp <= MAX_GPUS:
        raise InputError(f"--attention-dp must be from 1 to {MAX_GPUS}, got {attention_dp}")
    balance = lo.attention_dp_balance or default_balance(engine_name)
    dep = dep.with_layout(attention_dp=attention_dp, attention_dp_balance=balance)
    _, n_replicas = replicas(dep, lo.gpus, lo.dp)
    lay = replace(
        dep.layout,
        dp=n_replicas,
        microbatches=lo.microbatches,
        nodes=lo.nd.nodes,
        cross_node_tp=lo.nd.cross_node_tp,
        scale_out=lo.nd.network(cat),
    )
    lay = validate_layout(lay, m, hw)
    return lay, replace(dep, layout=lay.replica(), links=layout_links(lay, hw))


def layout_json(lay: Layout, dep: Deployment) -> dict[str, object]:
    """The layout echoed in `inputs`: degrees, micro-batches, nodes and each collective's link."""
    links = dep.links
    return {
        **named(lay, "attention_dp", "attention_dp_balance", "attention_tp"),
        "microbatches": lay.pipeline_microbatches,
        "nodes": lay.nodes,
        "gpus_per_node": links.gpus_per_node if links else None,
        "cross_node_tp": lay.cross_node_tp,
        "scale_out": lay.scale_out.id if lay.scale_out else None,
        "links": {  # null where the layout has no such collective
            k: (getattr(links, k).name if links and getattr(links, k) and used else None)
            for k, used in (("tp", lay.attention_tp > 1), ("ep", lay.ep > 1), ("pp", lay.pp > 1))
        },
    }


def layout_inputs(m: ModelArch, hw: Accelerator, lay: Layout, dep: Deployment) -> dict[str, object]:
    """`inputs`' first keys where a layout is laid out: model, chip, GPUs, replicas, degrees and
    the layout (layout_json)."""
    return {
        "model": m.id,
        "hardware": hw.id,
        "gpus": lay.gpus,
        "replicas": lay.dp,
        "tp": dep.tp,
        "pp": dep.pp,
        "ep": dep.ep,
        **layout_json(lay, dep),
    }

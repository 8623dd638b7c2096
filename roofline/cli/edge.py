"""Commands for models that outgrow one GPU's memory: `offload` (weights split with host RAM,
llama.cpp's -ngl or FlexGen streaming) and `edge` (what a Mac, a Spark or a desktop GPU can run,
side by side, against the GPU-wired limit of unified memory)."""

from dataclasses import asdict
from typing import Annotated, Any

import typer

from roofline import render
from roofline.catalog.families import OWN_FAMILY
from roofline.catalog.load import Catalog, did_you_mean
from roofline.cli import convert
from roofline.cli import groups as grp
from roofline.cli import options as opt
from roofline.cli import publish as pub
from roofline.cli.app import catalog, warn
from roofline.cli.edge_json import offload_doc
from roofline.cli.wired import one_node
from roofline.domain.errors import DoesNotFitError, InputError, UnknownEntryError
from roofline.domain.hardware import Accelerator, default_wired_limit_bytes
from roofline.domain.units import fmt_bytes, parse_memory_bytes
from roofline.engines.engine import engine
from roofline.levers.devicefit import default_host, edge_fit, gpu_layer_sweep
from roofline.levers.offload import gpu_memory_needed, most_gpu_layers
from roofline.levers.offload import offload as offload_core
from roofline.step.memory import weight_bytes_per_gpu


def host_cpu(cat: Catalog, name: str) -> Accelerator:
    """--host: a host CPU entry of the catalog (family 'cpu': its RAM and the cores that run
    host-resident layers). A GPU or any other accelerator is refused (its HBM is no host RAM),
    with a 'did you mean' over the hosts."""
    try:
        h: Accelerator | None = cat.accelerator(name)
    except UnknownEntryError:
        h = None
    if h is not None and h.family == OWN_FAMILY:
        return h
    cpus = [a for a in cat.accelerators.values() if a.family == OWN_FAMILY]
    hosts = sorted(a.id for a in cpus)
    names = hosts + [alias for a in cpus for alias in a.aliases]
    hint = did_you_mean(name, names, f"hosts: {', '.join(hosts)}")
    what = "no host CPU of that name" if h is None else f"{h.id} is an accelerator, not a host CPU"
    raise InputError(f"--host {name}: {what}", hint=hint)


# ---- offload --------------------------------------------------------------------------------
@grp.command()
def offload(
    tg: grp.Target,
    host: Annotated[
        str | None,
        typer.Option(help="host CPU entry (RAM and cores): amd-epyc-9654, intel-xeon-8480, ..."),
    ] = None,
    gpu_layers: Annotated[
        int | None,
        typer.Option(help="layers on the GPU, llama.cpp's -ngl (L+1 puts the head there too)"),
    ] = None,
    gpu_fraction: Annotated[
        float | None, typer.Option(help="share of the layers on the GPU instead of --gpu-layers")
    ] = None,
    mode: Annotated[
        str, typer.Option(help="cpu: the CPU runs host layers (llama.cpp); stream: copy to GPU")
    ] = "cpu",
    block_batches: Annotated[
        int, typer.Option(help="stream: batches run per weight copy (FlexGen's block)")
    ] = 1,
    kv_host: Annotated[
        bool, typer.Option("--kv-host", help="stream: KV cache in host RAM, attention on the CPU")
    ] = False,
    sharing: Annotated[
        int | None, typer.Option(help="GPUs reading the host memory at once (default --tp)")
    ] = None,
    link_efficiency: opt.LinkEfficiency = None,
    host_memory: Annotated[
        str | None,
        typer.Option(help="host RAM instead of the CPU entry's, e.g. 128GB (GiB, as --memory)"),
    ] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="also sweep --gpu-layers 0..L+1")] = False,
    tp: opt.Tp = 1,
    fm: grp.Formats = grp.FORMATS,
    sb: grp.StaticBatch = grp.STATIC,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    ideal: opt.Ideal = False,
    fmt: opt.FormatOpt = opt.Fmt.table,
) -> None:
    """Weights split between the GPU and host RAM.

    llama.cpp's -ngl (host layers computed by the CPU) or FlexGen-style streaming over the host
    link; serial (sum of tiers) and overlapped (slowest link per layer) decode bounds;
    --gpu-layers defaults to as many as fit.
    Example: roofline offload llama-3.1-70b rtx-4090 --weights q4_k_m --host ryzen-9950x"""
    cat = catalog()
    m, hw = tg.load(cat)
    h = host_cpu(cat, host) if host else cat.accelerator(default_host(hw.id, hw.family))
    dep = opt.deployment(fm.weights, fm.kv_dtype, opt.ACT_DTYPE, tp, model=m)
    one_node(cat, m, hw, dep, "offload")
    b, _, _, ctx = sb.parse(m)
    share = opt.sharing(tp, sharing, link_efficiency)
    if not 1 <= block_batches <= 4096:
        raise InputError(f"--block-batches must be from 1 to 4096, got {block_batches}")
    # auto: llama.cpp's rule for its partial offload, vLLM's for streaming
    auto = "llamacpp" if mode == "cpu" else "vllm"
    eng = engine(auto if en.engine_name == "auto" else en.engine_name, hw)
    cap = opt.capacity(hw, en.memory) * eng.memory_fraction - eng.runtime_overhead_bytes
    host_cap = (  # RAM, sold in binary units: "128GB" is 128 GiB, as --memory reads it
        parse_memory_bytes(host_memory, "--host-memory") if host_memory else h.memory_capacity_bytes
    )
    if not 0 < host_cap < 1e15:
        raise InputError(f"--host-memory must be positive and below 1 PB, got {host_memory}")
    L = m.num_hidden_layers
    if gpu_layers is not None and gpu_fraction is not None:
        raise InputError("give --gpu-layers or --gpu-fraction, not both")
    if gpu_fraction is not None:
        if not 0 <= gpu_fraction <= 1:
            raise InputError(f"--gpu-fraction must be in [0, 1], got {gpu_fraction}")
        gpu_layers = round(gpu_fraction * L)
    fit_max = most_gpu_layers(m, hw, h, dep, cap, b, ctx, mode, kv_host)
    n = fit_max if gpu_layers is None else gpu_layers
    if not 0 <= n <= 4096:
        raise InputError(f"--gpu-layers must be from 0 to {L + 1} (or more: all), got {n}")
    n = min(n, L + 1)  # as llama.cpp's -ngl 999: past the layer count, every layer
    kw: dict[str, Any] = {
        "mode": mode,
        "block": block_batches,
        "sharing": share,
        "kv_host": kv_host,
    }
    kw.update(link_eff=link_efficiency, ideal=ideal)
    o = offload_core(m, hw, h, dep, n, b, ctx, **kw)
    need = gpu_memory_needed(o, m, dep)
    if need > cap:
        raise DoesNotFitError(
            f"{n} layers of {m.id} in {dep.weights.name} need {fmt_bytes(need)} on {hw.id}, "
            f"more than {fmt_bytes(cap)}",
            hint=f"at most --gpu-layers {fit_max} fit",
        )
    if o.host_weights_bytes + o.host_kv_bytes > host_cap:
        raise DoesNotFitError(
            f"the host share ({fmt_bytes(o.host_weights_bytes + o.host_kv_bytes)}) exceeds "
            f"{h.id}'s {fmt_bytes(host_cap)} of RAM",
            hint="pass --host-memory, a larger host, or fewer bits (--weights q4_k_m)",
        )
    full = offload_core(m, hw, h, dep, L + 1, b, ctx, **kw)
    points = gpu_layer_sweep(m, hw, h, dep, b, ctx, cap, fit_max, **kw) if sweep else []
    doc = offload_doc(
        m, hw, h, dep, o, full, mode=mode, n=n, fit_max=fit_max, tp=tp, b=b, ctx=ctx,
        block_batches=block_batches, kv_host=kv_host, share=share,
        link_efficiency=link_efficiency, cap=cap, host_cap=host_cap, ideal=ideal, need=need,
        sweep=points,
    )  # fmt: skip
    render.emit_json(doc) if fmt is opt.Fmt.json else render.offload_table(doc)


# ---- edge -----------------------------------------------------------------------------------
@grp.command()
def edge(
    tg: grp.Target,
    devices: Annotated[
        str | None,
        typer.Option(help="more devices side by side, e.g. dgx-spark,rtx-5090,strix-halo"),
    ] = None,
    wired_limit: opt.WiredLimit = None,
    host: Annotated[
        str | None, typer.Option(help="host CPU for discrete GPUs (default: per GPU)")
    ] = None,
    tp: opt.Tp = 1,
    fm: grp.Formats = grp.FORMATS,
    sb: grp.StaticBatch = grp.STATIC,
    en: grp.EngineOptions = grp.ENGINE_OPTIONS,
    out: pub.HtmlOut = None,
    fmt: pub.RowFormat = pub.RowFmt.table,
) -> None:
    """What a Mac, a Spark or a desktop GPU can run: fit and speed.

    Unified memory against the GPU-wired limit (what macOS allows for the RAM, --wired-limit when
    raised; 'near limit' within 10%), a discrete GPU alone or with host RAM (-ngl), side by side.
    --memory and --wired-limit apply to HARDWARE; --devices use their catalog entries.
    Example: roofline edge deepseek-r1 m3-ultra --weights q4_k_m --wired-limit 480GB"""
    pub.check_out(out)
    cat = catalog()
    m, hw = tg.load(cat)
    if tp != 1:
        raise InputError("edge compares single devices: --tp must be 1")
    if en.engine_name not in ("auto", "llamacpp", "mlx"):
        raise InputError("edge runs llama.cpp or MLX: --engine must be auto, llamacpp or mlx")
    dep = opt.deployment(fm.weights, fm.kv_dtype, opt.ACT_DTYPE, tp, model=m)
    b, s, o, ctx = sb.parse(m, strict=True)
    extra = (
        []
        if devices is None
        else [cat.accelerator(x) for x in opt.comma_items(devices, "--devices")]
    )
    given_host = host_cpu(cat, host) if host else None  # checked, used or not
    devs = [hw, *extra]
    rows = []
    for i, dev in enumerate(devs):
        opt.check_formats(dep, dev)
        cap = opt.capacity(dev, en.memory, wired_limit) if i == 0 else dev.usable_memory_bytes
        ram = parse_memory_bytes(en.memory) if i == 0 and en.memory else dev.memory_capacity_bytes
        h = None
        if dev.host_link:
            h = given_host or cat.accelerator(default_host(dev.id, dev.family))
        at = ctx if sb.context is not None else None
        eng_name = "mlx" if en.engine_name == "mlx" else "llamacpp"
        rows.append(asdict(edge_fit(m, dev, h, dep, b, s, o, ctx, cap, ram, at, eng_name)))
    first = rows[0]
    if first["fits"] == "near limit":
        warn(
            f"{m.id} needs {fmt_bytes(first['needed_bytes'])}, within 10% of the "
            f"{fmt_bytes(first['usable_bytes'])} {hw.id} may use: little room for the OS and "
            "compute buffers (MLX pages past the limit, llama.cpp warns)"
        )
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "devices": [d.id for d in extra],
        **convert.formats_json(dep),
        "batch": b,
        "prompt_tokens": s,
        "output_tokens": o,
        "context_tokens": ctx,
        "wired_limit_bytes": None if wired_limit is None else first["usable_bytes"],
        "wired_limit_default_bytes": default_wired_limit_bytes(
            parse_memory_bytes(en.memory) if en.memory else hw.memory_capacity_bytes
        )
        if hw.unified_memory and hw.vendor == "apple"
        else None,
        "engine": "mlx" if en.engine_name == "mlx" else "llamacpp",
    }
    doc = render.document("edge", inputs, weights_bytes=weight_bytes_per_gpu(m, dep), rows=rows)
    pub.publish(doc, fmt, doc["rows"], render.edge_table, out)

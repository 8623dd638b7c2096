"""The JSON documents of `offload` and `edge` (roofline/cli/edge.py)."""

from roofline import render
from roofline.cli import convert


def offload_doc(
    m, hw, h, dep, o, full, *, mode: str, n: int, fit_max: int, tp: int, b: int, ctx: int,
    block_batches: int, kv_host: bool, share: int, link_efficiency, cap: float, host_cap: float,
    ideal: bool, need: float, sweep: list,
) -> dict:  # fmt: skip
    """The `offload` document: the GPU and host tiers, the step times, the GPU-layer sweep."""
    L = m.num_hidden_layers
    tiers_rows = [
        {
            "tier": "GPU",
            "layers": float(o.gpu_layers) + (1.0 if o.head_on_gpu else 0.0),
            "weights_bytes": o.gpu_weights_bytes,
            "runs_on": "GPU",
            "bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
            "t_step_s": float(o.t_gpu_s),
        },
        {
            "tier": "host",
            "layers": float(L - o.gpu_layers) + (0.0 if o.head_on_gpu else 1.0),
            "weights_bytes": o.host_weights_bytes,
            "runs_on": "CPU" if mode == "cpu" else "GPU*",
            "bandwidth_bytes_per_s": o.host_bandwidth_bytes_per_s,
            "t_step_s": float(o.t_host_s + o.t_copy_s),
        },
    ]
    points = [
        {
            "gpu_layers": k,
            "gpu_weights_bytes": p.gpu_weights_bytes,
            "fits": fits,
            "decode_tokens_per_s_serial": float(1.0 / p.tpot_serial_s),
            "decode_tokens_per_s_overlap": float(1.0 / p.tpot_overlap_s),
        }
        for k, p, fits in sweep
    ]
    inputs = {
        "model": m.id,
        "hardware": hw.id,
        "host": h.id,
        "mode": mode,
        "layers": L,
        "gpu_layers": n,
        "gpu_layers_max_fit": fit_max,
        "tp": tp,
        **convert.formats_json(dep),
        "batch": b,
        "context_tokens": ctx,
        "block_batches": block_batches,
        "kv_host": kv_host,
        "sharing": share,
        "link_efficiency": link_efficiency,
        "gpu_capacity_bytes": cap,
        "host_capacity_bytes": host_cap,
        "host_efficiency": convert.efficiency_json(h.efficiency),
        "step_times": "ideal" if ideal else "expected",
    }
    return render.document(
        "offload",
        inputs,
        weights_bytes_total=full.gpu_weights_bytes + full.host_weights_bytes,
        tiers=tiers_rows,
        result={
            "tpot_serial_s": float(o.tpot_serial_s),
            "tpot_overlap_s": float(o.tpot_overlap_s),
            "t_copy_s": float(o.t_copy_s),
            "t_transfer_s": float(o.t_transfer_s),
            "decode_tokens_per_s_serial": float(b / o.tpot_serial_s),
            "decode_tokens_per_s_overlap": float(b / o.tpot_overlap_s),
            "gpu_memory_needed_bytes": need,
        },
        sweep=points,
    )

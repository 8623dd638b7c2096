"""Sharing GPUs in a fleet: LoRA adapters on one base, engine sleep/wake, and small models that
could share one replica's GPUs. Each figure is a formula with its source; what is applied to the
placement and what is only listed is said per item (roofline.cli.fleet_sharing prints it).

LoRA adapters (applied: the capacity of a LoRA model's replica is derated):
- adapter bytes = rank x sum over the adapted projections of (in + out) x layers x bytes per
  value (LoRA: W + B A with A in R^{r x in}, B in R^{out x r}; Hu et al. 2021, arXiv 2106.09685,
  section 4). Projections: q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o) and, for a dense FFN,
  gate, up, down ("all-linear"), at
  bf16 (2 bytes), the adapters' usual dtype. A MoE base's experts are not adapted here (the
  attention projections only, plus a dense FFN where the model has one in every layer).
- GPU adapter slots (vLLM --max-loras): the adapters a replica keeps on the GPU; vLLM reserves
  slots x the largest adapter's bytes up front (vLLM LoRA docs, "max_loras"). The fleet gives
  every adapter a slot (slots = adapters) and reports the memory as a share of a replica's GPU
  memory; the KV pages it takes are listed, not taken from `size`'s answer.
- adapter load from host: one adapter's bytes / the chip's host link (PCIe) bandwidth
  (hardware/*.yaml host_link), the time a request for an adapter not in a slot waits.
- throughput: Punica (Chen et al., MLSys 2024, arXiv 2310.18547, abstract) measures its batched
  LoRA kernel (SGMV) adding 2 ms per decoded token over the base model for a batch of distinct
  adapters (Llama-2 7B on A100). A replica's decode step of TPOT t then takes t + 2 ms, so its
  capacity is kept at t / (t + 2 ms), t = `size`'s mean TPOT at the peak rate. The published
  figure is for a dense base; a MoE base borrows it (said in the output).

Sleep/wake (listed, not applied: the autoscaler's scale-up delay stays the cold start):
- vLLM sleep mode level 1 keeps the engine alive with its weights in CPU RAM and its KV cache
  freed; waking copies the weights back (vLLM docs "Sleep Mode"; vLLM blog 2025-10-26,
  "Zero-Reload Model Switching with vLLM Sleep Mode", which measures level-1 wakes of 0.1 s to
  6 s from 0.6B to 235B models on A4000 to A100, 18-200x faster than a reload). Wake time here
  = weight bytes per GPU / the host link bandwidth (the copy; the engine's graphs and allocator
  are kept). A model with hours of no traffic could sleep then instead of being scaled to 0.
  vLLM only (CUDA and ROCm, per its docs); another engine's wake is left empty.

Co-location (listed, not applied): two models deployed on one chip type (each on the chip that
carries most of its GPU-hours) are candidates to share one replica's GPUs (two engines, each
given a share of memory: vLLM --gpu-memory-utilization) when each model's peak needs less than
one replica (peak rate < its replica capacity), their weights together take at most half the
replica's memory (leaving the rest for both KV caches), and their peak shares of a replica's
capacity sum to at most 1; each pair is listed once, on the chip where its load share is least."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.domain.model import ModelArch

LORA_BYTES_PER_VALUE = 2  # bf16 adapters
PUNICA_S_PER_TOKEN = 2e-3  # Punica abstract: "only adding 2ms latency per token"
LORA_SOURCE = (
    "Punica (Chen et al., MLSys 2024, arXiv 2310.18547): batched LoRA kernels add 2 ms per"
    " decoded token (Llama-2 7B, A100)"
)
WAKE_SOURCE = (
    "vLLM sleep mode level 1 (docs.vllm.ai features/sleep_mode; blog.vllm.ai 2025-10-26:"
    " wakes of 0.1-6 s measured, 0.6B-235B, A4000-A100): weights per GPU / host link"
)
COLOCATE_WEIGHT_SHARE = 0.5  # both models' weights within half a replica's memory


def adapted_dims(model: ModelArch) -> list[tuple[str, int, int]]:
    """(projection, in, out) of one layer's adapted projections (module docstring)."""
    d, hd, n = model.hidden_size, model.d_head, model.num_attention_heads
    if model.is_mla:  # DeepSeek's MLA: the low-rank q and kv projections as the model has them
        nope, rope = model.qk_nope_head_dim or 0, model.qk_rope_head_dim or 0
        v, kvr = model.v_head_dim or hd, model.kv_lora_rank or 0
        qr = model.q_lora_rank
        out = [("q_a", d, qr), ("q_b", qr, n * (nope + rope))] if qr else []
        out = out or [("q", d, n * (nope + rope))]
        out += [("kv_a", d, kvr + rope), ("kv_b", kvr, n * (nope + v)), ("o", n * v, d)]
    else:
        q, kv = n * hd, model.n_kv_heads * hd
        out = [("q", d, q), ("k", d, kv), ("v", d, kv), ("o", q, d)]
    if model.n_routed_experts == 0:
        f = model.intermediate_size
        out += [("gate", d, f), ("up", d, f), ("down", f, d)]
    return out


def adapter_bytes(model: ModelArch, rank: int) -> float:
    """One LoRA adapter's bytes: rank x sum(in + out) x layers x 2 (module docstring)."""
    per_layer = sum(i + o for _, i, o in adapted_dims(model))
    return float(rank * per_layer * model.num_hidden_layers * LORA_BYTES_PER_VALUE)


def lora_capacity_factor(tpot_s: float) -> float:
    """Share of a replica's capacity left with batched LoRA kernels: t / (t + 2 ms) (Punica)."""
    return tpot_s / (tpot_s + PUNICA_S_PER_TOKEN) if tpot_s > 0 else 1.0


def transfer_s(n_bytes: float, host_bytes_per_s: float | None) -> float | None:
    """Bytes over the host link (PCIe): adapter load, or a level-1 wake."""
    if not host_bytes_per_s or host_bytes_per_s <= 0:
        return None
    return n_bytes / host_bytes_per_s


@dataclass(frozen=True)
class Candidate:
    """A pair of models that could share one replica's GPUs on one chip type."""

    a: str
    b: str
    chip: str
    weight_share: float  # both models' weights / a replica's memory
    load_share: float  # sum of peak rate / replica capacity


def colocation(
    rows: list[tuple[str, str, float, float, float, float]],
) -> list[Candidate]:
    """Pairs that pass the co-location test (module docstring). rows: (model name, chip, peak
    rate, replica capacity (requests/s within the SLOs), weight bytes, replica memory bytes),
    one per model and chip with the same GPUs per replica compared only."""
    out = []
    for i, (na, ca, ra, ka, wa, ma) in enumerate(rows):
        for nb, cb, rb, kb, wb, mb in rows[i + 1 :]:
            if na == nb or ca != cb or ma != mb or ka <= 0 or kb <= 0:
                continue
            if ra >= ka or rb >= kb:
                continue
            ws, ls = (wa + wb) / ma, ra / ka + rb / kb
            if ws <= COLOCATE_WEIGHT_SHARE and ls <= 1.0:
                out.append(Candidate(na, nb, ca, ws, ls))
    best: dict[tuple[str, str], Candidate] = {}  # one chip per pair: the least loaded
    for c in out:
        k = (c.a, c.b)
        if k not in best or c.load_share < best[k].load_share:
            best[k] = c
    return list(best.values())

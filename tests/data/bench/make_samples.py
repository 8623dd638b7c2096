"""Writes the synthetic benchmark results in this directory (run once; the files are committed).

Each file follows the keys its tool writes (roofline/benchfiles.py names the source files and
commits read); the figures are invented but consistent: the aggregates are computed from the
per-request lists the way the tools compute them (vLLM/SGLang calculate_metrics: TPOT per request
= (latency - ttft) / (output - 1); medians and the 99th percentile with numpy)."""

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def _requests(rng, n, p_range, o_range, ttft_ms, tpot_ms):
    p = rng.integers(*p_range, n)
    o = rng.integers(*o_range, n)
    ttft = rng.gamma(4.0, ttft_ms / 4.0, n) / 1e3  # seconds, as the tools store them
    tpot = rng.normal(tpot_ms, 0.05 * tpot_ms, n) / 1e3
    itls = [list(np.round(np.full(k - 1, t), 5)) for k, t in zip(o, tpot, strict=True)]
    lat = ttft + tpot * (o - 1)
    return p, o, ttft, tpot, itls, lat


def _aggregates(prefix_keys, p, o, ttft, tpot, lat, dur):
    ms = 1e3
    out = {
        "completed": len(p),
        "total_input_tokens": int(p.sum()),
        "total_output_tokens": int(o.sum()),
        "request_throughput": len(p) / dur,
        "output_throughput": float(o.sum()) / dur,
    }
    for name, x in (("ttft", ttft), ("tpot", tpot), (prefix_keys, lat)):
        out[f"mean_{name}_ms"] = float(np.mean(x) * ms)
        out[f"median_{name}_ms"] = float(np.median(x) * ms)
        out[f"std_{name}_ms"] = float(np.std(x) * ms)
        out[f"p99_{name}_ms"] = float(np.percentile(x, 99) * ms)
    return out


def vllm_detailed() -> dict:
    rng = np.random.default_rng(1)
    n, rate = 40, 4.0
    p, o, ttft, tpot, itls, lat = _requests(rng, n, (200, 1200), (20, 120), 60.0, 10.0)
    start = np.cumsum(rng.exponential(1 / rate, n))
    dur = float((start + lat).max() - start.min())
    rec = {
        "date": "20261203-120000",
        "endpoint_type": "vllm",
        "backend": "vllm",
        "label": None,
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": n,
        "request_rate": rate,
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": dur,
        "failed": 0,
        "request_goodput": None,
        "total_token_throughput": float(p.sum() + o.sum()) / dur,
        **_aggregates("e2el", p, o, ttft, tpot, lat, dur),
        "input_lens": [int(x) for x in p],
        "output_lens": [int(x) for x in o],
        "ttfts": [float(x) for x in ttft],
        "itls": [[float(v) for v in x] for x in itls],
        "latencies": [float(x) for x in lat],
        "start_times": [float(x) for x in start],
        "generated_texts": ["" for _ in range(n)],
        "errors": ["" for _ in range(n)],
        "max_output_tokens_per_s": float(o.sum()) / dur * 1.5,
        "max_concurrent_requests": 9,
        "rtfx": 0.0,
    }
    return rec


def vllm_aggregate() -> dict:
    rng = np.random.default_rng(2)
    n = 64
    p, o, ttft, tpot, _, lat = _requests(rng, n, (1000, 1001), (200, 201), 90.0, 14.0)
    dur = float(lat.sum()) / 16
    rec = {
        "date": "20261203-121500",
        "endpoint_type": "openai",
        "backend": "openai",
        "label": None,
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": n,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 16,
        "duration": dur,
        "failed": 0,
        "request_goodput": None,
        "total_token_throughput": float(p.sum() + o.sum()) / dur,
        **_aggregates("e2el", p, o, ttft, tpot, lat, dur),
        "latencies": [float(x) for x in lat],
        "queue_times": [0.0 for _ in range(n)],
        "max_output_tokens_per_s": float(o.sum()) / dur * 1.2,
        "max_concurrent_requests": 16,
        "rtfx": 0.0,
    }
    return rec


def sglang_lines() -> list[dict]:
    out = []
    for seed, rate, ttft_ms, tpot_ms in ((3, 2.0, 50.0, 9.0), (4, 8.0, 70.0, 12.0)):
        rng = np.random.default_rng(seed)
        n = 50
        p, o, ttft, tpot, _, lat = _requests(rng, n, (1024, 1025), (256, 257), ttft_ms, tpot_ms)
        dur = n / rate + float(lat.mean())
        agg = _aggregates("e2e_latency", p, o, ttft, tpot, lat, dur)
        rec = {
            "backend": "sglang",
            "dataset_name": "random",
            "request_rate": rate,
            "max_concurrency": None,
            "sharegpt_output_len": None,
            "random_input_len": 1024,
            "random_output_len": 256,
            "random_range_ratio": 0.0,
            "duration": dur,
            **agg,
            "total_output_tokens_retokenized": agg["total_output_tokens"],
            "input_throughput": float(p.sum()) / dur,
            "mean_itl_ms": tpot_ms,
            "median_itl_ms": tpot_ms,
            "std_itl_ms": 0.5,
            "p95_itl_ms": tpot_ms * 1.2,
            "p99_itl_ms": tpot_ms * 1.5,
            "concurrency": rate * float(lat.mean()),
            "accept_length": None,
        }
        del rec["std_e2e_latency_ms"]
        rec["std_e2e_latency_ms"] = float(np.std(lat) * 1e3)
        out.append(rec)
    return out


def _stats(x, unit):
    q = {f"p{k}": float(np.percentile(x, k)) for k in (1, 5, 10, 25, 50, 75, 90, 95, 99)}
    return {
        "unit": unit,
        "avg": float(np.mean(x)),
        **q,
        "min": float(np.min(x)),
        "max": float(np.max(x)),
        "std": float(np.std(x)),
    }


def genai_perf() -> dict:
    rng = np.random.default_rng(5)
    n = 100
    p, o, ttft, tpot, _, lat = _requests(rng, n, (500, 700), (100, 200), 80.0, 12.0)
    dur = float(lat.sum()) / 8
    ms = 1e3
    return {
        "request_throughput": {"unit": "requests/sec", "avg": n / dur},
        "request_latency": _stats(lat * ms, "ms"),
        "request_count": {"unit": "count", "avg": n},
        "time_to_first_token": _stats(ttft * ms, "ms"),
        "time_to_second_token": _stats(tpot * ms, "ms"),
        "inter_token_latency": _stats(tpot * ms, "ms"),
        "output_token_throughput_per_user": _stats(1 / tpot, "tokens/sec/user"),
        "output_sequence_length": _stats(o, "tokens"),
        "input_sequence_length": _stats(p, "tokens"),
        "output_token_throughput": {"unit": "tokens/sec", "avg": float(o.sum()) / dur},
        "input_config": {
            "model_names": ["meta-llama/Llama-3.1-8B-Instruct"],
            "endpoint": {"type": "chat", "streaming": True, "url": "localhost:8000"},
            "perf_analyzer": {"stimulus": {"concurrency": 8}, "path": "perf_analyzer"},
            "input": {"synthetic_tokens": {"mean": 600, "stddev": 50}},
            "output": {
                "artifact_directory": "artifacts",
                "profile_export_file": "profile_export.json",
            },
            "tokenizer": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "subcommand": "profile",
        },
    }


def main() -> None:
    (HERE / "vllm-detailed.json").write_text(json.dumps(vllm_detailed()) + "\n")
    (HERE / "vllm-aggregate.json").write_text(json.dumps(vllm_aggregate(), indent=2) + "\n")
    lines = [json.dumps(r) for r in sglang_lines()]
    (HERE / "sglang-bench-serving.jsonl").write_text("\n".join(lines) + "\n")
    (HERE / "profile_export_genai_perf.json").write_text(json.dumps(genai_perf(), indent=2) + "\n")
    bad = vllm_aggregate()
    del bad["completed"]
    (HERE / "bad-vllm-no-completed.json").write_text(json.dumps(bad) + "\n")
    two = sglang_lines()
    two[1]["median_tpot_ms"] = "fast"
    (HERE / "bad-sglang-line2.jsonl").write_text("\n".join(json.dumps(r) for r in two) + "\n")


if __name__ == "__main__":
    main()

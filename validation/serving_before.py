"""The serving cases as the model stood before issue 24's engine work: commit 165ff4a.

`python validation/serving_before.py` checks that commit out in a temporary git worktree, runs
each case of validation/serving_cases.yaml and validation/engine_sweeps.yaml (the files as they
are now) through that commit's `run_serving_case`, in sample (its catalog as shipped) and out of
sample (its validation/serving_crossval.py FITS: vLLM's request_latency_us and api_token_slow_us
each fall back when their source is left out), and writes validation/serving_before.csv, which
docs/ACCURACY.md's "before" columns read (so the docs regenerate without the old code).

That loader did not know some keys the sweeps use, so the cases are read as follows:
- `output_tokens_per_s_per_gpu` (a metric it lacked) is its output tokens/s over TP x PP GPUs;
- `arrivals: burst` (every request at t = 0) becomes what the current loader makes of it: a
  closed loop of as many users as requests;
- a missing `requests` takes the current default, 1,000;
- `frontend`, `attention_dp`, `max_num_seqs`, `max_num_batched_tokens` and
  `gpu_memory_utilization` are not applied (that code had no such settings: the old model ran
  every case through the API server's costs, vLLM's defaults and no attention-DP);
- a case that code cannot evaluate (its engine had no profile, or it raised) is skipped and
  listed with the reason.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

BEFORE = "165ff4a"
HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
OUT = ROOT / "validation/serving_before.csv"
CASE_FILES = ("validation/serving_cases.yaml", "validation/engine_sweeps.yaml")
COLUMNS = ("file", "id", "metric", "measured", "ideal", "in_sample", "out_of_sample")


def _read_old(case: dict) -> dict:
    """The case as the old loader's keys can carry it (see the module docstring)."""
    c = dict(case)
    if c.get("arrivals") == "burst":
        n = c.get("requests", c.get("concurrency"))
        c.update(arrivals="closed", concurrency=n, requests=n)
    c.setdefault("requests", 1000)
    if c["metric"] == "output_tokens_per_s_per_gpu":
        c["metric"] = "output_tokens_per_s"  # then divided by the GPUs (_gpus)
    return c


def _gpus(case: dict) -> int:
    """What a per-GPU throughput divides by: the replica's GPUs, TP x PP (attention-DP and EP
    run inside the TP group)."""
    if case["metric"] != "output_tokens_per_s_per_gpu":
        return 1
    return int(case.get("tp", 1)) * int(case.get("pp", 1))


def _child_one(item: tuple[str, dict]) -> dict:
    """Run in the old tree (PYTHONPATH): one case in and out of sample, or why it was skipped."""
    from roofline.cases.serving import run_serving_case
    from validation.serving_crossval import FITS, _Patched, source_group

    rel, case = item
    cat = _child_cat()
    row = {"file": rel, "id": case["id"], "metric": case["metric"], "measured": case["measured"]}
    try:
        c = _read_old(case)
        r = run_serving_case(c, cat)
        outside = r.expected
        hw = cat.accelerator(c["hardware"])
        patch = {}
        for f in FITS:
            prof = (hw.efficiency.engines or {}).get(f.engine)
            if f.group == source_group(c) and prof is not None:
                patch[(f.engine, f.field)] = f.fallback(prof)
        if patch:
            outside = run_serving_case(c, _Patched(cat, patch), expected_only=True).expected
    except Exception as exc:  # the old code's own refusal, recorded as the reason
        return {**row, "skipped": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
    n = _gpus(case)
    return {**row, "ideal": r.ideal / n, "in_sample": r.expected / n, "out_of_sample": outside / n}


_CAT = None


def _child_cat():
    global _CAT
    if _CAT is None:
        from roofline.catalog.load import load_catalog

        _CAT = load_catalog()
    return _CAT


def _child(tree: str) -> None:
    """Evaluate every case under the old tree; one JSON line per case on stdout."""
    import multiprocessing as mp

    import yaml  # noqa: TID251 (reading the case files raw: the old loader lacks their keys)

    items = [
        (rel, c) for rel in CASE_FILES for c in yaml.safe_load((ROOT / rel).read_text())["cases"]
    ]
    _child_cat()
    with mp.get_context("fork").Pool(2) as pool:
        for row in pool.imap(_child_one, items, chunksize=8):
            print(json.dumps(row))


def main() -> None:
    tree = Path("/tmp/roofline-before-" + BEFORE)
    made = not tree.exists()
    if made:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), BEFORE], check=True
        )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); "
    code += f"sys.path.insert(1, {str(HERE.parent)!r}); import serving_before as s; "
    code += f"s._child({str(tree)!r})"
    try:
        got = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True
        )
    finally:
        if made:  # the temporary worktree goes again
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    if got.returncode:
        sys.exit(got.stderr)
    rows = [json.loads(ln) for ln in got.stdout.splitlines() if ln.startswith("{")]
    with OUT.open("w", newline="") as fh:
        fh.write(f"# validation/serving_before.py: the cases under commit {BEFORE} (read as its\n")
        fh.write("# module docstring says); '# skipped' lines: cases that code could not run\n")
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            if "skipped" not in r:
                w.writerow(
                    [r[k] if k in ("file", "id", "metric") else f"{r[k]:.6g}" for k in COLUMNS]
                )
        for r in rows:
            if "skipped" in r:
                fh.write(f"# skipped,{r['file']},{r['id']},{r['skipped'].replace(',', ';')}\n")
    n_skip = sum("skipped" in r for r in rows)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(rows) - n_skip} cases, {n_skip} skipped")


if __name__ == "__main__":
    main()

"""Attribute every line of roofline/ to the issue whose commits wrote it (issue 23's line budget).

Issue 23 asks for roofline/ below the 19,801 lines it had when filed (commit a04ecf6) for the
features it had then, the features added since counted apart. This script runs
``git blame -w -M -C`` over every tracked ``roofline/**/*.py`` as the working tree has it and maps
each line's commit to an issue:

1. a commit already in a04ecf6 is a baseline feature;
2. a commit named in COMMIT_ISSUE below (the unmarked commits, read one by one);
3. a commit whose message says "issue N" (the first such number);
4. a commit on a merged branch (reachable from the merge's second parent and not its first) takes
   the branch's issue from BRANCH_ISSUE, the merge commit too.

Issue 23's own commits (the refactors, and lines not committed yet) count as baseline features:
they move and rewrite what was there.
Usage: ``python tools/linecount.py [--json]`` from the checkout.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys

BASE = "a04ecf6"
BASE_LINES = 19_801
REFACTOR = 23

ISSUES = {
    21: "saturation rate, steady-state figures, bounds",
    22: "memory and formats as the chips have them",
    24: "sizing search, launch lines, serve layout options, disagg pools",
    25: "prefix cache, arrivals, traffic curve, check spec, bench files, speculation under load",
    26: "docs, bands, hostile input, results first",
    27: "HTML report",
}

BRANCH_ISSUE = {
    "deplayout": 23,
    "cli": 23,
    "types": 23,
    "timing": 23,
    "structure": 23,
    "sizing": 24,
    "b200": 24,
    "prefix": 25,
    "curve": 25,
    "benchfiles": 25,
    "docs": 26,
    "docsint": 26,
    "html": 27,
    "sweeps": 24,
    "engines": 24,
    "disagg": 24,
    "versions": 24,
    "dsr1": 24,
    "sweepacc": 24,
    "calib": 25,
    "bands": 24,
    "multistep": 24,
    "moeslice": 24,
    "tidy": 23,
}

# Commits on the main line that name no issue, attributed from what they change.
COMMIT_ISSUE = {
    "85b2938": 23,  # serving/search.py: the rate searches in one module (breaks a circle)
    "597c469": 21,  # saturation as a never-idle replica's steady completion rate
    "e125202": 21,  # the saturation probe's window
    "1a92be0": 21,  # the idle floor's second source (energy model)
    "34ac65c": 21,  # size runs its layouts over the cores (workers.py)
    "ed4a475": 21,  # capacity draws the probe's lengths once
    "abe5fcb": 22,  # formats a chip lacks
    "66166e7": 22,  # tests for the chips issue
    "1acc915": 22,  # checkpoints that quantize the experts only
    "b6c43dd": 22,  # hardware show lists the chip's compute formats
    "25825ae": 23,  # capacity through a Protocol; cycle and layer tests
    "64a3dab": 23,  # roofline/cases/
    "3193c16": 23,  # crossval.py to validation/
    "413df8d": 23,  # Price with the hardware vocabulary
    "0d80b3e": 23,  # one meaning per word
    "150b40b": 23,  # one layout enumerator
    "28fa736": 23,  # mend the change's twins
    "370a173": 23,  # serve and size command bodies
    "bda303b": 23,  # disagg command body
    "c2809ee": 23,  # serve, size, disagg within 60 lines
    "b9c5929": 23,  # search_sat
    "e3e5633": 23,  # merge of timing
    "bfb401b": 26,  # empty values refused
    "16f2e81": 26,  # -v on every command
    "5e972cf": 24,  # disagg's KV warning per attention-DP rank
    "4977453": 26,  # serving cases' p50/p99 (bands)
    "63fe32f": 25,  # size with a drafter
    "5b5073f": 21,  # tests for the saturation change
    "b88ae62": 24,  # MLPerf out of the validation files (the engine keyword)
    # branch 'versions' landed by fast-forward (no merge commit names it): engine versions
    "a6cc845": 24,
    "bf5cf3f": 24,
    "b0e608c": 24,
    "caa044a": 24,
    "43a1a24": 24,
    "74cdb0f": 24,
    # branch 'moeengine' landed by fast-forward too: per-engine MoE curves
    "5ff4cce": 24,
    "34628ec": 24,
    "ed84b7f": 24,
    # branch 'tidy': the spec evaluation out of the CLI (a refactor) and vLLM's pool rule
    "14fb687": 23,
    "53efb2e": 23,
    "0a3de7b": 24,
    # the review's mends of issue 24's code (attention TP, served_engine, the MoE dtype key)
    "f9f24ab": 24,
    "f668439": 24,
    "e5157d6": 24,
}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def branch_commits() -> dict[str, int]:
    """Each commit of a merged branch -> the branch's issue (the merge commit included)."""
    out: dict[str, int] = {}
    merges = git("log", "--merges", "--format=%H %P%x09%s", f"{BASE}..HEAD").splitlines()
    for line in merges:
        ids, subject = line.split("\t", 1)
        merge, first, second = ids.split()[:3]
        m = re.match(r"Merge branch '([^']+)'", subject)
        if not m or m.group(1) not in BRANCH_ISSUE:
            continue
        issue = BRANCH_ISSUE[m.group(1)]
        out.setdefault(merge, issue)
        for c in git("rev-list", second, f"^{first}", f"^{BASE}").split():
            out.setdefault(c, issue)
    return out


def commit_issue(commits: set[str]) -> dict[str, int | str]:
    """Map each commit to an issue number, or 'baseline' for a commit already in BASE."""
    in_base = set(git("rev-list", BASE).split())
    on_branch = branch_commits()
    out: dict[str, int | str] = {}
    for c in commits:
        if set(c) == {"0"}:  # not committed yet: the refactor under way
            out[c] = REFACTOR
            continue
        if c in in_base:
            out[c] = "baseline"
            continue
        short = next((k for k in COMMIT_ISSUE if c.startswith(k)), None)
        if short is not None:
            out[c] = COMMIT_ISSUE[short]
            continue
        m = re.search(r"issues? (2[1-7])\b", git("log", "-1", "--format=%B", c))
        if m:
            out[c] = int(m.group(1))
        elif c in on_branch:
            out[c] = on_branch[c]
        else:
            out[c] = "unattributed"
    return out


def blame_counts() -> collections.Counter[str]:
    """Lines of roofline/**/*.py per commit, by git blame -w -M -C."""
    counts: collections.Counter[str] = collections.Counter()
    for path in git("ls-files", "roofline/*.py").split():
        for line in git("blame", "-w", "-M", "-C", "--porcelain", "--", path).splitlines():
            parts = line.split()
            if len(parts) == 4 and len(parts[0]) == 40 and parts[3].isdigit():
                counts[parts[0]] += int(parts[3])
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    counts = blame_counts()
    issue_of = commit_issue(set(counts))
    by: collections.Counter[int | str] = collections.Counter()
    for c, n in counts.items():
        by[issue_of[c]] += n
    baseline = by["baseline"] + by[REFACTOR]
    total = sum(by.values())
    rows = {
        "total": total,
        "baseline_features": baseline,
        "baseline_budget": BASE_LINES,
        "before_issue_23": by["baseline"],
        "issue_23_refactors": by[REFACTOR],
        "added": {str(i): by[i] for i in ISSUES},
        "unattributed": by["unattributed"],
    }
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"roofline/ lines: {total:,}")
    mark = "below" if baseline < BASE_LINES else "ABOVE"
    print(
        f"baseline features: {baseline:,} ({mark} the {BASE_LINES:,} of {BASE}): "
        f"{by['baseline']:,} from before issue 23, {by[REFACTOR]:,} from its refactors"
    )
    for i, what in ISSUES.items():
        print(f"  issue {i}: {by[i]:6,}  {what}")
    if by["unattributed"]:
        print(f"  unattributed: {by['unattributed']:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

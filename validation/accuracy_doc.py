"""Write docs/ACCURACY.md: the method (accuracy_head.md), the tables `roofline validate` prints for
the public and the extra cases, and what the model leaves out (accuracy_tail.md).
Run `python validation/accuracy_doc.py` (or `make accuracy`); a test checks the doc is current."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def table(cases: str) -> str:
    env = {**os.environ, "COLUMNS": "130", "NO_COLOR": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "roofline", "validate", cases],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return "\n".join(line.rstrip() for line in out.splitlines()).strip("\n")


def render() -> str:
    head = (ROOT / "validation/accuracy_head.md").read_text()
    tail = (ROOT / "validation/accuracy_tail.md").read_text()
    return (
        head + "## Results on the public cases\n\n"
        "`roofline validate validation/public_cases.yaml` (meas/ideal is the share of the speed "
        "of light\nthe measurement reached; error is expected / measured − 1):\n\n```\n"
        + table("validation/public_cases.yaml")
        + "\n```\n\nAnd on the extra rows "
        "(`roofline validate validation/extra_cases.yaml`):\n\n```\n"
        + table("validation/extra_cases.yaml")
        + "\n```\n\nHeld out of the calibration: published vLLM latencies on 8× MI300X "
        "(`roofline validate validation/heldout_cases.yaml`), a check on the amd-instinct family, "
        "which borrows\nthe NVIDIA figures for want of AMD cases to fit:\n\n```\n"
        + table("validation/heldout_cases.yaml")
        + "\n```\n\n"
        + tail
    )


if __name__ == "__main__":
    (ROOT / "docs/ACCURACY.md").write_text(render())

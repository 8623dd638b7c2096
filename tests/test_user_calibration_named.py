"""A user's calibration is named in every output computed with it (issue 33 item 5): the JSON's
user_calibration {file, sha256, figures}, the table's footer and the HTML, and only where one of
the output's chips is calibrated."""

from __future__ import annotations

import hashlib
from pathlib import Path

from roofline.render.html.page import page

FIT = """calibrations:
- id: mine-h100-vllm
  hardware: h100
  engine: vllm
  memory: 0.65
  cpu_step_us: 2400
  source: "my runs"
"""


def _catalog(tmp_path: Path) -> Path:
    (tmp_path / "fit.yaml").write_text(FIT)
    return tmp_path


def test_json_names_the_file_its_hash_and_figures(run, tmp_path):
    d = _catalog(tmp_path)
    doc = run("--catalog", str(d), "analyze", "llama-3.1-8b", "h100", "-f", "json").json()
    cal = doc["user_calibration"]
    assert cal["file"] == str(d / "fit.yaml")
    assert cal["sha256"] == hashlib.sha256(FIT.encode()).hexdigest()
    fig = {"id": "mine-h100-vllm", "hardware": "nvidia-h100-sxm", "engine": "vllm"}
    assert cal["figures"] == [{**fig, "memory": 0.65, "cpu_step_us": 2400.0}]
    assert 'id="user-calibration"' in page(doc) and "fit.yaml" in page(doc)
    # another chip is not computed with it; a command without --catalog names none
    other = run("--catalog", str(d), "analyze", "llama-3.1-8b", "b200", "-f", "json").json()
    assert "user_calibration" not in other
    plain = run("analyze", "llama-3.1-8b", "h100", "-f", "json").json()
    assert "user_calibration" not in plain


def test_size_table_footer_and_json_name_it(run, tmp_path, compute_once):
    d = _catalog(tmp_path)
    args = ("--catalog", str(d), "size", "llama-3.1-8b", "--rate", "2", "--hardware", "h100",
            "--prompt", "500", "--output", "100", "--requests", "50")  # fmt: skip
    table = run(*args)
    assert table.code == 0
    out = table.stdout.replace("\n", " ")
    assert "computed with your calibration " + str(d / "fit.yaml") in out
    assert run(*args, "-f", "json").json()["user_calibration"]["figures"][0]["memory"] == 0.65

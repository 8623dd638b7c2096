"""One vocabulary: every option spelled the same means the same in every command (same type and
default), every command's help has a one-line summary and an example, and the exit codes keep
their meaning (0 ok, 1 failed check, 2 bad input, 3 internal error)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer.main

from roofline.cli import app

ROOT_DIR = Path(__file__).resolve().parent.parent

ROOT = typer.main.get_command(app)

# Options whose type or default may differ, and why (each difference is stated in the help).
# sweep takes a comma list or a range for every grid axis; --batch in `tiers` defaults to "as many
# as fit" and in `check` follows --min-batch.
GRID_COMMANDS = {"sweep"}
# `models import` prints a catalog entry: its --format is yaml (default) or json
OWN_FORMAT = {"models import"}
AUTO_BATCH = {"tiers", "check"}


def _commands(group: Any = ROOT, prefix: str = "") -> dict[str, Any]:
    """Leaf commands by path ('analyze', 'hardware list'); duck-typed, as typer vendors click."""
    out = {}
    for name, cmd in group.commands.items():
        path = f"{prefix}{name}"
        if hasattr(cmd, "commands"):
            out.update(_commands(cmd, path + " "))
        else:
            out[path] = cmd
    return out


COMMANDS = _commands()


def _is_option(p: Any) -> bool:
    return p.param_type_name == "option"


def _type(p: Any) -> str:
    """The parameter's type name (str, int, path, ...)."""
    return p.type.name


def _signature(p: Any) -> tuple[str, str, object]:
    default = getattr(p.default, "value", p.default)  # an enum's value: Fmt.table -> "table"
    if "--format" in p.opts:  # row commands add jsonl/csv/markdown to table/json
        return ("format", str(default), p.is_flag)
    return (_type(p), str(default), p.is_flag)


def test_every_shared_option_has_one_type_and_default():
    seen: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, cmd in COMMANDS.items():
        for p in cmd.params:
            if not _is_option(p):
                continue
            name = max(p.opts, key=len)
            if path in GRID_COMMANDS or (name == "--batch" and path in AUTO_BATCH):
                continue
            if name == "--format" and path in OWN_FORMAT:
                continue
            seen[name][_signature(p)].append(path)
    clashes = {name: dict(sigs) for name, sigs in seen.items() if len(sigs) > 1}
    assert not clashes, f"options with different types or defaults across commands: {clashes}"


def test_sweep_grid_defaults_match_the_shared_defaults():
    analyze = {max(p.opts, key=len): p.default for p in COMMANDS["analyze"].params}
    sweep = {max(p.opts, key=len): p.default for p in COMMANDS["sweep"].params}
    for name in ("--tp", "--batch", "--prompt", "--output", "--weights", "--kv-dtype", "--engine"):
        assert str(sweep[name]) == str(analyze[name]), name


# where an option has no meaning: cliff, plan and serve take whole requests (context = prompt +
# output), plan searches the TP degree itself, plot asks no memory question (no KV budget)
NOT_MEANINGFUL = {"--context": {"cliff", "plan", "serve"}, "--tp": {"plan"}, "--engine": {"plot"}}


@pytest.mark.parametrize(
    "name", ["--prompt", "--output", "--context", "--tp", "--weights", "--kv-dtype", "--engine"]
)
def test_workload_and_layout_options_are_everywhere_a_model_runs(name):
    """Every command that takes MODEL and HARDWARE takes the workload and layout options."""
    for path, cmd in COMMANDS.items():
        args = [p.name for p in cmd.params if p.param_type_name == "argument"]
        if args[:2] != ["model", "hardware"] or path in NOT_MEANINGFUL.get(name, ()):
            continue
        names = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert name in names, f"{path} lacks {name}"


def test_output_means_tokens_and_files_use_out():
    for path, cmd in COMMANDS.items():
        for p in cmd.params:
            if "--output" in getattr(p, "opts", []):
                assert _type(p) == "str", path  # a token count such as 1k, never a path
            if _type(p) == "path" and p.param_type_name == "option":
                assert "--out" in p.opts, path


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_help_has_a_summary_and_an_example(path):
    cmd = COMMANDS[path]
    summary = cmd.get_short_help_str(limit=60)
    assert not summary.endswith("..."), f"{path}: summary longer than a line: {summary}"
    assert "Example:" in (cmd.help or ""), path


def test_internal_error_is_one_line_and_exit_3(monkeypatch, capsys):
    """A bug (not a user mistake) exits 3 with one line asking for a report, no traceback."""
    import roofline.cli.analyze as analyze

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(analyze, "request", broken)
    monkeypatch.setattr("sys.argv", ["roofline", "analyze", "llama-3.1-8b", "h100"])
    monkeypatch.delenv("ROOFLINE_DEBUG", raising=False)
    from roofline.cli import main

    with pytest.raises(SystemExit) as exc:
        main()
    out, err = capsys.readouterr()
    assert exc.value.code == 3 and out == ""
    assert err.count("\n") == 1 and "internal error" in err and "Traceback" not in err


def test_bad_input_is_exit_2_and_a_failed_check_exit_1(run):
    assert run("analyze", "llama-3.1-8b", "h100", "--tp", "0").code == 2
    deployment = ("check", "llama-3.1-405b", "h100", "--tp", "8", "--weights", "fp8")
    r = run(*deployment, "--min-batch", "1e6")
    assert r.code == 2  # 1e6 is not an integer: the parser refuses it
    r = run(*deployment, "--min-batch", "100000")
    assert r.code == 1 and "check failed" in r.stderr


def test_catalog_validate_lists_every_problem(run, tmp_path):
    (tmp_path / "a.yaml").write_text(
        "models:\n"
        "  - {id: one, hidden_size: 10}\n"  # missing keys
        "  - {id: two, hidden_sise: 10}\n"  # unknown key
    )
    (tmp_path / "b.yaml").write_text("accelerators: [\n")  # not YAML
    r = run("catalog", "validate", str(tmp_path))
    lines = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    # every problem of every entry: 'two' has the typo and, read as hidden_size, lacks 'name'
    assert r.code == 2 and len(lines) == 4, r.stderr
    assert "'one'" in lines[0] and "'two'" in lines[1] and "hidden_size" in lines[1]
    assert "'two'" in lines[2] and "'name'" in lines[2] and "not valid YAML" in lines[3]


def test_weights_auto_is_the_checkpoint_format(run):
    """--weights defaults to auto: an imported checkpoint's own format (gpt-oss-20b ships MXFP4
    per its quantization_config), bf16 for a catalog model with none recorded, and an explicit
    --weights wins."""
    cfg = str(ROOT_DIR / "examples" / "configs" / "gpt-oss-20b" / "config.json")
    doc = run("analyze", cfg, "h100", "--format", "json").json()
    assert doc["inputs"]["weights"] == "mxfp4"
    doc = run("analyze", cfg, "h100", "--weights", "bf16", "--format", "json").json()
    assert doc["inputs"]["weights"] == "bf16"
    doc = run("analyze", "llama-3.1-8b", "h100", "--format", "json").json()
    assert doc["inputs"]["weights"] == "bf16"

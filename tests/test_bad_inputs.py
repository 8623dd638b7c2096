"""Root causes of silent wrong answers and tracebacks (issue 14), one test each: every bad input
is one stderr line, exit 2, nothing on stdout."""

from __future__ import annotations

import json

import pytest
from conftest import refused


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # zero is a value, not "not given": checking batch 0 must not silently check batch 1
        (["check", "llama-3.1-8b", "h100", "--batch", "0", "--fits"], "batch must be"),
        (["check", "llama-3.1-8b", "h100", "--min-batch", "0"], "min_batch must be"),
        # a range that runs backwards or expands to a billion values is refused before any work
        (["sweep", "--batch", "64..1"], "runs backwards"),
        (["sweep", "--batch", "1..1000000000:1"], "more than"),
        (["sweep", "--batch", "1..64:0"], "step must be"),
        # bare numbers that would mean seconds or bytes
        (["plan", "llama-3.1-8b", "h100", "--max-tpot", "50"], "unit is required"),
        (["analyze", "llama-3.1-8b", "h100", "--memory", "80"], "unit is required"),
        # 2:4 sparsity on a chip without sparse tensor cores cannot halve the weights
        (["capacity", "llama-3.1-8b", "v100", "--sparsity", "2:4"], "no 2:4 sparse"),
        # a latency limit of 0 was checked as "+0.0%" over it; 1e30 s printed as an SLO met
        (["check", "llama-3.1-8b", "h100", "--max-tpot", "0ms"], "from 1 µs to 1 hour"),
        (["serve", "llama-3.1-8b", "h100", "--rate", "1", "--slo-tpot", "1e30s"], "1 hour"),
        (["serve", "llama-3.1-8b", "h100", "--rate", "1", "--slo-ttft", "1e-30s"], "from 1 µs"),
        (["plan", "llama-3.1-8b", "h100", "--max-tpot", "7200s"], "from 1 µs to 1 hour"),
        # check ran 5,000 requests for --requests 0 and 1,000,000 for 100,000,000, silently
        (
            [
                "check",
                "llama-3.1-8b",
                "h100",
                "--rate",
                "2",
                "--max-ttft-p99",
                "1s",
                "--requests",
                "0",
            ],
            "from 1 to 1,000,000",
        ),
        # an empty item was dropped: --hardware '' sized the default four chips
        (["size", "llama-3.1-8b", "--rate", "1", "--hardware", ""], "an empty item"),
        (["size", "llama-3.1-8b", "--rate", "1", "--hardware", "h100,,"], "an empty item"),
        (["sweep", "--model", "llama-3.1-8b", "--hardware", "h100", "--batch", "1,,8"], "empty"),
        (["edge", "llama-3.1-8b", "m4-max", "--devices", ","], "an empty item"),
        (["speculate", "llama-3.1-8b", "h100", "--gamma", "1,,2"], "an empty item"),
        (["serve", "llama-3.1-8b", "h100", "--rate", "1,,2"], "--rate '1,,2'"),
        # one request every 32 years printed $11 billion per million tokens
        (["serve", "llama-3.1-8b", "h100", "--rate", "1e-9"], "about nine a day"),
        # a config.json path that is not there read as an unknown catalog id
        (["analyze", "/tmp/nonexistent-dir/config.json", "h100"], "no such file"),
        # a chart into a directory that does not exist fails before any work
        (["plot", "llama-3.1-8b", "h100", "-o", "/nonexistent/dir/x.svg"], "does not exist"),
    ],
)
def test_refused(run, args, needle):
    refused(run(*args), needle)


def test_two_deployments_of_one_name_are_refused(run, tmp_path):
    """Two rows named 'x' in check's table could not be told apart (workload classes and fleet
    models already refused it)."""
    spec = tmp_path / "spec.yaml"
    one = "  model: llama-3.1-8b\n  hardware: {}\n  checks: {{fits: true}}\n"
    spec.write_text(
        "deployments:\n- name: x\n" + one.format("h100") + "- name: x\n" + one.format("h200")
    )
    refused(run("check", "--spec", str(spec)), "deployment 'x' is named twice")


def test_empty_spec_checks_nothing_and_is_refused(run, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("deployments: []\n")
    refused(run("check", "--spec", str(spec)), "no deployments")


@pytest.mark.parametrize("what", ["catalog", "spec", "lengths", "config"])
def test_files_that_are_not_utf8_are_one_line(run, tmp_path, what):
    bad = tmp_path / ("config.json" if what == "config" else "x.yaml")
    bad.write_bytes(b"\xff\xfe\x00 not text \xc3\x28")
    args = {
        "catalog": ["catalog", "validate", str(tmp_path)],
        "spec": ["check", "--spec", str(bad)],
        "lengths": ["kv", "llama-3.1-8b", "--allocation", "paged", "--lengths", str(bad)],
        "config": ["models", "import", str(bad)],
    }[what]
    r = run(*args)
    assert r.code == 2 and r.stdout == "" and "not UTF-8" in r.stderr


def test_a_quantization_config_that_is_not_a_mapping_is_refused(run, tmp_path):
    """A string quantization_config was ignored: the checkpoint read as 16-bit."""
    cfg = tmp_path / "config.json"
    cfg.write_text(
        '{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,'
        ' "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": 4,'
        ' "quantization_config": "fp8"}'
    )
    refused(run("analyze", str(cfg), "h100"), "quantization_config must be a mapping")


def test_config_with_nan_is_refused(run, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(
        '{"model_type": "llama", "hidden_size": NaN, "num_hidden_layers": 2,'
        ' "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": 4}'
    )
    refused(run("models", "import", str(cfg)), "NaN")


def test_message_with_a_newline_in_the_input_stays_one_line(run):
    r = run("analyze", "llama-3.1-8b\nrm -rf", "h100")
    assert r.code == 2 and r.stderr.count("\n") == 1


def test_a_non_finite_result_is_null_and_said(capsys):
    """JSON has no NaN or Infinity: such a value is written as null, and stderr says which."""
    import math

    from roofline.render import RowFmt, document, emit, emit_json

    doc = document("x", {"a": 1.0}, result={"ok": 2.0, "ratio": math.inf, "rows": [math.nan]})
    assert doc["result"] == {"ok": 2.0, "ratio": None, "rows": [None]}
    emit_json(doc)  # said where the nulls are written
    err = capsys.readouterr().err
    assert "2 value(s) not finite" in err and "result.ratio" in err and "result.rows[0]" in err
    # a table shows such values itself: no warning about JSON fields
    doc = document("x", {"a": 1.0}, result={"ratio": math.inf})
    emit(doc, RowFmt.table, [], lambda d: None)
    assert "not finite" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("analyze", "llama-3.1-8b", "h100", "--prompt", "4k", "--context", "1k"), "--context"),
        (
            ("serve", "llama-3.1-8b", "h100", "--rate", "1", "--slo-pct", "0.99", "--slo-ttft",
             "1s", "--requests", "50"),
            "did you mean 99",
        ),
        (("check", "llama-3.1-8b", "h100", "--prompt", "0", "--max-tpot", "50ms"), "prompt"),
        (("check", "llama-3.1-8b", "h100", "--min-throughput", "-1"), "--min-throughput"),
        (("check", "llama-3.1-8b", "h100", "--min-throughput", "nan"), "--min-throughput"),
        (("sweep", "--model", ""), "--model"),
        (("speculate", "llama-3.1-8b", "h100", "--draft", ""), "--draft"),
        (("kv", "llama-3.1-8b", "--max-len", ""), "--max-len"),
        (("sweep", "--hardware", " , "), "--hardware"),
    ],
)  # fmt: skip
def test_silent_answers_are_refused_in_one_line(run, args, says):
    r = run(*args)
    assert r.code == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr


def test_kv_past_the_trained_length_warns(run):
    r = run("kv", "llama-3.1-8b", "--context", "1M", "-f", "json")
    assert r.code == 0 and "max_position_embeddings" in r.stderr  # 131,072 for Llama 3.1
    assert r.json()["kv_bytes_per_sequence"] > 0


HOSTILE_MODEL = """models:
- id: {id}
  name: Hostile
  source: a test
  model_type: {mt}
  hidden_size: 4096
  num_hidden_layers: {layers}
  num_attention_heads: 32
  intermediate_size: 14336
  vocab_size: 128256
{extra}"""


@pytest.mark.parametrize(
    ("mt", "layers", "extra", "says"),
    [
        ("llama", 32, "  num_key_value_heads: 64\n", "num_key_value_heads"),  # KV above query
        ("llama", 32, "  num_key_value_heads: 0\n", "num_key_value_heads"),
        ("llama", 32, "  head_dim: 0\n", "head_dim"),
        ("llama", 32, "  max_position_embeddings: 0\n", "max_position_embeddings"),
        ("llama", 32, "  sliding_window: 0\n", "sliding_window"),
        ("mixtral", 32, "  n_routed_experts: 8\n  num_experts_per_tok: 16\n", "num_experts_per"),
        ("llama", 10**9, "", "num_hidden_layers"),  # would not finish: bounded
        ("llama", 32, "  vocab_size_: 1\n", "unknown key"),
    ],
)  # fmt: skip
def test_hostile_model_entries_are_named_not_accepted(run, tmp_path, mt, layers, extra, says):
    (tmp_path / "m.yaml").write_text(
        HOSTILE_MODEL.format(id="h", mt=mt, layers=layers, extra=extra)
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and says in r.stderr and "model 'h'" in r.stderr


def test_infinite_and_nan_figures_are_refused(run, tmp_path):
    (tmp_path / "h.yaml").write_text(
        "accelerators:\n- id: inf-gpu\n  name: I\n  vendor: test\n  family: nvidia-datacenter\n"
        "  memory: {capacity_gib: 16, bandwidth_tb_s: .nan}\n  dense_tflops: {bf16: .inf}\n"
        "  sparsity_2_4: false\n  source: a test\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2 and "finite" in r.stderr


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"model_type": ["llama"]}, "model_type"),  # a list where a name belongs
        ({"hidden_size": {"a": 1}}, "hidden_size"),  # a dict where a number belongs
        ({"num_attention_heads": [32]}, "num_attention_heads"),
        ({"vocab_size": 10**400}, "vocab_size"),  # no float holds it
    ],
)
def test_hostile_config_values_are_named(run, tmp_path, change, says):
    import json

    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, **change,
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = run("analyze", str(path), "h100")
    assert r.code == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_json_nested_thousands_deep_is_refused(run, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    r = run("analyze", str(path), "h100")
    assert r.code == 2 and "nested too deep" in r.stderr


def _cli(*args: str, env: dict | None = None, stdout=None):
    import os
    import subprocess
    import sys

    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "roofline", *args],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full,
        timeout=60,
    )


def test_a_fifo_in_a_catalog_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "x.yaml")
    r = _cli("--catalog", str(tmp_path), "hardware", "list")
    assert r.returncode == 2 and b"not a regular file" in r.stderr


def test_an_ascii_terminal_gets_ascii_spellings():
    r = _cli("hardware", "show", "h100", env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and r.stderr == b""
    r.stdout.decode("ascii")  # nothing but ASCII


def test_a_full_disk_is_one_line_and_a_closed_pipe_is_quiet():
    with open("/dev/full", "w") as full:
        r = _cli("hardware", "list", stdout=full)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"No space" in r.stderr
    import subprocess
    import sys

    p = subprocess.Popen(
        [sys.executable, "-m", "roofline", "sweep", "--batch", "1..4096", "-f", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()  # the reader leaves, as `| head -1` does
    err = p.stderr.read()
    p.stderr.close()
    assert p.wait(timeout=60) == 0 and err == b""


def test_markdown_says_yes_and_rounds(run):
    r = run("check", "--spec", "examples/deploy.yaml", "-f", "markdown")
    assert r.code == 0 and "True" not in r.stdout and "| yes |" in r.stdout
    # no figure carries more than 4 significant digits: the JSON's raw value (e.g. 0.0161437...)
    # prints as its 4-digit rounding (0.01614), never longer
    js = json.loads(run("check", "--spec", "examples/deploy.yaml", "--format", "json").stdout)
    raw = [c["value"] for c in js["checks"] if c["name"] == "max_tpot"]
    assert raw and all(len(repr(v)) > 8 for v in raw)  # they do carry more digits
    for v in raw:
        assert f"| {v:.4g} |" in r.stdout and f"{v:.6g}" not in r.stdout


def test_no_word_is_broken_across_lines(run):
    out = run(
        "check", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "200", "--rate", "20",
        "--min-goodput", "19", "--max-ttft-p99", "1s", env={"COLUMNS": "80"},
    ).stdout  # fmt: skip
    assert "max_ttft_p99" in out  # whole on its line, not "max_ttft_p9" / "9"


def test_plan_tables_carry_no_json_warnings(run, compute_once):
    # (compute_once: the table and the JSON print one search of the layouts; the warning is the
    # JSON writer's)
    r = run("plan", "deepseek-r1", "h200", "--gpus", "16")
    assert r.code == 0 and "not finite" not in r.stderr  # infeasible layouts show as such
    assert "not finite" in run("plan", "deepseek-r1", "h200", "--gpus", "16", "-f", "json").stderr


def test_disagg_under_a_rate_echoes_the_lengths_it_simulated(run):
    out = run(
        "disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100", "--rate", "5",
        "--prompt", "2k", "--output", "300", "--requests", "100", env={"COLUMNS": "120"},
    ).stdout  # fmt: skip
    assert "prompts fixed 2000, outputs fixed 300" in out


def test_catalog_validate_lists_every_problem_of_an_entry(run, tmp_path):
    # an unknown key no longer hides a negative capacity in the same entry
    (tmp_path / "g.yaml").write_text(
        "accelerators:\n- id: two-bad\n  name: T\n  vendor: test\n  family: nvidia-datacenter\n"
        "  memory: {capacity_gib: -16, bandwidth_tb_s: 1, speed: 3}\n  dense_tflops: {bf16: 100}\n"
        "  sparsity_2_4: false\n  colour: red\n  source: a test\n"
    )
    r = run("catalog", "validate", str(tmp_path))
    assert r.code == 2
    assert "'colour'" in r.stderr and "'speed'" in r.stderr and "capacity_gib" in r.stderr


def test_a_command_group_alone_names_its_commands(run_main):
    """`roofline hardware` printed its whole help squashed into one error line (the real entry
    point: the parser's errors are mapped there)."""
    refused(run_main("hardware"), "roofline hardware needs a command: list, show, tiers, families")
    top = run_main()  # `roofline` alone: the help, on stdout
    assert top.code == 0 and top.stdout.startswith("Usage: roofline") and top.stderr == ""

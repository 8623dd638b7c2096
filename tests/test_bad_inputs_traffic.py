"""Silent wrong answers a fuzzer found in the traffic, check, plan, fleet and sweep commands
(2026-12-07), one test each: bad input is one stderr line and exit 2 with nothing on stdout; an
answer that is no (nothing fits, nothing meets the SLOs) is said, never printed as a success."""

from __future__ import annotations

import json
import math

import pytest
from conftest import refused
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.domain.units import fmt_seconds
from roofline.render.core import json_text, to_jsonable

SERVE = ("serve", "llama-3.1-8b", "h100")
DISAGG = ("disagg", "llama-3.1-8b", "--prefill", "h100", "--decode", "h100")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # a reversed range was read as its first value (10 req/s), silently
        ((*SERVE, "--rate", "10..1"), "runs backwards"),
        ((*SERVE, "--rate", "10..1:3"), "runs backwards"),
        # 0 requests fell back to the default 1,000
        ((*DISAGG, "--rate", "5", "--requests", "0"), "--requests must be"),
        # --duration was echoed in the JSON but the run was --requests long
        ((*SERVE, "--rate", "5", "--requests", "50", "--duration", "100s"), "give one"),
        # a budget below the running sequences was raised to 1,025, 0 and -1 to the default
        ((*SERVE, "--rate", "5", "--max-batched-tokens", "-1"), "from 1 to"),
        ((*SERVE, "--rate", "5", "--max-batched-tokens", "0"), "from 1 to"),
        ((*SERVE, "--rate", "5", "--max-batched-tokens", "5"), "must exceed the running"),
        # a 2,000-token shared prefix on a 1,000-token prompt (cut to fit: a 98% hit rate)
        ((*SERVE, "--rate", "5", "--prompt", "1k", "--shared-prefix", "2k"), "no shorter than"),
        # a drafter's settings without a drafter were dropped
        ((*SERVE, "--rate", "5", "--gamma", "4"), "--gamma needs --drafter"),
        ((*SERVE, "--rate", "5", "--drafter", "mtp"), "no multi-token-prediction layers"),
        ((*SERVE, "--rate", "5", "--acceptance", "0.8"), "--acceptance needs --drafter"),
        # nothing fits: an empty table and exit 0
        (("plan", "llama-3.1-70b", "h100", "--gpus", "1", "--weights", "bf16"), "fits no layout"),
        (("plan", "llama-3.1-70b", "h100", "--gpus", "8", "--nodes", "0"), "--nodes"),
        # a negative threshold always held
        (("check", "llama-3.1-8b", "h100", "--min-concurrency", "-1"), "--min-concurrency"),
        # a pool's option named as another (--tp) and an overhead of 1e30 s
        ((*DISAGG, "--prefill-tp", "0"), "--prefill-tp must be"),
        ((*DISAGG, "--transfer-overhead", "1e30s"), "at most 1 hour"),
        # $1e30 a GPU-hour priced every deployment; $0 was refused as unreadable
        ((*SERVE, "--rate", "1", "--price", "h100=1e30"), "at most $10,000"),
        ((*SERVE, "--rate", "1", "--price", "h100=0"), "more than $0"),
        (("plan", "llama-3.1-8b", "h100", "--gpus", "1", "--max-tpot", "0ms"), "from 1 µs"),
    ],
)  # fmt: skip
def test_refused(run, args, needle):
    refused(run(*args), needle)


def test_check_spec_refuses_options_it_would_drop(run, tmp_path):
    spec = tmp_path / "s.json"
    one = {"name": "a", "model": "llama-3.1-8b", "hardware": "h100", "checks": {"fits": True}}
    spec.write_text(json.dumps({"deployments": [one]}))
    # --tp 2 and an impossible --max-tpot were ignored: "ok", tp 1, the fits check alone
    refused(run("check", "--spec", str(spec), "--tp", "2", "--max-tpot", "1us"), "--tp, --max-tpot")
    assert run("check", "--spec", str(spec), "-f", "json").code == 0  # the options that apply


def test_spec_files_refuse_what_they_would_drop(run, tmp_path):
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        "deployments:\n- {name: a, model: llama-3.1-8b, hardware: h100, checks: {fits: true}}\n"
        "deploymens: []\n"
    )
    refused(run("check", "--spec", str(typo)), "unknown top-level key 'deploymens'")
    rev = tmp_path / "rev.yaml"
    rev.write_text("- {name: a, model: llama-3.1-8b, hardware: h100, rate: 10..1, requests: 50,"
                   " checks: {max_ttft_p99: 1s}}\n")  # fmt: skip
    refused(run("check", "--spec", str(rev)), "runs backwards")


def test_workload_file_times_need_units_and_lengths_name_their_key(run, tmp_path):
    wl = tmp_path / "w.yaml"
    # 50 read as 50 seconds (where 50 ms was meant): the CLI and check specs refuse bare times
    wl.write_text("rate: 5\nclasses:\n  - {name: a, prompt: 100, output: 10, slo_tpot: 50}\n")
    refused(run(*SERVE, "--workload", str(wl)), "class 'a': slo_tpot: a time with its unit")
    # an unknown distribution was reported against --lengths, not the file's class and key
    wl.write_text("rate: 5\nclasses:\n  - {name: a, prompt: lots, output: 10}\n")
    refused(run(*SERVE, "--workload", str(wl)), "class 'a': prompt: unknown distribution")


def test_validate_refuses_an_empty_case_list(run, tmp_path):
    cases = tmp_path / "c.yaml"
    cases.write_text("cases: []\n")  # was exit 3, an internal error on the empty summary
    refused(run("validate", str(cases)), "the 'cases' list is empty")


def test_validate_refuses_a_case_whose_model_cannot_load(run, tmp_path):
    cases = tmp_path / "c.yaml"  # 811 GB of bf16 weights on one 80 GB A100: a 10,000% "error"
    cases.write_text(
        "cases:\n- {id: big, model: llama-3.1-405b, hardware: nvidia-a100-80gb-sxm, gpus: 1,"
        " tp: 1, pp: 1, ep: 1, weights: bf16, kv: bf16, batch: 1, prompt: 5, output: 200,"
        " metric: tpot_ms, measured: 5, source: x}\n"
    )
    refused(run("validate", str(cases)), "does not fit on nvidia-a100-80gb-sxm")


def test_fleet_says_no_when_a_model_is_served_in_no_hour(run, tmp_path):
    fleet = tmp_path / "f.yaml"
    fleet.write_text(
        "requests: 50\nmodels:\n  - {name: big, model: llama-3.1-405b, prompt: 1k, output: 200,"
        " slo: {tpot: 100ms}, rate: 1}\nhardware:\n  owned: [{type: h100, count: 1,"
        " usd_per_gpu_hour: 2}]\n"
    )  # 810 GB of weights on one 80 GB GPU: it was "$48/day", exit 0
    r = run("fleet", str(fleet), "-f", "json")
    assert r.code == 1 and "big: served within the SLOs in no hour" in r.stderr
    assert json.loads(r.stdout)["models"][0]["slo_attainment"] == 0.0  # the result still printed


def test_sweep_table_prints_the_columns_it_folds(run):
    # two batches whose TPOT reads the same: the TPOT column was dropped and printed nowhere
    r = run("sweep", "--batch", "52,53", "--format", "table")
    assert r.code == 0 and "same in every row:" in r.stdout and "TPOT=" in r.stdout
    assert "e+" not in r.stdout  # 0.9998 s printed as "1e+03ms"


def test_plot_prints_its_data_beside_the_chart(run, tmp_path):
    out = tmp_path / "p.svg"
    r = run("plot", "llama-3.1-8b", "h100", "-o", str(out), "-f", "json")
    assert r.code == 0 and out.exists() and json.loads(r.stdout)["command"] == "plot"


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (0.9998, "1 s"),
        (0.00099996, "1 ms"),
        (999.96, "1,000 s"),
        (0.5, "500 ms"),
        (12.34, "12.3 s"),
    ],
)
def test_seconds_round_before_they_pick_a_unit(t, text):
    assert fmt_seconds(t) == text  # three significant figures of the value, then its unit


_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=6),
    st.floats(allow_nan=True, allow_infinity=True),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.text(max_size=4), max_size=4, unique=True),
    rows=st.integers(0, 300),
    cells=st.lists(_SCALAR, min_size=1, max_size=40),
    odd=st.sampled_from(["none", "nested", "other_keys", "not_a_dict"]),
)
def test_json_text_is_json_dumps_byte_for_byte(keys, rows, cells, odd):
    """The column writer of long row lists (a sweep's 100,000 points: 20 s -> 5 s) prints what
    json.dumps(to_jsonable(doc), indent=2) prints, for any scalar cells (NaN and inf as null),
    and falls back to json for rows that are not flat mappings of one key order."""
    points = [{k: cells[(i * len(keys) + j) % len(cells)] for j, k in enumerate(keys)}
              for i in range(rows)]  # fmt: skip
    if points and odd == "nested":
        points[0] = {k: [1, {"x": math.inf}] for k in keys}
    elif points and odd == "other_keys":
        points[-1] = {"other": 1}
    elif points and odd == "not_a_dict":
        points[0] = [1, 2]  # type: ignore[assignment]
    doc = {"schema_version": 1, "inputs": {"n": rows}, "points": points, "tail": []}
    assert json_text(doc) == json.dumps(to_jsonable(doc), indent=2, allow_nan=False)


def test_to_jsonable_still_names_the_null_fields():
    found: list[str] = []
    out = to_jsonable({"a": [1.0, math.nan], "b": {"c": math.inf}, "d": 2}, found)
    assert out == {"a": [1.0, None], "b": {"c": None}, "d": 2}
    assert found == ["a[1]", "b.c"]


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        ('"input_length": true, "output_length": 5', "not a whole number"),
        # block ids that are not ids were dropped with every prefix hit, silently
        ('"input_length": 10, "output_length": 5, "hash_ids": "abc"', "hash_ids"),
        ('"input_length": 10, "output_length": 5, "hash_ids": [1, "x"]', "hash_ids"),
    ],
)  # fmt: skip
def test_mooncake_records_are_read_as_written(run, tmp_path, record, needle):
    log = tmp_path / "m.jsonl"
    log.write_text(f'{{"timestamp": 1, {record}}}\n{{"timestamp": 2, {record}}}\n')
    refused(run(*SERVE, "--arrivals", str(log)), needle)


def test_check_reads_throughput_at_the_context_it_reads_tpot(run):
    """check --context judged TPOT at the context and throughput at prompt + output (357 against
    analyze's 345 tokens/s for 3 replicas of one 8k-token sequence); both now come from the
    decode steps at --context, as analyze reads them (throughput: 3 x 1,000 output tokens over
    the prefill and 1,000 decode steps of 8.69 ms, so a little under 3 / TPOT = 345.1)."""
    args = ("llama-3.1-8b", "h100", "--dp", "3", "--context", "8k", "--batch", "1")
    a = run("analyze", *args, "--format", "json").json()
    c = run("check", *args, "--min-throughput", "1", "--max-tpot", "1s", "--format", "json")
    tpot, tok_s = (x["value"] for x in c.json()["checks"])
    assert 0.99 * 3 / tpot < tok_s < 3 / tpot  # the prefill's share of the batch's time
    assert (tpot, tok_s) == (a["expected"]["tpot_s"], a["expected"]["output_tokens_per_s"])


def test_check_context_equal_to_prompt_plus_output_is_still_read(run):
    """check took a --context equal to prompt + output (2,000 at the 1k/1k default) for no
    context at all, judging TPOT over the decode (its mean context 1,500: 12.8 ms at batch 64
    on an H100) where analyze --context 2000 reads the steps at 2,000 tokens (14.1 ms): a
    context given is read, whatever its value."""
    args = ("llama-3.1-8b", "h100", "--batch", "64", "--format", "json")
    a = run("analyze", *args, "--context", "2000").json()["expected"]["tpot_s"]
    plain = run("analyze", *args).json()["expected"]["tpot_s"]
    c = run("check", *args, "--context", "2000", "--max-tpot", "1s").json()["checks"][0]
    assert c["value"] == a and a > 1.05 * plain  # 2,000 tokens a sequence against 1,500

"""The shipped ShareGPT length table (models/lengths/sharegpt.csv, roofline.catalog.lengths) and the
sharegpt-prompt / sharegpt-output length specs that read it (issue 34, mechanism c)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog.lengths import length_table
from roofline.domain.errors import CatalogError, InputError
from roofline.levers.kvcache import parse_lengths
from roofline.serving.workload import make_workload


def test_rows_obey_the_benchmark_samplers_filters():
    # vLLM's is_valid_sequence defaults (vllm/benchmarks/datasets.py): both at least 4 tokens,
    # the prompt at most 1,024, the two at most 2,048
    p, o = length_table("sharegpt")
    assert len(p) == len(o) >= 1000
    assert p.min() >= 4 and o.min() >= 4
    assert p.max() <= 1024
    assert (p + o).max() <= 2048


def test_means_match_a_published_run_with_the_same_sampler_and_tokenizer():
    # GPUStack's Qwen3-32B H100 vLLM run (vllm bench serve --dataset-name sharegpt, 1,000
    # prompts, Qwen3 tokenizer): 217,393 input and 201,422 output tokens, i.e. 217.4 and 201.4
    # per request; the table (Qwen3 tokenizer, the same sampler) within 5% of both
    p, o = length_table("sharegpt")
    assert p.mean() == pytest.approx(217.4, rel=0.05)
    assert o.mean() == pytest.approx(201.4, rel=0.05)


def test_shape_is_not_the_lognormal_it_replaces():
    # the first answer of a conversation: a short-reply mode and a capped tail, not a
    # log-normal of sigma 0.9 (whose 99th percentile at mean 201 is 201 e^(-0.405 + 0.9 x 2.326)
    # = 1,090 tokens, against about 800 in the data); prompts and answers of one conversation
    # anti-correlated (long pasted prompts, short answers)
    p, o = length_table("sharegpt")
    assert np.percentile(o, 99) < 0.85 * 1090
    assert np.corrcoef(np.log(p), np.log(o))[0, 1] < -0.2


def test_a_workload_pairs_prompt_and_output_row_by_row():
    p, o = length_table("sharegpt")
    w = make_workload("sharegpt-prompt", "sharegpt-output", concurrency=50, requests=50, seed=7)
    assert list(w.prompts) == list(p[:50])
    assert list(w.outputs) == list(o[:50])


def test_past_the_table_rows_repeat_in_order():
    p, _ = length_table("sharegpt")
    n = len(p) + 3
    values, _ = parse_lengths("sharegpt-prompt", 10**7, n)
    assert list(values[-3:]) == list(p[:3])


@settings(max_examples=25, deadline=None)
@given(mean=st.floats(100, 3000), n=st.integers(20, 6000))
def test_a_given_mean_is_the_mean_of_the_lengths_drawn(mean, n):
    values, _ = parse_lengths(f"sharegpt-output:mean={mean}", 10**7, n)
    assert len(values) == n
    assert values.mean() == pytest.approx(mean, abs=0.5)  # rounding each to a whole token


@pytest.mark.parametrize("spec", ["sharegpt-prompt:sigma=1", "sharegpt-output:mean=-3"])
def test_bad_parameters_are_one_line_errors(spec):
    with pytest.raises(InputError) as exc:
        parse_lengths(spec, 10**7, 10)
    assert "\n" not in str(exc.value)


def test_an_unknown_table_is_a_catalog_error():
    with pytest.raises(CatalogError):
        length_table("alpaca")

"""Unit parsing and the number formats' bits per value (derived from their block layouts)."""

import pytest

from roofline.domain.errors import InputError
from roofline.domain.precision import KV_FORMATS, WEIGHT_FORMATS, sparse_2_4_bits, weight_format
from roofline.domain.units import parse_bytes, parse_count, parse_seconds


def test_counts_are_si_unless_binary():
    assert parse_count("32k") == 32_000
    assert parse_count("128K") == 128_000
    assert parse_count("32Ki") == 32_768
    assert parse_count("1.5M") == 1_500_000
    assert parse_count("4096") == 4096


def test_bytes_and_seconds():
    assert parse_bytes("80GB") == 80e9
    assert parse_bytes("80GiB") == 80 * 2**30
    assert parse_bytes("512 MB") == 512e6
    assert parse_seconds("50ms") == pytest.approx(0.05)
    assert parse_seconds("300us") == pytest.approx(3e-4)
    assert parse_seconds("2s") == 2.0
    assert parse_bytes(4096) == 4096.0  # a Python number is already SI


@pytest.mark.parametrize("parse", [parse_bytes, parse_seconds])
def test_text_without_a_unit_is_refused(parse):
    """`--max-tpot 50` would be 50 seconds and `--memory 80` 80 bytes: both are refused."""
    with pytest.raises(InputError, match="unit is required"):
        parse("50")


@pytest.mark.parametrize("bad", ["", "abc", "12 parsecs", "-5k", "1e"])
def test_unparsable_counts_raise(bad):
    with pytest.raises(InputError):
        parse_count(bad)


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("bf16", 16),
        ("fp8", 8),
        ("int4", 4 + 16 / 128),  # one fp16 scale per group of 128
        ("int4-g32", 4 + (16 + 16) / 32),  # bf16 scale and zero per group of 32
        ("nvfp4", 4 + 8 / 16),  # one FP8 scale per 16 values
        ("mxfp4", 4 + 8 / 32),  # one E8M0 scale per 32 values
        ("q8_0", 8 + 16 / 32),  # 32 int8 + fp16 scale
        ("q4_0", 4 + 16 / 32),  # 32 int4 + fp16 scale
        ("q4_k_m", 4.85),  # llama.cpp's reported average
    ],
)
def test_weight_bits_include_scales(name, bits):
    assert WEIGHT_FORMATS[name].bits == pytest.approx(bits)


def test_weight_only_formats_compute_in_16_bit():
    assert WEIGHT_FORMATS["int4"].compute == "bf16"
    assert WEIGHT_FORMATS["q4_0"].compute == "fp16"
    assert WEIGHT_FORMATS["fp8"].compute == "fp8"
    assert WEIGHT_FORMATS["nvfp4"].compute == "fp4"


def test_kv_formats():
    assert KV_FORMATS["fp8"].bits == 8
    assert KV_FORMATS["int4"].bits == pytest.approx(4 + 32 / 128)  # fp16 scale+zero per head of 128


def test_sparse_2_4_bf16_is_9_bits():
    # half the 16-bit values (8 bits per original weight) + 2-bit index per kept value (1 bit)
    assert sparse_2_4_bits(16) == 9
    assert sparse_2_4_bits(16) / 16 == pytest.approx(0.5625)


def test_unknown_format_suggests():
    with pytest.raises(InputError) as e:
        weight_format("fp88")
    assert "did you mean 'fp8'" in e.value.hint


def test_package_docstring_example():
    import doctest

    import roofline

    result = doctest.testmod(roofline)
    assert result.attempted >= 1 and result.failed == 0


def test_format_aliases():
    assert weight_format("AWQ").name == "int4"
    assert weight_format("bfloat16").name == "bf16"
    assert weight_format("smoothquant").compute == "int8"
    from roofline.domain.precision import kv_format

    assert kv_format("fp8_e4m3").name == "fp8"
    with pytest.raises(InputError):
        kv_format("awq")  # a weight format is no KV format

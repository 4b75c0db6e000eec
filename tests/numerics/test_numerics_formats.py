"""Format records and the binary32 conversion helpers."""

from __future__ import annotations

import numpy as np
import pytest

from tcgen05_conformance.core.formats import code_bits, decode, values
from tcgen05_conformance.oracles.numerics import (
    FORMATS,
    NotRepresentable,
    f32_to_f16_rne,
    from_binary32,
    get_format,
    to_binary32,
)

SMALL = ["f16", "bf16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "ue8m0", "ue4m3"]


def _values(fmt: str) -> np.ndarray:
    f = get_format(fmt)
    codes = np.arange(1 << code_bits(f), dtype=np.uint32).astype(
        np.dtype(f"uint{f.container_bits}")
    )
    return to_binary32(codes, fmt).view(np.float32)


@pytest.mark.parametrize("fmt", SMALL)
def test_round_trip_through_binary32(fmt):
    f = get_format(fmt)
    codes = np.arange(1 << code_bits(f)).astype(np.dtype(f"uint{f.container_bits}"))
    words = to_binary32(codes, fmt)
    finite = np.isfinite(words.view(np.float32))
    back = from_binary32(words[finite], fmt)
    assert np.array_equal(back, codes[finite])


@pytest.mark.parametrize(
    "fmt,expected_max,expected_min_sub,count_finite",
    [
        ("e4m3", 448.0, 2.0**-9, 254),
        ("e5m2", 57344.0, 2.0**-16, 248),
        ("e2m3", 7.5, 0.125, 64),
        ("e3m2", 28.0, 0.0625, 64),
        ("e2m1", 6.0, 0.5, 16),
        ("f16", 65504.0, 2.0**-24, 65536 - 2048),
        ("ue8m0", 2.0**127, 2.0**-127, 255),
    ],
)
def test_format_ranges(fmt, expected_max, expected_min_sub, count_finite):
    v = _values(fmt)
    fin = v[np.isfinite(v)]
    assert fin.max() == expected_max
    assert fin[fin > 0].min() == expected_min_sub
    assert len(fin) == count_finite


def test_e2m1_value_set():
    assert sorted(set(np.abs(_values("e2m1")).tolist())) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_tf32_ignores_low_container_bits():
    f = get_format("tf32")
    one = np.array([0x3F800000, 0x3F801FFF], dtype=np.uint32)
    d = decode(one, f)
    assert d.mant.tolist() == [1 << 10, 1 << 10]
    with pytest.raises(NotRepresentable):
        from_binary32(np.array([0x3F801000], dtype=np.uint32), "tf32")


def test_not_representable_names_position():
    words = np.array([0x3F800000, 0x3F800001], dtype=np.uint32)
    with pytest.raises(NotRepresentable) as e:
        from_binary32(words, "f16")
    assert e.value.index == 1
    with pytest.raises(NotRepresentable):
        from_binary32(np.array([0x7F800000], dtype=np.uint32), "e4m3")  # no infinity in E4M3


def test_f32_to_f16_matches_numpy_rne():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = words.view(np.float32)
    ours = f32_to_f16_rne(words)
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(ours[~nan], ref[~nan])
    assert np.isnan(ours[nan].view(np.float16)).all()


def test_format_registry_is_data():
    assert {
        "f16",
        "bf16",
        "tf32",
        "e4m3",
        "e5m2",
        "e2m3",
        "e3m2",
        "e2m1",
        "s8",
        "u8",
        "f32",
        "s32",
        "ue8m0",
        "ue4m3",
    } <= set(FORMATS)
    assert get_format("E4M3") is FORMATS["e4m3"] and get_format("fp32") is FORMATS["f32"]
    with pytest.raises(ValueError):
        get_format("fp7")


@pytest.mark.parametrize("fmt", ["f32", "tf32"])
def test_a_signalling_nan_decodes_to_nan_without_a_warning(fmt):
    """A warning on stderr would break the one-line contract of the command line (issue 15)."""
    signalling = np.array([0x7F800001 | (0x2000 if fmt == "tf32" else 0)], np.uint32)  # exponent all ones, quiet bit 0
    with np.errstate(invalid="raise"):  # what numpy would otherwise have warned about
        assert np.isnan(values(signalling, fmt)).all()

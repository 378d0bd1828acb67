"""Every pair of element types, as NumPy promotes them: the host's result holds NumPy's, item for item; a uint64
with a signed integer, which numba computes in int64, is refused on the host and for sm_90 alike (issue 39:
``gpulab.map(add, np.array([2**63 + 1], np.uint64), np.array([1], np.int64), device="host")`` gave int64
``[-9223372036854775806]``; NumPy gives float64)."""

import itertools
import linecache
import re

import numpy as np
import pytest

import gpulab
from gpulab.errors import KernelTypeError

TYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                               "float16", "float32", "float64", "complex64", "complex128")]


def values(dtype: np.dtype) -> np.ndarray:
    """Seven items of ``dtype``: its ends, zero, one, and values between (fractions for floats)."""
    if dtype.kind == "b":
        return np.array([True, False, True, True, False, False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 3, 7], dtype)
    info = np.finfo(dtype)
    return np.array([info.max, -info.max, 0.0, 1.0, 0.5 - 0.25j, -2.125 + 3j, 1 / 3], complex).astype(dtype) \
        if dtype.kind == "c" else np.array([info.max, -info.max, 0.0, 1.0, 0.5, -2.125, 1 / 3], dtype)


def add(a, b):
    return a + b


def refused(first: np.dtype, second: np.dtype) -> bool:
    """numba computes a uint64 with a signed integer or a bool in int64."""
    return np.dtype(np.uint64) in (first, second) and {first.kind, second.kind} & {"i", "b"} != set()


@pytest.mark.parametrize("first, second", list(itertools.product(TYPES, TYPES)), ids=lambda t: t.name)
def test_every_pair_of_element_types_adds_as_numpy_does_or_is_refused(first, second):
    x, y = values(first), values(second)[::-1].copy()
    if refused(first, second):
        with pytest.raises(KernelTypeError, match=r"`a \+ b` mixes a u64 with"):
            gpulab.map(add, x, y, device="host")
        return
    got = gpulab.map(add, x, y, device="host")
    assert np.can_cast(np.result_type(first, second), got.dtype, "safe"), (got.dtype, np.result_type(first, second))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.add(x, y, dtype=got.dtype))


def _function(text: str):
    filename = f"<promotion-{abs(hash(text))}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"gpulab": gpulab, "u64": gpulab.u64, "i64": gpulab.i64}
    exec(compile(text, filename, "exec"), namespace)
    return namespace["f"]


@pytest.mark.parametrize("body, line, said", [
    ("return a + b", 2, "`a + b` mixes a u64 with an i64: numba computes it in i64, where a u64 from 2**63 up wraps to a "
                     "negative number (NumPy computes it in f64); convert one side to say which you mean: f64(a) + b "
                     "computes in f64 as NumPy does, a + u64(b) in u64 (for b at least 0), i64(a) + b in i64"),
    ("h = a\n    h += 1\n    return h", 3, "`h += 1` mixes a u64 with the constant 1: numba computes it in i64, where a "
                                        "u64 from 2**63 up wraps to a negative number (NumPy computes it in u64); "
                                        "write the constant as u64(1) to compute in u64"),
    ("return b * (a // 2)", 2, "`a // 2` mixes a u64 with the constant 2"),
    ("return a % -3", 2, "`a % -3` mixes a u64 with the constant -3: numba computes it in i64, where a u64 from 2**63 up "
                      "wraps to a negative number (NumPy refuses it: a u64 holds no negative constant); compute in "
                      "i64 or f64: i64(a) % -3, f64(a) % -3"),
    ("return u64(a < b)", 2, "`a < b` compares a u64 with an i64: numba compares them as f64 values, which tell integers "
                          "apart only up to 2**53 (NumPy compares them exactly); convert one side: i64(a) < b for a "
                          "below 2**63, a < u64(b) for b at least 0"),
    ("return u64(a == 2**60)", 2, "`a == 2 ** 60` compares a u64 with the constant 1152921504606846976"),
])
def test_a_u64_with_a_signed_integer_is_refused_at_its_line_with_what_to_write(body, line, said):
    fn = _function(f"def f(a: gpulab.u64, b: gpulab.i64) -> gpulab.u64:\n    {body}\n")
    for attempt in (lambda: gpulab.map(fn, np.array([2**63 + 1], np.uint64), np.array([1]), device="host"),
                    lambda: gpulab.compile("map", fn, target="sm_90")):
        with pytest.raises(KernelTypeError, match="^" + re.escape(said)) as info:
            attempt()
        assert info.value.location.line == line


def test_a_u64_mixed_inside_a_called_kernel_is_refused_at_that_kernels_line():
    fn = _function("@gpulab.kernel\ndef half(p: gpulab.u64) -> gpulab.u64:\n    return p >> 1\n"
                   "def f(a: gpulab.u64) -> gpulab.u64:\n    return half(a)\n")
    with pytest.raises(KernelTypeError, match=r"`p >> 1` mixes a u64 with the constant 1.*u64\(1\)") as info:
        gpulab.map(fn, np.array([2**63 + 2], np.uint64), device="host")
    assert info.value.location.line == 3


def test_what_numba_computes_exactly_with_a_u64_runs():
    """Division (f64 as NumPy), u64 with u64, and comparisons with small constants (exact in f64) are kept."""
    fn = _function("def f(a: gpulab.u64, b: gpulab.i64) -> gpulab.f64:\n"
                   "    if a > 0 and a != 3:\n        return a / b + (a + u64(1)) % u64(7)\n    return 0.0\n")
    big = 2**63 + 1
    got = gpulab.map(fn, np.array([big, 3, 0], np.uint64), np.array([2, 2, 2]), device="host")
    np.testing.assert_array_equal(got, [big / 2 + (big + 1) % 7, 0.0, 0.0])


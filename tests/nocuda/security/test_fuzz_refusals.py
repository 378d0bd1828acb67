"""Fuzz: every kernel of a small grammar is accepted or refused with a gpulab error, never a raw exception,
and the host accepts exactly the kernels the device compiles.

The kernels come from ``tests/fuzz_kernels.py`` (arithmetic, comparisons and
conditionals over the element types, now and then with a user's mistake);
each runs on the host backend and compiles for sm_90, and both must say the
same: accepted, or refused with a gpulab error. The GPU half, that the host
and the device agree on every accepted kernel's values, is
tests/gpu/test_fuzz_agreement.py.
"""

import warnings

import numpy as np
import pytest
from fuzz_kernels import FUZZ, accepted_by_both, define, inputs, kernels
from hypothesis import given

import gpulab
from gpulab.errors import FrontendError, GpulabWarning


@FUZZ
@given(kernels())
def test_every_generated_kernel_is_accepted_or_refused_alike_by_host_and_device(drawn):
    source, type_name = drawn
    a, b = inputs(type_name, n=16)
    fn = define(source)
    result = accepted_by_both(source, lambda: gpulab.map(fn, a, b, device="host"),
                              lambda: gpulab.compile("map", fn, target="sm_90", lineinfo=False))
    if result is not None:
        assert result.dtype == a.dtype and result.shape == a.shape


def test_the_gpu_failure_min_of_bool_and_int_is_refused_alike():
    """The H200 fuzz run found it: numba-cuda has no min(bool, int); the host ran it (CPU numba has one)."""
    fn = define("def f(a: bool, b: bool) -> bool:\n    if a < min(a, 0):\n        return a\n    return a\n")
    a, b = inputs("bool", n=8)
    for attempt in (lambda: gpulab.map(fn, a, b, device="host"),
                    lambda: gpulab.compile("map", fn, target="sm_90", lineinfo=False)):
        with pytest.raises(FrontendError, match=r"there is no `min\(\)` for \(bool, int\)"):
            attempt()


@pytest.mark.parametrize("source, type_name", [
    ("def f(a: i32, b: i32) -> i32:\n    return max(a, 1.5 > b)\n", "i32"),  # max(int32, bool)
    ("def f(a: f32, b: f32) -> f32:\n    return (a, b)[0] if a < b else (a, b)\n", "f32"),  # tuple or float
    ("def f(a: u8, b: u8) -> u8:\n    return min(a, True)\n", "u8"),
])
def test_sibling_typing_refusals_are_alike(source, type_name):
    fn = define(source)
    a, b = inputs(type_name, n=8)
    accepted_by_both(source, lambda: gpulab.map(fn, a, b, device="host"),
                     lambda: gpulab.compile("map", fn, target="sm_90", lineinfo=False))


def test_a_kernel_nvvm_once_refused_compiles_with_its_operator_inlined():
    """The fuzz test found it: nvJitLink's -opt=3 refused this valid u8 map ('Symbol name with unsupported
    characters') when the look-back's helpers were still in every kernel; link.py's fallback (-opt=1, with a
    warning) stays for that NVVM bug, but this map now links at -opt=3, its operator inlined, with no warning."""
    fn = define("def f(a: u8, b: u8) -> u8:\n    if 4 == ((a * b) // abs(b)):\n        return a\n"
                "    return abs(abs((-1 % b)))\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpulabWarning)
        build = gpulab.compile("map", fn, target="sm_90", lineinfo=False)
    assert "gpulab_op" not in build.sass
    a, b = inputs("u8", n=8)
    with np.errstate(divide="ignore"):
        gpulab.map(fn, a, b, device="host")


def test_the_grammar_makes_both_kinds():
    """The fuzz test means something only if some kernels are accepted and some refused."""
    from hypothesis import find

    find(kernels(), lambda d: '"text"' in d[0] or "undefined_name" in d[0], settings=FUZZ)
    accepted = find(kernels(mistakes=False), lambda d: " if " in d[0] and "//" in d[0], settings=FUZZ)
    fn = define(accepted[0])
    assert gpulab.map(fn, *inputs(accepted[1], n=4), device="host").size == 4
    assert np.dtype(gpulab.element_type(fn.__annotations__["a"]).dtype).kind in "biuf"

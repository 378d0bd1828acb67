"""Fuzz on a GPU: the host and the device accept the same kernels of the grammar, and agree bit for bit on each.

FMA contraction is off (``fma=False``), so float results must match exactly
too (NaN matching NaN); integers and bools always must. The settings never
shrink (``fuzz_kernels.FUZZ``): a failure names its kernel's source at once.
"""

import pytest
from fuzz_kernels import FUZZ, accepted_by_both, define, inputs, kernels
from hypothesis import given, settings

import gpulab
from gpulab.host import compare

pytestmark = pytest.mark.gpu


@settings(FUZZ, max_examples=20)
@given(kernels(mistakes=False))
def test_host_and_device_accept_the_same_kernels_and_agree_on_each(drawn):
    import cupy

    source, type_name = drawn
    a, b = inputs(type_name, n=4096)
    fn = define(source)
    got = []
    want = accepted_by_both(
        source, lambda: gpulab.map(fn, a, b, device="host"),
        lambda: got.append(gpulab.to_host(gpulab.map(fn, cupy.asarray(a), cupy.asarray(b), device="cuda:0",
                                                     fma=False))))
    if want is None:
        return  # both refused it, alike
    check = compare(got[0], want, want.dtype)
    assert got[0].dtype == want.dtype and check.exact, f"{source}\n{check.message}"


def test_the_h200_failure_is_refused_alike_on_the_gpu():
    """min(bool, int): numba-cuda has none; the host used to run it."""
    import cupy

    source = "def f(a: bool, b: bool) -> bool:\n    if a < min(a, 0):\n        return a\n    return a\n"
    fn = define(source)
    a, b = inputs("bool", n=64)
    assert accepted_by_both(source, lambda: gpulab.map(fn, a, b, device="host"),
                            lambda: gpulab.map(fn, cupy.asarray(a), cupy.asarray(b), device="cuda:0")) is None

"""A device follows the host's conversion rule (docs/conversion.md): the same refusals, the same words.

The cases are those of tests/nocuda/security/test_conversion.py (tests/conversion_cases.py),
run with CuPy arrays on the GPU.
"""

import numpy as np
import pytest
from conversion_cases import REFUSED_INITIAL, add, halve

import gpulab
from gpulab.errors import ConversionError, KernelTypeError, LengthMismatchError

pytestmark = pytest.mark.gpu


@pytest.fixture
def x():
    import cupy

    return cupy.arange(5, dtype=cupy.int32)


def _refused_alike(host_call, device_call, error, needle):
    with pytest.raises(error, match=needle) as on_host:
        host_call()
    with pytest.raises(error, match=needle) as on_device:
        device_call()
    assert type(on_host.value) is type(on_device.value)


@pytest.mark.parametrize("initial, needle", REFUSED_INITIAL)
@pytest.mark.parametrize("primitive", ["reduce", "scan"])
def test_initial_is_refused_alike(x, primitive, initial, needle):
    call = getattr(gpulab, primitive)
    _refused_alike(lambda: call(add, gpulab.to_host(x), initial, device="host"),
                   lambda: call(add, x, initial, device="cuda:0"), ConversionError, needle)


def test_exact_initial_values_are_taken(x):
    assert int(gpulab.to_host(gpulab.reduce(add, x, 2.0, device="cuda:0"))) == 12
    assert int(gpulab.to_host(gpulab.reduce(add, x, True, device="cuda:0"))) == 11


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
def test_narrow_or_other_out_is_refused_alike(x, dtype):
    import cupy

    _refused_alike(lambda: gpulab.map(add, gpulab.to_host(x), gpulab.to_host(x), out=np.zeros(5, dtype), device="host"),
                   lambda: gpulab.map(add, x, x, out=cupy.zeros(5, dtype), device="cuda:0"),
                   ConversionError, f"holds {np.dtype(dtype)}")


@pytest.mark.parametrize("primitive, size", [("reduce", 3), ("scan", 4)])
def test_out_of_the_wrong_size_is_refused_on_the_device(x, primitive, size):
    import cupy

    with pytest.raises(LengthMismatchError):
        getattr(gpulab, primitive)(add, x, 0, out=cupy.zeros(size, cupy.int32), device="cuda:0")


def test_reduce_and_scan_write_out_on_both(x):
    import cupy

    out = cupy.zeros((), cupy.int32)
    gpulab.reduce(add, x, 0, out=out, device="cuda:0")
    assert int(out) == 10
    out = cupy.zeros(5, cupy.int32)
    gpulab.scan(add, x, 0, out=out, device="cuda:0")
    np.testing.assert_array_equal(gpulab.to_host(out), [0, 1, 3, 6, 10])


def test_input_arrays_of_another_type_are_refused_alike():
    import cupy

    _refused_alike(lambda: gpulab.map(halve, np.arange(5), device="host"),
                   lambda: gpulab.map(halve, cupy.arange(5), device="cuda:0"),
                   ConversionError, "input 0 holds int64, but `halve` takes float32")


def test_iota_beyond_float32_is_refused_alike():
    _refused_alike(lambda: gpulab.map(halve, gpulab.iota(2**25), device="host"),
                   lambda: gpulab.map(halve, gpulab.iota(2**25), device="cuda:0"),
                   ConversionError, "which holds exactly the integers -16777216 .. 16777216")


def test_four_map_inputs_are_refused_alike(x):
    def four(a, b, c, d):
        return a + b + c + d

    _refused_alike(lambda: gpulab.map(four, *[gpulab.to_host(x)] * 4, device="host"),
                   lambda: gpulab.map(four, x, x, x, x, device="cuda:0"),
                   KernelTypeError, "map takes a function of 1 to 3 inputs")

"""Issue 39 on a GPU: the host computes as the device does where NumPy would not, bit for bit.

The host interprets a float16 kernel (numba has no float16 arithmetic for the CPU) with each operator in
the types numba-cuda gives it (gpulab/interpreted.py): ``x * 0.1`` in float64, ``f16 + u8`` and
``f16 // f16`` in float32, a bool's negative as an int64. Here the device computes the same kernels over
every finite float16 value, FMA off, and both must agree exactly; so must every pair of element types
that mixes float16 or a small unsigned integer (tests/nocuda/test_promotion.py holds the host to NumPy).
"""

import itertools

import numpy as np
import pytest

import gpulab
from gpulab.host import compare

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

EVERY_F16 = np.arange(2**16, dtype=np.uint16).view(np.float16)
EVERY_F16 = EVERY_F16[np.isfinite(EVERY_F16)]


def tenth(x: gpulab.f16) -> gpulab.f16:
    return x * 0.1


def quotient(x: gpulab.f16, y: gpulab.f16) -> gpulab.f32:
    return x // y + x % y


def mixed(x: gpulab.f16, y: gpulab.f16) -> gpulab.f16:
    k = -(x > y)
    q = x // y
    return gpulab.f16(q * k) if y < x < 2.0 else x


def add(a, b):
    return a + b


def _agree(fn, *xs):
    want = gpulab.map(fn, *xs, device="host")
    got = gpulab.to_host(gpulab.map(fn, *(cupy.asarray(x) for x in xs), device="cuda:0", fma=False))
    check = compare(got, want, want.dtype)
    assert got.dtype == want.dtype and check.exact, check.message


@pytest.mark.parametrize("fn", [tenth, quotient, mixed], ids=lambda f: f.__name__)
def test_an_interpreted_float16_kernel_gives_the_devices_bits(fn):
    xs = [EVERY_F16] if fn is tenth else [EVERY_F16, np.random.default_rng(0).permutation(EVERY_F16)]
    _agree(fn, *xs)


TYPES = ["bool", "int8", "uint8", "uint16", "int16", "int32", "uint32", "float16", "float32", "float64",
         "complex64"]


@pytest.mark.parametrize("first, second", [(a, b) for a, b in itertools.product(TYPES, TYPES)
                                           if "float16" in (a, b) or {a, b} & {"uint8", "uint16"}])
def test_a_pair_of_element_types_adds_alike_on_the_host_and_the_device(first, second):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 100, 4096).astype(first) if first != "bool" else rng.integers(0, 2, 4096).astype(bool)
    y = rng.integers(0, 100, 4096).astype(second) if second != "bool" else rng.integers(0, 2, 4096).astype(bool)
    if "float16" in (first, second):  # fractions too
        x, y = (v * np.asarray(0.37, v.dtype) if v.dtype.kind == "f" else v for v in (x, y))
    _agree(add, x, y)

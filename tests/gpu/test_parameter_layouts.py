"""The parameter layouts gpulab reads from the kernel text are the driver's (cuFuncGetParamInfo), for every primitive."""

import numpy as np
import pytest
from operators import add, positive

import gpulab
from gpulab.device import current_device
from gpulab.runtime import module

pytestmark = pytest.mark.gpu

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
alpha = 2
phase = 1j


def smaller(a, b):
    return a if a.value <= b.value else b


def rotate(x: gpulab.c64) -> gpulab.c64:
    return x * phase + alpha


CASES = [
    ("map", add, "f32,f32", {}), ("map", add, "i64,f32", {"iota": (True, False)}), ("map", rotate, None, {}),
    ("reduce", add, "f64,f64", {}), ("reduce", smaller, (PAIR, PAIR), {}), ("reduce", add, "i32,i32", {"index_bits": 64}),
    ("scan", add, "f32,f32", {}), ("scan", add, "i64,i64", {"exclusive": True, "index_bits": 64}),
    ("scan", smaller, (PAIR, PAIR), {}), ("filter", positive, "f16", {}), ("filter", positive, "i64", {}),
]


@pytest.mark.parametrize("primitive, fn, types, options", CASES)
def test_every_parameter_is_where_the_driver_puts_it(primitive, fn, types, options):
    build = gpulab.compile(primitive, fn, types=types, **options)
    loaded = module.load(build, current_device())  # load() itself refuses a mismatch
    for kernel, parameters in build.parameters.items():
        assert module.driver_parameters(loaded.functions[kernel]) == [(p.offset, p.dtype.itemsize) for p in parameters]

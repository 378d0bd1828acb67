"""Every primitive indexes 2-D views, reading and writing, with the row division the host prepared (row_divisor)."""

import numpy as np
import pytest
from operators import add, positive, twice

import gpulab

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu


def _on_host(view):
    return cupy.asnumpy(view).reshape(-1)


def _check_every_primitive(view):
    items = _on_host(view)
    np.testing.assert_array_equal(cupy.asnumpy(gpulab.map(twice, view)), gpulab.map(twice, items, device="host"))
    zero = view.dtype.type(0)
    assert gpulab.reduce(add, view, zero).item() == gpulab.reduce(add, items, zero, device="host")
    np.testing.assert_array_equal(cupy.asnumpy(gpulab.scan(add, view)), gpulab.scan(add, items, device="host"))
    np.testing.assert_array_equal(cupy.asnumpy(gpulab.filter(positive, view)),
                                  gpulab.filter(positive, items, device="host"))


@pytest.mark.parametrize("inner", [2, 3, 7, 100, 1000, 4097, 65535])
def test_rows_of_every_width_are_read_in_c_order(inner):
    rows = max(2, min(300, 2**20 // inner))
    data = np.random.default_rng(inner).integers(-1000, 1000, (rows, inner + 9), dtype=np.int32)
    _check_every_primitive(cupy.asarray(data)[:, 5:5 + inner])  # rows of `inner` items, inner + 9 apart
    _check_every_primitive(cupy.asarray(data.T.copy())[5:5 + inner].T)  # items `rows` apart, rows one apart


def test_outputs_that_are_2d_views_are_written_in_c_order():
    data = cupy.arange(3 * 1001, dtype=cupy.float32).reshape(3, 1001)  # sums below 2^24: exact
    wide = cupy.zeros((3, 1500), cupy.float32)
    gpulab.map(twice, data, out=wide[:, 7:1008])
    np.testing.assert_array_equal(cupy.asnumpy(wide[:, 7:1008]), cupy.asnumpy(data) * 2)
    assert not wide[:, :7].any() and not wide[:, 1008:].any()
    gpulab.scan(add, data, out=wide[:, 100:1101])
    np.testing.assert_array_equal(cupy.asnumpy(wide[:, 100:1101]).reshape(-1), np.cumsum(cupy.asnumpy(data)))


def test_a_view_past_two_to_the_31_items_takes_64_bit_rows():
    memory = cupy.zeros(2**31 + 2000, cupy.uint8)  # 2 GiB: row 1 starts past what a 32-bit index reaches
    memory[:1000] = cupy.arange(1000) % 251
    memory[2**31 + 3:2**31 + 1003] = cupy.arange(1000) % 13
    view = cupy.lib.stride_tricks.as_strided(memory, shape=(2, 1000), strides=(2**31 + 3, 1))
    _check_every_primitive(view)

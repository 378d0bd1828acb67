"""Records built in smaller tiles (32 to 128 bytes: tests/nocuda/test_large_items.py) on the GPU: scan, filter,
reduce_by_key and segmented_reduce equal the host's result bit for bit, in both orders."""

import numpy as np
import pytest
from large_items import items, larger, positive, record

import gpulab

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

SIZES = [0, 1, 1000, 2**20 + 3]


def same(got, want):
    got = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else np.asarray(got)
    assert got.dtype == want.dtype and got.tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("order", ["device", "portable"])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("size", [32, 64, 128])
@pytest.mark.parametrize("n", SIZES)
def test_scan_of_large_records_equals_the_host(n, size, exclusive, order):
    xs = items(record(size), n)
    initial = items(record(size), 1, seed=1)[0] if exclusive else None
    got = gpulab.scan(larger, cupy.asarray(xs), initial, exclusive=exclusive, order=order, associative=True)
    same(got, gpulab.scan(larger, xs, initial, exclusive=exclusive, device="host", order=order, associative=True))


@pytest.mark.parametrize("size", [32, 64, 128])
@pytest.mark.parametrize("n", SIZES)
def test_filter_of_large_records_equals_the_host(n, size):
    xs = items(record(size), n)
    same(gpulab.filter(positive, cupy.asarray(xs)), gpulab.filter(positive, xs, device="host"))


@pytest.mark.parametrize("order", ["device", "portable"])
@pytest.mark.parametrize("size", [32, 64, 128])
@pytest.mark.parametrize("n", SIZES)
def test_reduce_by_key_of_large_records_equals_the_host(n, size, order):
    values = items(record(size), n)
    keys = np.sort(np.random.default_rng(2).integers(0, max(1, n // 7), n)).astype(np.int32)
    got = gpulab.reduce_by_key(larger, cupy.asarray(keys), cupy.asarray(values), order=order, associative=True)
    want = gpulab.reduce_by_key(larger, keys, values, device="host", order=order, associative=True)
    for g, w in zip(got, want):
        same(g, w)


@pytest.mark.parametrize("order", ["device", "portable"])
@pytest.mark.parametrize("size", [32, 48])
@pytest.mark.parametrize("n", SIZES)
def test_segmented_reduce_of_large_records_equals_the_host(n, size, order):
    xs = items(record(size), n)
    offsets = np.sort(np.concatenate([[0, n], np.random.default_rng(3).integers(0, n + 1, n // 100)]))
    initial = items(record(size), 1, seed=4)[0]
    got = gpulab.segmented_reduce(larger, cupy.asarray(xs), cupy.asarray(offsets), initial, order=order,
                                  associative=True)
    same(got, gpulab.segmented_reduce(larger, xs, offsets, initial, device="host", order=order, associative=True))

"""Scan and filter on the GPU give the same bits on every run, and keep item order for any associative operator."""

import numpy as np
import pytest
from operators import add, positive

import gpulab

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

RUNS = 10
PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def leftmost_smallest(a, b):
    return a if a.value <= b.value else b


def last_marked(a, b):
    return b if b.index % 7 == 0 else a


def _floats(kind, n):
    return cupy.random.default_rng(1).standard_normal(n, dtype=np.float64).astype(kind)


def _same_every_run(run):
    """``run()`` gives the same bytes ``RUNS`` times (compared on the device)."""
    first = run().copy()
    for _ in range(RUNS - 1):
        again = run()
        assert again.dtype == first.dtype and again.shape == first.shape
        assert bool(cupy.all(again.view(np.uint8) == first.view(np.uint8))), "a run gave other bits"


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize("n", [1000, 2**24, 2**26])
@pytest.mark.parametrize("exclusive", [False, True])
def test_float_scans_are_bit_identical_run_to_run(kind, n, exclusive):
    data = _floats(kind, n)
    scan = gpulab.make_scan(add, data, exclusive=exclusive)
    out = cupy.empty_like(data)
    initial = np.array(0.5, kind)[()]
    _same_every_run(lambda: scan(data, initial, out=out))
    reference = cupy.cumsum(cupy.concatenate([cupy.asarray([0.5]), data.astype(np.float64)]))
    reference = reference[:-1] if exclusive else reference[1:]
    error = float(cupy.max(cupy.abs(out.astype(np.float64) - reference)))
    assert error <= (5e-2 if kind == "float32" else 1e-8) * n**0.5  # a float sum, not garbage


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize("n", [1000, 2**24, 2**26])
def test_filters_are_bit_identical_run_to_run(kind, n):
    data = _floats(kind, n)
    keep = gpulab.make_filter(positive, data)
    out, kept = cupy.empty_like(data), cupy.zeros((), np.int64)
    _same_every_run(lambda: keep.finish(keep(data, out=out, kept=kept)))
    np.testing.assert_array_equal(cupy.asnumpy(out[: int(kept)]), cupy.asnumpy(data[data > 0]))


def _records(n):
    rng = np.random.default_rng(2)
    data = np.zeros(n, PAIR)
    data["value"] = rng.integers(0, 8, n)  # many ties: which of equal values wins depends on order
    data["index"] = np.arange(n, dtype=np.int32)
    return data


@pytest.mark.parametrize("op", [leftmost_smallest, last_marked])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("n", [3 * 10**6, 1000])  # tiles with a look-back; the short path of one tile
def test_a_non_commutative_operator_on_records_keeps_the_hosts_order(op, exclusive, n):
    data = _records(n)
    initial = np.array((100.0, -1), PAIR)[()]
    on_device = cupy.asnumpy(gpulab.scan(op, cupy.asarray(data), initial, exclusive=exclusive))
    np.testing.assert_array_equal(on_device, gpulab.scan(op, data, initial, exclusive=exclusive, device="host"))
    if not exclusive:
        total = gpulab.reduce(op, cupy.asarray(data), initial)
        assert cupy.asnumpy(total).tobytes() == gpulab.reduce(op, data, initial, device="host").tobytes()


@pytest.mark.parametrize("n", [1, 2**10 + 1, 2**20, 2**24 + 3])
def test_the_one_launch_reduce_gives_the_same_bits_on_every_call(n):
    data = _floats("float32", n)
    plan = gpulab.make_reduce(add, data)
    out = cupy.empty((), np.float32)
    temp = cupy.full(max(plan.temp_storage_bytes(n), 1), 0xFF, np.uint8)  # partials need no zeroing
    first = plan(data, np.float32(0.5), out=out).copy()
    for storage in (None, temp) * 3:  # the block counters are ready for every next launch
        assert plan(data, np.float32(0.5), out=out, temp_storage=storage).tobytes() == first.tobytes()
    exact = 0.5 + float(cupy.sum(data.astype(np.float64)))
    assert abs(float(first) - exact) <= 1e-5 * float(cupy.sum(cupy.abs(data))) + 1e-6  # a float sum, not garbage


TRIPLE = np.dtype([("value", np.float32), ("index", np.int32), ("weight", np.float32)], align=True)


@pytest.mark.parametrize("n", [3 * 2**20 + 5, 2**24 + 3, 300 * 2**20 + 7])
def test_the_reduce_folds_groups_of_partials_in_order(n):
    """12-byte items are read one at a time, so a tile is 1024 of them: these sizes need both levels of partials,
    and the largest more groups (301) than a block has threads (each folds two of them)."""
    rng = np.random.default_rng(3)
    data = np.zeros(n, TRIPLE)
    data["value"] = rng.integers(0, 8, n)
    data["index"] = np.arange(n, dtype=np.int32)
    on_device = cupy.asarray(data)
    initial = np.array((100.0, -1, 0.0), TRIPLE)[()]
    smallest, marked = gpulab.make_reduce(leftmost_smallest, on_device), gpulab.make_reduce(last_marked, on_device)
    for _ in range(3):
        assert int(cupy.asnumpy(smallest(on_device, initial))["index"]) == int(np.argmin(data["value"]))
        assert int(cupy.asnumpy(marked(on_device, initial))["index"]) == (n - 1) // 7 * 7

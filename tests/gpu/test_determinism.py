"""Scan and filter on the GPU give the same bits on every run, and keep item order for any associative operator."""

import numpy as np
import pytest
from operators import add, positive

import gpulab
from gpulab.primitives import lookback

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


def _run_and_expected(primitive):
    plan = gpulab.make_scan(add, np.int32) if primitive == "scan" else gpulab.make_filter(positive, np.int32)

    def run(data, temp):
        found = plan(cupy.asarray(data), temp_storage=temp)
        return cupy.asnumpy(found if primitive == "scan" else plan.finish(found))

    def expected(data):
        return np.cumsum(data, dtype=np.int32) if primitive == "scan" else data[data > 0]

    return plan, run, expected


@pytest.mark.parametrize("primitive", ["scan", "filter"])
def test_no_word_of_an_old_launch_is_read_once_the_epochs_start_again(primitive):
    """A large launch with the last epoch (2^30 - 1, set here as if that many launches had run) leaves it in
    every tile's words. When the epochs start again the words must be cleared, or the next large launch
    with the last epoch would read the first one's words as its predecessors' values."""
    rng = np.random.default_rng(5)
    first, second = (rng.integers(-1000, 1000, 2**22, dtype=np.int32) for _ in range(2))
    plan, run, expected = _run_and_expected(primitive)
    temp = cupy.zeros(plan.temp_storage_bytes(first.size), np.uint8)
    lookback._epochs[temp.data.ptr] = lookback.EPOCHS - 1
    np.testing.assert_array_equal(run(first, temp), expected(first))  # epoch 2^30 - 1
    few_tiles = first[:100_000]
    np.testing.assert_array_equal(run(few_tiles, temp), expected(few_tiles))  # epoch 1: cleared first
    lookback._epochs[temp.data.ptr] = lookback.EPOCHS - 1  # as if 2^30 - 2 more launches had run
    np.testing.assert_array_equal(run(second, temp), expected(second))


@pytest.mark.parametrize("first_primitive", ["scan", "filter"])
def test_a_scan_and_a_filter_may_share_one_temp_storage(first_primitive):
    """Each launch on a storage takes the epoch after the last one's, whichever plan made it: with an epoch
    per plan, the second plan's first launch would take the first one's epoch and read its words."""
    rng = np.random.default_rng(6)
    data = [rng.integers(-1000, 1000, 2**22, dtype=np.int32) for _ in range(4)]
    plans = dict(scan=_run_and_expected("scan"), filter=_run_and_expected("filter"))
    order = [first_primitive, "filter" if first_primitive == "scan" else "scan"] * 2
    temp = cupy.zeros(max(plans[p][0].temp_storage_bytes(2**22) for p in plans), np.uint8)
    for primitive, values in zip(order, data):
        _, run, expected = plans[primitive]
        np.testing.assert_array_equal(run(values, temp), expected(values))

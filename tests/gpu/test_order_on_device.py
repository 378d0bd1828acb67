"""order="portable" on a GPU: the host's replay, bit for bit, whatever tile shape and block count the build has.

Each result of reduce, scan, segmented_reduce and reduce_by_key is compared
byte for byte with ``device="host", order="portable"``
(gpulab/host/portable.py), for float32, float64, float16 and a record whose
operator is not associative (so that any other grouping picks another item).
Other targets and element types cut the work into other tiles; here the
builds are forced to other block sizes and items per thread (codegen's tuning
constants, as bench/sweep_variants.py sets them), and so to other block
counts, and must still give the same bits.
"""

import contextlib

import numpy as np
import pytest

import gpulab
from gpulab.compiler import codegen, spec

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
KINDS = ["float32", "float64", "float16", "record"]
SIZES = [1, 1000, 2**20 + 7, 2**26]


def add(a, b):
    return a + b


def hop(a, b):
    """Not associative: which item wins depends on the grouping, as a float sum's last bits do."""
    return b if b.value + b.value > a.value else a


def _case(kind, n, seed=0):
    """``(operator, host items, initial)`` of one kind of item."""
    rng = np.random.default_rng(seed)
    if kind == "record":
        items = np.zeros(n, PAIR)
        items["value"], items["index"] = rng.standard_normal(n), np.arange(n)
        return hop, items, np.array((0.25, -1), PAIR)[()]
    scale = 10.0 ** rng.integers(-3, 2 if kind == "float16" else 4, n)  # float16 sums stay finite
    return add, (rng.standard_normal(n) * scale).astype(kind), np.array(0.5, kind)[()]


def _same(device_result, host_result) -> bool:
    return cupy.asnumpy(device_result).tobytes() == cupy.asnumpy(host_result).tobytes()


@contextlib.contextmanager
def tuned(**constants):
    """Builds made inside use codegen's tuning ``constants`` (new keys: the template fingerprint digests them)."""
    before = {name: getattr(codegen, name) for name in constants}
    for name, value in constants.items():
        setattr(codegen, name, value)
    spec.toolchain_versions.cache_clear()
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(codegen, name, value)
        spec.toolchain_versions.cache_clear()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_portable_reduce_and_scan_are_the_hosts_bits(kind, n):
    op, items, initial = _case(kind, n)
    on_device = cupy.asarray(items)
    reduced = gpulab.reduce(op, on_device, initial, order="portable", associative=True)
    assert _same(reduced, gpulab.reduce(op, items, initial, device="host", order="portable", associative=True))
    for given, exclusive in ((None, False), (initial, False), (initial, True)):
        scanned = gpulab.scan(op, on_device, given, exclusive=exclusive, order="portable", associative=True)
        host = gpulab.scan(op, items, given, exclusive=exclusive, device="host", order="portable", associative=True)
        assert _same(scanned, host), (given, exclusive)


REDUCE_SHAPES = [{}, {"BLOCK_THREADS": 128}, {"BLOCK_THREADS": 512, "REDUCE_THREAD_BYTES": 128},
                 {"REDUCE_THREAD_BYTES": 64}]
SCAN_SHAPES = [{}, {"SCAN_BLOCK_THREADS": 128, "SCAN_THREAD_BYTES": 64}, {"SCAN_BLOCK_THREADS": 512,
                                                                          "SCAN_THREAD_BYTES": 32},
               {"SCAN_THREAD_BYTES": 32}]


@pytest.mark.parametrize("kind", ["float32", "record"])
@pytest.mark.parametrize("n", [1000, 2**20 + 7, 2**24 + 3])
def test_other_tiles_and_block_counts_give_the_same_bits(kind, n):
    op, items, initial = _case(kind, n, seed=1)
    on_device = cupy.asarray(items)
    want_reduce = gpulab.reduce(op, items, initial, device="host", order="portable", associative=True)
    want_scan = gpulab.scan(op, items, initial, device="host", order="portable", associative=True)
    shapes = set()
    for shape in REDUCE_SHAPES:
        with tuned(**shape):
            reducer = gpulab.make_reduce(op, on_device, order="portable", associative=True)
            assert _same(reducer(on_device, initial), want_reduce), shape
            shapes.add(reducer.build().geometry.tile)
    for shape in SCAN_SHAPES:
        with tuned(**shape):
            scanner = gpulab.make_scan(op, on_device, order="portable", associative=True)
            assert _same(scanner(on_device, initial), want_scan), shape
            shapes.add(("scan", scanner.build().geometry.scan_tile))
    assert len(shapes) >= 6  # the tiles (and so the block counts) did differ


def test_the_device_order_is_another_tree_and_no_device_folds_sequentially():
    op, items, initial = _case("float32", 2**24, seed=2)
    on_device = cupy.asarray(items)
    device = gpulab.reduce(op, on_device, initial)
    assert _same(device, gpulab.reduce(op, on_device, initial))  # run to run
    portable = gpulab.reduce(op, on_device, initial, order="portable")
    assert not _same(device, portable)  # two trees
    with pytest.raises(gpulab.errors.ArgumentError, match="order='sequential' is the host's"):
        gpulab.reduce(op, on_device, initial, order="sequential")


def _segments(n, seed):
    """int64 offsets cutting n items into segments of 0 to ~3000 items (some empty), not from 0 nor to n; int32 keys
    in runs of tens to thousands of items (the host replays a float16 run's tree in the interpreter)."""
    rng = np.random.default_rng(seed)
    cuts = np.cumsum(rng.integers(0, 3000, n // 1500 + 2))
    offsets = np.concatenate([[min(5, n)], np.minimum(cuts + 5, max(n - 2, 5))]).astype(np.int64)
    offsets[offsets > n] = n
    keys = np.cumsum(rng.random(n) < 1 / rng.integers(50, 2000)).astype(np.int32)
    return np.sort(offsets), keys


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1000, 2**20 + 7, 2**24 + 3])
def test_portable_segments_and_runs_are_the_hosts_bits(kind, n):
    op, items, initial = _case(kind, n, seed=3)
    offsets, keys = _segments(n, seed=4)
    on_device = cupy.asarray(items)
    got = gpulab.segmented_reduce(op, on_device, cupy.asarray(offsets), initial, order="portable", associative=True)
    want = gpulab.segmented_reduce(op, items, offsets, initial, device="host", order="portable", associative=True)
    assert _same(got, want)
    got_keys, got = gpulab.reduce_by_key(op, cupy.asarray(keys), on_device, order="portable", associative=True)
    want_keys, want = gpulab.reduce_by_key(op, keys, items, device="host", order="portable", associative=True)
    assert _same(got_keys, want_keys) and _same(got, want)


SEGMENT_SHAPES = [{}, {"SCAN_THREAD_BYTES": 64}, {"SCAN_THREAD_BYTES": 32}]  # block_find_segments needs 256 threads
RUN_SHAPES = [{}, {"SCAN_BLOCK_THREADS": 128, "SCAN_THREAD_BYTES": 64}, {"SCAN_BLOCK_THREADS": 512,
                                                                         "SCAN_THREAD_BYTES": 32}]


@pytest.mark.parametrize("kind", ["float32", "record"])
def test_segments_and_runs_of_other_tiles_give_the_same_bits(kind):
    n = 2**22 + 11
    op, items, initial = _case(kind, n, seed=5)
    offsets, keys = _segments(n, seed=6)
    on_device, device_offsets, device_keys = cupy.asarray(items), cupy.asarray(offsets), cupy.asarray(keys)
    want = gpulab.segmented_reduce(op, items, offsets, initial, device="host", order="portable", associative=True)
    want_runs = gpulab.reduce_by_key(op, keys, items, device="host", order="portable", associative=True)[1]
    tiles = set()
    for shape in SEGMENT_SHAPES:
        with tuned(**shape):
            reducer = gpulab.make_segmented_reduce(op, on_device, order="portable", associative=True)
            assert _same(reducer(on_device, device_offsets, initial), want), shape
            tiles.add(("segments", reducer.build().geometry.scan_tile))
    for shape in RUN_SHAPES:
        with tuned(**shape):
            runs = gpulab.make_reduce_by_key(op, device_keys, on_device, order="portable", associative=True)
            assert _same(runs.finish(runs(device_keys, on_device))[1], want_runs), shape
            tiles.add(("runs", runs.build().geometry.scan_tile))
    assert len(tiles) == 6  # the tiles (and so the block counts) did differ

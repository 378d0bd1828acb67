"""segmented_reduce, reduce_by_key and unique_by_key on the GPU, held to the host reference backend.

Integers and records (with operators that are associative but not
commutative, so item order shows) must equal the host's bit for bit; float
sums are compared with a float64 sum; float results are the same bits on
every run.
"""

import numpy as np
import pytest
from operators import add, last, last_marked

import gpulab
from gpulab.errors import OffsetsError

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
SIZES = [0, 1, 31, 1000, 3 * 4096 + 17, 2**24]
TYPES = ["int32", "int64", "float32", "float64", "record"]
RUNS = 10


def square(x: gpulab.f32) -> gpulab.f32:
    return x * x


def tens(x: gpulab.i32) -> gpulab.i32:
    return x // 10


def _items(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "record":
        items = np.zeros(n, PAIR)
        items["value"], items["index"] = rng.standard_normal(n), rng.integers(0, 1000, n)
        return items
    if kind.startswith("int"):
        return rng.integers(-1000, 1000, n, dtype=kind)
    return rng.standard_normal(n).astype(kind)


def _offsets(n, shape, seed=0):
    """S + 1 offsets over n items: segments of 1000, of random lengths 1 to 100k, or tiny ones with empties."""
    rng = np.random.default_rng(seed)
    if shape == "1k":
        lengths = np.full(n // 1000 + 1, 1000)
    elif shape == "random":
        lengths = rng.integers(1, 100_001, n // 50_000 + 2)
    else:
        lengths = rng.integers(0, 4, n // 2 + 2)
    return np.minimum(np.concatenate([[0], np.cumsum(lengths)]), n).astype(np.int64)


def _same(got, want):
    got = cupy.asnumpy(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _close_to_float64(got, starts, ends, items, initial=0.0):
    """Float sums per segment against float64 ones: a float sum's order differs (a tree against left to right),
    by no more than a few dozen roundings of the sum of the magnitudes (a thread's 32 items in a row, then a
    tree)."""
    got = cupy.asnumpy(got)
    wide = np.concatenate([[0.0], np.cumsum(items.astype(np.float64))])
    sizes = np.concatenate([[0.0], np.cumsum(np.abs(items.astype(np.float64)))])
    want = initial + wide[ends] - wide[starts]
    scale = abs(initial) + sizes[ends] - sizes[starts]
    epsilon = np.finfo(items.dtype).eps
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= 16 * epsilon * scale + 1e-9), "a float sum far from float64's"


def _operator(kind):
    return last_marked if kind == "record" else (add if kind.startswith("float") else last)


def _initial(kind):
    return np.array((0.5, -3), PAIR)[()] if kind == "record" else np.array(7, kind)[()]


# --- segmented_reduce ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["1k", "random", "tiny"])
@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_segmented_reduce_equals_the_host(n, kind, shape):
    items, offsets, fn, initial = _items(kind, n), _offsets(n, shape), _operator(kind), _initial(kind)
    got = gpulab.segmented_reduce(fn, cupy.asarray(items), cupy.asarray(offsets), initial)
    if kind.startswith("float"):
        _close_to_float64(got, offsets[:-1], offsets[1:], items, float(initial))
    else:
        _same(got, gpulab.segmented_reduce(fn, items, offsets, initial, device="host"))


@pytest.mark.parametrize("offsets", [[5, 5, 9000, 9001, 20000], [0, 0, 0], [17, 40000, 40000], [40000, 70000]])
def test_offsets_need_not_start_at_zero_and_empty_segments_give_initial(offsets):
    items = np.arange(70_000, dtype=np.int64)
    want = gpulab.segmented_reduce(add, items, np.array(offsets), np.int64(3), device="host")
    for dtype in (np.int32, np.int64):
        got = gpulab.segmented_reduce(add, cupy.asarray(items), cupy.asarray(offsets, dtype), np.int64(3))
        np.testing.assert_array_equal(cupy.asnumpy(got), want)


def test_strided_2d_and_mapped_inputs_and_strided_offsets():
    base = _items("int64", 2 * 300 * 400).reshape(600, 400)
    view = base[::2, 10:390]  # 2-D, strided rows: items in C order
    offsets = _offsets(view.size, "random", seed=2)
    want = gpulab.segmented_reduce(last, np.ascontiguousarray(view), offsets, np.int64(-1), device="host")
    spaced = cupy.zeros(2 * offsets.size, np.int64)
    spaced[::2] = cupy.asarray(offsets)
    got = gpulab.segmented_reduce(last, cupy.asarray(base)[::2, 10:390], spaced[::2], np.int64(-1))
    np.testing.assert_array_equal(cupy.asnumpy(got), want)
    xs = np.arange(50_000, dtype=np.float32) / 1000
    offsets = _offsets(xs.size, "1k")
    squares = gpulab.segmented_reduce(add, gpulab.mapped(square, cupy.asarray(xs)), cupy.asarray(offsets),
                                      np.float32(0))
    _close_to_float64(squares, offsets[:-1], offsets[1:], xs * xs)


@pytest.mark.parametrize("offsets, message", [
    ([0, 5, 3, 10], r"offsets\[1\] = 5 > offsets\[2\] = 3"), ([-2, 4], r"offsets\[0\] = -2 is negative"),
    ([0, 4, 11], r"offsets\[2\] = 11 is past the input's end"), ([0, 9, 9, 2, 1], r"offsets\[2\] = 9 > offsets\[3\]")])
def test_bad_offsets_are_refused_as_on_the_host(offsets, message):
    items = cupy.arange(10, dtype=np.int32)
    with pytest.raises(OffsetsError, match=message):
        gpulab.segmented_reduce(add, items, cupy.asarray(offsets), 0)
    with pytest.raises(OffsetsError, match=message):
        gpulab.segmented_reduce(add, cupy.asnumpy(items), offsets, 0, device="host")
    unchecked = gpulab.segmented_reduce(add, items, cupy.asarray(offsets), 0, check_offsets=False)  # no hang
    assert unchecked.shape == (len(offsets) - 1,)
    good = gpulab.segmented_reduce(add, items, cupy.asarray([0, 4, 10]), 0)  # the error was cleared
    assert cupy.asnumpy(good).tolist() == [6, 39]


def test_a_reused_plan_takes_any_offsets_and_its_own_storage():
    plan = gpulab.make_segmented_reduce(add, np.dtype(np.float64))
    for n, shape in ((2**20, "1k"), (1000, "tiny"), (3 * 10**6, "random")):
        items, offsets = _items("float64", n, seed=n), _offsets(n, shape, seed=n)
        storage = cupy.zeros(max(plan.temp_storage_bytes(n), 1), np.uint8)
        out = cupy.empty(offsets.size - 1, np.float64)
        plan(cupy.asarray(items), cupy.asarray(offsets), 0.0, out=out, temp_storage=storage)
        _close_to_float64(out, offsets[:-1], offsets[1:], items)


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize("shape", ["1k", "random", "tiny"])
def test_float_segmented_reduce_is_bit_identical_run_to_run(kind, shape):
    n = 2**24
    items, offsets = cupy.asarray(_items(kind, n, seed=5)), cupy.asarray(_offsets(n, shape, seed=5))
    plan = gpulab.make_segmented_reduce(add, items)
    out = cupy.empty(offsets.size - 1, kind)
    first = plan(items, offsets, np.array(0.25, kind)[()], out=out, check_offsets=False).copy()
    for _ in range(RUNS - 1):
        again = plan(items, offsets, np.array(0.25, kind)[()], out=out, check_offsets=False)
        assert bool(cupy.all(again.view(np.uint8) == first.view(np.uint8))), "a run gave other bits"


# --- reduce_by_key, unique_by_key -------------------------------------------------------------------------------------
def _keys(n, mean_run, seed=0):
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.random(n) < 1 / mean_run).astype(np.int32)


@pytest.mark.parametrize("mean_run", [1, 16, 5000])
@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_reduce_by_key_equals_the_host(n, kind, mean_run):
    keys, values, fn = _keys(n, mean_run), _items(kind, n), _operator(kind)
    got_keys, got = gpulab.reduce_by_key(fn, cupy.asarray(keys), cupy.asarray(values))
    want_keys, want = gpulab.reduce_by_key(fn, keys, values, device="host")
    np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
    if kind.startswith("float"):
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]])) if n else np.zeros(0, int)
        _close_to_float64(got, starts, np.append(starts[1:], n).astype(int), values)
    else:
        _same(got, want)


def test_unique_by_key_and_keys_of_other_types():
    keys = np.array([0.0, -0.0, np.nan, np.nan, 1.0, 1.0, 2.5] * 3000, np.float32)
    values = np.arange(keys.size, dtype=np.int64)
    got_keys, got = gpulab.unique_by_key(cupy.asarray(keys), cupy.asarray(values))
    want_keys, want = gpulab.unique_by_key(keys, values, device="host")
    np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)
    for dtype in (np.int8, np.bool_, np.float16, np.uint64):
        typed = (np.arange(20_000) // 7 % 5).astype(dtype)
        got_keys, got = gpulab.reduce_by_key(add, cupy.asarray(typed), cupy.asarray(values[:20_000]))
        want_keys, want = gpulab.reduce_by_key(add, typed, values[:20_000], device="host")
        np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
        np.testing.assert_array_equal(cupy.asnumpy(got), want)


def test_mapped_keys_and_a_reused_plan():
    raw = np.repeat(np.arange(3000, dtype=np.int32), 13)
    values = _items("int64", raw.size, seed=4)
    want_keys, want = gpulab.reduce_by_key(add, gpulab.mapped(tens, raw), values, device="host")
    got_keys, got = gpulab.reduce_by_key(add, gpulab.mapped(tens, cupy.asarray(raw)), cupy.asarray(values))
    np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)
    plan = gpulab.make_reduce_by_key(add, np.dtype(np.int32), np.dtype(np.int64))
    for n in (10, 2**20, 5):
        keys, values = _keys(n, 9, seed=n), _items("int64", n, seed=n)
        runs_keys, runs = plan.finish(plan(cupy.asarray(keys), cupy.asarray(values)))
        host_keys, host = gpulab.reduce_by_key(add, keys, values, device="host")
        np.testing.assert_array_equal(cupy.asnumpy(runs_keys), host_keys)
        np.testing.assert_array_equal(cupy.asnumpy(runs), host)


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize("mean_run", [3, 1000, 2**22])
def test_float_reduce_by_key_is_bit_identical_run_to_run(kind, mean_run):
    n = 2**24
    keys, values = cupy.asarray(_keys(n, mean_run, seed=6)), cupy.asarray(_items(kind, n, seed=6))
    plan = gpulab.make_reduce_by_key(add, keys, values)
    out_keys, out, count = cupy.empty(n, np.int32), cupy.empty(n, kind), cupy.zeros((), np.int64)
    first = plan.finish(plan(keys, values, out_keys=out_keys, out=out, count=count))[1].copy()
    for _ in range(RUNS - 1):
        again = plan.finish(plan(keys, values, out_keys=out_keys, out=out, count=count))[1]
        assert bool(cupy.all(again.view(np.uint8) == first.view(np.uint8))), "a run gave other bits"


def test_iota_values_give_each_runs_first_position():
    keys = _keys(3 * 4096 + 17, 40, seed=8)
    unique, starts = gpulab.unique_by_key(cupy.asarray(keys), gpulab.iota(keys.size))
    want_keys, want_starts = gpulab.unique_by_key(keys, gpulab.iota(keys.size), device="host")
    np.testing.assert_array_equal(cupy.asnumpy(unique), want_keys)
    np.testing.assert_array_equal(cupy.asnumpy(starts), want_starts)


def test_plain_calls_give_what_general_calls_give_and_check_offsets_too():
    items = cupy.asarray(_items("int64", 100_000))
    offsets = cupy.asarray(_offsets(items.size, "random"))
    plan = gpulab.make_segmented_reduce(last, items)
    storage = cupy.zeros(plan.temp_storage_bytes(items.size), np.uint8)
    general = plan(items, offsets, np.int64(-1), temp_storage=storage)  # loads the build; the calls below are plain
    for _ in range(2):
        np.testing.assert_array_equal(cupy.asnumpy(plan(items, offsets, np.int64(-1))), cupy.asnumpy(general))
    with pytest.raises(OffsetsError, match=r"offsets\[1\] = 5 > offsets\[2\] = 3"):
        plan(items, cupy.asarray([0, 5, 3], np.int64), np.int64(-1))
    keys, values = cupy.asarray(_keys(items.size, 30)), items
    by_key = gpulab.make_reduce_by_key(last, keys, values)
    first = by_key.finish(by_key(keys, values, temp_storage=cupy.zeros(by_key.temp_storage_bytes(keys.size), np.uint8)))
    again = by_key.finish(by_key(keys, values))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b))

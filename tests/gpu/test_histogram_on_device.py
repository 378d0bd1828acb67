"""histogram on the GPU, held to the host reference (NumPy's rules): every path of histogram.cu."""

import numpy as np
import pytest

import gpulab

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
SIZES = [0, 1, 31, 1000, 3 * 4096 + 17, 2**24]


def sixteenths(x):
    return x >> 4


def pair_bin(p):
    return p.index % 5


def doubled(x: gpulab.f32) -> gpulab.f64:
    return gpulab.f64(x) * 2


def square(i: gpulab.i64) -> gpulab.i64:
    return i * i


def _data(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "record":
        data = np.zeros(n, PAIR)
        data["value"] = rng.standard_normal(n).astype(np.float32)
        data["index"] = rng.integers(-3, 40, n)
        return data
    if kind == "uint8":
        return rng.integers(0, 256, n, dtype=np.uint8)
    if kind.startswith("int"):
        return rng.integers(-1200, 1200, n, dtype=kind)
    data = (rng.standard_normal(n) * 1.5).astype(kind)
    data[::97] = np.nan
    data[1::101] = -0.0
    return data


# (items, bins, range or None, function or None): the integral paths, the edges, and a function's bins
CASES = {
    "uint8-256-integral": ("uint8", 256, (0, 256), None),
    "int32-256-closed": ("int32", 256, (0, 256), None),
    "int32-100-edges": ("int32", 100, (-1000, 1000), None),
    "int64-64-integral": ("int64", 64, (-1024, 1024), None),
    "float32-64": ("float32", 64, (-2.0, 2.0), None),
    "float64-10": ("float64", 10, (-3.0, 1.0), None),
    "int32-function": ("int32", 40, None, sixteenths),
    "record-function": ("record", 8, None, pair_bin),
    "float32-function-values": ("float32", 33, (-1.0, 5.0), doubled),
}


def _call(fn, xs, bins, range_, **kwargs):
    return gpulab.histogram(xs, bins, range_, **kwargs) if fn is None else gpulab.histogram(fn, xs, bins, range_,
                                                                                           **kwargs)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", list(CASES))
def test_counts_equal_the_hosts(case, n):
    kind, bins, range_, fn = CASES[case]
    data = _data(kind, n)
    got = _call(fn, cupy.asarray(data), bins, range_)
    assert got.dtype == np.int64 and got.shape == (bins,)
    np.testing.assert_array_equal(got.get(), _call(fn, data, bins, range_, device="host"))


@pytest.mark.parametrize("bins", [1, 255, 257, 8192, 8193, 100_000])
def test_every_number_of_copies_and_counts_in_global_memory(bins):
    data = _data("float32", 3 * 4096 + 17, seed=bins)
    got = gpulab.histogram(cupy.asarray(data), bins, (-3.0, 3.0))
    np.testing.assert_array_equal(got.get(), np.histogram(data, bins, (-3.0, 3.0))[0])
    index = _data("int32", 2**20, seed=bins)
    got = gpulab.histogram(sixteenths, cupy.asarray(index), bins)
    np.testing.assert_array_equal(got.get(), gpulab.histogram(sixteenths, index, bins, device="host"))


def test_items_on_the_edges_and_outside_are_binned_as_numpy_bins_them():
    edges = np.linspace(-1, 1, 65, dtype=np.float32)
    data = np.concatenate([edges, np.nextafter(edges, np.float32(2)), np.nextafter(edges, np.float32(-2)),
                           np.float32([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30])])
    for range_ in ((-1.0, 1.0), (np.float64(-1), np.float64(1))):
        got = gpulab.histogram(cupy.asarray(data), 64, range_)
        np.testing.assert_array_equal(got.get(), np.histogram(data, 64, range_)[0])


def test_all_equal_and_all_dropped():
    same = cupy.full(2**22, 7, np.int32)
    np.testing.assert_array_equal(gpulab.histogram(same, 16, (0, 16)).get(), np.eye(16, dtype=np.int64)[7] * 2**22)
    nan = cupy.full(2**20, np.nan, np.float32)
    assert int(gpulab.histogram(nan, 8, (0.0, 1.0)).sum()) == 0
    assert int(gpulab.histogram(sixteenths, cupy.full(2**20, -16, np.int32), 8).sum()) == 0  # bin -1: dropped


def test_strided_and_2d_inputs():
    data = _data("int32", 3000 * 7)
    matrix = cupy.asarray(data).reshape(3000, 7)
    for view in (matrix[:, 2], matrix[::3, 1:5], matrix.T):
        want = np.histogram(cupy.asnumpy(view).ravel(), 50, (-1200, 1200))[0]
        np.testing.assert_array_equal(gpulab.histogram(view, 50, (-1200, 1200)).get(), want)
        np.testing.assert_array_equal(gpulab.histogram(sixteenths, view, 30).get(),
                                      gpulab.histogram(sixteenths, cupy.asnumpy(view), 30, device="host"))


def test_iota_and_mapped_inputs():
    n = 3 * 4096 + 17
    np.testing.assert_array_equal(gpulab.histogram(sixteenths, gpulab.iota(n), 900).get(),
                                  gpulab.histogram(sixteenths, gpulab.iota(n), 900, device="host"))
    squares = gpulab.mapped(square, gpulab.iota(5000))
    np.testing.assert_array_equal(gpulab.histogram(squares, 40, (0, 25_000_000)).get(),
                                  np.histogram(np.arange(5000) ** 2, 40, (0, 25_000_000))[0])


def test_the_range_defaults_to_the_items_least_and_greatest():
    data = _data("float64", 10_000)
    data = data[~np.isnan(data)]
    np.testing.assert_array_equal(gpulab.histogram(cupy.asarray(data), 13).get(), np.histogram(data, 13)[0])


def test_a_reused_histogram_writes_its_output_and_repeats_exactly():
    data = cupy.asarray(_data("uint8", 2**24))
    plan = gpulab.make_histogram(data, 256, (0, 256))
    out = cupy.empty(256, np.int64)
    assert plan(data, out=out) is out
    first = out.get()
    for _ in range(3):
        np.testing.assert_array_equal(plan(data, out=out).get(), first)
    np.testing.assert_array_equal(first, np.bincount(data.get(), minlength=256))


def test_more_than_2_to_the_31_items():
    n = 2**31 + 4099
    data = cupy.random.default_rng(7).integers(0, 256, n, dtype=np.int32).astype(np.uint8)
    got = gpulab.histogram(data, 256, (0, 256))
    want = np.bincount(data.get(), minlength=256)  # NumPy's even bins of uint8 over (0, 256) in 256 bins
    np.testing.assert_array_equal(got.get(), want)
    assert int(got.sum()) == n

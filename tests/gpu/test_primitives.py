"""Every primitive on the GPU, held to the host reference backend."""

import numpy as np
import pytest
from operators import add, positive, twice

import gpulab

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
SIZES = [0, 1, 31, 1000, 3 * 4096 + 17, 2**24]
TYPES = ["int32", "int64", "float32", "float64", "bool", "record"]


def either(a, b):
    return a or b


def argmin(a, b):
    return a if a.value <= b.value else b


def first_nonzero(a, b):
    return a if a != 0 else b


def negate(x):
    return not x


def smaller_index(x):
    return x.index % 2 == 0


def record_value(x):
    return x


def _data(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "record":
        data = np.zeros(n, PAIR)
        data["value"] = rng.standard_normal(n).astype(np.float32)
        data["index"] = np.arange(n, dtype=np.int32)
        return data
    if kind == "bool":
        return rng.random(n) < 0.5
    if kind.startswith("int"):
        return rng.integers(-1000, 1000, n, dtype=kind)
    return rng.standard_normal(n).astype(kind)


def _assert_matches(device_result, host_result, kind):
    got = cupy.asnumpy(device_result)
    assert got.shape == np.shape(host_result)
    if kind in ("float32", "float64"):
        np.testing.assert_allclose(got, host_result, rtol=1e-3 if kind == "float32" else 1e-9, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, host_result)


REDUCE_OPS = {"bool": either, "record": argmin}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_reduce(kind, n):
    data = _data(kind, n)
    op = REDUCE_OPS.get(kind, add)
    initial = np.zeros((), PAIR)[()] if kind == "record" else np.zeros((), kind)[()]
    if kind == "record":
        initial = np.array((np.inf, -1), PAIR)[()]
    got = gpulab.reduce(op, cupy.asarray(data), initial)
    if kind == "float32":  # the host's left-to-right float32 sum drifts: compare both with float64
        exact = np.sum(data.astype(np.float64))
        np.testing.assert_allclose(float(got), exact, atol=1e-5 * np.abs(data).sum() + 1e-3)
    else:
        _assert_matches(got, gpulab.reduce(op, data, initial, device="host"), kind)


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan(kind, n, exclusive):
    data = _data(kind, n)
    op = REDUCE_OPS.get(kind, add)
    initial = np.array((np.inf, -1), PAIR)[()] if kind == "record" else np.ones((), kind)[()]
    expected = gpulab.scan(op, data, initial, exclusive=exclusive, device="host")
    got = gpulab.scan(op, cupy.asarray(data), initial, exclusive=exclusive)
    if kind == "float32":  # a long float32 prefix sum drifts with the order: compare with float64
        reference = np.cumsum(np.concatenate([[1.0], data.astype(np.float64)]))
        reference = reference[:-1] if exclusive else reference[1:]
        np.testing.assert_allclose(cupy.asnumpy(got), reference, rtol=1e-4, atol=max(1.0, n**0.5 * 1e-2))
    else:
        _assert_matches(got, expected, kind)


MAP_OPS = {"bool": negate, "record": record_value}
FILTER_OPS = {"bool": negate, "record": smaller_index}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_map(kind, n):
    data = _data(kind, n)
    op = MAP_OPS.get(kind, twice)
    _assert_matches(gpulab.map(op, cupy.asarray(data)), gpulab.map(op, data, device="host"), kind)


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_filter(kind, n):
    data = _data(kind, n)
    op = FILTER_OPS.get(kind, positive)
    _assert_matches(gpulab.filter(op, cupy.asarray(data)), gpulab.filter(op, data, device="host"), kind)


@pytest.mark.parametrize("kind", ["bool", "int32", "int64", "record"])
@pytest.mark.parametrize("n", [255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097])
def test_scan_and_filter_agree_on_either_side_of_the_short_tile_path(kind, n):
    """Up to 1024 items (4096 of one byte) a scan or filter takes its short path (tile.cu); above, tiles."""
    data = _data(kind, n, seed=n)
    op = REDUCE_OPS.get(kind, add)
    initial = np.array((np.inf, -1), PAIR)[()] if kind == "record" else np.ones((), kind)[()]
    for start, exclusive in ((None, False), (initial, False), (initial, True)):
        expected = gpulab.scan(op, data, start, exclusive=exclusive, device="host")
        _assert_matches(gpulab.scan(op, cupy.asarray(data), start, exclusive=exclusive), expected, kind)
    keep = FILTER_OPS.get(kind, positive)
    _assert_matches(gpulab.filter(keep, cupy.asarray(data)), gpulab.filter(keep, data, device="host"), kind)


@pytest.mark.parametrize("n", [1000, 3 * 4096 + 17])
def test_float16_links_numbas_half_arithmetic(n):
    data = _data("float16", n)
    on_device = cupy.asarray(data)
    np.testing.assert_array_equal(cupy.asnumpy(gpulab.map(twice, on_device)), gpulab.map(twice, data, device="host"))
    np.testing.assert_array_equal(cupy.asnumpy(gpulab.filter(positive, on_device)),
                                  gpulab.filter(positive, data, device="host"))
    # float16 sums round at every step: hold both orders to a float64 reference
    reference = np.cumsum(data.astype(np.float64))
    np.testing.assert_allclose(cupy.asnumpy(gpulab.scan(add, on_device)).astype(np.float64), reference,
                               atol=0.02 * np.abs(reference).max() + 1)
    np.testing.assert_allclose(float(gpulab.reduce(add, on_device, np.float16(0))), reference[-1],
                               atol=0.02 * np.abs(reference).max() + 1)


def test_reduce_keeps_order_for_a_non_commutative_operator():
    data = np.zeros(2**22, np.int32)
    data[[12345, 777777, 3000000]] = [7, 8, 9]
    assert int(gpulab.reduce(first_nonzero, cupy.asarray(data), 0)) == 7
    scanned = cupy.asnumpy(gpulab.scan(first_nonzero, cupy.asarray(data), 0))
    np.testing.assert_array_equal(scanned, gpulab.scan(first_nonzero, data, 0, device="host"))


def test_reduce_is_deterministic():
    data = cupy.asarray(_data("float32", 10**7 + 3))
    first = cupy.asnumpy(gpulab.reduce(add, data, np.float32(0)))
    for _ in range(5):
        assert cupy.asnumpy(gpulab.reduce(add, data, np.float32(0))).tobytes() == first.tobytes()


def test_reduce_reports_float_error_against_float64():
    data = _data("float32", 2**20)
    got = float(gpulab.reduce(add, cupy.asarray(data), np.float32(0)))
    exact = float(np.sum(data.astype(np.float64)))
    assert abs(got - exact) <= 1e-3 * np.abs(data).sum()


def test_strided_and_2d_inputs_run_without_copies():
    base = cupy.asarray(_data("float32", 4096 * 64)).reshape(64, 4096)
    for view in (base[:, ::3], base.T, base[::2, 5:1000], base.ravel()[1:]):
        expected = gpulab.map(twice, cupy.asnumpy(view), device="host")
        _assert_matches(gpulab.map(twice, view), expected.reshape(-1), "float32")
        total = gpulab.reduce(add, view, np.float32(0))
        np.testing.assert_allclose(float(total), float(cupy.asnumpy(view).astype(np.float64).sum()), rtol=1e-3)


def test_uniform_change_needs_no_rebuild():
    scale = 2.0

    def scaled(x):
        return x * scale

    data = cupy.arange(1000, dtype=cupy.float32)
    first = cupy.asnumpy(gpulab.map(scaled, data))
    builds = gpulab.cache_info().builds
    scale = 3.0  # noqa: F841 - read by `scaled` through its closure
    second = cupy.asnumpy(gpulab.map(scaled, data))
    assert gpulab.cache_info().builds == builds
    np.testing.assert_allclose(second, first * 1.5)


def test_iota_is_never_materialised():
    out = gpulab.map(twice, gpulab.iota(10**6))
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(10**6) * 2)


def test_reusable_objects():
    plan = gpulab.make_reduce(add, np.float32)
    data = cupy.asarray(_data("float32", 10**6))
    temp = cupy.empty(max(plan.temp_storage_bytes(data.size), 1), cupy.uint8)
    out = cupy.empty((), cupy.float32)
    for size in (10**6, 12345, 7):
        plan(data[:size], np.float32(0), out=out, temp_storage=temp)
        np.testing.assert_allclose(float(out), float(cupy.asnumpy(data[:size]).sum()), rtol=1e-4, atol=1e-3)


def test_arrays_of_the_wrong_type_are_refused_before_a_launch():
    plan = gpulab.make_map(twice, np.float32)
    data = cupy.arange(1000, dtype=cupy.float32)
    with pytest.raises(gpulab.errors.KernelTypeError, match="output holds int32"):
        plan(data, out=cupy.empty(1000, cupy.int32))
    with pytest.raises(gpulab.errors.KernelTypeError, match="input 0 holds float64"):
        plan(data.astype(cupy.float64))
    with pytest.raises(ValueError, match="999 items"):
        gpulab.make_scan(add, np.float32)(data, out=cupy.empty(999, cupy.float32))


def test_occupancy_in_the_view_matches_the_driver():
    from gpulab.compiler.occupancy import occupancy

    for make, fn in ((gpulab.make_map, twice), (gpulab.make_reduce, add), (gpulab.make_scan, add),
                     (gpulab.make_filter, positive)):
        prepared = make(fn, np.float32).prepared(32, ())
        build, block = prepared.build, prepared.build.geometry.block_threads
        for name, resources in build.resources.items():
            ours = occupancy(build.target, block, resources.registers, resources.shared_bytes)
            assert ours.blocks_per_sm == prepared.module.occupancy(name, block), name


def test_host_array_on_a_device_is_an_error():
    with pytest.raises(gpulab.errors.HostArrayError, match="to_device"):
        gpulab.map(twice, np.arange(10.0))


def test_stream_argument():
    stream = cupy.cuda.Stream(non_blocking=True)
    data = cupy.arange(10**6, dtype=cupy.int64)
    with stream:
        pass
    out = gpulab.scan(add, data, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), np.cumsum(np.arange(10**6)))


def test_verify_checks_against_the_host():
    data = cupy.asarray(_data("int32", 5000))
    assert int(gpulab.reduce(add, data, np.int32(0), verify=True)) == int(cupy.asnumpy(data).sum())


def test_reduce_beyond_two_to_the_31():
    n = 2**31 + 7
    data = cupy.ones(n, dtype=cupy.int8)
    data[-1] = 5

    def xor(a, b):
        return a ^ b

    assert int(gpulab.reduce(xor, data, np.int8(0))) == 5  # an even count of ones cancels
    total = gpulab.reduce(add, data.view(cupy.uint8), np.uint8(0))
    assert int(total) == (n - 1 + 5) % 256

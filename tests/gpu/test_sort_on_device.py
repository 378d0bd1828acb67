"""sort, sort_by_key and argsort on the GPU, held to the host reference item for item."""

import numpy as np
import pytest

import gpulab

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
SIZES = [0, 1, 31, 1000, 3 * 4096 + 17, 2**24]
TYPES = ["bool", "uint8", "int16", "int32", "uint32", "int64", "float32", "float64"]


def by_value(p):
    return p.value


def magnitude(x: gpulab.f32) -> gpulab.f32:
    return abs(x)


def _data(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "bool":
        return rng.random(n) < 0.5
    if kind.startswith(("int", "uint")):
        info = np.iinfo(kind)
        return rng.integers(info.min, info.max, n, dtype=kind, endpoint=True)
    data = (rng.standard_normal(n) * 100).astype(kind)
    data[::17] = np.nan
    data[1::19] = -np.nan
    data[2::23] = -0.0
    data[3::29] = 0.0
    data[4::31] = np.inf
    return data


def _same(device, host):
    """Item for item, bit for bit (a NaN's sign and a zero's too)."""
    got = cupy.asnumpy(device)
    assert got.shape == host.shape and got.dtype == host.dtype
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(host).view(np.uint8))


def _cases():
    for n in SIZES:
        for kind in TYPES if n < 2**24 else ["uint32", "int64", "float32", "float64"]:  # (the host's time)
            for descending in (False, True):
                yield pytest.param(n, kind, descending, id=f"{n}-{kind}-{'descending' if descending else 'ascending'}")


@pytest.mark.parametrize("n, kind, descending", list(_cases()))
def test_sort_and_argsort_equal_the_hosts(n, kind, descending):
    data = _data(kind, n)
    order = gpulab.argsort(data, descending=descending, device="host")
    _same(gpulab.argsort(cupy.asarray(data), descending=descending), order)
    _same(gpulab.sort(cupy.asarray(data), descending=descending), data[order])


@pytest.mark.parametrize("n", SIZES)
def test_sort_by_key_is_stable(n):
    keys = np.random.default_rng(1).integers(0, 7, n).astype(np.int32)  # many equal keys
    values = np.arange(n, dtype=np.uint32)
    got_keys, got_values = gpulab.sort_by_key(cupy.asarray(keys), cupy.asarray(values))
    _same(got_keys, np.sort(keys, kind="stable"))
    _same(got_values, np.argsort(keys, kind="stable").astype(np.uint32))  # equal keys keep their values' order


def test_float32_keys_with_uint32_values_and_records_by_key():
    n = 3 * 4096 + 17
    keys, values = _data("float32", n), np.random.default_rng(2).integers(0, 2**32, n, dtype=np.uint32)
    got = gpulab.sort_by_key(cupy.asarray(keys), cupy.asarray(values), descending=True)
    want = gpulab.sort_by_key(keys, values, descending=True, device="host")
    _same(got[0], want[0])
    _same(got[1], want[1])
    records = np.zeros(n, PAIR)
    records["value"], records["index"] = _data("float32", n, 3), np.arange(n)
    _same(gpulab.sort(cupy.asarray(records), key=by_value), gpulab.sort(records, key=by_value, device="host"))
    _same(gpulab.sort(cupy.asarray(keys), key=magnitude), gpulab.sort(keys, key=magnitude, device="host"))


def test_strided_and_2d_inputs():
    data = _data("int32", 3000 * 7)
    matrix = cupy.asarray(data).reshape(3000, 7)
    for view in (matrix[:, 2], matrix[::3, 1:5], matrix.T):
        _same(gpulab.sort(view), np.sort(cupy.asnumpy(view).ravel(), kind="stable"))
        _same(gpulab.argsort(view), np.argsort(cupy.asnumpy(view).ravel(), kind="stable"))


def test_reused_sorts_with_temp_storage_and_outputs_repeat_exactly():
    n = 2**20 + 5
    keys = cupy.asarray(_data("float32", n))
    plan = gpulab.make_sort_by_key(keys, np.int64)
    temp = cupy.zeros(plan.temp_storage_bytes(n), np.uint8)
    out, values_out = cupy.empty_like(keys), cupy.empty(n, np.int64)
    first = None
    for _ in range(3):
        got = plan(keys, gpulab.iota(n), out=out, values_out=values_out, temp_storage=temp)
        assert got[0] is out and got[1] is values_out
        first = values_out.get() if first is None else first
        np.testing.assert_array_equal(values_out.get(), first)
    np.testing.assert_array_equal(first, gpulab.argsort(keys.get(), device="host"))
    argsorter = gpulab.make_argsort(keys, descending=True)
    np.testing.assert_array_equal(argsorter(keys).get(), gpulab.argsort(keys.get(), descending=True, device="host"))


def test_more_than_2_to_the_31_items():
    n = 2**31 + 4099
    keys = cupy.random.default_rng(5).integers(0, 2**16, n, dtype=np.int32).astype(np.uint16)
    got = gpulab.sort(keys)
    want = np.sort(keys.get(), kind="stable")
    np.testing.assert_array_equal(got.get(), want)

"""Captured arrays on a GPU (issue 16): the host's results for every form, no rebuild for a new array of the
same type, and a read out of bounds raises an IndexError after which the device goes on working."""

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpulab
import gpulab.cache
from gpulab.errors import HostArrayError, KernelIndexError
from gpulab.primitives import call, dispatch

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

sys.path.insert(0, str(Path(__file__).parents[1]))
import captured_forms as forms  # noqa: E402

HOST = forms.arrays(np)
IDS = [form.name for form in forms.FORMS]


@pytest.fixture(scope="module")
def device_arrays():
    return forms.arrays(cupy)


@pytest.mark.parametrize("boundscheck", [True, False])
@pytest.mark.parametrize("form", forms.FORMS, ids=IDS)
def test_every_form_gives_the_host_results(form, device_arrays, boundscheck):
    want = np.asarray(forms.run(form, HOST, "host"))
    device_form = forms.Form(form.primitive, form.function, form.inputs, form.initial,
                             {**form.options, "fma": False, "boundscheck": boundscheck})
    got = gpulab.to_host(forms.run(device_form, device_arrays, "cuda:0"))
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=2e-7 if want.dtype.itemsize >= 4 else 1e-3)
    else:
        np.testing.assert_array_equal(got, want)


def test_the_stencil_is_bit_for_bit_the_hosts(device_arrays):
    got = gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="cuda:0")
    forms.bind(HOST)
    want = gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="host")
    assert gpulab.to_host(got).tobytes() == want.tobytes()


def test_a_new_array_of_the_same_type_runs_with_no_rebuild(device_arrays):
    """Counted, not timed: the plan keeps its one build and the cache builds nothing; the call's wall time is
    printed (``-s``) for the report (bench/memory.py measures it over many arrays)."""
    forms.bind(device_arrays)
    gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="cuda:0")
    plan = dispatch.plan_for(gpulab.registry.PRIMITIVES["map"], forms.smooth, [gpulab.iota(1)],
                             gpulab.device.device("cuda:0"))
    builds, built = plan.builds, gpulab.cache.default_cache().info().builds
    bigger = cupy.arange(10**6, dtype=np.float32)
    forms.bind({"line": bigger})
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    result = gpulab.map(forms.smooth, gpulab.iota(10**6 - 2, start=1), device="cuda:0")
    cupy.cuda.Device().synchronize()
    seconds = time.perf_counter() - start
    assert plan.builds == builds and len(builds) == 1  # the same build, loaded once
    assert gpulab.cache.default_cache().info().builds == built
    print(f"\na new captured array of the same type: {seconds * 1e3:.2f} ms for the call, no build")
    np.testing.assert_allclose(gpulab.to_host(result)[:3], np.array([1, 2, 3], np.float32), rtol=1e-6)


def test_an_out_of_bounds_read_raises_and_the_next_call_works(device_arrays):
    forms.bind(device_arrays)
    with pytest.raises(KernelIndexError) as info:
        gpulab.map(forms.smooth, gpulab.iota(999, start=1), device="cuda:0")
    assert isinstance(info.value, IndexError)
    assert "`smooth` read line[1000], outside `line` of shape (1000,)" in str(info.value)
    assert info.value.location.line == forms.smooth.__code__.co_firstlineno + 1
    assert "^" in str(info.value).splitlines()[-1]
    after = gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="cuda:0")
    forms.bind(HOST)
    np.testing.assert_array_equal(gpulab.to_host(after), gpulab.map(forms.smooth, gpulab.iota(998, start=1),
                                                                    device="host"))


def test_when_many_reads_fail_the_first_one_is_reported_and_the_device_works_on(device_arrays):
    forms.bind(device_arrays)
    for _ in range(3):
        with pytest.raises(KernelIndexError, match=r"read line\[(\d+)\], outside `line` of shape \(1000,\)") as info:
            gpulab.map(forms.smooth, gpulab.iota(100_000, start=1), device="cuda:0")
        index = int(info.value.message.split("line[")[1].split("]")[0])
        assert index >= 1000
    total = gpulab.reduce(forms.floor_min, cupy.ones(10, np.float32), 5.0, device="cuda:0")
    assert gpulab.to_host(total) == min(np.float32(1), HOST["line"][0])


def test_a_two_dimensional_read_out_of_bounds_names_both_indices(device_arrays):
    forms.bind(device_arrays)
    with pytest.raises(KernelIndexError, match=r"read grid\[12, 1\], outside `grid` of shape \(12, 16\)"):
        gpulab.map(forms.laplace, gpulab.iota(11 * (forms.WIDTH - 2)), device="cuda:0")


@pytest.mark.parametrize("primitive, fn, xs, initial, empty", [
    ("reduce", forms.floor_min, np.arange(10_000, dtype=np.float32), 0.0, "line"),
    ("scan", forms.capped_max, np.arange(10_000, dtype=np.int32), None, "table"),
    ("filter", forms.listed, np.arange(400, 10_000, dtype=np.int64), None, None),
])
def test_every_primitive_raises_and_goes_on(device_arrays, primitive, fn, xs, initial, empty):
    values = dict(device_arrays)
    if empty:
        values[empty] = cupy.zeros(0, device_arrays[empty].dtype)
    forms.bind(values)
    with pytest.raises(KernelIndexError):
        call(primitive, fn, [cupy.asarray(xs)], initial=initial, device="cuda:0")
    forms.bind(device_arrays)
    call(primitive, fn, [cupy.asarray(xs[:100])], initial=initial, device="cuda:0")


def test_a_checked_call_on_a_stream_of_its_own(device_arrays):
    forms.bind(device_arrays)
    stream = cupy.cuda.Stream(non_blocking=True)
    with pytest.raises(KernelIndexError):
        gpulab.map(forms.smooth, gpulab.iota(999, start=1), device="cuda:0", stream=stream)
    result = gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="cuda:0", stream=stream)
    stream.synchronize()
    assert gpulab.to_host(result).shape == (998,)


def test_a_host_array_captured_by_a_device_call_says_how_to_move_it(device_arrays):
    forms.bind({**device_arrays, "line": HOST["line"]})
    with pytest.raises(HostArrayError, match=r"captured array `line` of `smooth` is a host array"):
        gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="cuda:0")


halves = np.array([10.0, 20.0], np.float16)


def pick(x: gpulab.f16) -> gpulab.f16:
    return halves[x > 0]


def test_a_bool_index_reads_item_0_or_1_on_the_device_as_on_the_host():
    """A float16 kernel reading at a bool: the host read NumPy's mask and failed while sm_90 compiled it."""
    global halves
    xs = np.array([1, -1, 2], np.float16)
    want = gpulab.map(pick, xs, device="host")
    halves = cupy.asarray(halves)
    try:
        got = gpulab.to_host(gpulab.map(pick, cupy.asarray(xs), device="cuda:0"))
    finally:
        halves = gpulab.to_host(halves)
    assert want.tolist() == got.tolist() == [20.0, 10.0, 20.0]

"""histogram with no GPU: what it means on the host (NumPy's rules), its builds for every target, its plan's
parameters, and %%gpukernel histogram."""

import numpy as np
import pytest
from IPython.utils.capture import capture_output

import gpulab
from gpulab.compiler.toolchain import toolchain_targets
from gpulab.errors import ArgumentError, KernelTypeError
from gpulab.host.histogram import even_bins
from gpulab.host.item import item_kernel
from gpulab.primitives.histogram import integral_bins, shared_copies
from gpulab.types import element_type

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def tens(x):
    return x // 10


def pair_bin(p):
    return p.index % 5


def magnitude(x: gpulab.f32) -> gpulab.f64:
    return abs(gpulab.f64(x))


def half_bin(x: gpulab.f32) -> gpulab.f32:
    return x / 2


def square(i: gpulab.i64) -> gpulab.i64:
    return i * i


def host(*args, **kwargs):
    return gpulab.histogram(*args, device="host", **kwargs)


# ---------------------------------------------------------------- meaning (host)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
def test_even_bins_are_numpys(dtype):
    rng = np.random.default_rng(1)
    xs = (rng.standard_normal(5000) * 40).astype(dtype) if dtype[0] != "u" else rng.integers(0, 256, 5000, dtype)
    for bins, range_ in ((10, None), (256, (0, 256)), (7, (-13, 41.5)), (3, (5, 5))):
        got = host(xs, bins, range_)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.histogram(xs, bins, range_)[0])


def test_edges_decide_as_numpys_do():
    # items on every edge, the last edge closed, float32 edges rounded as NumPy rounds them
    edges = np.linspace(0.1, 0.7, 7, dtype=np.float32)
    xs = np.concatenate([edges, np.nextafter(edges, np.float32(1)), np.nextafter(edges, np.float32(-1))])
    np.testing.assert_array_equal(host(xs, 6, (0.1, 0.7)), np.histogram(xs, 6, (0.1, 0.7))[0])
    np.testing.assert_array_equal(host(xs, 6, (np.float64(0.1), np.float64(0.7))),
                                  np.histogram(xs, 6, (np.float64(0.1), np.float64(0.7)))[0])


def test_nan_inf_and_items_outside_the_range_are_dropped_and_zeros_are_one():
    xs = np.array([np.nan, -0.0, 0.0, 1.0, np.inf, -np.inf, 2.0, -1.0], np.float32)
    np.testing.assert_array_equal(host(xs, 2, (-1.0, 1.0)), [1, 3])  # -1 | -0.0, 0.0, 1.0 (closed)


def test_empty_one_and_all_equal():
    np.testing.assert_array_equal(host(np.zeros(0, np.float32), 4), np.histogram(np.zeros(0, np.float32), 4)[0])
    np.testing.assert_array_equal(host(np.array([3], np.int32), 3), np.histogram(np.array([3]), 3)[0])
    np.testing.assert_array_equal(host(np.full(1000, 7, np.int64), 5, (0, 10)), [0, 0, 0, 1000, 0])
    np.testing.assert_array_equal(host(np.full(9, 2.5), 3), np.histogram(np.full(9, 2.5), 3)[0])


def test_a_function_gives_the_bin_and_bins_out_of_range_drop_the_item():
    xs = np.array([-25, -10, -1, 0, 9, 10, 35, 39, 40, 1000], np.int32)
    np.testing.assert_array_equal(host(tens, xs, 4), [2, 1, 0, 2])  # -3, -1, -1 and 4, 100 dropped
    records = np.zeros(12, PAIR)
    records["index"] = np.arange(12)
    np.testing.assert_array_equal(host(pair_bin, records, 5), [3, 3, 2, 2, 2])


def test_a_function_of_values_bins_them_evenly_over_a_range():
    xs = np.linspace(-3, 3, 101, dtype=np.float32)
    np.testing.assert_array_equal(host(magnitude, xs, 6, (0, 3)),
                                  np.histogram(np.abs(xs.astype(np.float64)), 6, (0, 3))[0])


def test_what_cannot_be_binned_is_refused_clearly():
    xs = np.ones(4, np.float32)
    with pytest.raises(KernelTypeError, match="without a range its result is the bin, an integer"):
        host(half_bin, xs, 4)
    with pytest.raises(KernelTypeError, match="bins over a range take numbers"):
        host(np.ones(3, np.bool_), 2, (0, 1))
    for bins in (0, -3, 2.5, "auto", 2**31):
        with pytest.raises(ArgumentError, match="bins"):
            host(xs, bins, (0, 1))
    for range_, words in (((1, 0), "low <= high"), ((0, np.inf), "finite"), ((0,), "two numbers")):
        with pytest.raises(ArgumentError, match=words):
            host(xs, 4, range_)
    with pytest.raises(ArgumentError, match="too many bins"):
        host(xs, 10**6, (1.0, 1.0001))
    with pytest.raises(ArgumentError, match="not finite"):
        host(np.array([np.nan, 1.0]), 4)
    with pytest.raises(ArgumentError, match="needs bins"):
        host(xs)


def test_out_and_iota_and_mapped_inputs():
    out = np.empty(4, np.int64)
    assert host(tens, np.arange(40, dtype=np.int32), 4, out=out) is out
    np.testing.assert_array_equal(out, [10, 10, 10, 10])
    np.testing.assert_array_equal(host(tens, gpulab.iota(40), 4), [10, 10, 10, 10])
    np.testing.assert_array_equal(host(gpulab.iota(8), 4, (0, 8)), [2, 2, 2, 2])
    squares = gpulab.mapped(square, gpulab.iota(8))
    np.testing.assert_array_equal(host(tens, squares, 7), [4, 1, 1, 1, 1, 0, 0])


# ---------------------------------------------------------------- the device's parameters


def test_integer_keys_take_integer_arithmetic_only_where_it_is_exact():
    def integral(range_, bins, dtype):
        found = even_bins(range_, bins, np.dtype(dtype))
        return integral_bins(found.first, found.last, bins, found.edges.astype(np.float64), np.dtype(dtype))

    assert integral((0, 256), 256, "uint8") == (False, 0, 256, 0)  # no uint8 key is 256: one min() bins it
    assert integral((0, 256), 256, "int32") == (True, 0, 256, 0)  # 256 goes to the last bin
    assert integral((-64, 64), 32, "int8") == (True, -64, 128, 2)
    assert integral((0, 1000), 256, "int32") is None  # bins 3.9 wide: by the edges
    assert integral((0.5, 256.5), 256, "int32") is None
    assert integral((-2**31, 2**31), 2, "int32") is None  # 32-bit subtraction would wrap
    assert integral((0, 2**54), 4, "int64") is None  # past 2**53 NumPy's edges round


def test_shared_counts_keep_up_to_32_copies_and_fall_back_to_global_memory():
    assert shared_copies(256) == (True, 32)
    assert shared_copies(257) == (True, 16)
    assert shared_copies(8192) == (True, 1)
    assert shared_copies(8193) == (False, 1)


# ---------------------------------------------------------------- builds


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_100"])
@pytest.mark.parametrize("element", ["int32", "int64", "float32", "float64", "record"])
def test_even_bins_build_for_every_type_with_lto_and_no_call(element, target):
    """(A function giving the bin builds in tests/nocuda/test_compile.py, with every primitive.)"""
    if element == "record":
        fn, types = magnitude_of_pair, (PAIR,)
    else:
        fn, types = item_kernel(element_type(element)), None
    build = gpulab.compile("histogram", fn, types=types, target=target)
    assert build.kernels == ("gpulab_histogram",) and build.sass_calls == 0 and build.operator_calls == 0
    assert "ATOMS" in build.sass and ("RED" in build.sass or "ATOMG" in build.sass)  # shared, then global
    assert build.resources["gpulab_histogram"].spill_stores == 0
    if element == "record":  # the item itself (no function) has no instruction of its own
        assert build.line_map.python_to_sass(build.python_first_line + 1), "the function's line is in the SASS"


def magnitude_of_pair(p):
    return p.value * 2 + p.index


def test_a_histogram_takes_functions_of_one_item_giving_a_number():
    with pytest.raises(KernelTypeError, match="histogram takes a function of one item"):
        gpulab.compile("histogram", lambda a, b: a, types="i32,i32", target="sm_90")
    with pytest.raises(KernelTypeError, match="returns complex64"):
        gpulab.compile("histogram", lambda x: x, types="c64", target="sm_90")


# ---------------------------------------------------------------- %%gpukernel histogram


def test_gpukernel_shows_and_checks_a_histogram(gpulab_shell):
    shell = gpulab_shell
    with capture_output() as captured:
        shell.run_cell("%%gpukernel histogram --target sm_90 --device host --bins 16 --run 1e4\n"
                       "def bin_of(x: gpulab.f32) -> gpulab.i32:\n"
                       "    return gpulab.i32((x + gpulab.f32(1)) * gpulab.f32(8))\n", store_history=False)
    text = captured.stdout + "".join(o.data.get("text/plain", "") for o in captured.outputs)
    assert "histogram(bin_of) of 10,000 random float32 items" in text, captured.stderr
    assert "not checked: no device ran it" in text  # both columns ran the host backend
    with capture_output() as captured:
        shell.run_cell("%%gpukernel histogram --target sm_90 --device host --bins 8 --range 0,1 --run 1e3\n"
                       "def value(x: gpulab.f32) -> gpulab.f32:\n    return abs(x)\n", store_history=False)
    assert "not checked" in captured.stdout + "".join(o.data.get("text/plain", "") for o in captured.outputs)


def test_gpukernel_histogram_options_are_checked(gpulab_shell):
    shell = gpulab_shell
    with capture_output() as captured:
        shell.run_cell("%%gpukernel histogram --target sm_90 --device host --run 10\n"
                       "def b(x: gpulab.i32) -> gpulab.i32:\n    return x\n", store_history=False)
    assert "--bins N" in captured.stderr
    with capture_output() as captured:
        shell.run_cell("%%gpukernel map --target sm_90 --bins 4\n"
                       "def b(x: gpulab.i32) -> gpulab.i32:\n    return x\n", store_history=False)
    assert "--bins is not an option of map" in captured.stderr


def sixteenth_of(x):
    return x >> 4


@pytest.mark.parametrize("target", [target.arch for target in toolchain_targets()])
def test_every_target_builds_ahead_of_time_and_links_the_python_lines(target):
    build = gpulab.compile("histogram", sixteenth_of, types="i32", target=target)
    assert build.sass_calls == 0 and build.target.arch == target
    body = sixteenth_of.__code__.co_firstlineno + 1
    assert build.line_map.python_to_sass(body) and build.line_map.python_to_cuda(body)

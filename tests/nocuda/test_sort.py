"""sort, sort_by_key and argsort with no GPU: what they mean on the host (a stable sort in NumPy's order),
their builds for every target, and %%gpukernel sort."""

import numpy as np
import pytest
from IPython.utils.capture import capture_output

import gpulab
from gpulab.compiler.toolchain import toolchain_targets
from gpulab.errors import ArgumentError, KernelTypeError, LengthMismatchError
from gpulab.host.item import item_kernel
from gpulab.host.sort import order
from gpulab.types import element_type

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def magnitude(x: gpulab.f32) -> gpulab.f32:
    return abs(x)


def by_value(p):
    return p.value


def doubled(x):
    return x + x


def value_less_index(p):
    return p.value - p.index


def host(*args, **kwargs):
    return gpulab.sort(*args, device="host", **kwargs)


# ---------------------------------------------------------------- meaning (host)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "uint64", "float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sorted_as_a_stable_sort_by_key_in_numpys_order(dtype, descending):
    rng = np.random.default_rng(2)
    xs = rng.integers(-20, 20, 3000).astype(dtype) if dtype != "bool" else rng.random(3000) < 0.5
    got = gpulab.argsort(xs, descending=descending, device="host")
    expected = sorted(range(xs.size), key=lambda i: xs[i].item(), reverse=descending)  # stable, also reversed
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(host(xs, descending=descending), xs[expected])
    assert got.dtype == np.int64


def test_floats_zeros_keep_their_order_and_nans_come_last():
    xs = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, -np.nan, -1.0, 0.0, -0.0, np.inf], np.float32)
    np.testing.assert_array_equal(gpulab.argsort(xs, device="host"), np.argsort(xs, kind="stable"))
    np.testing.assert_array_equal(gpulab.argsort(xs, device="host"), [3, 6, 2, 4, 7, 8, 1, 9, 0, 5])
    np.testing.assert_array_equal(gpulab.argsort(xs, descending=True, device="host"), [9, 1, 2, 4, 7, 8, 6, 3, 0, 5])
    signs = np.signbit(host(xs))[2:6]
    np.testing.assert_array_equal(signs, [True, False, False, True])  # -0.0 and 0.0 as they came


def test_empty_one_and_all_equal():
    assert host(np.zeros(0, np.float32)).size == 0
    np.testing.assert_array_equal(host(np.array([5], np.int32)), [5])
    same = np.full(100, 3, np.int16)
    np.testing.assert_array_equal(gpulab.argsort(same, device="host"), np.arange(100))
    np.testing.assert_array_equal(gpulab.argsort(same, descending=True, device="host"), np.arange(100))


def test_a_key_function_orders_items_and_records():
    xs = np.array([-3, 1, -1, 2, 0.5], np.float32)
    np.testing.assert_array_equal(host(xs, key=magnitude), [0.5, 1, -1, 2, -3])
    records = np.zeros(5, PAIR)
    records["value"], records["index"] = [3, 1, 2, 1, 0], np.arange(5)
    np.testing.assert_array_equal(host(records, key=by_value)["index"], [4, 1, 3, 2, 0])
    with pytest.raises(KernelTypeError, match="needs key="):
        host(records)


def test_sort_by_key_moves_each_value_with_its_key():
    keys = np.array([2, 1, 2, 1, 0], np.int32)
    values = np.array([(1.0, 1), (2.0, 2), (3.0, 3), (4.0, 4), (5.0, 5)], PAIR)
    got_keys, got_values = gpulab.sort_by_key(keys, values, device="host")
    np.testing.assert_array_equal(got_keys, [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(got_values["index"], [5, 2, 4, 1, 3])
    _, indices = gpulab.sort_by_key(keys, gpulab.iota(5), descending=True, device="host")
    np.testing.assert_array_equal(indices, [0, 2, 1, 3, 4])
    with pytest.raises(LengthMismatchError, match="as many values as keys"):
        gpulab.sort_by_key(keys, values[:3], device="host")


def test_what_cannot_be_sorted_is_refused_clearly():
    with pytest.raises(KernelTypeError, match="returns complex64"):
        host(np.ones(3, np.complex64))
    with pytest.raises(KernelTypeError, match="returns float16"):
        host(np.ones(3, np.float16))
    with pytest.raises(KernelTypeError, match="takes arrays"):
        host(gpulab.mapped(magnitude, np.ones(3, np.float32)))
    with pytest.raises(Exception, match="iota"):
        host(gpulab.iota(3))


def test_order_is_the_one_definition():
    keys = np.array([1.0, np.nan, -0.0, 0.0, 1.0], np.float64)
    np.testing.assert_array_equal(order(keys), [2, 3, 0, 4, 1])
    np.testing.assert_array_equal(order(keys, descending=True), [0, 4, 2, 3, 1])


# ---------------------------------------------------------------- builds


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_100"])
@pytest.mark.parametrize("element", ["int32", "int64", "float32", "float64", "record"])
@pytest.mark.parametrize("payload", [0, 8], ids=["keys", "values"])
def test_every_type_builds_with_lto_and_no_call(element, target, payload):
    if element == "record":
        fn, types = value_less_index, (PAIR,)
    elif payload:
        fn, types = item_kernel(element_type(element)), None
    else:
        fn, types = doubled, (element,)
    build = gpulab.compile("sort", fn, types=types, target=target, payload=payload)
    assert build.kernels == ("gpulab_sort_histogram", "gpulab_sort_pass")
    assert build.sass_calls == 0 and build.operator_calls == 0
    assert "MATCH.ANY" in build.sass and "ATOMS" in build.sass  # the ranking, the digit counts
    assert all(r.spill_stores == 0 for r in build.resources.values()), build.resources
    if element == "record" or (element.startswith("float") and not payload):  # (integer adds merge with the kernel's)
        assert build.line_map.python_to_sass(build.python_first_line + 1), "the key function's line is in the SASS"


def test_the_passes_read_the_scans_look_back_words():
    build = gpulab.compile("sort", doubled, types=("f32",), target="sm_90")
    assert "ld.relaxed.gpu.global.u64" in build.ptx and "st.relaxed.gpu.global.u64" in build.ptx
    assert "RADIX_BITS 8" in build.source and "PAYLOAD_BYTES 0" in build.source


def test_a_sort_takes_a_key_function_of_one_item_and_values_by_size():
    with pytest.raises(KernelTypeError, match="sort takes a key function"):
        gpulab.compile("sort", lambda a, b: a, types="i32,i32", target="sm_90")
    with pytest.raises(ArgumentError, match="payload is a number of bytes"):
        gpulab.compile("sort", doubled, types=("i32",), target="sm_90", payload=-1)
    with pytest.raises(ArgumentError, match="payload is not an option of map"):
        gpulab.compile("map", doubled, types=("i32",), target="sm_90", payload=4)


# ---------------------------------------------------------------- %%gpukernel sort


def test_gpukernel_shows_and_checks_a_sort(gpulab_shell):
    with capture_output() as captured:
        gpulab_shell.run_cell("%%gpukernel sort --target sm_90 --device host --descending --run 1e4\n"
                              "def by_magnitude(x: gpulab.f32) -> gpulab.f32:\n    return abs(x)\n", store_history=False)
    text = captured.stdout + "".join(o.data.get("text/plain", "") for o in captured.outputs)
    assert "sort(by_magnitude) of 10,000 random float32 items" in text, captured.stderr
    assert "not checked: no device ran it" in text  # both columns ran the host backend


@pytest.mark.parametrize("target", [target.arch for target in toolchain_targets()])
def test_every_target_builds_ahead_of_time_and_links_the_python_lines(target):
    build = gpulab.compile("sort", doubled, types="f32", target=target)
    assert build.sass_calls == 0 and build.target.arch == target
    body = doubled.__code__.co_firstlineno + 1
    assert build.line_map.python_to_sass(body) and build.line_map.python_to_cuda(body)


@pytest.mark.parametrize("values", [np.int64, np.dtype(np.int64), "i8", np.zeros(3, np.int64)])
def test_make_sort_by_key_takes_its_values_as_a_dtype_or_an_array(values):
    h100 = gpulab.device.Device("cuda:0", "a compute capability 9.0 GPU (a record: nothing runs here)", (9, 0),
                                80 * 2**30, 132)
    plan = gpulab.make_sort_by_key(np.float32, values, device=h100)
    assert plan.options.payload == 8  # each value's bytes move with its key

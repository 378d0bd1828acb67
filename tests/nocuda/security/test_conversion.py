"""Silent wrong results 4 and 8: one conversion rule (docs/conversion.md), and the programs host and device accept.

The host half runs here; tests/gpu/test_conversion_on_device.py holds a
device to the same rule with the same cases (tests/conversion_cases.py).
"""

import re

import numpy as np
import pytest
from conversion_cases import REFUSED_INITIAL, add, halve

import gpulab
from gpulab import conversion
from gpulab.errors import ConversionError, KernelTypeError, LengthMismatchError
from gpulab.host import host_filter, host_map, host_reduce, host_scan

X = np.arange(5, dtype=np.int32)


# --- out= is written, checked, and never wraps --------------------------------------
def test_reduce_and_scan_write_out():
    """The host reduce and scan ignored out=, even of the wrong shape."""
    out = np.zeros(1, np.int32)
    assert host_reduce(add, X, 0, out=out) is out and out[0] == 10
    out = np.zeros(5, np.int32)
    assert host_scan(add, X, 0, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(X))


@pytest.mark.parametrize("call, size", [
    (lambda out: host_reduce(add, X, 0, out=out), 3),
    (lambda out: host_scan(add, X, 0, out=out), 4),
    (lambda out: host_map(add, X, X, out=out), 6),
])
def test_out_of_the_wrong_size_is_refused(call, size):
    with pytest.raises(LengthMismatchError, match=f"out= holds {size} items"):
        call(np.zeros(size, np.int32))


@pytest.mark.parametrize("call", [
    lambda out: host_map(add, X, X, out=out),  # the example: int32 results into int8 wrapped
    lambda out: host_scan(add, X, 0, out=out),
    lambda out: host_reduce(add, X, 0, out=out[:1]),
])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
def test_out_of_another_type_is_refused_never_cast(call, dtype):
    out = np.full(5, 7, dtype)
    with pytest.raises(ConversionError, match=f"out= array holds {np.dtype(dtype)}.*astype\\(np.int32\\)"):
        call(out)
    assert (out == 7).all()  # nothing was written


def test_out_in_the_other_byte_order_holds_the_same_values():
    out = np.zeros(5, np.dtype(">i4"))
    host_map(add, X, X, out=out)
    np.testing.assert_array_equal(out, 2 * X)


# --- initial= is converted only exactly ------------------------------------------------
@pytest.mark.parametrize("initial, needle", REFUSED_INITIAL)
def test_an_initial_value_that_would_change_is_refused(initial, needle):
    for call in (lambda: host_reduce(add, X, initial), lambda: host_scan(add, X, initial)):
        with pytest.raises(ConversionError, match=needle):
            call()


@pytest.mark.parametrize("initial, into, needle", [
    (300, np.uint8, "uint8 holds the integers 0 .. 255"),
    (0.1, np.float32, "not exactly a float32.*np.float32\\(x\\)"),
    (2, np.bool_, "a bool holds False and True"),
])
def test_siblings_of_other_types(initial, into, needle):
    element = gpulab.element_type(into)
    with pytest.raises(ConversionError, match=needle):
        conversion.scalar(initial, element)


@pytest.mark.parametrize("initial, into, kept", [
    (2.0, np.int32, 2), (True, np.int32, 1), (1, np.float32, 1.0), (float("inf"), np.float32, np.inf),
    (np.float32(0.1), np.float32, np.float32(0.1)),  # a NumPy scalar of the type: a rounding the user chose
    (np.float64(0.5), np.float32, 0.5),
])
def test_values_kept_exactly_are_converted(initial, into, kept):
    value = conversion.scalar(initial, gpulab.element_type(into))
    assert type(value) is np.dtype(into).type and value == kept


def test_a_record_initial_is_a_tuple_of_exact_fields():
    record = gpulab.element_type(np.dtype([("a", "i4"), ("b", "f4")]))
    assert conversion.scalar((1, 2.5), record).tolist() == (1, 2.5)
    with pytest.raises(ConversionError, match="the record type"):
        conversion.scalar((1.5, 2.5), record)


# --- input arrays are never converted; Python values only exactly ---------------------
@pytest.mark.parametrize("x, needle", [
    (np.arange(5, dtype=np.int64), "input 0 holds int64, but `halve` takes float32"),  # floats and ints alike
    (np.arange(5, dtype=np.float64), "input 0 holds float64, but `halve` takes float32"),
    ([0.1, 0.2], "item 0 of input 0 \\(0.1\\) is not exactly a float32"),
])
def test_inputs_of_another_type_are_refused(x, needle):
    with pytest.raises(ConversionError, match=needle):
        host_map(halve, x)


def test_out_of_range_python_values_into_a_declared_integer_are_refused():
    """The issue: float and out-of-range values were cast silently into declared integer inputs."""
    @gpulab.kernel
    def bump(x: gpulab.u8) -> gpulab.u8:
        return x + gpulab.u8(1)

    with pytest.raises(ConversionError, match="item 1 of input 0 \\(300\\).*uint8 holds the integers 0 .. 255"):
        host_map(bump, [1, 300])
    with pytest.raises(ConversionError, match="item 0 of input 0 \\(1.5\\)"):
        host_map(bump, [1.5])
    np.testing.assert_array_equal(host_map(bump, [1, 2.0, 254]), [2, 3, 255])


def test_iota_items_must_all_fit_the_parameter():
    with pytest.raises(ConversionError, match="iota\\(33554432.*float32, which holds exactly the integers "
                                              "-16777216 .. 16777216"):
        host_map(halve, gpulab.iota(2**25))
    assert host_map(halve, gpulab.iota(4, start=2**24 - 3)).dtype == np.float32


@pytest.mark.parametrize("n, start, needle", [
    (2, 2**63 - 1, "its last item 9223372036854775808"),
    (1, -(2**63) - 1, "its start -9223372036854775809 is not an int64"),
    (1.5, 0, "n=1.5 is a float \\(int\\(1.5\\) if you mean it\\)"),
    (3, "0", "start='0' is a str"),
])
def test_an_iota_that_is_not_int64_says_which_value(n, start, needle):
    with pytest.raises(ConversionError, match=needle):
        gpulab.iota(n, start)


def ident(v: gpulab.i64) -> gpulab.i64:
    return v


@pytest.mark.parametrize("make", [gpulab.iota, gpulab.Iota], ids=["iota", "Iota"])
@pytest.mark.parametrize("n, start, needle", [
    (2**63, 0, "an iota holds at most 9223372036854775807"),  # a map over it gave an empty array
    (2**63, -5, "an iota holds at most 9223372036854775807"),
    (5.5, 0, "n=5.5 is a float"),  # gpulab.Iota(5.5) skipped iota()'s checks: a map over it gave 6 items
    ("x", 0, "n='x' is a str"),  # TypeError: '<' not supported
    (3, 2.0, "start=2.0 is a float"),
    (-1, 0, "at least 0 items"),
])
def test_iota_and_its_class_check_their_arguments_alike(make, n, start, needle):
    with pytest.raises(ConversionError, match=re.escape(needle)):
        make(n, start=start)


def test_the_largest_iota_has_a_length_and_the_host_says_it_cannot_store_it():
    """``len(iota(2**63))`` raised OverflowError; ``iota(2**63 - 1)`` gave an empty array on the host."""
    from gpulab.errors import ArgumentError

    largest = gpulab.iota(2**63 - 1)
    assert len(largest) == 2**63 - 1 and gpulab.Iota(np.int64(3), np.int8(-2)) == gpulab.iota(3, start=-2)
    with pytest.raises(ArgumentError, match=r"gpulab.iota\(9223372036854775807\), stored on the host, needs about "
                                            r"64.0 EiB of host memory, but .* are free: use fewer items"):
        host_map(ident, largest)
    np.testing.assert_array_equal(host_map(ident, gpulab.iota(3, start=2**63 - 3)), [2**63 - 3, 2**63 - 2, 2**63 - 1])


def test_a_broadcast_view_too_large_to_copy_is_refused_before_the_copy():
    from gpulab.errors import ArgumentError

    needle = "a view of shape (1099511627776,) copied in C order, needs about 4.0 TiB"
    with pytest.raises(ArgumentError, match=re.escape(needle)):
        host_map(halve, np.broadcast_to(np.ones(1, np.float32), (2**40,)))


def test_iota_is_an_input_of_map_only_on_the_host_as_on_a_device():
    with pytest.raises(ConversionError, match="iota is an input of map.* only.*np.arange"):
        host_reduce(add, gpulab.iota(5), 0)


# --- 8: the primitive's arity, from the registry, on every path ------------------------
def _four(a, b, c, d):
    return a + b + c + d


@pytest.mark.parametrize("primitive, fn, inputs, needle", [
    ("map", _four, 4, "map takes a function of 1 to 3 inputs; `_four` takes"),  # the example
    ("map", lambda: 1, 0, "map"),
    ("reduce", lambda a, b, c: a, 1, "reduce takes"),
    ("filter", lambda a, b: a > b, 1, "filter takes"),
])
def test_host_and_compile_refuse_the_same_arities(primitive, fn, inputs, needle):
    x = np.arange(4, dtype=np.int64)
    call = getattr(gpulab, primitive)
    args = [x] * inputs + ([0] if primitive == "reduce" else [])
    with pytest.raises(KernelTypeError, match=needle):
        call(fn, *args, device="host")
    params = fn.__code__.co_argcount
    if params:
        with pytest.raises(KernelTypeError, match=needle):
            gpulab.compile(primitive, fn, types=",".join(["i64"] * params), target="sm_90")


def test_a_fold_must_return_its_input_type_on_the_host_too():
    @gpulab.kernel
    def widening(a: gpulab.i32, b: gpulab.i32) -> gpulab.i64:
        return a + b

    for call in (lambda: host_reduce(widening, X, 0),
                 lambda: gpulab.compile("reduce", widening, target="sm_90")):
        with pytest.raises(KernelTypeError, match="reduce's operator must return its input type int32, not int64"):
            call()


def test_the_host_stores_the_type_the_device_stores():
    """A map without a declared result stores what numba-cuda infers: float64 for an int32 times 0.5."""
    def scaled(x):
        return x * 0.5

    assert host_map(scaled, X).dtype == gpulab.compile("map", scaled, types="i32", target="sm_90").result.dtype
    assert host_filter(lambda x: x > 2, X).dtype == np.int32

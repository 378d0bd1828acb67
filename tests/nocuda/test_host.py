"""The host reference backend: every primitive against plain Python, with real numba."""

import functools
import itertools
import logging
import warnings

import numpy as np
import pytest

import gpulab
from gpulab.errors import ConversionError, GpulabError, HostArrayError, KernelTypeError, LengthMismatchError
from gpulab.host import compare, run, float64_reference, host_filter, host_map, host_reduce, host_scan
from gpulab.iota import Iota, iota
from gpulab.kernel import Signature, as_kernel

RECORD = np.dtype([("x", np.int32), ("y", np.float64)], align=True)
SIZES = [0, 1, 31, 1000]
KINDS = ["int32", "int64", "float32", "float64", "bool", "record"]


# --- operators, per kind: map, an associative fold, a predicate -----------------
def int_map(x):
    return x * 3 + 1


def int_add(a, b):
    return a + b


def int_keep(x):
    return x % 3 == 0


def float_map(x):
    return x * 0.5 + 1.0


def float_add(a, b):
    return a + b


def float_keep(x):
    return x > 0.25


def bool_map(x):
    return not x


def bool_xor(a, b):
    return a != b


def bool_keep(x):
    return x


def record_map(r):
    return r.x * 2 + r.y


def record_max_x(a, b):
    return a if a.x >= b.x else b


def record_keep(r):
    return r.x % 2 == 0


def first_nonzero(a, b):
    return a if a != 0 else b


def horner(a, b):
    return a * 3 + b


OPERATORS = {
    "int32": (int_map, int_add, int_keep, 0),
    "int64": (int_map, int_add, int_keep, 0),
    "float32": (float_map, float_add, float_keep, 0.0),
    "float64": (float_map, float_add, float_keep, 0.0),
    "bool": (bool_map, bool_xor, bool_keep, False),
    "record": (record_map, record_max_x, record_keep, (-(2**31), 0.0)),
}


def data(kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if kind == "record":
        values = np.zeros(n, RECORD)
        values["x"] = rng.integers(-50, 50, n)
        values["y"] = rng.random(n)
        return values
    if kind == "bool":
        return rng.random(n) < 0.5
    if kind.startswith("int"):
        return rng.integers(-100, 100, n).astype(kind)
    return rng.random(n).astype(kind)


# --- the plain Python meaning ----------------------------------------------------
def python_items(values: np.ndarray) -> list:
    """Items as the operator sees them: NumPy scalars, or records with attribute access."""
    return list(values.view(np.recarray) if values.dtype.names else values)


def stored(dtype):
    """Cast each step to the element type, as the backend stores it."""
    return lambda value: python_items(np.array(value, dtype=dtype).reshape(1))[0]


def python_reduce(fn, values, initial):
    store = stored(values.dtype)
    return functools.reduce(lambda a, b: store(fn(a, b)), python_items(values), store(initial))


def python_scan(fn, values, initial=None, exclusive=False):
    store = stored(values.dtype)
    items = python_items(values)
    step = lambda a, b: store(fn(a, b))  # noqa: E731
    if exclusive:
        return list(itertools.accumulate(items[:-1], step, initial=store(initial)))[: len(items)]
    if initial is None:
        return list(itertools.accumulate(items, step))
    return list(itertools.accumulate(items, step, initial=store(initial)))[1:]


def as_array(values: list, dtype) -> np.ndarray:
    result = np.empty(len(values), dtype)
    result[...] = values if values else result
    return result


# --- every primitive, kind and size ----------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_map_is_a_list_comprehension(kind, n):
    values = data(kind, n)
    fn = OPERATORS[kind][0]
    scalars = values.view(np.recarray) if kind == "record" else values.tolist()  # float64 math, like numba
    np.testing.assert_array_equal(host_map(fn, values), [fn(x) for x in scalars])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_reduce_is_functools_reduce(kind, n):
    values = data(kind, n)
    _, fn, _, initial = OPERATORS[kind]
    result = host_reduce(fn, values, initial)
    assert result.shape == () and result.dtype == values.dtype
    assert result[()] == python_reduce(fn, values, initial)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_scan_is_itertools_accumulate(kind, n):
    values = data(kind, n)
    _, fn, _, initial = OPERATORS[kind]
    for options in [{}, {"initial": initial}, {"initial": initial, "exclusive": True}]:
        result = host_scan(fn, values, **options)
        assert result.dtype == values.dtype and result.shape == (n,)
        np.testing.assert_array_equal(result, as_array(python_scan(fn, values, **options), values.dtype))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_filter_keeps_order(kind, n):
    values = data(kind, n)
    fn = OPERATORS[kind][2]
    result = host_filter(fn, values)
    assert result.dtype == values.dtype
    np.testing.assert_array_equal(result, as_array([x for x in python_items(values) if fn(x)], values.dtype))


# --- order, types and inputs -------------------------------------------------------
def test_non_commutative_operator_folds_left_to_right():
    values = np.array([0, 0, 7, 0, 3, 5], np.int64)
    assert host_reduce(first_nonzero, values, 0) == 7
    np.testing.assert_array_equal(host_scan(first_nonzero, values), [0, 0, 7, 7, 7, 7])
    np.testing.assert_array_equal(host_scan(first_nonzero, values, 0, exclusive=True), [0, 0, 0, 7, 7, 7])
    assert host_reduce(horner, np.arange(1, 6), 0) == functools.reduce(horner, range(1, 6), 0)


def test_each_step_is_stored_in_the_element_type():
    values = np.full(3, 2**30, np.int32)
    assert host_reduce(int_add, values, 0) == np.int32(-(2**30))  # wraps like int32 storage
    np.testing.assert_array_equal(host_scan(int_add, values), np.array([2**30, -(2**31), -(2**30)], np.int32))


def test_map_result_type_is_numbas():
    values = np.arange(4, dtype=np.float32)
    assert host_map(float_map, values).dtype == np.float64  # numba: float32 * float64 literal -> float64
    assert host_map(int_keep, np.arange(4)).dtype == np.bool_


def test_declared_types_take_arrays_of_that_type_and_python_values_that_fit():
    @gpulab.kernel
    def halve(x: gpulab.f32) -> gpulab.f32:
        return x * 0.5

    with pytest.raises(ConversionError, match=r"input 0 holds int64, but `halve` takes float32.*astype\(np.float32\)"):
        host_map(halve, np.arange(5, dtype=np.int64))  # the device refuses it too: arrays are never converted
    result = host_map(halve, [0, 1, 2, 3, 4])  # Python values that float32 holds exactly
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, np.arange(5) * 0.5)
    assert host_reduce(gpulab.kernel(float_add, types="f32, f32"), np.ones(3, np.float32), 0).dtype == np.float32


def test_several_inputs_and_out():
    def axpy(a, x, y):
        return a * x + y

    x, y = np.arange(6.0), np.ones(6)
    out = np.zeros((2, 3))
    assert host_map(axpy, np.full(6, 2.0), x, y, out=out) is out
    np.testing.assert_array_equal(out, (2 * x + y).reshape(2, 3))
    with pytest.raises(LengthMismatchError, match="out="):
        host_map(axpy, x, x, y, out=np.zeros(5))
    with pytest.raises(HostArrayError):
        host_map(axpy, x, x, y, out=[0.0] * 6)


def test_nd_and_strided_inputs_give_items_in_c_order():
    grid = np.arange(12, dtype=np.int64).reshape(3, 4)
    for view in [grid, grid.T, grid[:, ::2], grid[::-1], grid.astype(">i8")]:
        items = view.ravel(order="C")
        np.testing.assert_array_equal(host_map(int_map, view), items * 3 + 1)
        assert host_reduce(horner, view, 0) == functools.reduce(horner, items.tolist(), 0)
        np.testing.assert_array_equal(host_scan(horner, view), list(itertools.accumulate(items.tolist(), horner)))
        np.testing.assert_array_equal(host_filter(int_keep, view), items[items % 3 == 0])


def test_iota_input():
    indices = iota(5, start=3)
    assert isinstance(indices, Iota) and len(indices) == 5
    np.testing.assert_array_equal(host_map(int_map, indices), [10, 13, 16, 19, 22])
    np.testing.assert_array_equal(host_map(float_add, indices, np.ones(5)), [4, 5, 6, 7, 8])
    with pytest.raises(ConversionError, match="iota is an input of map.* only.*np.arange"):
        host_reduce(int_add, iota(100), 0)  # as on a device, whose reduce reads arrays
    with pytest.raises(ValueError):
        iota(-1)


def test_interpreted_fallback_for_float16_is_silent_and_in_order(caplog):
    values = np.linspace(0, 4, 31).astype(np.float16)
    with warnings.catch_warnings(), caplog.at_level(logging.DEBUG, logger="gpulab.host.run"):
        warnings.simplefilter("error")
        mapped = host_map(float_map, values)
        reduced = host_reduce(float_add, values, 0)
        scanned = host_scan(float_add, values, 0, exclusive=True)
    assert reduced.dtype == scanned.dtype == np.float16
    assert mapped.dtype == np.float64  # `x * 0.5` is float64 in numba-cuda: the host stores what the device does
    np.testing.assert_array_equal(mapped, values.astype(np.float64) * 0.5 + 1.0)  # and computes it so, not in f16
    assert reduced == python_reduce(float_add, values, 0)
    np.testing.assert_array_equal(scanned, python_scan(float_add, values, 0, exclusive=True))
    assert all(record.levelno == logging.DEBUG for record in caplog.records)


def tenth(x: gpulab.f16) -> gpulab.f16:
    return x * 0.1


def test_an_interpreted_float16_kernel_computes_in_the_types_the_device_does():
    """numba-cuda computes ``f16 * 0.1`` in float64 (the build's PTX: cvt.f64.f16, mul.f64); the host's
    interpreter computed it in float16 as NumPy does, and gave another float16 for 19,896 of the 63,488
    finite float16 values."""
    assert "mul.f64" in gpulab.compile("map", tenth, target="sm_90").ptx
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    every = every[np.isfinite(every)]
    got = gpulab.map(tenth, every, device="host")
    np.testing.assert_array_equal(got, (every.astype(np.float64) * 0.1).astype(np.float16))



def mixed(x: gpulab.f16, y: gpulab.f16) -> gpulab.f16:
    k = -(x > y)  # numba: a bool's negative is an int64 (NumPy has none)
    q = x // y  # float32 in numba-cuda, float16 in NumPy
    return gpulab.f16(q * k) if y < x < 2.0 else x


def test_interpreted_unary_operators_floor_division_and_chained_comparisons_are_typed_as_the_device_types_them():
    x = np.array([1.9, 0.3, 1.5, 3.0], np.float16)
    y = np.array([0.7, 0.5, 1.5, 0.25], np.float16)
    quotient = np.floor_divide(x.astype(np.float32), y.astype(np.float32))
    expected = np.where((y < x) & (x < 2.0), (quotient * -(x > y).astype(np.int64)).astype(np.float16), x)
    np.testing.assert_array_equal(gpulab.map(mixed, x, y, device="host"), expected)

# --- uniforms and the compiled cache ---------------------------------------------
def test_changed_uniform_needs_no_recompile():
    scale = 2

    def scaled(x):
        return x * scale

    values = np.arange(5, dtype=np.int64)
    np.testing.assert_array_equal(host_map(scaled, values), values * 2)
    operators, loops = len(run.OPERATORS), len(run.map_loop(1).compiled.overloads)
    scale = 5
    np.testing.assert_array_equal(host_map(scaled, values), values * 5)
    np.testing.assert_array_equal(host_map(scaled, values[:3]), values[:3] * 5)
    assert len(run.OPERATORS) == operators
    assert len(run.map_loop(1).compiled.overloads) == loops


def test_operator_is_compiled_by_numba():
    host_reduce(float_add, np.ones(3, np.float32), 0)
    f32 = gpulab.element_type(np.float32)
    operators = len(run.OPERATORS)
    operator, _ = run.operator_for(as_kernel(float_add), Signature((f32, f32), f32))  # a fold stores its type
    assert len(run.OPERATORS) == operators  # the reduce above made it
    assert operator.compiled is not None and not operator.interpreted_loops


@gpulab.kernel
def helper(x: gpulab.i64) -> gpulab.i64:
    return x + 1


def calls_helper(x):
    return helper(x)


def test_a_redefined_helper_is_seen_by_the_next_call(monkeypatch):
    xs = np.arange(4, dtype=np.int64)
    np.testing.assert_array_equal(gpulab.map(calls_helper, xs, device="host"), [1, 2, 3, 4])

    def helper(x: gpulab.i64) -> gpulab.i64:  # what the next notebook cell defines
        return x * 100

    monkeypatch.setitem(globals(), "helper", gpulab.kernel(helper))
    np.testing.assert_array_equal(gpulab.map(calls_helper, xs, device="host"), [0, 100, 200, 300])


# --- errors ------------------------------------------------------------------------
def test_unequal_lengths_are_an_error():
    with pytest.raises(LengthMismatchError, match=r"equal lengths; got \[3, 4\]") as error:
        host_map(float_add, np.ones(3), np.ones(4))
    assert isinstance(error.value, GpulabError) and isinstance(error.value, ValueError)


def test_exclusive_scan_needs_initial():
    with pytest.raises(KernelTypeError, match="initial="):
        host_scan(int_add, np.arange(3), exclusive=True)


def test_wrong_number_of_parameters():
    with pytest.raises(KernelTypeError, match=r"reduce calls `int_map` with 2 argument\(s\), but it takes 1"):
        host_reduce(int_map, np.arange(3), 0)


# --- compare ---------------------------------------------------------------------
def test_compare_integers_exactly():
    assert compare(np.arange(5), np.arange(5), np.int64).exact
    report = compare(np.array([1, 2, 3], np.int32), np.array([1, 5, 3], np.int32), np.int32)
    assert not report.exact and report.ulps is None and report.max_abs_error == 3
    assert "at 1 of 3" in report.message and "item 1 (device 2, host 5)" in report.message
    assert not compare(np.ones(3), np.ones(4), np.float64).exact


def test_compare_floats_reports_errors_and_ulps():
    host = np.array([1.0, np.nan, -0.0, 3.0], np.float32)
    device = host.copy()
    assert compare(device, host, np.float32).exact
    device[3] = np.nextafter(np.float32(3), np.float32(4))
    device[2] = 0.0
    report = compare(device, host, np.float32)
    assert not report.exact and report.ulps == 1
    assert report.max_rel_error == pytest.approx(2.0**-23 * 2 / 3)
    device[1] = 1.0
    assert compare(device, host, np.float32).max_abs_error == np.inf


def test_compare_against_a_float64_reference():
    values = np.random.default_rng(0).random(1000).astype(np.float32)
    host = host_reduce(float_add, values, 0)
    reference = float64_reference("reduce", float_add, values, 0)
    assert reference.dtype == np.float64
    device = np.float32(values.astype(np.float64).sum())
    report = compare(device, host, np.float32, reference=reference)
    assert report.float64_rel_error <= report.host_float64_rel_error
    assert "versus float64" in report.message


def test_compare_records():
    values = data("record", 5)
    assert compare(values, values.copy(), RECORD).exact
    changed = values.copy()
    changed["y"][4] += 1
    report = compare(changed, values, RECORD)
    assert not report.exact and "item 4" in report.message

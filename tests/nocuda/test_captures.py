"""Captured arrays with no GPU (issue 16): every form compiles for sm_80 and sm_90, the key holds types only,
misuse is refused with its line, and the host backend reads them with the meaning the device is held to."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab import f32, i64
from gpulab.compiler.pipeline import make_spec
from gpulab.device import Device
from gpulab.errors import HostArrayError, ImpureKernelError, KernelIndexError, KernelTypeError
from gpulab.host import run as host_run
from gpulab.primitives import call, dispatch
from gpulab.primitives.plan import value_type
from gpulab.registry import PRIMITIVES

sys.path.insert(0, str(Path(__file__).parents[1]))
import captured_forms as forms  # noqa: E402

HOST = forms.arrays(np)
IDS = [form.name for form in forms.FORMS]


@pytest.fixture(autouse=True)
def host_arrays():
    forms.bind(HOST)


def _compile(form, target, **options):
    iota = {"iota": (True,)} if form.primitive == "map" and isinstance(form.inputs(np)[0], gpulab.Iota) else {}
    return gpulab.compile(form.primitive, form.kernel(HOST), target=target, **iota, **options)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("form", forms.FORMS, ids=IDS)
def test_every_form_compiles_with_its_reads_inlined(form, target):
    build = _compile(form, target)
    assert "Captured0" in build.source and "BoundsCheck bounds;" in build.source
    assert build.operator_calls == 0
    reads_items = form.function is not forms.measured  # it only measures its arrays
    assert ("ATOMG.E.CAS" in build.sass) == reads_items  # the first read out of bounds claims the record


@pytest.mark.parametrize("form", [f for f in forms.FORMS if f.function in (forms.smooth, forms.laplace)],
                         ids=lambda f: f.name)
def test_without_bounds_checks_the_reads_have_no_branch_and_no_atomic(form):
    checked, unchecked = _compile(form, "sm_90"), _compile(form, "sm_90", boundscheck=False)
    assert "ATOMG" not in unchecked.sass
    assert unchecked.sass_instructions < checked.sass_instructions
    assert unchecked.key != checked.key
    assert unchecked.options.as_dict()["boundscheck"] is False


def test_a_kernel_without_captured_arrays_ignores_boundscheck():
    def plain(x: f32) -> f32:
        return x + f32(1)

    assert make_spec("map", plain, target="sm_90", boundscheck=False).key == make_spec("map", plain, target="sm_90").key


# --- the key -----------------------------------------------------------------------
def spec_of(fn):
    return make_spec("map", fn, target="sm_90", iota=(True,))


def test_the_key_holds_dtype_and_ndim_never_pointer_size_or_strides(monkeypatch):
    first = spec_of(forms.smooth)
    assert first.arrays == (("line", gpulab.captures.ArrayType(gpulab.element_type(np.float32), 1)),)
    for other in (np.zeros(10, np.float32), np.ones(10**5, np.float32), np.arange(90, dtype=np.float32)[::9]):
        monkeypatch.setattr(forms, "line", other)
        assert spec_of(forms.smooth).key == first.key
    monkeypatch.setattr(forms, "line", np.zeros(10, np.float64))
    assert spec_of(forms.smooth).key != first.key


def test_the_key_holds_the_number_of_dimensions(monkeypatch):
    before = spec_of(forms.measured).key
    monkeypatch.setattr(forms, "line", np.zeros((2, 5), np.float32))
    assert spec_of(forms.measured).key != before


def test_a_captured_array_rebound_to_other_dimensions_than_its_reads_say_which(monkeypatch):
    monkeypatch.setattr(forms, "line", np.zeros((2, 5), np.float32))
    with pytest.raises(KernelTypeError, match=r"captured array `line` of `smooth` is 2-D now, but `smooth` reads it "
                                              r"with 1 index") as info:
        spec_of(forms.smooth)
    assert info.value.location.line == forms.smooth.__code__.co_firstlineno + 1


def test_a_captured_array_rebound_to_a_scalar_says_so(monkeypatch):
    gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host")
    monkeypatch.setattr(forms, "line", 3.0)
    with pytest.raises(KernelTypeError, match="captured array `line` of `smooth` now holds a float"):
        gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host")


# --- refusals ----------------------------------------------------------------------
values = np.arange(10, dtype=np.float32)
names = ["a", "b"]


def stores(i: i64) -> f32:
    values[i] = f32(1)
    return f32(0)


def adds_into(i: i64) -> f32:
    values[i] += f32(1)
    return f32(0)


def slices(i: i64) -> f32:
    return values[1:3][0]


def uses_it_whole(i: i64) -> f32:
    return abs(values)


def calls_a_method(i: i64) -> f32:
    return values.sum()


def reads_another_attribute(i: i64) -> f32:
    return values.T[i]


def captures_a_list(i: i64) -> f32:
    return names[i]


nothing = None


def captures_none(i: i64) -> f32:
    return nothing[i]


def index_by_ellipsis(i: i64) -> f32:
    return values[...]


@gpulab.kernel
def helper(i: i64) -> f32:
    return values[i]


def calls_a_capturing_helper(i: i64) -> f32:
    return helper(i)


@pytest.mark.parametrize("fn, needle, line", [
    (stores, r"may not write to `values\[i\]`: captured arrays are read-only", 1),
    (adds_into, r"may not write to `values\[i\]`: captured arrays are read-only", 1),
    (slices, r"one item of captured array `values` at a time", 1),
    (uses_it_whole, r"captured array `values` is used here as a value", 1),
    (calls_a_method, r"may not call `values.sum\(\)`", 1),
    (reads_another_attribute, r"may not read `values.T`", 1),
    (captures_a_list, r"free variable `names` is a list; a kernel may capture only scalars .*arrays", 1),
    (index_by_ellipsis, r"one item of captured array `values` at a time", 1),
    (captures_none, r"free variable `nothing` is a NoneType", 1),  # None is no pure function either
])
def test_misuse_is_refused_with_its_line(fn, needle, line):
    with pytest.raises(ImpureKernelError, match=needle) as info:
        gpulab.Kernel(fn)
    assert info.value.location.line == fn.__code__.co_firstlineno + line
    assert f"line {fn.__code__.co_firstlineno + line}" in str(info.value)


def test_a_nested_kernel_may_not_capture():
    with pytest.raises(KernelTypeError, match="reads the free variable.*values.*read captured arrays in the kernel"):
        gpulab.Kernel(calls_a_capturing_helper)


def test_constants_may_not_name_an_array():
    with pytest.raises(ImpureKernelError, match="`values` is an array"):
        gpulab.Kernel(helper.pyfunc, constants=("values",))


class FakeDeviceArray:
    """Something whose class offers the CUDA array interface (a device array, as the check sees it)."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, True), "version": 3}
    shape, dtype = (4,), np.dtype(np.float32)


def test_a_device_array_captured_on_the_host_says_how_to_move_it(monkeypatch):
    monkeypatch.setattr(forms, "line", FakeDeviceArray())
    with pytest.raises(HostArrayError, match=r"captures `line`, a device array, but this call runs on the host"):
        gpulab.map(forms.smooth, gpulab.iota(2, start=1), device="host")


class DLPackOnly:
    """A CPU array seen only through DLPack: no ``dtype``, no ``shape``."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None, **options):
        return self._array.__dlpack__(**options)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class BrokenDLPack(DLPackOnly):
    def __dlpack__(self, stream=None, **options):
        raise TypeError("no export today")


def test_an_object_seen_only_through_dlpack_is_read_on_the_host_and_typed_for_the_device(monkeypatch):
    """Capturing an object with ``__dlpack__`` and no dtype raised CuPy's TypeError (CPU arrays cannot be
    directly imported)."""
    monkeypatch.setattr(forms, "line", DLPackOnly(np.arange(5, dtype=np.float32)))
    np.testing.assert_allclose(gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host"), [1, 2, 3])
    assert dict(make_spec("map", forms.smooth, target="sm_90").arrays)["line"].element.name == "float32"
    with pytest.raises(KernelIndexError, match=r"outside `line` of shape \(5,\)"):
        gpulab.map(forms.smooth, gpulab.iota(4, start=1), device="host")
    monkeypatch.setattr(forms, "line", BrokenDLPack(np.arange(5, dtype=np.float32)))
    for attempt in (lambda: gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host"),
                    lambda: gpulab.compile("map", forms.smooth, target="sm_90")):
        with pytest.raises(KernelTypeError, match=r"captured array `line` of `smooth` offers DLPack but gives no "
                                                  r"array through it \(TypeError: no export today\)"):
            attempt()


def test_a_masked_array_is_refused_as_a_captured_array_and_as_an_input(monkeypatch):
    """A masked array was called "a device array" when captured; as an input its mask was ignored."""
    masked = np.ma.masked_array(np.arange(5, dtype=np.float32), mask=[0, 1, 0, 0, 0])
    monkeypatch.setattr(forms, "line", masked)
    for attempt in (lambda: gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host"),
                    lambda: gpulab.compile("map", forms.smooth, target="sm_90")):
        with pytest.raises(KernelTypeError, match=re.escape("captured array `line` of `smooth` is a NumPy masked "
                                                            "array, but a kernel reads every item and knows no mask: "
                                                            "pass line.filled(value)")):
            attempt()
    with pytest.raises(gpulab.errors.ConversionError, match=r"the input 0 is a NumPy masked array.*x.compressed\(\)"):
        gpulab.map(halved, masked, device="host")


def test_another_ndarray_subclass_is_read_as_its_array(monkeypatch):
    monkeypatch.setattr(forms, "line", np.arange(5, dtype=np.float32).view(np.recarray))
    np.testing.assert_allclose(gpulab.map(forms.smooth, gpulab.iota(3, start=1), device="host"), [1, 2, 3])


rb = np.arange(4, dtype=np.float32)


def reads(i: i64) -> f32:
    return rb[i]


def test_a_captured_name_deleted_after_the_check_says_it_is_gone(monkeypatch):
    """Capture `rb`, map once, `del rb`, map again: KeyError: 'rb'."""
    assert gpulab.map(reads, gpulab.iota(2), device="host").tolist() == [0, 1]
    monkeypatch.delitem(globals(), "rb")
    for attempt in (lambda: gpulab.map(reads, gpulab.iota(2), device="host"),
                    lambda: gpulab.compile("map", reads, target="sm_90")):
        with pytest.raises(gpulab.errors.KernelNameError, match=re.escape(
                "`reads` reads `rb`, which is no longer defined (it was deleted after `reads` was checked): "
                "define `rb` again")):
            attempt()


def halved(x: f32) -> f32:
    return x * f32(0.5)


# --- the host's meaning ----------------------------------------------------------
def _numpy_reference(form, values):
    """What each form means, written with NumPy alone."""
    line, grid = values["line"], values["grid"]
    expected = {
        forms.smooth: lambda: (line[:-2] + line[1:-1] + line[2:]) / np.float32(3),
        forms.gather: lambda: line[values["table"]],
        forms.from_the_end: lambda: line[::-1],
        forms.every_third: lambda: values["strided"] * 2,
        forms.transposed: lambda: values["column"].ravel(order="F"),
        forms.three_d: lambda: values["cube"].ravel(),
        forms.squared_wave: lambda: values["waves"] ** 2,
        forms.flag: lambda: values["flags"],
        forms.guarded: lambda: np.concatenate([line, np.zeros(200, np.float32)]),
        forms.closure_reader: lambda: line + np.float32(1),
        forms.listed: lambda: np.flatnonzero(values["allowed"]),
    }
    return expected.get(form.function)


@pytest.mark.parametrize("form", forms.FORMS, ids=IDS)
def test_the_host_reads_as_numpy_does(form):
    result = forms.run(form, HOST, "host")
    expected = _numpy_reference(form, HOST)
    if expected is not None:
        np.testing.assert_allclose(result, expected(), rtol=1e-6)
    assert result.size > 0


def test_laplace_on_the_host_is_numpys_five_point_stencil():
    grid = HOST["grid"]
    expected = grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:] - 4 * grid[1:-1, 1:-1]
    result = gpulab.map(forms.laplace, gpulab.iota(10 * (forms.WIDTH - 2)), device="host")
    np.testing.assert_allclose(result, expected.ravel())


def test_an_out_of_bounds_read_on_the_host_names_line_array_index_and_shape():
    with pytest.raises(KernelIndexError) as info:
        gpulab.map(forms.smooth, gpulab.iota(999, start=1), device="host")
    error = info.value
    assert isinstance(error, IndexError)
    assert "`smooth` read line[1000], outside `line` of shape (1000,)" in str(error)
    assert error.location.line == forms.smooth.__code__.co_firstlineno + 1
    caret = str(error).splitlines()[-1]
    assert caret.index("^") - 4 == error.location.text().index("line[i + 1]")


def test_an_index_below_minus_the_size_is_out_of_bounds_too():
    with pytest.raises(KernelIndexError, match=r"read line\[-1001\], outside `line` of shape \(1000,\)"):
        gpulab.map(forms.from_the_end, gpulab.iota(1001), device="host")


def test_a_two_dimensional_read_out_of_bounds_names_both_indices():
    with pytest.raises(KernelIndexError, match=r"read grid\[12, 1\], outside `grid` of shape \(12, 16\)"):
        gpulab.map(forms.laplace, gpulab.iota(11 * (forms.WIDTH - 2)), device="host")


def test_interpreted_kernels_raise_the_same_error():
    """float16 arithmetic is not compiled by numba on the CPU: the interpreter reads, with the same checks."""
    with pytest.raises(KernelIndexError, match=r"read halves\[64\], outside `halves` of shape \(64,\)"):
        gpulab.map(forms.half, gpulab.iota(65), device="host")


@pytest.mark.parametrize("primitive, fn, xs, initial", [
    ("reduce", forms.floor_min, np.arange(3, dtype=np.float32), 0.0),
    ("scan", forms.capped_max, np.arange(3, dtype=np.int32), None),
    ("filter", forms.listed, np.arange(499, 502, dtype=np.int64), None),
])
def test_every_primitive_raises_on_the_host(monkeypatch, primitive, fn, xs, initial):
    if primitive != "filter":
        monkeypatch.setattr(forms, "line" if primitive == "reduce" else "table", np.zeros(0, HOST["line"].dtype
                                                                                       if primitive == "reduce"
                                                                                       else np.int32))
    with pytest.raises(KernelIndexError, match=re.escape("shape (0,)") if primitive != "filter" else r"\[500\]"):
        call(primitive, fn, [xs], initial=initial, device="host")


def test_a_new_array_of_the_same_type_reuses_the_host_operator(monkeypatch):
    gpulab.map(forms.smooth, gpulab.iota(998, start=1), device="host")
    count = len(host_run.OPERATORS)
    monkeypatch.setattr(forms, "line", np.ones(50, np.float32))
    result = gpulab.map(forms.smooth, gpulab.iota(48, start=1), device="host")
    assert result.tolist() == [1.0] * 48 and len(host_run.OPERATORS) == count


def test_a_captured_array_is_packed_where_its_struct_says():
    """What a plan writes for a captured array lands on the fields of ``struct CapturedK`` (the driver checks the
    whole parameter layout again on a GPU)."""
    import threading

    from gpulab.primitives.plan import NO_BOUNDS, CapturedValue, Prepared
    from gpulab.runtime.arrays import contiguous_fields
    from gpulab.runtime.module import ArgumentPack

    build = gpulab.compile("map", forms.laplace, target="sm_90", iota=(True,), boundscheck=False)
    prepared = Prepared(build, None, threading.local(), {}, {})
    grid = gpulab.captures.ArrayType(gpulab.element_type(np.float64), 2)
    value = CapturedValue(grid, (0xA000, 12, 16, 128, 8), gpulab.captures.Captured(None, "grid", (12, 16)))
    parameters = build.parameters["gpulab_map"]
    pack = ArgumentPack(parameters)
    pack.write(5, *contiguous_fields(0xB000, 140), 140, *prepared.uniform_fields((np.int64(forms.WIDTH), value)))
    uniforms = next(p for p in parameters if p.name == "u")
    written = np.frombuffer(bytes(pack._memory[uniforms.offset:uniforms.offset + uniforms.dtype.itemsize]),
                            uniforms.dtype)[0]
    assert uniforms.fields == ("u_WIDTH", "a_grid.data", "a_grid.shape0", "a_grid.shape1", "a_grid.stride0", "a_grid.stride1",
                               "bounds.claimed", "bounds.record")
    assert written.tolist() == (forms.WIDTH, 0xA000, 12, 16, 128, 8, *NO_BOUNDS)


# --- the view ----------------------------------------------------------------------
def _sass_of_line(build, line: int) -> list[str]:
    """The SASS instructions the view lights for file line ``line`` of the kernel."""
    key = build.python_key(line)
    shown = build.sass.splitlines()
    return [shown[i] for i, keys in sorted(build.line_map.sass.items()) if key in keys]


@pytest.mark.parametrize("boundscheck", [True, False])
def test_the_view_lights_the_loads_of_a_read_on_its_python_line(boundscheck):
    """Every global load of the stencil comes from its one Python line; with checks, so do the claims of a
    failure (the branches after each check are labels: their loads keep the line of what comes before)."""
    build = _compile(forms.FORMS[0], "sm_90", boundscheck=boundscheck)
    mine = _sass_of_line(build, forms.smooth.__code__.co_firstlineno + 1)
    loads = [text for text in build.sass.splitlines() if "LDG.E" in text]
    assert loads and all(text in mine for text in loads)
    assert any("ATOMG.E.CAS" in text for text in mine) == boundscheck


# --- what a device plan passes (made, not run: no GPU) ----------------------------
A_GPU = Device("cuda:0", "an H200 as described, never touched here", (9, 0), 2**37, 132)


class DeviceArray:
    """What a device plan reads of a device array: the CUDA array interface (the pointer is never used)."""

    def __init__(self, pointer, shape, dtype, strides=None):
        self.shape, self.dtype, self.strides = tuple(shape), np.dtype(dtype), strides
        self.pointer = pointer

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.pointer, False),
                "strides": self.strides, "version": 3}


def _plan(fn, n):
    return dispatch.plan_for(PRIMITIVES["map"], fn, [gpulab.iota(n)], A_GPU)


def test_a_device_plan_passes_a_captured_view_as_pointer_shape_and_byte_strides():
    forms.bind({"grid": DeviceArray(0xA000, (12, 16), np.float64, strides=(8, 96))})  # a transposed view
    width, grid = _plan(forms.laplace, 140).uniform_values()
    assert width == forms.WIDTH
    assert grid.type == gpulab.captures.ArrayType(gpulab.element_type(np.float64), 2)
    assert grid.fields == (0xA000, 12, 16, 8, 96) and grid.captured.shape == (12, 16)
    forms.bind({"grid": DeviceArray(0xB000, (3, 16), np.float64)})  # C order: strides from the shape
    assert _plan(forms.laplace, 140).uniform_values()[1].fields == (0xB000, 3, 16, 128, 8)


def test_a_device_plan_chooses_its_build_by_the_captured_types_alone():
    forms.bind({"line": DeviceArray(0xA000, (1000,), np.float32)})
    plan = _plan(forms.smooth, 998)
    first = tuple(map(value_type, plan.uniform_values()))
    forms.bind({"line": DeviceArray(0xC000, (7,), np.float32, strides=(12,))})
    assert _plan(forms.smooth, 5) is plan and tuple(map(value_type, plan.uniform_values())) == first
    forms.bind({"line": DeviceArray(0xC000, (7,), np.float64)})
    assert tuple(map(value_type, plan.uniform_values())) != first


def test_a_host_array_captured_by_a_device_plan_says_how_to_move_it():
    with pytest.raises(HostArrayError, match=r"captured array `line` of `smooth` is a host array .*to_device"):
        _plan(forms.smooth, 998).uniform_values()

"""Fused inputs with no GPU (issue 16): ``gpulab.mapped`` on the host means map, every composition compiles into
one kernel with every operator inlined, and misuse is a clear error."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab import f32, i64
from gpulab.compiler.pipeline import make_spec
from gpulab.errors import KernelTypeError, LengthMismatchError
from gpulab.primitives import params

sys.path.insert(0, str(Path(__file__).parents[1]))
import mapped_forms as forms  # noqa: E402

F32 = np.float32


@pytest.fixture(autouse=True)
def host_table():
    forms.bind(np)


@pytest.mark.parametrize("case", forms.CASES, ids=lambda c: c.name)
def test_on_the_host_a_mapped_input_means_map(case):
    got, want = np.asarray(case.run(np, "host")), np.asarray(case.expected())
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)


def _dot(target, **options):
    return gpulab.compile("reduce", forms.add, target=target, mapped=(gpulab.mapped(forms.mul, F32, F32),), **options)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_a_dot_product_is_one_kernel_with_both_functions_inlined(target):
    build = _dot(target)
    assert build.kernels == ("gpulab_reduce",) and build.operator_calls == 0
    assert 'extern "C" __device__ long long gpulab_op_0(value_t* result' in build.source
    lines = build.line_map.python_lines()
    mul_line = forms.mul.__code__.co_firstlineno + 1
    add_line = forms.add.__code__.co_firstlineno + 1
    assert mul_line in lines and add_line in lines  # both reached the one SASS, each with its line
    assert "return a * b" in build.python_source and "return a + b" in build.python_source


def test_a_ptx_link_calls_both_operators():
    build = _dot("sm_90", lto=False)
    calls = [line for line in build.sass.splitlines() if "CALL" in line]
    assert any(re.search(r"\bgpulab_op_0\b", line) for line in calls)
    assert any(re.search(r"\bgpulab_op\b(?!_)", line) for line in calls)


def test_the_mapped_function_is_in_the_key():
    def plus(a: f32, b: f32) -> f32:
        return a + b

    first = make_spec("reduce", forms.add, target="sm_90", mapped=(gpulab.mapped(forms.mul, F32, F32),)).key
    second = make_spec("reduce", forms.add, target="sm_90", mapped=(gpulab.mapped(plus, F32, F32),)).key
    plain = make_spec("reduce", forms.add, target="sm_90").key
    assert len({first, second, plain}) == 3


COMPOSITIONS = [
    ("map", forms.twice, (gpulab.mapped(forms.mul, F32, F32),)),
    ("map", forms.add, (gpulab.mapped(forms.looked_up, gpulab.iota(1)), None)),
    ("reduce", forms.iadd, (gpulab.mapped(forms.square, gpulab.iota(1)),)),
    ("reduce", forms.add64, (gpulab.mapped(forms.widen, gpulab.mapped(forms.mul, F32, F32)),)),
    ("scan", forms.iadd, (gpulab.mapped(forms.imul, np.int32, np.int32),)),
    ("filter", forms.positive, (gpulab.mapped(forms.mul, F32, F32),)),
]


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("primitive, fn, mapped", COMPOSITIONS, ids=lambda v: getattr(v, "__name__", None))
def test_every_composition_compiles_inlined_and_packs_as_its_plan_writes(target, primitive, fn, mapped):
    build = gpulab.compile(primitive, fn, target=target, mapped=mapped)
    assert build.operator_calls == 0
    kinds = tuple(m.shape if m is not None else "array" for m in mapped)
    for parameters in build.parameters.values():
        params.check_fields(parameters, params.written_fields(parameters, kinds))


def test_a_mapped_function_needs_its_result_type():
    def untyped(a, b):
        return a * b

    with pytest.raises(KernelTypeError, match="mapped needs the result type of `untyped`"):
        gpulab.mapped(untyped, np.ones(2, F32), np.ones(2, F32))


def test_a_mapped_input_checks_types_lengths_and_count():
    with pytest.raises(KernelTypeError, match=r"input 1 of mapped `mul` holds float64, but `mul` takes float32"):
        gpulab.mapped(forms.mul, np.ones(2, F32), np.ones(2))
    with pytest.raises(LengthMismatchError, match="equal lengths"):
        gpulab.mapped(forms.mul, np.ones(2, F32), np.ones(3, F32))
    with pytest.raises(KernelTypeError, match="takes 2 input"):
        gpulab.mapped(forms.mul, np.ones(2, F32))
    with pytest.raises(KernelTypeError, match="makes float64 items, but `add` takes float32"):
        make_spec("reduce", forms.add, target="sm_90", mapped=(gpulab.mapped(forms.widen, F32),))


def test_a_mapped_input_has_the_length_of_its_inputs():
    assert len(gpulab.mapped(forms.square, gpulab.iota(7))) == 7
    assert len(gpulab.mapped(forms.mul, np.ones((2, 3), F32), np.ones(6, F32))) == 6


def test_a_host_call_refuses_a_device_array_inside_a_mapped_input():
    class FakeDeviceArray:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, True), "version": 3}
        dtype, shape = np.dtype(F32), (2,)

    with pytest.raises(gpulab.errors.HostArrayError, match="input 0 is \\(or reads\\) a device array"):
        gpulab.reduce(forms.add, gpulab.mapped(forms.mul, FakeDeviceArray(), np.ones(2, F32)), 0.0, device="host")


def test_an_out_of_bounds_read_inside_a_mapped_function_names_it():
    with pytest.raises(gpulab.errors.KernelIndexError, match=r"`looked_up` read table\[5000\]"):
        gpulab.reduce(forms.add, gpulab.mapped(forms.looked_up, gpulab.iota(forms.N + 1)), 0.0, device="host")


def index_times(i: i64) -> f32:
    return f32(i) * f32(0.5)


def test_iota_feeds_a_mapped_input_cast_to_its_parameter_type():
    got = gpulab.reduce(forms.add, gpulab.mapped(index_times, gpulab.iota(4)), 0.0, device="host")
    assert float(got) == 3.0


def test_a_device_plan_writes_a_mapped_input_as_its_struct_names_the_fields():
    """Made, not run (no GPU): the fields of ``struct Input0`` of a dot product are its two arrays' fields,
    in the order codegen declares them, and a plan made for a mapped input refuses a plain array."""
    from gpulab.device import Device
    from gpulab.primitives import dispatch
    from gpulab.registry import PRIMITIVES

    class DeviceArray:
        def __init__(self, pointer, n):
            self.pointer, self.shape, self.dtype = pointer, (n,), np.dtype(F32)

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": "<f4", "data": (self.pointer, False), "version": 3}

    gpu = Device("cuda:0", "an H200 as described, never touched here", (9, 0), 2**37, 132)
    plan = dispatch.make_plan(PRIMITIVES["reduce"], forms.add, [gpulab.mapped(forms.mul, F32, F32)], gpu)
    inputs = gpulab.mapped(forms.mul, DeviceArray(0xA000, 100), DeviceArray(0xB000, 100))
    fields, size, _ = plan.input_fields(inputs, 0, plan.uniform_values())
    parameters = plan.build().parameters["gpulab_reduce"]
    written = params.written_fields(parameters, plan.kinds)["in"]
    one_row = {"layout.inner_size": 100, "layout.inner_stride": 1, "layout.outer_stride": 100,
               "layout.row_multiplier": 0, "layout.row_shift": 0}
    assert dict(zip(written, fields)) == {"in0.data": 0xA000, **{f"in0.{k}": v for k, v in one_row.items()},
                                          "in1.data": 0xB000, **{f"in1.{k}": v for k, v in one_row.items()}}
    assert size == 100
    with pytest.raises(KernelTypeError, match=r"made for gpulab.mapped\(mul, ...\)"):
        plan.input_fields(DeviceArray(0xA000, 100), 0, ())

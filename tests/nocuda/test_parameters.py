"""Kernel parameters come from the kernel text alone: their layouts, the structs' fields, the packed buffer."""

import numpy as np
import pytest

import gpulab
from gpulab.compiler.parameters import ParameterError, kernel_parameters
from gpulab.compiler.serialize import decode, encode
from gpulab.errors import GpulabError
from gpulab.primitives import params
from gpulab.runtime.arrays import Layout, contiguous_fields, row_divisor
from gpulab.runtime.module import ArgumentPack, value_fields
from gpulab.types import element_type

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def add(a, b):
    return a + b


def positive(x):
    return x > 0


def smaller(a, b):
    return a if a.value <= b.value else b


def layout(build, kernel):
    return [(p.name, p.cxx, p.offset, p.dtype.itemsize) for p in build.parameters[kernel]]


def test_a_scan_takes_what_its_template_declares():
    build = gpulab.compile("scan", add, types="f32,f32", target="sm_90")
    assert layout(build, "gpulab_scan") == [
        ("in", "Input0", 0, 40), ("n", "index_t", 40, 4), ("out", "Output", 48, 40),  # a Layout is 8-aligned
        ("status", "TileStatus<value_t>", 88, 16), ("epoch", "unsigned int", 104, 4),
        ("initial", "value_t", 108, 4), ("has_initial", "bool", 112, 1), ("u", "Uniforms", 113, 1)]
    wide = gpulab.compile("scan", add, types="f64,f64", target="sm_90", index_bits=64)
    assert layout(wide, "gpulab_scan")[:2] == [("in", "Input0", 0, 48), ("n", "index_t", 48, 8)]
    assert layout(wide, "gpulab_scan")[5] == ("initial", "value_t", 128, 8)  # after a 4-byte epoch at 120


def test_struct_fields_are_the_hosts_layout_and_status():
    build = gpulab.compile("filter", positive, types="i64", target="sm_90")
    by_name = {p.name: p for p in build.parameters["gpulab_filter"]}
    assert by_name["in"].fields == ("data",) + tuple(f"layout.{f}" for f in Layout._fields)
    assert by_name["status"].fields == params.TileStatusValue._fields
    params.check_fields(build.parameters["gpulab_filter"], params.written_fields(build.parameters["gpulab_filter"], ()))


def test_iota_inputs_are_their_start():
    build = gpulab.compile("map", add, types="i64,f32", target="sm_90", iota=(True, False))
    parameters = build.parameters["gpulab_map"]
    assert [p.fields for p in parameters[:2]] == [params.IOTA_FIELDS, params.ARRAY_FIELDS]
    params.check_fields(parameters, params.written_fields(parameters, build.options.iota))


def test_a_struct_that_disagrees_with_the_host_is_refused():
    build = gpulab.compile("map", add, types="i64,f32", target="sm_90", iota=(True, False))
    with pytest.raises(GpulabError, match="in0 .Input0. has fields .'start',. in the generated C\\+\\+"):
        params.check_fields(build.parameters["gpulab_map"], {"in0": params.ARRAY_FIELDS})


alpha = 2
phase = 1j


def rotate(x: gpulab.c64) -> gpulab.c64:
    return x * phase + alpha


def test_uniforms_are_laid_out_with_cxx_alignment():
    build = gpulab.compile("map", rotate, target="sm_90")
    (uniforms,) = [p for p in build.parameters["gpulab_map"] if p.name == "u"]
    assert uniforms.fields == ("u_phase", "u_alpha") or uniforms.fields == ("u_alpha", "u_phase")
    offsets = {name: uniforms.dtype.fields[name][1] for name in uniforms.fields}
    # complex128 is alignas(16): 16 + 8 bytes round up to 32 (NumPy's aligned struct would make 24)
    assert uniforms.dtype.itemsize == 32 and offsets["u_phase"] % 16 == 0 and uniforms.offset % 16 == 0


def test_records_keep_their_dtype():
    build = gpulab.compile("reduce", smaller, types=(PAIR, PAIR), target="sm_80")
    (initial,) = [p for p in build.parameters["gpulab_reduce"] if p.name == "initial"]
    assert initial.dtype == PAIR and initial.offset % 4 == 0


def test_the_pack_is_laid_out_as_the_parameter_space():
    build = gpulab.compile("reduce", add, types="i32,i32", target="sm_90")
    parameters = build.parameters["gpulab_reduce"]
    two_rows = (0x1000, 4, 1, 9, *row_divisor(4, 7))  # 7 items in rows of 4, 9 apart
    values = {"in": two_rows, "n": 7, "out": 0x2000, "partials": 0x3000, "finished": 0x4000,
              "initial": -3}
    pack = ArgumentPack(parameters)
    for name, value in values.items():
        pack[name] = np.int32(value) if name == "initial" else value
    memory = bytes(pack._memory)
    for parameter in parameters[:-1]:
        written = np.frombuffer(memory, parameter.dtype, count=1, offset=parameter.offset)[0]
        assert (written.item() if parameter.fields else written) == values[parameter.name]
    at_once = ArgumentPack(parameters, order=[p.name for p in parameters])
    assert at_once.value_count == len(two_rows) + 5
    at_once.write(*two_rows, 7, 0x2000, 0x3000, 0x4000, np.int32(-3))  # the uniforms: none
    assert bytes(at_once._memory) == memory
    values = (*two_rows, 7, 0x2000, 0x3000, 0x4000, np.int32(-3))
    loaded = ArgumentPack(parameters)
    loaded.load(at_once.packed(*values))  # what a launch's replay key holds, written as write() writes
    assert bytes(loaded._memory) == memory


def test_packed_bytes_tell_apart_values_python_calls_equal():
    build = gpulab.compile("reduce", add, types="f32,f32", target="sm_90")
    pack = ArgumentPack(build.parameters["gpulab_reduce"])
    fields = (*contiguous_fields(0x1000, 7), 7, 0x2000, 0, 0)
    assert -0.0 == 0.0 and pack.packed(*fields, np.float32(-0.0)) != pack.packed(*fields, np.float32(0.0))
    assert pack.packed(*fields, np.float32(1.5)) == pack.packed(*fields, 1.5)


def test_a_record_parameter_ending_in_padding_is_loaded_whole():
    padded = np.dtype([("value", np.float64), ("index", np.int32)], align=True)  # 16 bytes, 12 of fields

    def smallest(a, b):
        return a if a.value <= b.value else b

    build = gpulab.compile("reduce", smallest, types=(padded, padded), target="sm_90")
    parameters = build.parameters["gpulab_reduce"]
    values = (*contiguous_fields(0x1000, 7), 7, 0x2000, 0x3000, 0x4000, 2.5, 9)
    written, loaded = ArgumentPack(parameters), ArgumentPack(parameters)
    written.write(*values)
    loaded.load(written.packed(*values))
    assert bytes(loaded._memory) == bytes(written._memory)


def test_a_plan_that_writes_another_order_is_refused():
    build = gpulab.compile("reduce", add, types="i32,i32", target="sm_90")
    with pytest.raises(GpulabError, match="the template and the plan disagree"):
        ArgumentPack(build.parameters["gpulab_reduce"], order=("in", "n", "out", "initial", "u"))


def test_values_are_converted_as_numpy_converts_them():
    assert value_fields(np.dtype(np.int32))(np.int32(5)) == (5,)
    (converted,) = value_fields(np.dtype(np.float32))(0.1)
    assert type(converted) is np.float32 and converted == np.float32(0.1)
    assert value_fields(PAIR)(np.array((1.5, 3), PAIR)[()]) == (1.5, 3)
    assert value_fields(np.dtype(np.complex64))(1 + 2j) == (np.complex64(1 + 2j).tobytes(),)


def test_the_cache_keeps_the_parameters():
    build = gpulab.compile("scan", smaller, types=(PAIR, PAIR), target="sm_90", exclusive=True)
    again = decode(*encode(build))
    assert again.parameters == build.parameters


def test_an_unknown_parameter_type_is_a_clear_error():
    source = 'extern "C" __global__ void k(Mystery m) {}\n'
    with pytest.raises(ParameterError, match="passes a 'Mystery'"):
        kernel_parameters(source, ["k"], {"value_t": element_type(np.float32)}, 32)
    with pytest.raises(ParameterError, match="no kernel other"):
        kernel_parameters(source, ["other"], {}, 32)

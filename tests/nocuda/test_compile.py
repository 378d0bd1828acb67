"""The compile pipeline with no GPU: every primitive, element type, link mode and target.

Every build also checks that the instruction guide knows each SASS opcode
and PTX instruction in it, with all their modifiers, and that a build with
LTO has no CALL at all: no called operator, no emulated shuffle (ptxas
emulates a shuffle it cannot prove the whole warp reaches on sm_80-89), no
library division.
"""

import re

import numpy as np
import pytest

import gpulab
from gpulab.compiler import listing
from gpulab.compiler.analysis import explain
from gpulab.compiler.analysis.guide import ptx_opcode
from gpulab.errors import FrontendError, ImpureKernelError, KernelTypeError, NvrtcError, TargetError

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def add(a, b):
    return a + b


def argmin(a, b):
    return a if a.value <= b.value else b


def positive(x):
    return x > 0


def twice(x):
    return x + x


def is_clear(x):
    return not x


def sixteenth(x):  # a histogram's bin
    return x >> 4


def scaled_bin(x):
    return gpulab.i32(x * 16)


def pair_bin(p):
    return p.index & 7


OPERATORS = {
    "map": lambda t: (twice if t != PAIR else None, (t,)),
    "reduce": lambda t: (argmin if t is PAIR else add, (t, t)),
    "scan": lambda t: (argmin if t is PAIR else add, (t, t)),
    "filter": lambda t: (is_clear if t == "bool" else (None if t is PAIR else positive), (t,)),
    "histogram": lambda t: ({"int32": sixteenth, "int64": sixteenth, "float32": scaled_bin, "float64": scaled_bin,
                             PAIR: pair_bin}.get(t), (t,)),
}
TYPES = ["int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", PAIR]  # float16 links numba's fp16 library


def _cases():
    for primitive, make in OPERATORS.items():
        for element in TYPES:
            fn, types = make(element)
            if fn is None or (element == "bool" and primitive != "filter"):
                continue
            name = element if isinstance(element, str) else "record"
            for lto, target, index_bits in _builds():
                yield pytest.param(primitive, fn, types, lto, target, index_bits,
                                   id=f"{primitive}-{name}-{'lto' if lto else 'ptx'}-{target}-{index_bits}")


def _builds():
    """(lto, target, index_bits): LTO for every target, a PTX link for one per family, and 64-bit
    indices (their code differs from 32-bit code in the same way for every target) on sm_80."""
    for target in NO_CALL_TARGETS:
        yield True, target, 32
    for target in ("sm_80", "sm_90", "sm_100"):
        yield False, target, 32
    yield True, "sm_80", 64


NO_CALL_TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100")
MAX_SPILL_BYTES = 32


@pytest.mark.parametrize("primitive, fn, types, lto, target, index_bits", list(_cases()))
def test_every_primitive_compiles(primitive, fn, types, lto, target, index_bits):
    build = gpulab.compile(primitive, fn, types=types, target=target, lto=lto, index_bits=index_bits)
    assert build.target.arch == target
    assert "__global__" in build.source and ".entry" in build.ptx
    assert set(build.kernels) <= set(build.resources)
    assert all(r.registers > 0 for r in build.resources.values())
    if lto:
        calls = [line.strip() for line in build.sass.splitlines() if "CALL" in line]
        assert build.sass_calls == 0, f"with LTO the SASS must have no CALL; it has {calls[:3]}"
        assert build.operator_calls == 0 and "gpulab_op" not in build.sass
    else:
        assert build.operator_calls > 0, "a PTX link keeps the operator a called function"
    if lto and index_bits == 32:
        # Under its register cap a kernel spills little (float16 filter 4-20 bytes); the 1- and 2-byte
        # filters spilled 276-280 bytes, at 0.26 of a copy's speed, until their kept flags were one word.
        spills = {name: r.spill_stores for name, r in build.resources.items()}
        assert max(spills.values()) <= MAX_SPILL_BYTES, f"spill stores (bytes) under the register cap: {spills}"
    _assert_guide_knows(build)
    if types == ("bool",):
        return  # `not x` folds into the kernel's own predicate logic: no instruction of its own
    if primitive == "filter" and target == "sm_100" and lto:
        return  # sm_100's ptxas keeps no line info on the inlined predicate's compares (sm_80 and sm_90 do)
    if primitive == "scan" and types[0] in ("int8", "int16", "int32", "int64") and lto and target != "sm_100":
        return  # the scan's integer adds are merged with the kernel's selects and with each other (three-input
        # IADD3): the merged instructions carry the kernel's lines, not the operator's (float adds stay apart)
    # The Python function's body reached the machine code, and the map says where.
    body_line = fn.__code__.co_firstlineno + 1
    assert body_line in build.line_map.python_lines()
    assert build.line_map.python_to_sass(body_line)
    if lto:  # inlined: the Python line also knows the CUDA line it was inlined at
        assert build.line_map.python_to_cuda(body_line)


def _assert_guide_knows(build):
    sass = {instruction.opcode for instruction in listing.parse(build.sass)}
    ptx = {ptx_opcode(line) for line in build.ptx.splitlines()} - {None}
    unknown = [str(e) for e in map(explain, sorted(sass) + sorted(ptx))
               if not e.known or any(text is None for _, text in e.modifiers)]
    assert not unknown, f"add these to gpulab/compiler/analysis/guide.tsv: {unknown}"


def test_lto_is_smaller_than_a_ptx_link():
    inlined = gpulab.compile("reduce", add, types=("f32", "f32"), target="sm_90")
    called = gpulab.compile("reduce", add, types=("f32", "f32"), target="sm_90", lto=False)
    assert called.sass_instructions > inlined.sass_instructions
    assert called.operator_calls > 10


def test_stage_timings_are_recorded():
    build = gpulab.compile("scan", add, types=("i64", "i64"), target=(9, 0), exclusive=True)
    assert {"frontend", "codegen", "nvrtc", "link"} <= set(build.timings)
    assert all(seconds >= 0 for seconds in build.timings.values())
    assert build.disassembled().seconds >= 0  # the disassembly stage, timed where it runs
    assert "#define EXCLUSIVE true" in build.source


def test_annotations_give_the_types():
    def scaled(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
        return a * b

    build = gpulab.compile("map", scaled, target="sm_90")
    assert [t.name for t in build.inputs] == ["float32", "float32"]
    assert build.result.name == "float32"


def test_map_of_three_inputs_and_inferred_result():
    def mix(a, b, c):
        return a * b + c

    build = gpulab.compile("map", mix, types="i32, i32, f64", target="sm_90")
    assert build.result.name == "float64"
    assert "Input2" in build.source


def test_fma_contraction_is_an_option():
    def axpy(a, b, c):
        return a * b + c

    contracted = gpulab.compile("map", axpy, types="f32,f32,f32", target="sm_90")
    separate = gpulab.compile("map", axpy, types="f32,f32,f32", target="sm_90", fma=False)
    assert "FFMA" in contracted.sass
    assert "FFMA" not in separate.sass and "FMUL" in separate.sass


def test_64_bit_indexing_is_generated_when_asked():
    build = gpulab.compile("reduce", add, types="f32,f32", target="sm_90", index_bits=64)
    assert "typedef long long index_t;" in build.source


def test_record_becomes_a_struct_of_its_size():
    build = gpulab.compile("reduce", argmin, types=(PAIR, PAIR), target="sm_90")
    assert re.search(r"sizeof\(record_value_index_[0-9a-f]{8}\) == 8", build.source)
    assert "float value;" in build.source and "int index;" in build.source


@pytest.mark.parametrize("target", ["sm_90", "90", 90, (9, 0), "9.0", gpulab.Target(9, 0)])
def test_target_spellings(target):
    assert gpulab.compile("map", twice, types=("f32",), target=target).target.arch == "sm_90"


@pytest.mark.parametrize("target", ["sm_91", "gpu", 12])
def test_bad_targets_are_refused(target):
    with pytest.raises(TargetError, match="target|compute capability"):
        gpulab.compile("map", twice, types=("f32",), target=target)


def test_wrong_arity_is_refused():
    with pytest.raises(KernelTypeError, match=r"\(T, T\) -> T"):
        gpulab.compile("reduce", twice, types=("f32",), target="sm_90")
    with pytest.raises(KernelTypeError, match="1 to 3 inputs"):
        gpulab.compile("map", lambda a, b, c, d: a, types="f32,f32,f32,f32", target="sm_90")


@pytest.mark.parametrize("primitive, types", [("scan", "f32,f32"), ("filter", "i32"), ("reduce", "f64,f64")])
def test_the_link_modes_differ_in_the_link_alone(primitive, types):
    fn = positive if primitive == "filter" else add
    inlined = gpulab.compile(primitive, fn, types=types, target="sm_90")
    called = gpulab.compile(primitive, fn, types=types, target="sm_90", lto=False)
    assert inlined.source == called.source  # one kernel text (the register cap too)
    assert inlined.operator_calls == 0 < called.operator_calls


def test_lambdas_compile():
    build = gpulab.compile("map", lambda x: x * 3, types="i32", target="sm_90")
    assert build.name == "_lambda" and "IMAD" in build.sass or "LEA" in build.sass


def test_unknown_primitive():
    with pytest.raises(ValueError, match="choose one of"):
        gpulab.compile("bogosort", twice, types=("f32",), target="sm_90")


def test_missing_types_say_what_to_do():
    with pytest.raises(KernelTypeError, match="annotate its parameters"):
        gpulab.compile("map", twice, target="sm_90")


def test_typing_error_points_at_the_users_line():
    def broken(a, b):
        c = a + b
        return c.no_such_attribute

    with pytest.raises(FrontendError) as info:
        gpulab.compile("reduce", broken, types="f32,f32", target="sm_90")
    assert info.value.location.line == broken.__code__.co_firstlineno + 2
    assert "return c.no_such_attribute" in str(info.value)


def test_nvrtc_errors_carry_the_log_and_the_line():
    from gpulab.compiler import flags, nvrtc

    source = "__global__ void k(int* p) {\n    *p = undefined_name;\n}\n"
    with pytest.raises(NvrtcError) as info:
        nvrtc.compile_kernel(source, flags.nvrtc(gpulab.BuildOptions(), gpulab.Target(9, 0)), output="ltoir")
    assert "undefined_name" in info.value.log
    assert "kernel.cu:2: *p = undefined_name;" in info.value.log

"""Two frontends, one pipeline: every primitive x element type built by numba-cuda and by numba-cuda-mlir for sm_80
and sm_90, and the two builds compared (docs/frontends.md).

Both store the same result type, have no CALL in their SASS, use the same
classes of SASS instructions (float16 aside: numba-cuda-mlir computes it in
float32) and put the function's line in the SASS; the host computes the
same on the same inputs whichever frontend a call names. Then what
numba-cuda-mlir refuses, and each of gpulab's patches of it with what goes
wrong without it. The mlir cases skip when the extra is not installed.
"""

import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import pytest

from frontend_cases import PAIR, add, call, cases, inputs, twice

import gpulab
from gpulab.compiler import frontends
from gpulab.compiler.analysis.model import analyse
from gpulab.compiler.bundle import bundle_of, header_of
from gpulab.device import devices
from gpulab.errors import ArgumentError, FrontendError, FrontendUnsupportedError, ToolkitNotFoundError
from gpulab.options import FRONTENDS

MLIR = "numba-cuda-mlir"
needs_mlir = pytest.mark.skipif(MLIR not in frontends.installed(),
                                reason="numba-cuda-mlir is not installed (pip install 'gpulab[mlir]')")
HAS_GPU = any(d.is_gpu for d in devices())


KNOWN = {"float16": {"fp16", "fp32", "fp64", "conv", "other"}, "record": {"local"}}
"""Instruction classes one frontend's SASS uses and the other's not: numba-cuda-mlir computes float16 in float32
(numba-cuda in float16, and compares it in float64), and numba-cuda passes a record through local memory."""


PTXAS_CALLS = {("histogram", "int8", "sm_80"): 2}
"""Builds whose SASS has a CALL whichever frontend: ptxas makes an empty subroutine of a branch of sm_80's int8
histogram (two compiler-internal local calls)."""


def _classes(build) -> set:
    return {klass for klass, count in Counter(row.klass for row in analyse(build).rows).items() if count}


@needs_mlir
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("primitive, fn, element", list(cases()))
def test_both_frontends_build_every_primitive_and_type_alike(primitive, fn, element, target):
    cuda, mlir = (gpulab.compile(primitive, fn, types=(element,) * fn.__code__.co_argcount, target=target,
                                 frontend=name, associative=True) for name in FRONTENDS)
    assert (cuda.options.frontend, mlir.options.frontend) == FRONTENDS and cuda.key != mlir.key
    assert mlir.result == cuda.result  # an undeclared result is typed as the host types it, by either
    name = "record" if element is PAIR else element
    calls = PTXAS_CALLS.get((primitive, name, target), 0)
    assert cuda.sass_calls == mlir.sass_calls == calls, "with LTO neither SASS has a CALL (of the operator or else)"
    differ = _classes(cuda) ^ _classes(mlir)
    assert differ <= KNOWN.get(name, set()), f"only one frontend's SASS has {sorted(differ)}"
    if name == "record":
        assert "local" not in _classes(mlir), "numba-cuda-mlir keeps records in registers"
    if name != "float16":  # numba-cuda-mlir loses a float16 operation's line (docs/frontends.md)
        body = fn.__code__.co_firstlineno + 1
        assert bool(cuda.line_map.python_to_sass(body)) == bool(mlir.line_map.python_to_sass(body)), \
            "the function's line reaches the SASS with both or with neither"


@pytest.mark.parametrize("primitive, fn, element", list(cases()))
def test_the_host_computes_the_same_whichever_frontend_a_call_names(primitive, fn, element):
    xs = inputs(primitive, element, 300)
    cuda, mlir = (call(primitive, fn, xs, device="host", frontend=name) for name in FRONTENDS)
    assert [np.asarray(a).tobytes() for a in cuda] == [np.asarray(b).tobytes() for b in mlir]


# ---------------------------------------------------------------- the option, the default, the view


def test_the_default_is_the_first_installed_and_every_frontend_is_named_in_the_options():
    assert tuple(frontends.frontends()) == FRONTENDS
    assert frontends.resolve(None) == frontends.installed()[0] == "numba-cuda"
    with pytest.raises(ArgumentError, match="frontend is one of 'numba-cuda', 'numba-cuda-mlir'"):
        gpulab.compile("map", twice, types="f32", target="sm_90", frontend="mlir")


@needs_mlir
def test_a_suite_or_a_benchmark_may_prefer_a_frontend_for_the_builds_that_name_none():
    from gpulab.compiler.pipeline import make_spec

    frontends.prefer(MLIR)
    try:
        assert make_spec("map", twice, types="f32", target="sm_90").options.frontend == MLIR
        assert make_spec("map", twice, types="f32", target="sm_90", frontend="numba-cuda").options.frontend \
            == "numba-cuda"
    finally:
        frontends.prefer(None)
    assert make_spec("map", twice, types="f32", target="sm_90").options.frontend == "numba-cuda"


def test_a_frontend_that_is_not_installed_says_what_to_install(monkeypatch):
    monkeypatch.setattr(frontends.frontends()[MLIR], "available", lambda: False)
    with pytest.raises(ToolkitNotFoundError, match=r"needs numba-cuda-mlir.*pip install 'gpulab\[mlir\]'"):
        gpulab.compile("map", twice, types="f32", target="sm_90", frontend=MLIR)
    with pytest.raises(ToolkitNotFoundError, match="pip install 'gpulab"):
        frontends.other_frontend(None)


@needs_mlir
def test_the_view_names_the_frontend_and_a_diff_tells_the_two_apart():
    cuda, mlir = (gpulab.compile("reduce", add, types="f32,f32", target="sm_90", frontend=name)
                  for name in FRONTENDS)
    assert "frontend=numba-cuda-mlir" in header_of(bundle_of(mlir))["options"]
    assert "frontend=numba-cuda " in header_of(bundle_of(cuda))["options"] + " "
    diff = gpulab.diff(cuda, mlir)
    assert diff.labels == FRONTENDS and diff.rows and diff.changed == 0  # float32 add: the same SASS


@needs_mlir
def test_uniforms_mapped_inputs_records_and_lambdas_build_with_numba_cuda_mlir():
    scale = np.float32(3)

    def scaled(x: gpulab.f32) -> gpulab.f32:
        return x * scale

    def record_sum(p):
        return p.value + gpulab.f32(p.index)

    doubled = lambda x: x * 2  # noqa: E731 - a lambda is compiled from its own synthetic file
    mapped = gpulab.compile("reduce", add, types="f32,f32", target="sm_80", frontend=MLIR,
                            mapped=(gpulab.mapped(scaled, np.dtype(np.float32)),))
    for build in (gpulab.compile("map", scaled, target="sm_90", frontend=MLIR), mapped,
                  gpulab.compile("map", record_sum, types=(PAIR,), target="sm_90", frontend=MLIR),
                  gpulab.compile("map", doubled, types="i32", target="sm_90", frontend=MLIR)):
        assert build.sass_calls == 0 and build.options.frontend == MLIR
    assert "gpulab_op_0(" in mapped.source


@needs_mlir
def test_fma_and_the_link_mode_reach_numba_cuda_mlir():
    def axpy(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
        return a * b + a

    for target in ("sm_80", "sm_90", "sm_100"):
        fused = gpulab.compile("map", axpy, target=target, frontend=MLIR)
        apart = gpulab.compile("map", axpy, target=target, frontend=MLIR, fma=False)
        called = gpulab.compile("map", axpy, target=target, frontend=MLIR, fma=False, lto=False)
        assert "FFMA" in fused.sass and "FFMA" not in apart.sass and "FMUL" in apart.sass, target
        assert "fma.rn" not in called.op_ptx and called.operator_calls > 0, target


@needs_mlir
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_float16_with_a_float_constant_links_with_lto(target):
    """numba-cuda-mlir computes ``x * 0.1`` of a float16 in float64 and rounds it with LLVM's fptrunc, which
    nvJitLink refused in a map's vector store ("unsupported operation") until gpulab rounded with cvt.rn.f16.f64."""
    def tenth(x: gpulab.f16) -> gpulab.f16:
        return x * 0.1

    build = gpulab.compile("map", tenth, target=target, frontend=MLIR, fma=False)
    assert "F2F.F16.F64" in build.sass and build.operator_calls == 0
    xs = np.arange(-300, 300, dtype=np.float16) / np.float16(7)
    assert np.array_equal(gpulab.map(tenth, xs, device="host"), (xs.astype(np.float64) * 0.1).astype(np.float16))

@needs_mlir
def test_a_function_gpulab_refuses_is_refused_by_both_frontends_in_the_same_words():
    def bad(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
        return a + "one"

    said = []
    for name in FRONTENDS:
        with pytest.raises(FrontendError, match=r"could not compile `bad`.*there is no `\+`") as caught:
            gpulab.compile("reduce", bad, target="sm_90", frontend=name)
        said.append((str(caught.value), caught.value.location.line))
    assert said[0] == said[1] and said[0][1] == bad.__code__.co_firstlineno + 1


# ---------------------------------------------------------------- what numba-cuda-mlir cannot build


@needs_mlir
def test_captured_arrays_are_refused_naming_the_frontend_that_builds_them():
    table = np.arange(8, dtype=np.float32)

    def lookup(i: gpulab.i32) -> gpulab.f32:
        return table[i & 7]

    with pytest.raises(FrontendUnsupportedError, match=r"`lookup` captures arrays.*frontend='numba-cuda'"):
        gpulab.compile("map", lookup, target="sm_90", frontend=MLIR)
    assert gpulab.compile("map", lookup, target="sm_90").sass_calls == 0  # numba-cuda builds it


@needs_mlir
def test_numpy_ufuncs_it_cannot_compile_are_refused_or_computed_by_their_operator():
    def larger(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
        return np.maximum(a, b)

    def below(a: gpulab.f32, b: gpulab.f32) -> bool:
        return np.less(a, b)

    with pytest.raises(FrontendUnsupportedError, match=r"`larger` calls np.maximum, which numba-cuda-mlir 0.6"):
        gpulab.compile("map", larger, target="sm_90", frontend=MLIR)
    cuda, mlir = (gpulab.compile("map", below, target="sm_90", frontend=name) for name in FRONTENDS)
    assert gpulab.diff(cuda, mlir).changed == 0  # np.less computed as <, the same SASS


@needs_mlir
def test_a_record_result_with_a_field_that_is_no_python_name_is_refused():
    odd = np.dtype([("a b", np.float32), ("c", np.int32)])

    def first(p, q):
        return p

    with pytest.raises(FrontendUnsupportedError, match=r"field 'a b', which is not a Python name"):
        gpulab.compile("reduce", first, types=(odd, odd), target="sm_90", frontend=MLIR, associative=True)


# ---------------------------------------------------------------- gpulab's patches of numba-cuda-mlir


def _fresh(script: str, folder) -> str:
    """What ``script`` prints, run from a file of ``folder`` (numba-cuda-mlir writes line info of files only) in a
    fresh process (no patch of this one's)."""
    path = folder / "script.py"
    path.write_text(textwrap.dedent(script))
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    return result.stdout + result.stderr


@needs_mlir
@pytest.mark.skipif(HAS_GPU, reason="with a GPU numba-cuda-mlir has a device to ask")
def test_without_the_target_patch_numba_cuda_mlir_cannot_build_with_no_gpu(tmp_path):
    out = _fresh('''
        from numba_cuda_mlir import cuda, types
        def f(a, b):
            return a + b
        try:
            cuda.compile(f, (types.float32, types.float32), device=True, cc=(9, 0), output="ltoir")
        except Exception as exc:
            print("REFUSED", type(exc).__name__, exc)
    ''', tmp_path)
    assert "REFUSED CudaSupportError" in out and "driver" in out, out


@needs_mlir
def test_without_the_line_info_patch_no_python_line_survives_lto_before_sm_100(tmp_path):
    """Its LLVM 7 path writes no "Debug Info Version" module flag: nvJitLink's LTO drops the line info."""
    out = _fresh('''
        from numba_cuda_mlir import cuda, types
        from gpulab.compiler import flags, link, nvrtc
        from gpulab.compiler.artifacts import Artifact
        from gpulab.compiler.frontends.numba_cuda_mlir import compat
        from gpulab.compiler.target import Target
        from gpulab.options import BuildOptions

        def op(out, a):
            out[0] = a[0] * 2.0
            return 0

        P = types.CPointer(types.float32)
        kernel = nvrtc.compile_kernel('extern "C" __device__ long long op(float*, float*);\\n'
                                      'extern "C" __global__ void k(float* x) { op(x, x + 1); }\\n',
                                      flags.nvrtc(BuildOptions(), Target(9, 0)), output="ltoir")
        with compat.compiling_for((9, 0), {}):
            ltoir, _ = cuda.compile(op, types.int64(P, P), device=True, abi="c", abi_info={"abi_name": "op"},
                                    output="ltoir", cc=(9, 0), lineinfo=True)
            _, patched = compat.lower(op, types.int64(P, P), name="op", cc=(9, 0), lineinfo=True, nvvm_options={})
        for name, code in (("AS SHIPPED", ltoir), ("PATCHED", patched)):
            linked = link.link(kernel, Artifact("ltoir", code, "op"), Target(9, 0), BuildOptions())
            print(name, "script.py" in linked.ptx)
    ''', tmp_path)
    assert "AS SHIPPED False" in out and "PATCHED True" in out, out


@needs_mlir
def test_without_the_contraction_patch_fma_cannot_be_turned_off_before_sm_100(tmp_path):
    out = _fresh('''
        from numba_cuda_mlir import cuda, types
        from gpulab.compiler.frontends.numba_cuda_mlir import compat

        def axpy(a, b):
            return a * b + a

        signature = types.float32(types.float32, types.float32)
        with compat.compiling_for((9, 0), {"fma": False}):
            shipped, _ = cuda.compile(axpy, signature, device=True, output="ptx", cc=(9, 0))
            patched, _ = compat.lower(axpy, signature, name="axpy", cc=(9, 0), lineinfo=False,
                                      nvvm_options={"fma": False})
        print("AS SHIPPED", "fma.rn.f32" in shipped, "PATCHED", "fma.rn.f32" in patched)
    ''', tmp_path)
    assert "AS SHIPPED True PATCHED False" in out, out

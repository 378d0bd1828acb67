"""Each numba-cuda patch in gpulab.compiler.frontends.numba_cuda.compat: what goes wrong without it, and the version guard.

When a numba-cuda release fixes a cause, the test of that patch fails: the patch can go.
"""

import subprocess
import sys
import textwrap
import warnings

import pytest

from gpulab.compiler.frontends.numba_cuda import compat
from gpulab.device import devices
from gpulab.errors import GpulabWarning, ToolkitNotFoundError

HAS_GPU = any(d.is_gpu for d in devices())


def test_without_the_debuginfo_fix_line_info_cannot_survive_lto():
    """numba's module flags (behaviour 2) against NVRTC's (behaviour 1): nvJitLink refuses, in a fresh process."""
    script = textwrap.dedent('''
        from numba import cuda, types
        from gpulab.compiler import link, nvrtc
        from gpulab.compiler import flags
        from gpulab.compiler.artifacts import Artifact
        from gpulab.compiler.target import Target
        from gpulab.options import BuildOptions

        def op(a, b):
            return a + b

        sig = types.float32(types.float32, types.float32)
        ltoir, _ = cuda.compile(op, sig, device=True, abi="c", abi_info={"abi_name": "op"}, output="ltoir",
                                cc=(9, 0), lineinfo=True)
        kernel = nvrtc.compile_kernel(
            'extern "C" __device__ float op(float, float);\\n'
            'extern "C" __global__ void k(float* x) { x[0] = op(x[0], x[1]); }\\n',
            flags.nvrtc(BuildOptions(), Target(9, 0)), output="ltoir")
        try:
            link.link(kernel, Artifact("ltoir", ltoir, "operator"), Target(9, 0), BuildOptions())
        except Exception as exc:
            print("REFUSED", exc)
        else:
            print("LINKED")
    ''')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "REFUSED" in result.stdout and "conflicting behaviors" in result.stdout, result.stdout + result.stderr


def nested(x):
    return x * 2.0


def calls_nested(x):
    return jitted(x) + 1.0


jitted = None


@pytest.mark.skipif(HAS_GPU, reason="with a GPU numba has a current device to type for")
def test_without_a_target_device_numba_cannot_type_nested_functions(monkeypatch):
    from numba import cuda, types

    monkeypatch.setitem(globals(), "jitted", cuda.jit(device=True)(nested))
    signature = types.float64(types.float64)
    with pytest.raises(Exception, match="(?i)cuda|device|driver"):
        cuda.compile(calls_nested, signature, device=True, cc=(9, 0), output="ptx")
    with compat.compiling_for((9, 0)):
        ptx, _ = cuda.compile(calls_nested, signature, device=True, cc=(9, 0), output="ptx")
    assert ".visible .func" in ptx or ".func" in ptx


def multiply_add(a, b, c):
    return a * b + c


def test_fma_contraction_follows_the_option():
    from numba import cuda, types

    signature = types.float32(types.float32, types.float32, types.float32)
    contracted, _ = cuda.compile(multiply_add, signature, device=True, cc=(9, 0), output="ptx")
    assert "fma.rn.f32" in contracted  # numba's own default
    with compat.compiling_for((9, 0), {"fma": False}):
        separate, _ = cuda.compile(multiply_add, signature, device=True, cc=(9, 0), output="ptx")
    assert "fma.rn.f32" not in separate and "mul.rn.f32" in separate


def test_an_untested_numba_cuda_version_is_said_once(monkeypatch):
    monkeypatch.setattr(compat, "TESTED", ((0, 1),))
    compat.check_version.cache_clear()
    try:
        with pytest.warns(GpulabWarning, match="checked with numba-cuda 0.1.x"):
            compat.check_version()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compat.check_version()  # once
    finally:
        compat.check_version.cache_clear()


def test_a_patch_whose_target_is_gone_says_what_to_install():
    import numba.cuda.dispatcher as dispatcher

    with pytest.raises(ToolkitNotFoundError, match=r"has no numba.cuda.dispatcher.no_such_function.*install numba-cuda 0.30.x"):
        compat._replaced(dispatcher, "no_such_function")

"""Every change gpulab makes to numba-cuda-mlir's behaviour, in one place: building with no GPU, FMA
contraction as the build says, Python lines and float16 rounding through LTO before sm_100 (docs/frontends.md).

Each patch says why it is needed; tests/nocuda/test_frontends.py shows, for
each, what goes wrong without it, so that a release that fixes the cause
makes that test fail and the patch can go. The patches were written for the
versions in :data:`TESTED`; with another one gpulab warns once, and refuses
with a clear error if what a patch replaces is gone.
"""

from __future__ import annotations

import contextlib
import functools
import re

from ..versions import checked_version, replaced

TESTED = ((0, 6),)
"""numba-cuda-mlir ``(major, minor)`` versions these patches were checked with."""


@functools.lru_cache(maxsize=1)
def check_version() -> tuple[int, ...]:
    """The installed numba-cuda-mlir version; warns once when the patches were not checked with it."""
    return checked_version("numba-cuda-mlir", TESTED)


def _replaced(owner, name: str):
    """``owner.name``, which a patch replaces; a clear error when this numba-cuda-mlir has none."""
    return replaced(owner, name, "numba-cuda-mlir", TESTED)


LLVM7_BELOW = (10, 0)
"""numba-cuda-mlir lowers for targets before this one through LLVM 7 (its C++ ``llvm70`` path, which runs
NVVM itself, with no contraction option and no line info in LTO-IR); from it on through Python, with NVVM's
options from ``mlir_optimization._nvvm_options``."""


@contextlib.contextmanager
def compiling_for(cc: tuple[int, int], nvvm_options: dict):
    """Within the block, numba-cuda-mlir takes ``cc`` for the current device's compute capability, and its NVVM
    step (sm_100 on) takes ``nvvm_options`` (``gpulab.compiler.flags.nvvm``: whether to contract FMA).

    Its target resolver (``tools.resolve_gpu_target``) asks the driver for the
    current device even when ``cc=`` names the target, to choose what its
    linker builds for; with no GPU (no driver) every compile fails
    ("CUDA driver library cannot be found"). The resolver reads the device's
    compute capability through ``tools.get_gpu_compute_capability``, which
    keeps the first answer in ``tools._cached_cc``: that answer is the target
    while the block runs, and what was there before after it. Its NVVM
    options come from ``mlir_optimization._nvvm_options``, which takes
    contraction from ``fastmath`` alone (with flush-to-zero and approximate
    division): ours are added there. Callers hold the frontend's lock: the
    patches are process-wide while they last.
    """
    check_version()
    from numba_cuda_mlir import mlir_optimization, tools

    _replaced(tools, "get_gpu_compute_capability")
    saved_cc, saved_options = _replaced(tools, "_cached_cc"), _replaced(mlir_optimization, "_nvvm_options")

    def nvvm_options_with_ours(*args, **kwargs):
        return {**saved_options(*args, **kwargs), **nvvm_options}

    tools._cached_cc, mlir_optimization._nvvm_options = tuple(cc), nvvm_options_with_ours
    try:
        yield
    finally:
        tools._cached_cc, mlir_optimization._nvvm_options = saved_cc, saved_options


def lower(function, signature, *, name: str, cc: tuple[int, int], lineinfo: bool,
          nvvm_options: dict) -> tuple[str, bytes]:
    """``function`` (the C-ABI wrapper) compiled for ``signature`` as PTX text and LTO-IR, inside
    :func:`compiling_for`.

    From sm_100 on this is ``cuda.compile`` twice. Before it, numba-cuda-mlir's
    LLVM 7 path writes its line info with no "Debug Info Version" module
    flag, so nvJitLink's LTO drops it (no Python line reaches the linked
    SASS), and it runs NVVM with no contraction option. So there the
    function's LLVM 7 IR is taken (``mlir_optimization.get_llvmir``), its
    line info completed (:func:`line_info_for_llvm7`) and its float16
    rounding made one that LTO takes (:func:`half_rounding_for_lto`), and
    NVVM run on it here with ``nvvm_options``, as numba-cuda-mlir runs it.
    """
    from numba_cuda_mlir import cuda

    common = dict(device=True, abi="c", abi_info={"abi_name": name}, cc=cc, lineinfo=lineinfo)
    if tuple(cc) >= LLVM7_BELOW:
        return (cuda.compile(function, signature, output="ptx", **common)[0],
                cuda.compile(function, signature, output="ltoir", **common)[0])
    from numba_cuda_mlir import compiler, mlir_optimization
    from numba_cuda_mlir.numba_cuda.cudadrv.nvvm import CompilationUnit, LibDevice

    compiled = _replaced(compiler, "_compile_and_optimize")(
        function, signature, {**common, "_compile_output": "ltoir", "lto": True})
    ir = half_rounding_for_lto(line_info_for_llvm7(_replaced(mlir_optimization, "get_llvmir")(compiled.cres)))

    def nvvm(more: dict) -> bytes:
        unit = CompilationUnit({"arch": f"compute_{cc[0]}{cc[1]}", **nvvm_options, **more})
        unit.add_module(ir.encode())
        unit.lazy_add_module(LibDevice().get())
        return unit.compile()

    return nvvm({}).decode(), nvvm({"gen-lto": None})


def line_info_for_llvm7(ir: str) -> str:
    """numba-cuda-mlir's LLVM 7 IR with line info that survives LTO: the "Debug Info Version" module flag (3,
    with NVRTC's behaviour 1), without which LLVM drops a module's line info when it links it, and the compile
    unit's emission kind ``DebugDirectivesOnly``, which LLVM 7's printer leaves empty (numba-cuda writes it for
    line info and NVVM reads it; ``LineTablesOnly`` there makes NVVM build for a debugger, unoptimised)."""
    if "!DICompileUnit(" not in ir:
        return ir
    ir = ir.replace("emissionKind: ,", "emissionKind: DebugDirectivesOnly,")
    if "Debug Info Version" in ir:
        return ir
    number = max(int(found) for found in re.findall(r"^!(\d+) =", ir, re.M)) + 1
    return ir + f'\n!llvm.module.flags = !{{!{number}}}\n!{number} = !{{i32 1, !"Debug Info Version", i32 3}}\n'


_FPTRUNC_TO_HALF = re.compile(r"^(\s*)%(\d+) = fptrunc (float|double) (%[\w.]+) to half(, !dbg !\d+)?$", re.M)
_HALF_ROUNDING = {"float": ("f32", "f"), "double": ("f64", "d")}  # LLVM type -> PTX type, register constraint


def half_rounding_for_lto(ir: str) -> str:
    """numba-cuda-mlir's LLVM 7 IR with each float or double -> float16 rounding the PTX instruction
    ``cvt.rn.f16.f32`` or ``cvt.rn.f16.f64`` (the same rounding, to nearest even), as numba-cuda's float16 rounds.

    Its LLVM 7 path computes float16 in float32 (in float64 beside a float
    constant: ``x * 2.0``) and rounds with ``fptrunc``; where a kernel stores
    such results side by side (a map's vector store), nvJitLink's optimiser
    vectorises the ``fptrunc`` and then refuses it ("unsupported operation").
    It leaves an instruction written in PTX alone (libdevice's
    ``__nv_float2half_rn`` would do too, but its branches keep ptxas from
    proving a warp converged: sm_80's shuffles became calls).
    """
    def rounded(found: re.Match) -> str:
        indent, number, source, value, debug = found.groups(default="")
        ptx_type, constraint = _HALF_ROUNDING[source]
        return (f'{indent}%gpulab.half{number} = call i16 asm "cvt.rn.f16.{ptx_type} $0, $1;", "=h,{constraint}"'
                f"({source} {value}){debug}\n{indent}%{number} = bitcast i16 %gpulab.half{number} to half{debug}")

    return _FPTRUNC_TO_HALF.sub(rounded, ir)

"""The numba-cuda frontend: the user's function -> the operator's PTX and LTO-IR.

The operator gpulab links is a small generated wrapper with a C ABI that
takes every value by pointer (``gpulab_op(out, in0, in1, uniform0...,
array0..., bounds)``), loads the inputs, calls the user's function and stores
the result cast to the output type. Pointers keep one calling convention for
every element type, records included; after link-time optimisation they
vanish. A captured array comes as a pointer to its ``struct CapturedK`` and
``bounds`` points at where a read out of bounds is recorded (:mod:`.reads`).
Every change gpulab makes to numba-cuda is in :mod:`.compat`; numba's typing
errors are told in the user's terms by :mod:`.errors`.

The host backend types the very same wrapper with :func:`check` before it
runs a kernel, so a kernel numba-cuda refuses (``min(bool, int)``, a tuple
result) is refused on both with the same :class:`FrontendError`, and a map
stores the type the device stores.
"""

from __future__ import annotations

import linecache
import threading
import warnings

from ....errors import FrontendError, KernelTypeError
from ....options import BuildOptions
from ....types import ElementType, element_type
from ... import flags
from ...artifacts import Artifact
from ...target import Target
from .. import DEVICE_EQUIVALENTS, OP_NAME, WRAPPER_FILENAME, Operator
from . import errors, reads, signedness
from .compat import compiling_for, fix_debuginfo_flags

TYPING_CC = (7, 5)
"""The compute capability :func:`check` types for: the oldest gpulab compiles for (``compiler/target.py``);
numba-cuda types a function alike for every one from 5.3 (float16) on."""
_LOCK = threading.RLock()


def compile_operator(kernel, arg_types, uniform_types, *, result, target: Target, options: BuildOptions,
                     array_types=(), name: str = OP_NAME, first_array: int = 0) -> Operator:
    """Compile ``kernel``'s operator with numba-cuda (see :meth:`gpulab.compiler.frontends.Frontend.lower`)."""
    from numba.cuda import compile as numba_compile
    from numba.cuda import compile_all

    with _LOCK, compiling_for(target.cc, flags.nvvm(options)), warnings.catch_warnings():
        fix_debuginfo_flags()
        _quiet_about_lambdas()
        wrapper, signature, inferred, user = _operator_function(kernel, arg_types, uniform_types, array_types,
                                                                result, name, options.boundscheck, first_array)
        common = dict(device=True, abi="c", abi_info={"abi_name": name},
                      cc=target.cc, lineinfo=options.lineinfo)
        try:
            ptx, _ = numba_compile(wrapper, signature, output="ptx", **common)
            # Libraries come as LTO-IR only: numba's NVRTC step needs a driver for PTX.
            ltoir, *libraries = compile_all(wrapper, signature, output="ltoir", **common)[0]
        except Exception as exc:  # numba raises many classes; all mean "your function"
            raise _frontend_error(kernel, exc) from None
        signedness.refuse(kernel, user)
    stored = result or _element_type_of(inferred[0], kernel)
    label = "operator" if name == OP_NAME else name
    return Operator(ptx=Artifact("ptx", ptx.encode(), label), ltoir=Artifact("ltoir", ltoir, label),
                    result=stored, libraries=tuple(Artifact("ltoir", _ltoir_of(library, kernel), f"library{i}")
                                                   for i, library in enumerate(libraries)))


def check(kernel, arg_types, uniform_types, *, result=None, array_types=()) -> ElementType:
    """Type and lower ``kernel``'s operator as :func:`compile_operator` does, generating no code; return the
    type it stores.

    This is the rule of which programs gpulab accepts: the host backend calls
    it before it runs a kernel, so it refuses what a device build refuses.

    Raises
    ------
    FrontendError
        When numba-cuda cannot type or lower the function, at the user's line.
    KernelTypeError
        When it returns something that is not an element type (a tuple).
    """
    from numba.cuda.compiler import compile_cuda

    with _LOCK, compiling_for(TYPING_CC), warnings.catch_warnings():
        # numba keeps what it compiles for float16 (cuda_fp16's callers) and links it into later builds: its
        # debug-info flags must be the ones builds write, or NVVM refuses the mix (ERROR_INVALID_IR).
        fix_debuginfo_flags()
        _quiet_about_lambdas()
        wrapper, signature, inferred, user = _operator_function(kernel, arg_types, uniform_types, array_types,
                                                                result, OP_NAME, True, 0)
        try:
            compile_cuda(wrapper, signature.return_type, signature.args, cc=TYPING_CC, abi="c",
                         abi_info={"abi_name": OP_NAME})
        except Exception as exc:  # numba raises many classes; all mean "your function"
            raise _frontend_error(kernel, exc) from None
        signedness.refuse(kernel, user)
    return result or _element_type_of(inferred[0], kernel)


def _quiet_about_lambdas() -> None:
    """Inside ``warnings.catch_warnings()``: a lambda's regenerated function has no ``def`` line for numba
    to find; it still compiles, only without Python line info."""
    warnings.filterwarnings("ignore", message="Could not find source for function")


def _operator_function(kernel, arg_types, uniform_types, array_types, result, name, boundscheck, first_array):
    """The wrapper ``name`` of ``kernel``, its numba signature, a list that typing fills with the stored type, and
    the kernel's numba device function (whose typed code :func:`signedness.refuse` reads)."""
    from numba import types as nbtypes

    user = _device_function(kernel, readers=reads.device_readers(boundscheck), first_array=first_array)
    inferred: list = []
    loads = [_load(t.numba) for t in (*arg_types, *uniform_types)] + [reads.array_loader(a) for a in array_types]
    wrapper = _wrapper(name, len(arg_types), len(uniform_types), len(array_types), loads,
                       result.numba if result else None, inferred, user)
    pointers = 1 + len(arg_types) + len(uniform_types) + len(array_types) + bool(array_types)
    return wrapper, nbtypes.void(*([nbtypes.voidptr] * pointers)), inferred, user


def _ltoir_of(library, kernel) -> bytes:
    """The LTO-IR bytes of one of numba's extra link inputs."""
    code = getattr(library, "code", library)  # cuda.core ObjectCode, or the bytes themselves
    if getattr(library, "code_type", "ltoir") != "ltoir" or not isinstance(code, bytes):
        raise FrontendError(
            f"`{kernel.name}` calls code that numba links as {getattr(library, 'code_type', type(library).__name__)}; "
            "gpulab links only LTO-IR. Call a function written in Python instead", kernel.location())
    return code


def _device_function(kernel, readers=None, first_array: int = 0):
    from numba import cuda

    return cuda.jit(device=True, lineinfo=True)(
        kernel.parametrized(_device_function, DEVICE_EQUIVALENTS, readers=readers, first_array=first_array))


def _wrapper(name, n_args, n_uniforms, n_arrays, loads, result_type, inferred, user):
    """Build ``name(out, a0.., u0.., c0.., bounds)``: load each pointer, call, store."""
    names = [f"a{i}" for i in range(n_args)] + [f"u{i}" for i in range(n_uniforms)] + [f"c{i}" for i in range(n_arrays)]
    values = [f"load{i}({value})" for i, value in enumerate(names)] + (["bounds"] if n_arrays else [])
    source = (
        f"def {name}(out, {', '.join(names + (['bounds'] if n_arrays else []))}):\n"
        f"    store(out, user({', '.join(values)}))\n"
    )
    namespace = {"user": user, "store": _store(result_type, inferred)}
    namespace.update({f"load{i}": load for i, load in enumerate(loads)})
    linecache.cache[WRAPPER_FILENAME] = (len(source), None, source.splitlines(True), WRAPPER_FILENAME)
    exec(compile(source, WRAPPER_FILENAME, "exec"), namespace)
    return namespace[name]


def _load(value_type):
    from numba import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def load(typingctx, pointer):
        def codegen(context, builder, signature, args):
            data = context.data_model_manager[value_type].get_data_type()
            return context.unpack_value(builder, value_type, builder.bitcast(args[0], data.as_pointer()))

        return value_type(nbtypes.voidptr), codegen

    return load


def _store(result_type, inferred: list):
    """An intrinsic that stores a value (cast to ``result_type`` when given) through a void pointer."""
    from numba import types as nbtypes
    from numba.cuda.extending import intrinsic

    @intrinsic
    def store(typingctx, pointer, value):
        target_type = result_type or value
        inferred[:] = [target_type]

        def codegen(context, builder, signature, args):
            cast = context.cast(builder, args[1], value, target_type)
            data = context.data_model_manager[target_type].get_data_type()
            context.pack_value(builder, target_type, cast, builder.bitcast(args[0], data.as_pointer()))
            return context.get_dummy_value()

        return nbtypes.void(nbtypes.voidptr, value), codegen

    return store


def _element_type_of(numba_type, kernel) -> ElementType:
    from numba.np.numpy_support import as_dtype

    try:
        return element_type(as_dtype(numba_type))
    except Exception:
        raise KernelTypeError(
            f"`{kernel.name}` returns a {numba_type}, which is not an element type; "
            "return a number, a bool or a record",
            kernel.location(),
        ) from None


def _frontend_error(kernel, exc: Exception) -> FrontendError:
    """Turn a numba error into one that shows the user's expression, its line and gpulab's type names."""
    explained = errors.explain(exc, kernel)
    return FrontendError(f"numba could not compile `{kernel.name}`: {explained.message}", explained.location)

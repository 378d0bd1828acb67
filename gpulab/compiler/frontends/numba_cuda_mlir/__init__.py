"""The numba-cuda-mlir frontend (``pip install gpulab[mlir]``): the user's function -> the operator's PTX and LTO-IR.

The operator has numba-cuda's C ABI (:mod:`..numba_cuda`): ``gpulab_op(out,
in0, ..., uniform0, ...)``, every value by pointer. Here the wrapper is
plain Python that numba-cuda-mlir types: a number comes as a typed pointer
and is read as ``a0[0]``; a record comes as the record (numba passes records
by pointer) and the result is stored field by field, since assigning a
record copies its pointer. numba-cuda-mlir names one file in a function's
line info, its top function's: the wrapper is compiled in the user's file
on the line of its ``def`` (the line numba-cuda's wrapper lines are counted
as), so the user's lines keep their numbers.

What numba-cuda-mlir 0.6 cannot build is refused with
:class:`~gpulab.errors.FrontendUnsupportedError` (docs/frontends.md):
captured arrays (gpulab reads them through numba-cuda intrinsics that write
LLVM IR), the NumPy ufuncs of :data:`UNSUPPORTED_UFUNCS` (those of
:data:`OPERATOR_EQUIVALENTS` it compiles as the operator that computes the
same) and record fields whose names are not Python names. Its patches
(no-GPU builds, FMA contraction, line info through LTO) are in
:mod:`.compat`; its typing errors are numba's, told in the user's terms as
numba-cuda's are. A function is first held to the rule of which programs
gpulab accepts, as the host is (numba-cuda's :func:`~..numba_cuda.check`:
its typing, a uint64 met with a signed integer refused), and a result it
does not declare is stored in the type that rule gives (numba-cuda-mlir
types ``f16 + f16`` as ``f32``).
"""

from __future__ import annotations

import keyword
import operator
import threading
import warnings

import numpy as np

from ....errors import FrontendError, FrontendUnsupportedError, KernelTypeError
from ....options import BuildOptions
from ....types import ElementType
from ... import flags
from ...artifacts import Artifact
from ...target import Target
from .. import DEVICE_EQUIVALENTS, OP_NAME, Operator
from ..numba_cuda import check, errors
from . import compat

NAME = "numba-cuda-mlir"
OPERATOR_EQUIVALENTS = {
    np.bitwise_and: operator.and_, np.bitwise_or: operator.or_, np.bitwise_xor: operator.xor,
    np.invert: operator.invert, np.left_shift: operator.lshift, np.right_shift: operator.rshift,
    np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt, np.less_equal: operator.le,
    np.greater: operator.gt, np.greater_equal: operator.ge, np.logical_not: operator.not_,
}
"""NumPy ufuncs that numba-cuda-mlir 0.6 fails on for numbers (an internal compiler error), and the operator
that computes the same, which it compiles."""
UNSUPPORTED_UFUNCS = (np.maximum, np.minimum, np.fmax, np.fmin, np.logical_and, np.logical_or, np.logical_xor,
                      np.conjugate)
"""NumPy ufuncs numba-cuda-mlir 0.6 fails on for numbers, with no operator that computes the same (NaN, truth)."""
_LOCK = threading.RLock()


def compile_operator(kernel, arg_types, uniform_types, *, result, target: Target, options: BuildOptions,
                     array_types=(), name: str = OP_NAME, first_array: int = 0) -> Operator:
    """Compile ``kernel``'s operator with numba-cuda-mlir (see :meth:`gpulab.compiler.frontends.Frontend.lower`)."""
    if array_types:
        raise FrontendUnsupportedError(
            f"`{kernel.name}` captures arrays, which the {NAME} frontend does not build yet: gpulab reads "
            "captured arrays through numba-cuda intrinsics that write LLVM IR, and numba-cuda-mlir lowers to "
            "MLIR; build it with frontend='numba-cuda'", kernel.location())
    _refuse_unsupported_ufuncs(kernel)
    with _LOCK, compat.compiling_for(target.cc, flags.nvvm(options)), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Could not find source for function")
        try:
            user = _device_function(kernel)
            values = [*arg_types, *uniform_types]
            stored = check(kernel, arg_types, uniform_types, result=result)  # the host's rule, first
            wrapper, signature = _wrapper(kernel, user, values, stored, name)
            ptx, ltoir = compat.lower(wrapper, signature, name=name, cc=target.cc, lineinfo=options.lineinfo,
                                      nvvm_options=flags.nvvm(options))
        except (FrontendError, KernelTypeError):  # gpulab's own, said already
            raise
        except Exception as exc:  # numba-cuda-mlir raises many classes; all mean "your function"
            raise _frontend_error(kernel, exc) from None
    label = "operator" if name == OP_NAME else name
    return Operator(ptx=Artifact("ptx", ptx.encode(), label), ltoir=Artifact("ltoir", ltoir, label), result=stored)


def _refuse_unsupported_ufuncs(kernel) -> None:
    """Refuse a kernel (or one it calls) that calls a NumPy ufunc of :data:`UNSUPPORTED_UFUNCS`."""
    for dotted, value in kernel.analysis.attributes.items():
        if any(value is ufunc for ufunc in UNSUPPORTED_UFUNCS):
            raise FrontendUnsupportedError(
                f"`{kernel.name}` calls {dotted}, which numba-cuda-mlir 0.6 does not compile for numbers; write it "
                "another way (max(a, b), a and b, ...), or build with frontend='numba-cuda'", kernel.location())
    for value in kernel.analysis.references.values():
        if isinstance(value, type(kernel)):
            _refuse_unsupported_ufuncs(value)


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def _leaves(dtype) -> list[str]:
    """The dotted names of a record's fields that are not records (none for a number)."""
    if dtype.fields is None:
        return []
    found = []
    for field, (inner, *_) in dtype.fields.items():
        found += [f"{field}.{leaf}" for leaf in _leaves(inner)] if inner.fields is not None else [field]
    return found


def _parameter_type(element: ElementType):
    """How the wrapper takes a value, in numba-cuda-mlir's own copy of numba's types: a record as the record
    (numba passes it by pointer), a number by pointer."""
    from numba_cuda_mlir import types
    from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype

    found = from_dtype(element.dtype)
    return found if element.is_record else types.CPointer(found)


def _device_function(kernel):
    from numba_cuda_mlir import cuda

    return cuda.jit(device=True, lineinfo=True)(
        kernel.parametrized(_device_function, {**DEVICE_EQUIVALENTS, **OPERATOR_EQUIVALENTS}))


def _value(element: ElementType, name: str) -> str:
    return name if element.is_record else f"{name}[0]"


def _compiled_at_def(kernel, source: str, name: str, namespace: dict):
    """Compile the one-line ``source`` in the kernel's file at its ``def`` line; return its function ``name``."""
    exec(compile("\n" * (kernel.location().line - 1) + source, kernel.compiled_filename, "exec"), namespace)
    return namespace[name]


def _wrapper(kernel, user, values, result: ElementType, name: str):
    """The one-line wrapper ``name(out, a0, ...)`` and its signature: load each value, call, store, return 0."""
    from numba_cuda_mlir import types

    names = [f"a{i}" for i in range(len(values))]
    call = f"user({', '.join(_value(t, n) for t, n in zip(values, names))})"
    if result.is_record:
        leaves = _leaves(result.dtype)
        bad = [leaf for leaf in leaves if not all(_is_name(part) for part in leaf.split("."))]
        if bad:
            raise FrontendUnsupportedError(
                f"the {NAME} frontend stores a record field by field, by name, and `{kernel.name}` returns a "
                f"{result.name} with field {bad[0]!r}, which is not a Python name; rename the field, or build "
                "with frontend='numba-cuda'", kernel.location())
        body = f"r = {call}; " + "; ".join(f"out.{leaf} = r.{leaf}" for leaf in leaves)
    else:
        body = f"out[0] = {call}"
    wrapper = _compiled_at_def(kernel, f"def {name}(out, {', '.join(names)}): {body}; return 0\n", name,
                               {"user": user})
    # It returns numba-cuda's C-ABI status word (0), the ``long long`` the kernel declares: a PTX link of a
    # prototype that differs from the declaration's is refused (nvJitLink 13.5 crashes on it).
    return wrapper, types.int64(_parameter_type(result), *(_parameter_type(t) for t in values))


def _frontend_error(kernel, exc: Exception) -> FrontendError:
    """numba-cuda-mlir's error in the user's terms: its typing errors are numba's (:mod:`..numba_cuda.errors`)."""
    explained = errors.explain(exc, kernel)
    return FrontendError(f"numba-cuda-mlir could not compile `{kernel.name}`: {explained.message}",
                         explained.location)

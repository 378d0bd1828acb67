"""Captured arrays: arrays a kernel reads by a free name, passed at launch like uniforms.

A kernel may read a device array (or, on the host, a NumPy array) that it
names without taking it as a parameter::

    def smooth(i: i64) -> f32:
        return (x[i - 1] + x[i] + x[i + 1]) / 3

Such a name is a *captured array*: read-only, passed at launch (a new array
of the same element type and number of dimensions needs no rebuild), read
item by item (``x[i]``, ``x[i, j]``) and measured (``len(x)``, ``x.shape``,
``x.ndim``, ``x.size``). Negative indices count from the end, as in NumPy.
Every read is checked against the array's shape unless a build says
``boundscheck=False``: the first read out of bounds is recorded (its line,
the array and the index) and the primitive raises
:class:`~gpulab.errors.KernelIndexError` naming them.

Each read ``x[i, j]`` is rewritten, in the code gpulab compiles, to a call
``_gpulab_read2(x, _gpulab_bounds, LINE, COLUMN, ARRAY, i, j)``; each backend binds
the reader: numba intrinsics on the device (:mod:`gpulab.compiler.frontends.numba_cuda.reads`),
plain or CPU-jitted Python functions on the host (:func:`host_readers`).
"""

from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass

import numpy as np

from .errors import KernelIndexError, KernelTypeError, SourceLocation
from .types import ElementType, element_type

MAX_DIMS = 8
"""The most dimensions a captured array may have."""
READ_PREFIX = "_gpulab_read"
"""``_gpulab_read<N>``: the reader of N indices that a read is rewritten to call."""
BOUNDS_NAME = "_gpulab_bounds"
"""The hidden last parameter of a kernel that captures arrays: where a failing read is recorded."""
MEASURES = frozenset({"shape", "ndim", "size"})
"""The attributes of a captured array a kernel may read."""

RECORD_FIELDS = ("failed", "line", "column", "array", "ndim", *(f"index{k}" for k in range(MAX_DIMS)))
"""The 64-bit words of a bounds record, in order: set to 1 by the first read out of bounds, which
writes its Python line and column, the array's number among the build's captured arrays, and its index."""


def is_device_array(x) -> bool:
    """Whether ``x`` exposes device memory (CUDA array interface or a DLPack device other than CPU)."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    if hasattr(x, "__dlpack_device__"):
        return x.__dlpack_device__()[0] != 1  # 1 is kDLCPU
    return False


def is_array(value) -> bool:
    """Whether a kernel may capture ``value``: a NumPy array (exactly: no subclass), or an object whose class
    offers the CUDA array interface or DLPack (read from the class itself: no ``__getattr__`` runs)."""
    if type(value) is np.ndarray:
        return True
    return any(_static(type(value), name) for name in ("__cuda_array_interface__", "__dlpack__"))


def _static(cls, name: str) -> bool:
    try:
        inspect.getattr_static(cls, name)
    except AttributeError:
        return False
    return True


@dataclass(frozen=True)
class ArrayType:
    """What a build knows of a captured array: its element type and number of dimensions, never its size."""

    element: ElementType
    ndim: int

    @property
    def numba(self):
        """The numba type a kernel reads it as: read-only, of any layout (numba is imported on first use)."""
        import numba

        return numba.types.Array(self.element.numba, self.ndim, "A", readonly=True)

    @property
    def name(self) -> str:
        """``float32[:, :]``, as numba writes array types."""
        return f"{self.element.name}[{', '.join(':' * self.ndim)}]"


def array_type(value, name: str, kernel) -> ArrayType:
    """The :class:`ArrayType` of ``value``, captured as ``name`` by ``kernel``.

    Raises
    ------
    KernelTypeError
        When ``value`` is no longer an array, has no element type (an object
        array), has no dimensions or too many, or has another number of
        dimensions than the kernel's reads index.
    """
    where = f"captured array `{name}` of `{kernel.name}`"
    if not is_array(value):
        raise KernelTypeError(f"{where} now holds a {type(value).__name__}; a captured array must stay an array "
                              "(a NumPy array on the host, a device array on a GPU)", kernel.location())
    if isinstance(value, np.ma.MaskedArray):
        raise KernelTypeError(masked_refusal(where, name), kernel.location())
    dtype, shape = _described_by(value, where, kernel)
    try:
        element = element_type(dtype)
    except KernelTypeError as exc:
        raise KernelTypeError(f"{where}: {exc.message}", kernel.location()) from None
    ndim = len(shape)
    if not 1 <= ndim <= MAX_DIMS:
        raise KernelTypeError(f"{where} has {ndim} dimensions; a kernel reads arrays of 1 to {MAX_DIMS} (capture "
                              "a 0-d array's value as a scalar instead)", kernel.location())
    for count, line in kernel.analysis.arrays[name].items():
        if count != ndim:
            raise KernelTypeError(f"{where} is {ndim}-D now, but `{kernel.name}` reads it with {count} "
                                  f"ind{'ex' if count == 1 else 'ices'}", kernel.location(line))
    return ArrayType(element, ndim)


def masked_refusal(what: str, name: str) -> str:
    """Why ``what``, a NumPy masked array named ``name``, is refused as an input or a captured array, and what
    to pass instead."""
    return (f"{what} is a NumPy masked array, but a kernel reads every item and knows no mask: pass "
            f"{name}.filled(value) (masked items replaced by a value of your choice) or {name}.compressed() "
            "(masked items left out)")


def _described_by(value, where: str, kernel) -> tuple[np.dtype, tuple]:
    """A captured array's dtype and shape; a DLPack-only object's are read through NumPy (CPU) or CuPy."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return np.dtype(value.dtype), tuple(value.shape)
    try:
        view = as_array(value)
        return view.dtype, view.shape
    except Exception as exc:  # noqa: BLE001 - the object's own DLPack export failed: say so in gpulab's words
        raise KernelTypeError(f"{where} offers DLPack but gives no array through it ({type(exc).__name__}: "
                              f"{exc}); capture a NumPy or CuPy array", kernel.location()) from None


def as_array(value):
    """A NumPy array (DLPack on the CPU) or a CuPy array (a device's) viewing ``value``'s memory."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.ndarray) or not is_device_array(value):
        return np.asarray(value) if isinstance(value, np.ndarray) else np.from_dlpack(value)
    import cupy

    return cupy.from_dlpack(value)


def rewrite_reads(definition: ast.FunctionDef, arrays, first: int = 0) -> None:
    """Rewrite each read ``x[i, j]`` of a captured array in ``definition`` into a reader's call.

    Parameters
    ----------
    definition : ast.FunctionDef
        The kernel's definition (changed in place).
    arrays : sequence of str
        The captured arrays' names, in the kernel's order.
    first : int
        The number of the kernel's first captured array among those of a
        build (a build of several operators numbers them all).
    """
    numbers = {name: first + k for k, name in enumerate(arrays)}
    for node in ast.walk(definition):
        for field, child in ast.iter_fields(node):
            children = child if isinstance(child, list) else [child]
            for position, item in enumerate(children):
                if not (isinstance(item, ast.Subscript) and isinstance(item.value, ast.Name)
                        and item.value.id in numbers and isinstance(item.ctx, ast.Load)):
                    continue
                indices = item.slice.elts if isinstance(item.slice, ast.Tuple) else [item.slice]
                call = ast.Call(
                    func=ast.Name(id=f"{READ_PREFIX}{len(indices)}", ctx=ast.Load()),
                    args=[item.value, ast.Name(id=BOUNDS_NAME, ctx=ast.Load()), ast.Constant(item.lineno),
                          ast.Constant(item.col_offset), ast.Constant(numbers[item.value.id]), *indices],
                    keywords=[])
                ast.copy_location(call, item)
                for part in ast.walk(call):
                    if not hasattr(part, "lineno"):
                        ast.copy_location(part, item)
                if isinstance(child, list):
                    child[position] = call
                else:
                    setattr(node, field, call)


class OutOfBounds(IndexError):
    """What a host reader raises: ``args`` are the read's line, column, array number and index."""


def _reader_source(count: int, interpreted: bool) -> str:
    """A reader of ``count`` indices; ``interpreted``: one that first makes each index a Python int, so that
    NumPy reads a bool index as 0 or 1, as the device does, and not as a mask."""
    indices = [f"i{k}" for k in range(count)]
    lines = [f"def {READ_PREFIX}{count}(a, bounds, line, column, array, {', '.join(indices)}):"]
    lines += [f"    {i} = int({i})" for i in indices] if interpreted else []
    for k, i in enumerate(indices):
        lines.append(f"    s{k} = a.shape[{k}]")
        lines.append(f"    k{k} = {i} + s{k} if {i} < 0 else {i}")
    outside = " or ".join(f"k{k} < 0 or k{k} >= s{k}" for k in range(count))
    lines.append(f"    if {outside}:")
    lines.append(f"        raise OutOfBounds(line, column, array, {', '.join(indices)})")
    lines.append(f"    return a[{', '.join(f'k{k}' for k in range(count))}]")
    return "\n".join(lines) + "\n"


def _readers(interpreted: bool) -> dict[str, object]:
    namespace = {"OutOfBounds": OutOfBounds}
    for count in range(1, MAX_DIMS + 1):
        exec(_reader_source(count, interpreted), namespace)
    return {f"{READ_PREFIX}{count}": namespace[f"{READ_PREFIX}{count}"] for count in range(1, MAX_DIMS + 1)}


@functools.cache
def host_readers() -> dict[str, object]:
    """The readers the host interpreter binds: name -> a Python function that raises :class:`OutOfBounds`."""
    return _readers(interpreted=True)


@functools.cache
def cpu_readers() -> dict[str, object]:
    """The same readers jitted by numba for the CPU (numba is imported on first use; it reads a bool index as
    0 or 1 itself)."""
    import numba

    return {name: numba.njit(function) for name, function in _readers(interpreted=False).items()}


@dataclass(frozen=True)
class Captured:
    """One captured array of a call, as an error names it: the kernel, the array's name and its shape."""

    kernel: object
    name: str
    shape: tuple[int, ...]


def index_error(captured: Captured, line: int, column: int, index: tuple[int, ...]) -> KernelIndexError:
    """The error for a read of ``captured`` at ``index`` (as the kernel wrote it) at ``line`` and ``column``."""
    kernel, name, shape = captured.kernel, captured.name, tuple(int(s) for s in captured.shape)
    written = ", ".join(str(int(i)) for i in index)
    bounds = " and ".join(f"{-s}..{s - 1}" if s else "none (it is empty)" for s in dict.fromkeys(shape))
    letters = "ijklmnop"[:len(shape)]
    guard = (f"`{name}[i] if i < len({name}) else 0`" if len(shape) == 1 else
             f"`{name}[{', '.join(letters)}] if " +
             " and ".join(f"{letter} < {name}.shape[{k}]" for k, letter in enumerate(letters)) + " else 0`")
    return KernelIndexError(
        f"`{kernel.name}` read {name}[{written}], outside `{name}` of shape {shape}; the primitive stopped. "
        f"Indices of a dimension of size s run from -s to s - 1 (here {bounds}): guard the read "
        f"({guard}) or shorten the input so that every read is inside",
        SourceLocation(kernel.filename, int(line), int(column), kernel.line_offset))

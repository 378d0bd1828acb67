"""Running the host reference backend: every primitive computed on the CPU, in Python's order.

Each primitive visits items left to right exactly as its plain Python
definition does (a list comprehension, ``functools.reduce``,
``itertools.accumulate``), storing every step in the element type as a
device would. Both the operator and the loop are compiled by numba for the
CPU; when numba cannot compile them (float16 arithmetic, say) the same loop
runs in the interpreter.
"""

from __future__ import annotations

import functools
import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .. import captures, registry
from ..errors import GpulabError, HostArrayError, KernelRuntimeError, KernelTypeError, LengthMismatchError
from ..iota import Iota
from ..mapped import Mapped
from ..kernel import Kernel, Signature, as_kernel
from ..lru import LRU
from ..progress import Progress
from ..purity import is_scalar
from ..types import ElementType, element_type

log = logging.getLogger(__name__)

def not_compilable() -> tuple[type, ...]:
    """What numba raises for a function or type it cannot compile (numba is imported on first use)."""
    from numba.core.errors import NumbaError

    return (NumbaError, NotImplementedError)

WIDER = {"float16": np.float64, "float32": np.float64, "complex64": np.complex128}
"""The type a float64 reference computes in, for each narrower floating type."""

OPERATORS: LRU = LRU(256)
"""Compiled host operators, by (checked kernel's fingerprint, signature, uniform types, captured arrays' types)."""


# --- operators -------------------------------------------------------------------
@dataclass
class HostOperator:
    """A kernel ready to run on the host for one signature and uniform types.

    Attributes
    ----------
    kernel : Kernel
        The checked kernel.
    python : function
        The kernel with its uniforms as trailing parameters, for the interpreter.
    compiled : numba dispatcher or None
        The same function compiled by numba; ``None`` when numba cannot.
    returns : numba type or None
        What ``compiled`` returns.
    interpreted_loops : set of str
        Loops numba could not compile around this operator: they run in the interpreter.
    """

    kernel: Kernel
    python: object
    compiled: object = None
    returns: object = None
    interpreted_loops: set = field(default_factory=set)


def operator_for(kernel: Kernel, signature: Signature) -> tuple[HostOperator, tuple]:
    """Return the cached operator for ``kernel`` and ``signature``, and the uniforms' values to pass it.

    Parameters
    ----------
    kernel : Kernel
        The checked function; its fingerprint (code, constants, the kernels it
        calls) keys the cache, so a redefined helper is compiled anew.
    signature : Signature
        The parameters' element types.

    Returns
    -------
    operator : HostOperator
        Built once per (kernel, ``signature``, uniform types, captured arrays' types):
        a new uniform value or a new array of the same type needs no rebuild.
    uniforms : tuple
        What follows the items in each call: the uniforms' current values as NumPy
        scalars of their element types, then the captured arrays and a placeholder
        for where the device records a read out of bounds (the host raises instead).

    Raises
    ------
    HostArrayError
        When a captured array lives on a device.
    """
    types, values = kernel.uniform_arguments()
    array_types = kernel.array_types()
    arrays = tuple(_captured(kernel))
    operator = OPERATORS.get_or_make((kernel.fingerprint, signature, types, array_types),
                                     lambda: _build(kernel, signature, types, array_types))
    return operator, values + arrays + ((0,) if arrays else ())


def _captured(kernel: Kernel):
    for name, value in zip(kernel.arrays, kernel.array_values()):
        if type(value) is not np.ndarray:
            raise HostArrayError(f"`{kernel.name}` captures `{name}`, a device array, but this call runs on the host; "
                                 f"capture a host copy (gpulab.to_host({name})) or run on a GPU device")
        yield value


def _build(kernel: Kernel, signature: Signature, uniform_types, array_types) -> HostOperator:
    import numba

    python = kernel.python_function()
    try:
        argument_types = tuple(t.numba for t in (*signature.args, *uniform_types))
        argument_types += tuple(a.numba for a in array_types)
        argument_types += (numba.types.int64,) if array_types else ()
        compiled = kernel.cpu_function()
        compiled.compile(argument_types)
    except not_compilable() as exc:
        log.debug("numba cannot compile `%s` for %s; it runs in the interpreter: %s", kernel.name, signature, exc)
        return HostOperator(kernel, python)
    return HostOperator(kernel, python, compiled, compiled.overloads[argument_types].signature.return_type)


def _njit(function):
    import numba

    return numba.njit(function)


# --- loops -----------------------------------------------------------------------
CHUNK_SECONDS = 0.1
"""Loops run in chunks of about this long: Ctrl-C is seen between chunks, and progress is counted."""
FIRST_CHUNK = 64


class Loop:
    """A loop over items, compiled by numba around a compiled operator, else interpreted; run in chunks.

    Parameters
    ----------
    function : function
        ``function(op, *arrays, uniforms)``; valid Python and valid numba.
    items : tuple of int
        Which of the arrays hold one entry per item (they are cut into chunks;
        the others, such as a fold's carry, are passed whole to every chunk).
    """

    def __init__(self, function, items: tuple[int, ...]):
        self.name = function.__name__
        self.python = function
        self.items = items

    @functools.cached_property
    def compiled(self):
        """The loop compiled by numba (made on first use, so importing gpulab does not start numba)."""
        return _njit(self.python)

    def run(self, operator: HostOperator, *args) -> None:
        """Run the loop with ``operator`` over every item, in chunks of about :data:`CHUNK_SECONDS`.

        Compiled code does not look at signals, so a chunk is the longest
        Ctrl-C waits; work past ``progress.DELAY`` seconds shows a bar.

        Raises
        ------
        KernelRuntimeError
            When the interpreted kernel raises (a value that is not a number, say).
        """
        n = len(args[self.items[0]])
        start, size = 0, FIRST_CHUNK
        with Progress(f"host {self.name.split('_')[0]}({operator.kernel.name})", n, "items") as progress:
            while start < n:
                stop = min(n, start + size)
                began = time.perf_counter()
                self._run_chunk(operator, [arg[start:stop] if i in self.items else arg for i, arg in enumerate(args)],
                                start)
                progress.update(stop - start)
                if time.perf_counter() - began < CHUNK_SECONDS / 2:
                    size *= 2
                start = stop

    def _run_chunk(self, operator: HostOperator, args, start: int) -> None:
        if operator.compiled is not None and self.name not in operator.interpreted_loops:
            try:
                self.compiled(operator.compiled, *args)
                return
            except captures.OutOfBounds as exc:
                raise _index_error(operator.kernel, exc) from None
            except not_compilable() as exc:
                operator.interpreted_loops.add(self.name)
                log.debug("numba cannot compile %s around %s; it runs in the interpreter: %s",
                          self.name, operator.compiled, exc)
        interpret(operator, self.python, *(_interpretable(arg) for arg in args), start=start)


def interpret(operator: HostOperator, loop, *args, start: int = 0) -> None:
    """Run ``loop`` with the checked kernel in the interpreter; what it raises becomes a gpulab error.

    Only the checked kernel runs here (``Kernel.python_function``): the purity
    check refused anything it could not prove harmless before this point.
    """
    try:
        loop(operator.python, *args)
    except GpulabError:
        raise
    except captures.OutOfBounds as exc:
        raise _index_error(operator.kernel, exc) from None
    except Exception as exc:  # noqa: BLE001 - the user's function failed: say where, in gpulab's words
        kernel = operator.kernel
        frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
                  if frame.filename == kernel.compiled_filename]
        location = kernel.location(frames[-1].lineno) if frames else kernel.location()
        raise KernelRuntimeError(
            f"`{kernel.name}` failed on the host near item {start}: {type(exc).__name__}: {exc}. "
            "A kernel computes numbers, bools or records from its items; the device would refuse it too",
            location) from None


def _index_error(kernel: Kernel, exc: captures.OutOfBounds):
    """The :class:`~gpulab.errors.KernelIndexError` of a host read out of bounds (``exc.args``: see its class)."""
    line, column, array, *index = exc.args
    captured = captures.Captured(kernel, kernel.arrays[array], kernel.array_values()[array].shape)
    return captures.index_error(captured, line, column, tuple(index))


def _interpretable(arg):
    """Record arrays as ``np.recarray``, whose items allow ``r.x`` as numba's records do (in tuples too)."""
    if isinstance(arg, np.ndarray) and arg.dtype.names is not None:
        return arg.view(np.recarray)
    if type(arg) is tuple:
        return tuple(map(_interpretable, arg))
    return arg


def fold(op, xs, carry, uniforms):
    """``carry[0] = op(carry[0], x)`` for each ``x`` of ``xs``, in order."""
    for i in range(xs.shape[0]):
        carry[0] = op(carry[0], xs[i], *uniforms)


def prefix_fold(op, xs, out, carry, uniforms):
    """:func:`fold`, storing each step's ``carry[0]`` in ``out``."""
    for i in range(xs.shape[0]):
        carry[0] = op(carry[0], xs[i], *uniforms)
        out[i] = carry[0]


FOLD = Loop(fold, items=(0,))
PREFIX_FOLD = Loop(prefix_fold, items=(0, 1))


@functools.cache
def map_loop(arity: int) -> Loop:
    """The loop ``out[i] = op(x0[i], ..., uniforms...)`` for ``arity`` inputs."""
    names = ", ".join(f"x{k}" for k in range(arity))
    items = ", ".join(f"x{k}[i]" for k in range(arity))
    source = (f"def map_{arity}(op, out, {names}, uniforms):\n"
              f"    for i in range(out.shape[0]):\n"
              f"        out[i] = op({items}, *uniforms)\n")
    namespace = {}
    exec(source, namespace)
    return Loop(namespace[f"map_{arity}"], items=tuple(range(arity + 1)))


# --- inputs ----------------------------------------------------------------------
def flat_items(x) -> np.ndarray:
    """Return ``x``'s items in C order as a 1-D array (an :class:`Iota`'s values for an iota, a
    :class:`~gpulab.mapped.Mapped` input's as ``map`` of its function makes them)."""
    if isinstance(x, Iota):
        return np.arange(x.start, x.start + x.size, dtype=Iota.dtype)
    if isinstance(x, Mapped):
        return run_map(x.kernel, *x.inputs)
    return np.ravel(np.asarray(x), order="C")


def call_signature(kernel: Kernel, arrays, primitive: str, widen: bool) -> Signature:
    """The kernel's declared signature, else the arrays' own (native byte order) element types.

    ``widen`` turns float16/32 and complex64 types into their 64-bit kinds.

    Raises
    ------
    KernelTypeError
        When the kernel takes another number of parameters than the primitive passes.
    """
    names = kernel.param_names
    if len(names) != len(arrays):
        raise KernelTypeError(f"{primitive} calls `{kernel.name}` with {len(arrays)} argument(s), but it takes "
                              f"{len(names)} ({', '.join(names)})", kernel.location())
    signature = kernel.declared or Signature(tuple(element_type(a.dtype.newbyteorder("=")) for a in arrays))
    if not widen:
        return signature
    result = signature.result and _wide(signature.result)
    return Signature(tuple(_wide(t) for t in signature.args), result)


def _wide(element: ElementType) -> ElementType:
    return element_type(WIDER.get(element.dtype.name, element.dtype))


class Prepared(NamedTuple):
    """A fold's operator, uniforms, element type and input items (cast to the operator's item type)."""

    operator: HostOperator
    uniforms: tuple
    element: ElementType
    items: np.ndarray


def _prepare_fold(fn, xs, primitive: str, widen: bool) -> Prepared:
    kernel = as_kernel(fn)
    array = flat_items(xs)
    signature = call_signature(kernel, [array, array], primitive, widen)
    operator, uniforms = operator_for(kernel, signature)
    return Prepared(operator, uniforms, signature.args[0], array.astype(signature.args[1].dtype, copy=False))


def _carry(initial, element: ElementType) -> np.ndarray:
    """A one-item array of ``element`` holding ``initial`` (a copy: the fold writes it)."""
    return np.array(initial, dtype=element.dtype).reshape(1)


# --- primitives ------------------------------------------------------------------
def run_map(fn, *xs, out=None, widen: bool = False) -> np.ndarray:
    """``[fn(*t) for t in zip(*xs)]`` (see :func:`gpulab.host.host_map`); ``widen`` computes in float64."""
    if not xs:
        raise KernelTypeError("map needs at least one input")
    kernel = as_kernel(fn)
    arrays = [flat_items(x) for x in xs]
    sizes = [a.size for a in arrays]
    if len(set(sizes)) > 1:
        raise LengthMismatchError(f"map inputs must have equal lengths; got {sizes}")
    signature = call_signature(kernel, arrays, "map", widen)
    operator, uniforms = operator_for(kernel, signature)
    inputs = [a.astype(t.dtype, copy=False) for a, t in zip(arrays, signature.args)]
    result = _map_items(kernel, operator, signature, inputs, uniforms)
    return result if out is None else _write(out, result)


def _map_items(kernel, operator, signature, inputs, uniforms) -> np.ndarray:
    loop = map_loop(len(inputs))
    dtype = _map_result_type(kernel, operator, signature)
    if dtype is not None:
        result = np.empty(inputs[0].size, dtype)
        loop.run(operator, result, *inputs, uniforms)
        return result
    values = np.empty(inputs[0].size, object)
    interpret(operator, loop.python, values, *map(_interpretable, inputs), _interpretable(uniforms))
    return _typed(values, signature, kernel)


def _map_result_type(kernel, operator, signature) -> np.dtype | None:
    """The declared result type, else numba's; ``None`` when neither is known (interpreted)."""
    if signature.result is not None:
        return signature.result.dtype
    if operator.returns is None:
        return None
    from numba.np.numpy_support import as_dtype

    try:
        return element_type(as_dtype(operator.returns)).dtype
    except (*not_compilable(), KernelTypeError):
        raise KernelTypeError(f"`{kernel.name}` returns {operator.returns}, which is not an element type; "
                              "return a number, a bool or a record", kernel.location()) from None


def _typed(values: np.ndarray, signature: Signature, kernel: Kernel) -> np.ndarray:
    """Interpreted results as an array of the type NumPy gives them (of the inputs' types when empty).

    Raises
    ------
    KernelTypeError
        When a result is not one value of an element type (a tuple, a string).
    """
    for index, value in enumerate(values):
        if not (is_scalar(value) or isinstance(value, np.void)):
            raise KernelTypeError(f"`{kernel.name}` returned {value!r} (a {type(value).__name__}) for item {index}; "
                                  "a kernel returns one number, bool or record", kernel.location())
    dtypes = {np.asarray(value).dtype for value in values} or {t.dtype for t in signature.args}
    result = np.empty(values.size, functools.reduce(np.promote_types, dtypes))
    result[...] = values
    return result


def _write(out, result: np.ndarray) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise HostArrayError(f"out= must be a NumPy array on the host, not {type(out).__name__}")
    if out.size != result.size:
        raise LengthMismatchError(f"out= holds {out.size} items, but map makes {result.size}")
    out[...] = result.reshape(out.shape)
    return out


def run_reduce(fn, xs, initial, *, widen: bool = False) -> np.ndarray:
    """``functools.reduce(fn, xs, initial)`` (see :func:`gpulab.host.host_reduce`)."""
    if initial is None:
        raise KernelTypeError("reduce needs initial= (the result for an empty input)")
    prepared = _prepare_fold(fn, xs, "reduce", widen)
    carry = _carry(initial, prepared.element)
    FOLD.run(prepared.operator, prepared.items, carry, prepared.uniforms)
    return carry.reshape(())


def run_scan(fn, xs, initial=None, exclusive: bool = False, *, widen: bool = False) -> np.ndarray:
    """Prefix folds of ``xs`` (see :func:`gpulab.host.host_scan`)."""
    if exclusive and initial is None:
        raise KernelTypeError("an exclusive scan needs initial= (item 0 of the result is the initial value)")
    operator, uniforms, element, items = _prepare_fold(fn, xs, "scan", widen)
    out = np.empty(items.size, element.dtype)
    if items.size == 0:
        return out
    if initial is None:
        out[:1] = items[:1]
        carry, rest, first = out[:1].copy(), items[1:], 1
    elif exclusive:
        carry = _carry(initial, element)
        out[:1] = carry
        rest, first = items[:-1], 1
    else:
        carry, rest, first = _carry(initial, element), items, 0
    PREFIX_FOLD.run(operator, rest, out[first:], carry, uniforms)
    return out


def run_filter(fn, xs, *, widen: bool = False) -> np.ndarray:
    """``[x for x in xs if fn(x)]`` (see :func:`gpulab.host.host_filter`)."""
    kernel = as_kernel(fn)
    array = flat_items(xs)
    signature = call_signature(kernel, [array], "filter", widen)
    operator, uniforms = operator_for(kernel, signature)
    items = array.astype(signature.args[0].dtype, copy=False)
    keep = np.empty(items.size, np.bool_)
    map_loop(1).run(operator, keep, items, uniforms)
    return items[keep]


def float64_reference(primitive: str, fn, *args, **options) -> np.ndarray:
    """Run a host primitive with float16/32 and complex64 parameters and results widened to 64 bits.

    Parameters
    ----------
    primitive : str
        A name of :data:`gpulab.registry.PRIMITIVES` (``map``, ``reduce``, ``scan``, ``filter``).
    fn : function or Kernel
        The operator (its declared types are widened too).
    *args, **options
        The primitive's other arguments, as for ``host_<primitive>``.
    """
    return registry.primitive(primitive).host_runner()(fn, *args, widen=True, **options)

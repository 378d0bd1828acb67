"""Running the host reference backend: every primitive computed on the CPU, in Python's order.

Each primitive visits items left to right exactly as its plain Python
definition does (a list comprehension, ``functools.reduce``,
``itertools.accumulate``), storing every step in the element type as a
device would; a fold given ``order="portable"`` folds in the portable tree
instead (:mod:`gpulab.host.portable`), as every GPU does. A kernel is first typed as the device types it
(:func:`gpulab.compiler.frontends.numba_cuda.check`), so the host refuses what the device
refuses and stores what it stores; inputs, ``out=`` and ``initial=`` follow
:mod:`gpulab.conversion`, as on a device. Both the operator and the loop are
compiled by numba for the CPU; when numba cannot compile them (float16
arithmetic, say) the same loop runs in the interpreter.
"""

from __future__ import annotations

import functools
import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .. import captures, conversion, registry, stops
from ..options import check_order
from ..compiler.frontends.numba_cuda import check
from ..errors import GpulabError, KernelRuntimeError, KernelTypeError, LengthMismatchError
from ..iota import Iota
from ..mapped import Mapped
from ..kernel import Kernel, Signature, as_kernel
from ..lru import LRU
from ..progress import Progress
from . import portable
from .watch import Watched
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
    result : ElementType
        What the operator's result is stored as: the declared type, else the one
        numba-cuda infers (as on the device).
    compiled : numba dispatcher or None
        The same function compiled by numba; ``None`` when numba cannot.
    interpreted_loops : set of str
        Loops numba could not compile around this operator: they run in the interpreter.
    elementwise : bool or None
        Whether the interpreted operator, called once on whole arrays, gives their items' results (NumPy's
        element-wise arithmetic: the portable tree's pairs, :data:`ARRAY_PAIRS`); ``None`` until tried.
    """

    kernel: Kernel
    python: object
    result: ElementType
    compiled: object = None
    interpreted_loops: set = field(default_factory=set)
    elementwise: bool | None = None


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
    FrontendError, KernelTypeError
        When the device would refuse the kernel for these types (numba-cuda cannot type it).
    """
    types, array_types = kernel.uniform_arguments()[0], kernel.array_types()
    arguments = kernel.host_arguments()
    operator = OPERATORS.get_or_make((kernel.fingerprint, signature, types, array_types),
                                     lambda: _build(kernel, signature, types, array_types))
    return operator, arguments


def _build(kernel: Kernel, signature: Signature, uniform_types, array_types) -> HostOperator:
    """Type ``kernel`` as the device does, then compile it for the CPU (a bar after ``progress.DELAY`` seconds)."""
    with Progress(f"compile {kernel.name} for the host", 2, "stages", ticking=True) as progress:
        return _build_operator(kernel, signature, uniform_types, array_types, progress)


def _build_operator(kernel: Kernel, signature: Signature, uniform_types, array_types,
                    progress: Progress) -> HostOperator:
    import numba

    progress.begin("typed as on the device")
    result = check(kernel, signature.args, uniform_types, result=signature.result, array_types=array_types)
    progress.end("typed as on the device")
    progress.begin("numba for the CPU")
    python = kernel.python_function()
    try:
        argument_types = tuple(t.numba for t in (*signature.args, *uniform_types))
        argument_types += tuple(a.numba for a in array_types)
        argument_types += (numba.types.int64,) if array_types else ()
        argument_types += (stops.flag_type(),)
        compiled = kernel.cpu_function()
        compiled.compile(argument_types)
    except not_compilable() as exc:
        log.debug("numba cannot compile `%s` for %s; it runs in the interpreter: %s", kernel.name, signature, exc)
        return HostOperator(kernel, python, result)
    finally:
        progress.end("numba for the CPU")
    return HostOperator(kernel, python, result, compiled)


def _njit(function):
    import numba

    return numba.njit(nogil=True)(function)


# --- loops -----------------------------------------------------------------------
CHUNK_SECONDS = 0.1
"""Loops run in chunks of about this long: progress is counted, and a stop seen, between chunks."""
FIRST_CHUNK = 1
"""Items of a loop's first chunk. Chunks double while they take under half of :data:`CHUNK_SECONDS` and
shrink when they take over twice it, so Ctrl-C waits for about one chunk, or one item where an item takes
longer (a first chunk of 64 items of 0.12 s each kept Ctrl-C waiting 7.6 s)."""


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
        """The loop compiled by numba without the GIL (made on first use, so importing gpulab does not start
        numba): it runs in a thread of its own while the caller watches (:mod:`gpulab.host.watch`)."""
        return _njit(self.python)

    def run(self, operator: HostOperator, *args) -> None:
        """Run the loop with ``operator`` over every item, in chunks of about :data:`CHUNK_SECONDS`.

        ``args`` end with the uniforms; the run's stop flag is passed after
        them. The loop runs in a thread of its own while this one watches for
        Ctrl-C and the :func:`~gpulab.host.watch.time_limit`; work past
        ``progress.DELAY`` seconds shows a bar.

        Raises
        ------
        KernelRuntimeError
            When the interpreted kernel raises (a value that is not a number, say).
        KernelTimeoutError
            When the time limit is spent.
        KeyboardInterrupt
            On Ctrl-C, within one step of the kernel's loops or one item.
        """
        n = len(args[self.items[0]])
        watched = Watched(operator.kernel)
        args = (*args[:-1], (*args[-1], watched.flag))
        self._compile(operator, args)
        with Progress(f"host {self.name.split('_')[0]}({operator.kernel.name})", n, "items") as progress:
            watched.run(lambda: self._run_chunks(operator, args, n, watched), progress)

    def _compile(self, operator: HostOperator, args) -> None:
        """Compile the loop around ``operator`` for these arguments (a call on no items) before the run is
        watched: a time limit counts running, not numba compiling the loop for each new operator."""
        if operator.compiled is None or self.name in operator.interpreted_loops:
            return
        try:
            self.compiled(operator.compiled, *[arg[:0] if i in self.items else arg for i, arg in enumerate(args)])
        except not_compilable() as exc:
            operator.interpreted_loops.add(self.name)
            log.debug("numba cannot compile %s around %s; it runs in the interpreter: %s",
                      self.name, operator.compiled, exc)

    def _run_chunks(self, operator: HostOperator, args, n: int, watched: Watched) -> None:
        start, size = 0, FIRST_CHUNK
        while start < n:
            if watched.stopped():
                raise stops.Stopped(None)
            stop = min(n, start + size)
            began = time.perf_counter()
            watched.position = start
            self._run_chunk(operator, [arg[start:stop] if i in self.items else arg for i, arg in enumerate(args)],
                            start)
            watched.done = stop
            took = time.perf_counter() - began
            if took < CHUNK_SECONDS / 2:
                size *= 2
            elif took > CHUNK_SECONDS * 2:  # slower items than before: back to about CHUNK_SECONDS
                size = max(1, int(size * CHUNK_SECONDS / took))
            start = stop

    def _run_chunk(self, operator: HostOperator, args, start: int) -> None:
        if operator.compiled is not None and self.name not in operator.interpreted_loops:
            try:
                self.compiled(operator.compiled, *args)
                return
            except captures.OutOfBounds as exc:
                raise _index_error(operator.kernel, exc) from None
        interpret(operator, self.python, *(_interpretable(arg) for arg in args), start=start)


def interpret(operator: HostOperator, loop, *args, start: int = 0) -> None:
    """Run ``loop`` with the checked kernel in the interpreter; what it raises becomes a gpulab error.

    Only the checked kernel runs here (``Kernel.python_function``): the purity
    check refused anything it could not prove harmless before this point.
    NumPy's warnings are off, as in compiled code: ``x / 0`` is ``inf``, silently.
    """
    try:
        with np.errstate(all="ignore"):
            loop(operator.python, *args)
    except (GpulabError, stops.Stopped):
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
    captured = captures.Captured(kernel, kernel.arrays[array], captures.as_array(kernel.array_values()[array]).shape)
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
PAIRS = Loop(portable.combine_pairs, items=(0, 1, 2))
ARRAY_PAIRS = Loop(portable.combine_arrays, items=(0, 1, 2))
SPANS = Loop(portable.span_fold, items=(0, 1, 2))


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
def element_of(x) -> ElementType:
    """The element type of an input: an array's (native byte order), NumPy's for Python values, int64 for
    iota, the function's result type for a mapped input."""
    if isinstance(x, Iota):
        return element_type(Iota.dtype)
    dtype = x.dtype if hasattr(x, "dtype") and not isinstance(x, type) else np.asarray(x).dtype
    return element_type(dtype.newbyteorder("="))


def call_signature(kernel: Kernel, xs, primitive: str) -> Signature:
    """The kernel's declared signature, else the inputs' own element types, checked as a build checks them.

    ``xs`` holds one input per parameter (a fold passes its one input twice).
    The result is what the device stores (:meth:`Primitive.stored_result`).

    Raises
    ------
    KernelTypeError
        When the kernel takes another number of parameters than the primitive
        passes, or the primitive cannot call it (:meth:`Primitive.check_operator`).
    """
    names = kernel.param_names
    if len(names) != len(xs):
        raise KernelTypeError(f"{primitive} calls `{kernel.name}` with {len(xs)} argument(s), but it takes "
                              f"{len(names)} ({', '.join(names)})", kernel.location())
    declared = kernel.declared or Signature(tuple(element_of(x) for x in xs))
    record = registry.primitive(primitive)
    record.check_operator(kernel, declared.args, declared.result)
    return Signature(declared.args, record.stored_result(declared.args, declared.result))


def _wide(element: ElementType) -> ElementType:
    return element_type(WIDER.get(element.dtype.name, element.dtype))


def widened(signature: Signature, widen: bool) -> Signature:
    """``signature`` with float16/32 and complex64 turned into their 64-bit kinds when ``widen``."""
    if not widen:
        return signature
    return Signature(tuple(_wide(t) for t in signature.args), signature.result and _wide(signature.result))


def items(x, kernel: Kernel, element: ElementType, label: str, wide: ElementType) -> np.ndarray:
    """Input ``x`` of ``kernel`` converted by :mod:`gpulab.conversion` to ``element``, then (exactly) to ``wide``;
    a mapped input's items as ``map`` of its function makes them."""
    if isinstance(x, Mapped):
        x = run_map(x.kernel, *x.inputs)
    return conversion.host_items(x, element, label, kernel.name).astype(wide.dtype, copy=False)


class Prepared(NamedTuple):
    """A fold's operator, uniforms, element type (widened or not), declared item type and input items."""

    operator: HostOperator
    uniforms: tuple
    element: ElementType
    declared: ElementType
    items: np.ndarray


def prepare_fold(fn, xs, primitive: str, widen: bool) -> Prepared:
    """The operator of a fold over ``xs`` (``primitive``'s, of two items), its uniforms and the items, typed and
    converted as the device would take them (widened to 64 bits when ``widen``)."""
    kernel = as_kernel(fn)
    conversion.refuse_iota(registry.primitive(primitive), [xs])
    declared = call_signature(kernel, [xs, xs], primitive)
    signature = widened(declared, widen)
    operator, uniforms = operator_for(kernel, signature)
    return Prepared(operator, uniforms, signature.args[0], declared.args[0],
                    items(xs, kernel, declared.args[1], "input", signature.args[1]))


def is_portable(order) -> bool:
    """Whether a fold of the host takes ``order`` (:data:`gpulab.options.ORDERS`) as the portable tree; the others
    fold left to right (``"device"``: the host's own order is its reference's).

    Raises
    ------
    ArgumentError
        For an order that is not one of them.
    """
    return check_order(order) == "portable"


SAMPLE_PAIRS = 64
"""Pairs an interpreted operator computes both one at a time and on whole arrays, the first time it is called
on arrays: the arrays are taken where both give the same bits."""


def pairs_of(prepared: Prepared) -> portable.Pairs:
    """``pairs(out, left, right)``: ``out[i] = op(left[i], right[i])`` with the fold's operator and uniforms. An
    interpreted operator (float16) is called on whole arrays (:data:`ARRAY_PAIRS`, its operators typed per
    item as ever, :mod:`gpulab.interpreted`) once its first :data:`SAMPLE_PAIRS` pairs gave there the bits they
    give one at a time; one pair at a time where they did not, or no array of results came."""
    operator, uniforms = prepared.operator, prepared.uniforms

    def by_arrays(out, left, right) -> bool:
        try:
            if operator.elementwise is None:
                count = min(SAMPLE_PAIRS, out.size)
                one_by_one, at_once = np.empty_like(out[:count]), np.empty_like(out[:count])
                PAIRS.run(operator, one_by_one, left[:count], right[:count], uniforms)
                ARRAY_PAIRS.run(operator, at_once, left[:count], right[:count], uniforms)
                operator.elementwise = one_by_one.tobytes() == at_once.tobytes()
            if operator.elementwise:
                ARRAY_PAIRS.run(operator, out, left, right, uniforms)
        except KernelRuntimeError:
            operator.elementwise = False
        return bool(operator.elementwise)

    def pairs(out, left, right):
        if operator.compiled is None and operator.elementwise is not False and by_arrays(out, left, right):
            return
        PAIRS.run(operator, out, left, right, uniforms)

    return pairs


def initial_carry(initial, prepared: Prepared) -> np.ndarray:
    """A one-item array holding ``initial``, converted exactly to the declared item type (a copy: the fold
    writes it)."""
    return np.array(conversion.scalar(initial, prepared.declared), dtype=prepared.element.dtype).reshape(1)


def _output(out, result: np.ndarray, primitive: str) -> np.ndarray:
    """``result``, or ``out=`` holding it (checked by :func:`gpulab.conversion.check_output`)."""
    if out is None:
        return result
    conversion.check_output(out, result.dtype, result.size, primitive)
    out[...] = result.reshape(out.shape)
    return out


# --- primitives ------------------------------------------------------------------
def run_map(fn, *xs, out=None, widen: bool = False) -> np.ndarray:
    """``[fn(*t) for t in zip(*xs)]`` (see :func:`gpulab.host.host_map`); ``widen`` computes in float64."""
    if not xs:
        raise KernelTypeError("map needs at least one input")
    kernel = as_kernel(fn)
    declared = call_signature(kernel, xs, "map")
    signature = widened(declared, widen)
    inputs = [items(x, kernel, want, f"input {i}", wide)
              for i, (x, want, wide) in enumerate(zip(xs, declared.args, signature.args))]
    sizes = [a.size for a in inputs]
    if len(set(sizes)) > 1:
        raise LengthMismatchError(f"map inputs must have equal lengths; got {sizes}")
    operator, uniforms = operator_for(kernel, signature)
    result = np.empty(inputs[0].size, operator.result.dtype)
    map_loop(len(inputs)).run(operator, result, *inputs, uniforms)
    return _output(out, result, "map")


def run_reduce(fn, xs, initial, *, out=None, widen: bool = False, order: str = "device") -> np.ndarray:
    """``functools.reduce(fn, xs, initial)``, or ``op(initial, the portable tree's fold)`` (see
    :func:`gpulab.host.host_reduce`)."""
    if initial is None:
        raise KernelTypeError("reduce needs initial= (the result for an empty input)")
    tree = is_portable(order)
    prepared = prepare_fold(fn, xs, "reduce", widen)
    carry = initial_carry(initial, prepared)
    if tree:
        pairs = pairs_of(prepared)
        folded = portable.fold(portable.levels(prepared.items, pairs), pairs)
        if folded is not None:
            pairs(carry, carry.copy(), folded)
    else:
        FOLD.run(prepared.operator, prepared.items, carry, prepared.uniforms)
    return _output(out, carry.reshape(()), "reduce")


def run_scan(fn, xs, initial=None, exclusive: bool = False, *, out=None, widen: bool = False,
             order: str = "device") -> np.ndarray:
    """Prefix folds of ``xs``, left to right or in the portable tree (see :func:`gpulab.host.host_scan`)."""
    if exclusive and initial is None:
        raise KernelTypeError("an exclusive scan needs initial= (item 0 of the result is the initial value)")
    tree = is_portable(order)
    prepared = prepare_fold(fn, xs, "scan", widen)
    operator, uniforms, element, _, values = prepared
    result = np.empty(values.size, element.dtype)
    if values.size == 0:
        return _output(out, result, "scan")
    if tree:
        return _output(out, _portable_scan(prepared, initial, exclusive, result), "scan")
    if initial is None:
        result[:1] = values[:1]
        carry, rest, first = result[:1].copy(), values[1:], 1
    elif exclusive:
        carry = initial_carry(initial, prepared)
        result[:1] = carry
        rest, first = values[:-1], 1
    else:
        carry, rest, first = initial_carry(initial, prepared), values, 0
    PREFIX_FOLD.run(operator, rest, result[first:], carry, uniforms)
    return _output(out, result, "scan")


def _portable_scan(prepared: Prepared, initial, exclusive: bool, result: np.ndarray) -> np.ndarray:
    """``result`` holding the portable scan of ``prepared.items`` (at least one): each item's prefix fold, with
    ``initial`` combined on its left (see :mod:`gpulab.host.portable`)."""
    pairs = pairs_of(prepared)
    n = prepared.items.size
    folds = portable.prefixes(portable.levels(prepared.items, pairs), pairs)
    if initial is None:
        result[:] = folds[1:]
        return result
    carry = initial_carry(initial, prepared)
    if not exclusive:
        pairs(result, np.repeat(carry, n), folds[1:])
        return result
    result[0] = carry[0]  # item i folds positions [0, i): item 0 is initial alone
    if n > 1:
        pairs(result[1:], np.repeat(carry, n - 1), folds[1:n])
    return result


def run_filter(fn, xs, *, widen: bool = False) -> np.ndarray:
    """``[x for x in xs if fn(x)]`` (see :func:`gpulab.host.host_filter`)."""
    kernel = as_kernel(fn)
    conversion.refuse_iota(registry.primitive("filter"), [xs])
    declared = call_signature(kernel, [xs], "filter")
    signature = widened(declared, widen)
    values = items(xs, kernel, declared.args[0], "input", signature.args[0])
    operator, uniforms = operator_for(kernel, signature)
    keep = np.empty(values.size, np.bool_)
    map_loop(1).run(operator, keep, values, uniforms)
    return values[keep]


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

"""The primitive registry: one record per primitive, read by codegen, build, bench, the host and the notebook.

A record says everything about a primitive that is not its kernel text:
which templates and kernels make it, what operator it takes and what the
kernel calls it as, which plan runs it on a device and which function on
the host, how a call passes its arrays, and which bytes it must move.
Adding a primitive is adding a record to :data:`PRIMITIVES` and its
template (``tests/nocuda/test_registry.py`` adds a toy one).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from .errors import ArgumentError, KernelTypeError
from .types import element_type

__all__ = ["OperatorCall", "Primitive", "PRIMITIVES", "primitive"]


@dataclass(frozen=True)
class OperatorCall:
    """How the generated kernel calls the user's function.

    Attributes
    ----------
    wrapper : str
        The inline C++ function the templates call (``apply``, ``op``, ``predicate``, ``key_of``).
    returns : str
        Its C++ result type (``out_t``, ``value_t``, ``bool``, ``key_t``: the declared result's typedef).
    params : tuple of str
        Its parameters, of type ``value_t``; an element-wise primitive's
        wrapper takes one ``aK`` of type ``inK_t`` per input instead.
    associative : bool
        Whether the kernel combines values with it in a tree (an operator
        ``(T, T) -> T`` whose grouping the device chooses): then it must be
        associative, and every build and plan probes it on the host
        (:mod:`gpulab.compiler.associativity`).
    """

    wrapper: str
    returns: str
    params: tuple[str, ...] = ()
    associative: bool = False


@dataclass(frozen=True)
class Primitive:
    """One primitive.

    Attributes
    ----------
    name : str
        What users call it (``gpulab.compile(name, fn)``, ``%%gpukernel name``).
    template : str or Path
        Its own template: a name in ``gpulab/compiler/templates`` or a file;
        ``$PARAMS``-style fields of its inputs are filled in (see codegen).
    helpers : tuple of str
        Shared templates it needs, in order (``common`` always comes first).
    kernels : tuple of str
        The ``__global__`` functions of its template.
    geometry : {"vector", "fold", "tile", "pairs", "bins", "radix"}
        How work is cut: blocks of vectors (map), blocks of vectors folded in
        order (reduce), look-back tiles in shared memory (scan, filter,
        segmented reduce), such tiles of keys and items side by side
        (reduce_by_key), blocks of vectors counted into bins in shared
        memory (histogram), or tiles ranked by radix digits with a look-back
        per digit (sort); codegen sizes each.
    operator : OperatorCall
        What the kernel calls the user's function as.
    arity : (int, int)
        How many inputs the user's function takes, at least and at most.
    same_types : bool
        Whether they must all have one type (an operator ``(T, T) -> T``).
    takes : str
        The function it takes, in words (for errors).
    result : {"declared", "input", "bool"}
        The element type the operator's result is stored as: the declared
        (or inferred) one, the input type, or bool.
    elementwise : bool
        One input array per parameter of the function (map); otherwise one
        array whose items the function combines or tests.
    initial : {None, "optional", "required"}
        Whether a call takes an initial value (``--run`` and ``--bench``
        use zero where it is required and none is given).
    options : tuple of str
        Its own build options (fields of :class:`gpulab.options.BuildOptions` marked ``own``: ``exclusive``,
        ``order``).
    writes_result : bool
        Whether the result is written to memory (the roofline counts its bytes).
    plan : str or type
        The device plan class (``"module:Class"``, imported on first use).
    host : str or callable
        The host reference runner ``(fn, *arrays, initial=, widen=, **options)``.
    keyed : bool
        A call passes keys before the items (reduce_by_key): the kernel reads
        both (input 0 of type ``key_t``, input 1 of type ``value_t``); the
        operator takes items of input 1 only.
    arguments : str or callable, optional
        ``(element types of the operator's parameters, n, rng, items) -> arrays``:
        the random arrays a call takes after the function, for ``--run`` and
        ``bench``, where ``items(element_type, count)`` makes random items
        (``None``: one array of ``n`` items per parameter for an element-wise
        primitive, else one).
    results : str
        NumPy kinds (``"biuf"``...) the operator's result may have; empty: any.
    call_options : tuple of str
        A call's own options that are not build options (``bins``, ``range``, ``descending``): a call
        passes them to its plan and to the host runner; no build sees them.
    portable_helpers : tuple of str
        The shared templates of a build with ``order="portable"``, in order, in place of ``helpers``
        (``order`` and what it needs: templates/order.cu); empty where no build folds in the portable tree.
    """

    name: str
    template: str | Path
    helpers: tuple[str, ...]
    kernels: tuple[str, ...]
    geometry: Literal["vector", "fold", "tile", "pairs", "bins", "radix"]
    operator: OperatorCall
    arity: tuple[int, int]
    same_types: bool
    takes: str
    result: Literal["declared", "input", "bool"]
    elementwise: bool
    initial: Literal[None, "optional", "required"]
    options: tuple[str, ...]
    writes_result: bool
    plan: str | type
    host: str | Callable
    keyed: bool = False
    arguments: str | Callable | None = None
    results: str = ""
    call_options: tuple[str, ...] = ()
    portable_helpers: tuple[str, ...] = ()

    def plan_class(self) -> type:
        """The device plan class."""
        return _resolve(self.plan)

    def host_runner(self) -> Callable:
        """The host reference runner."""
        return _resolve(self.host)

    def random_arguments(self) -> Callable | None:
        """The maker of a call's random arrays (see ``arguments``), or ``None``."""
        return _resolve(self.arguments) if self.arguments is not None else None

    def input_count(self, parameters: int) -> int:
        """How many of a call's arrays the kernel reads as typed inputs (``Input0``...), for an operator of
        ``parameters`` parameters: one per parameter for an element-wise primitive, keys and items for a keyed
        one, else one (arrays after them, such as a segmented reduce's offsets, are the plan's own)."""
        return parameters if self.elementwise else 2 if self.keyed else 1

    def key_type(self, keys=None):
        """The element type of a keyed primitive's keys (``keys``, a dtype; int32 when ``None``); ``None`` for a
        primitive that takes no keys.

        Raises
        ------
        ArgumentError
            For keys given to a primitive that takes none.
        KernelTypeError
            For keys of a record type (keys are compared with ``==``).
        """
        if not self.keyed:
            if keys is not None:
                raise ArgumentError(f"keys is not an option of {self.name}")
            return None
        found = element_type("int32" if keys is None else keys)
        if found.is_record:
            raise KernelTypeError(f"{self.name} compares keys with ==, and keys of a record type ({found.name}) are "
                                  "not supported: make a number of each record with gpulab.mapped(fn, records) and "
                                  "use that as the keys")
        return found

    @property
    def operand(self) -> int:
        """Which of a call's arrays holds the items the operator takes (a keyed primitive's values)."""
        return 1 if self.keyed else 0

    def template_text(self) -> str:
        """The text of its own template."""
        if isinstance(self.template, Path):
            return self.template.read_text()
        from importlib import resources

        return resources.files("gpulab.compiler").joinpath("templates", f"{self.template}.cu").read_text()

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of the record and its template (part of every build key of this primitive; read once)."""
        fields = {name: value for name, value in vars(self).items() if name not in ("plan", "host", "arguments")}
        return hashlib.sha256((repr(sorted(fields.items())) + self.template_text()).encode()).hexdigest()[:16]

    def operator_problem(self, name: str, count: int, args=None, result=None) -> str | None:
        """Why function ``name`` of ``count`` parameters (of element types ``args``, returning ``result``,
        where known) cannot be this primitive's operator; ``None`` when it can. Host and build ask alike."""
        low, high = self.arity
        if not low <= count <= high or (self.same_types and args is not None and len(set(args)) > 1):
            found = ", ".join(t.name for t in args) if args is not None else f"{count} parameter(s)"
            return f"{self.name} takes {self.takes}; `{name}` takes ({found})"
        if self.result == "input" and result is not None and args and result != args[0]:
            return f"{self.name}'s operator must return its input type {args[0].name}, not {result.name}"
        if self.results and result is not None and (result.dtype.kind not in self.results
                                                    or result.dtype.name == "float16"):
            return f"{self.name} takes {self.takes}; `{name}` returns {result.name}"
        return None

    def stored_result(self, args, result=None):
        """The element type the kernel stores the operator's result as: ``result`` (declared, or ``None`` for
        numba's) for a map, the input type for a fold, bool for a test."""
        if self.result == "input":
            return args[0]
        if self.result == "bool":
            return element_type("bool")
        return result

    def check_operator(self, kernel, args, result=None) -> None:
        """Refuse ``kernel`` for parameters of types ``args`` returning ``result``: see :meth:`operator_problem`.

        Raises
        ------
        KernelTypeError
            At the kernel's ``def`` line, saying what the primitive takes.
        """
        problem = self.operator_problem(kernel.name, len(args), args, result)
        if problem is not None:
            raise KernelTypeError(problem, kernel.location())

    def call_arguments(self, arrays, initial=None) -> tuple:
        """What a plan or the host runner takes after the function: ``(*arrays, initial)``.

        ``initial`` only where the primitive takes one.
        """
        return tuple(arrays) + ((initial,) if self.initial else ())

    def own_arguments(self, given: dict) -> tuple[dict, dict]:
        """``given`` keywords as ``(this primitive's own call arguments, the others)``: a call passes the first
        (:attr:`call_options`: ``bins`` of a histogram) to its plan and its host runner; no build sees them."""
        own = {name: value for name, value in given.items() if name in self.call_options}
        return own, {name: value for name, value in given.items() if name not in own}


def _resolve(reference):
    if not isinstance(reference, str):
        return reference
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


_ELEMENT_WISE = OperatorCall("apply", "out_t")
_FOLD = OperatorCall("op", "value_t", ("a", "b"), associative=True)
_TEST = OperatorCall("predicate", "bool", ("x",))
_KEY = OperatorCall("key_of", "key_t", ("x",))
_OPERATOR = "an operator of two values of one type, (T, T) -> T"

PRIMITIVES: dict[str, Primitive] = {record.name: record for record in (
    Primitive(name="map", template="map", helpers=(), kernels=("gpulab_map",), geometry="vector",
              operator=_ELEMENT_WISE, arity=(1, 3), same_types=False, takes="a function of 1 to 3 inputs",
              result="declared", elementwise=True, initial=None, options=("iota",), writes_result=True,
              plan="gpulab.primitives.map:MapPlan", host="gpulab.host.run:run_map"),
    Primitive(name="reduce", template="reduce", helpers=("fold", "fold_range"), kernels=("gpulab_reduce",),
              geometry="fold", operator=_FOLD, arity=(2, 2), same_types=True, takes=_OPERATOR,
              result="input", elementwise=False, initial="required", options=("order",), writes_result=False,
              plan="gpulab.primitives.reduce:ReducePlan", host="gpulab.host.run:run_reduce",
              portable_helpers=("fold", "order", "fold_range")),
    Primitive(name="scan", template="scan", helpers=("fold", "tile", "lookback"), kernels=("gpulab_scan",),
              geometry="tile", operator=_FOLD, arity=(2, 2), same_types=True, takes=_OPERATOR,
              result="input", elementwise=False, initial="optional", options=("exclusive", "order"),
              writes_result=True, plan="gpulab.primitives.scan:ScanPlan", host="gpulab.host.run:run_scan",
              portable_helpers=("fold", "tile", "lookback", "order", "fenwick")),
    Primitive(name="filter", template="filter", helpers=("fold", "tile", "lookback"), kernels=("gpulab_filter",),
              geometry="tile", operator=_TEST, arity=(1, 1), same_types=False, takes="a predicate of one value",
              result="bool", elementwise=False, initial=None, options=(), writes_result=True,
              plan="gpulab.primitives.filter:FilterPlan", host="gpulab.host.run:run_filter"),
    Primitive(name="segmented_reduce", template="segmented_reduce", helpers=("fold", "tile", "lookback", "segments"),
              kernels=("gpulab_segmented_reduce",), geometry="tile", operator=_FOLD, arity=(2, 2), same_types=True,
              takes=_OPERATOR, result="input", elementwise=False, initial="required", options=("order",),
              writes_result=True, plan="gpulab.primitives.segmented:SegmentedReducePlan",
              host="gpulab.host.segments:run_segmented_reduce", arguments="gpulab.host.segments:random_segments",
              portable_helpers=("fold", "tile", "lookback", "segments", "order", "fenwick", "pieces")),
    Primitive(name="reduce_by_key", template="reduce_by_key", helpers=("fold", "tile", "lookback", "segments"),
              kernels=("gpulab_reduce_by_key",), geometry="pairs", operator=_FOLD, arity=(2, 2), same_types=True,
              takes=_OPERATOR, result="input", elementwise=False, initial=None, options=("iota", "order"),
              writes_result=True, plan="gpulab.primitives.segmented:ReduceByKeyPlan",
              host="gpulab.host.segments:run_reduce_by_key", keyed=True, arguments="gpulab.host.segments:random_runs",
              portable_helpers=("fold", "tile", "lookback", "segments", "order", "fenwick", "pieces")),
    Primitive(name="histogram", template="histogram", helpers=(), kernels=("gpulab_histogram",), geometry="bins",
              operator=_KEY, arity=(1, 1), same_types=False,
              takes="a function of one item giving its bin (an integer) or a value to bin evenly (a number)",
              result="declared", results="biuf", elementwise=False, initial=None, options=("iota",),
              call_options=("bins", "range"), writes_result=False, plan="gpulab.primitives.histogram:HistogramPlan",
              host="gpulab.host.histogram:run_histogram"),
    Primitive(name="sort", template="sort", helpers=("fold", "tile", "lookback"),
              kernels=("gpulab_sort_histogram", "gpulab_sort_pass"), geometry="radix", operator=_KEY, arity=(1, 1),
              same_types=False, takes="a key function of one item giving a bool, an integer or a float",
              result="declared", results="biuf", elementwise=False, initial=None, options=("payload",),
              call_options=("descending",), writes_result=True, plan="gpulab.primitives.sort:SortPlan",
              host="gpulab.host.sort:run_sort"),
)}
"""Every primitive, by name, in the order menus list them."""


def primitive(name: str) -> Primitive:
    """The record of primitive ``name``.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    try:
        return PRIMITIVES[name]
    except (KeyError, TypeError):
        raise ArgumentError(f"unknown primitive {name!r}; choose one of {', '.join(PRIMITIVES)}") from None

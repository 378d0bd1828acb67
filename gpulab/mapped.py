"""``mapped``: a lazy input whose item i is ``fn`` of its inputs' items i, computed where it is read.

``gpulab.reduce(add, gpulab.mapped(mul, a, b), 0.0)`` is a dot product in one
kernel: the reduce reads item i by calling ``mul(a[i], b[i])``, and no
temporary array is ever written. A mapped input may be the input of any
primitive and may take arrays, :func:`gpulab.iota` and other mapped inputs;
its function may read uniforms and captured arrays. On the host it means
``map(fn, *inputs)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import KernelTypeError, LengthMismatchError, LimitError
from .iota import Iota
from .kernel import Kernel, as_kernel
from .types import ElementType, element_type

MAX_INPUTS = 3
"""How many inputs a mapped function takes, at most (as map's)."""
MAX_DEPTH = 32
"""How deeply mapped inputs may nest (``mapped(f, mapped(g, x))`` is 2 deep): each is an operator of its own,
compiled and linked, and walked depth first."""


@dataclass(frozen=True, eq=False)
class Mapped:
    """Items ``kernel(x0[i], x1[i], ...)`` of ``inputs``, computed when read (see :func:`mapped`).

    Attributes
    ----------
    kernel : Kernel
        The checked function.
    inputs : tuple
        Arrays, :class:`~gpulab.iota.Iota` or other :class:`Mapped` (or, to
        compile without running, dtypes standing for arrays of them).
    args : tuple of ElementType
        The function's parameter types.
    result : ElementType
        Its declared result type: the items' type.
    depth : int
        How deeply mapped inputs nest in it (1: none among its inputs).

    Raises
    ------
    KernelTypeError, LengthMismatchError
        As :func:`mapped` does, however it is made.
    LimitError
        When mapped inputs would nest more than :data:`MAX_DEPTH` deep.
    """

    kernel: Kernel
    inputs: tuple
    args: tuple[ElementType, ...]
    result: ElementType

    def __post_init__(self):
        _check(self)

    @property
    def dtype(self) -> np.dtype:
        """The items' dtype (the function's declared result type)."""
        return self.result.dtype

    def __len__(self) -> int:
        size = _size(self)
        if size is None:
            raise TypeError(f"mapped `{self.kernel.name}` stands for inputs of a type only (it has no length)")
        return size

    @property
    def shape(self) -> "MappedShape":
        """What a build is made for: the function, its types, its inputs' kinds (never their sizes or pointers)."""
        return MappedShape(self.kernel, tuple(kind_of(x) for x in self.inputs), self.args, self.result)

    def __repr__(self) -> str:
        return f"<gpulab.mapped {self.kernel.name}({', '.join(t.name for t in self.args)}) -> {self.result.name}>"


@dataclass(frozen=True, eq=False)
class MappedShape:
    """A :class:`Mapped` as a build sees it; its inputs' kinds are ``"array"``, ``"iota"`` or a ``MappedShape``."""

    kernel: Kernel
    kinds: tuple
    args: tuple[ElementType, ...]
    result: ElementType

    @property
    def key(self) -> tuple:
        """What tells two shapes apart (plans and one-shot calls are kept by it)."""
        return (self.kernel.pyfunc, self.kernel.fingerprint, self.args, self.result,
                tuple(k.key if isinstance(k, MappedShape) else k for k in self.kinds))

    def __eq__(self, other) -> bool:
        return isinstance(other, MappedShape) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def kind_of(x):
    """``"iota"``, ``"array"`` (an array or a dtype standing for one) or the :class:`MappedShape` of ``x``."""
    if isinstance(x, Mapped):
        return x.shape
    return "iota" if isinstance(x, Iota) else "array"


def _size(x) -> int | None:
    """How many items ``x`` has; ``None`` for a dtype, or a mapped input of dtypes, standing for an array."""
    if isinstance(x, Mapped):
        return next((size for size in map(_size, x.inputs) if size is not None), None)
    if isinstance(x, Iota):
        return len(x)
    shape = getattr(x, "shape", None)
    return None if shape is None or isinstance(x, (type, np.dtype)) else math.prod(shape)


def _item_type(x, position: int, kernel: Kernel) -> ElementType:
    if isinstance(x, Mapped):
        return x.result
    if isinstance(x, Iota):
        return element_type(Iota.dtype)
    try:
        return element_type(x.dtype if hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)) else x)
    except KernelTypeError as exc:
        raise KernelTypeError(f"input {position} of mapped `{kernel.name}`: {exc.message}") from None


def mapped(fn, *inputs) -> Mapped:
    """A lazy input: item i is ``fn(inputs[0][i], inputs[1][i], ...)``, computed where a primitive reads it.

    Parameters
    ----------
    fn : function or Kernel
        A pure function of one item of each input, with a declared result type
        (``-> f32``, or ``types="f32, f32 -> f32"``).
    *inputs : arrays, iota or mapped
        1 to 3 inputs of equal length (dtypes instead of arrays to compile only).

    Returns
    -------
    Mapped
        An input for map, reduce, scan and filter: ``gpulab.reduce(add, gpulab.mapped(mul, a, b), 0.0)``.

    Raises
    ------
    KernelTypeError
        When ``fn``'s result type is not declared, or its parameter types differ from the inputs'.
    LengthMismatchError
        When the inputs hold different numbers of items.
    LimitError
        When mapped inputs would nest more than :data:`MAX_DEPTH` deep.
    """
    kernel = as_kernel(fn)
    declared = kernel.declared
    if declared is None or declared.result is None:
        raise KernelTypeError(f"mapped needs the result type of `{kernel.name}` before it runs: annotate it "
                              f"(def {kernel.name}(...) -> f32) or give gpulab.kernel(types='... -> f32')",
                              kernel.location())
    return Mapped(kernel, tuple(inputs), declared.args, declared.result)


def _check(m: Mapped) -> None:
    """Refuse a :class:`Mapped` whose inputs do not fit its function, however it was made."""
    kernel, inputs = m.kernel, m.inputs
    if not isinstance(kernel, Kernel):
        raise KernelTypeError(f"a mapped input is made from a gpulab.Kernel; got {type(kernel).__name__} "
                              "(gpulab.mapped(fn, *inputs) makes one from a function)")
    if not 1 <= len(inputs) <= MAX_INPUTS:
        raise KernelTypeError(f"mapped takes 1 to {MAX_INPUTS} inputs; {len(inputs)} given", kernel.location())
    depth = 1 + max((x.depth for x in inputs if isinstance(x, Mapped)), default=0)
    if depth > MAX_DEPTH:
        raise LimitError(f"mapped `{kernel.name}` would nest mapped inputs {depth} deep; they may nest up to "
                         f"{MAX_DEPTH} deep (each is an operator compiled on its own): fold several steps into one "
                         "kernel, or map them into an array first", kernel.location())
    object.__setattr__(m, "depth", depth)
    found = tuple(_item_type(x, i, kernel) for i, x in enumerate(inputs))
    if len(kernel.param_names) != len(found):
        raise KernelTypeError(f"mapped `{kernel.name}` takes {len(kernel.param_names)} input(s); {len(found)} given",
                              kernel.location())
    declared = kernel.declared
    if declared is None or (tuple(declared.args), declared.result) != (tuple(m.args), m.result):
        raise KernelTypeError(f"a mapped input's types are its function's declared ones; `{kernel.name}` declares "
                              f"{declared or 'none'} (gpulab.mapped(fn, *inputs) reads them)", kernel.location())
    for i, (want, have, x) in enumerate(zip(declared.args, found, inputs)):
        if want != have and not isinstance(x, Iota):
            raise KernelTypeError(f"input {i} of mapped `{kernel.name}` holds {have.name}, but `{kernel.name}` "
                                  f"takes {want.name}: convert it first (x.astype(np.{want.name}))", kernel.location())
    sizes = {size for size in map(_size, inputs) if size is not None}
    if len(sizes) > 1:
        raise LengthMismatchError(f"the inputs of mapped `{kernel.name}` must have equal lengths; got "
                                  f"{[_size(x) for x in inputs]}")


def input_kinds(count: int, iota=(), mapped=()) -> tuple:
    """Each of ``count`` inputs' kind: its mapped input (a :class:`MappedShape` or the compiler's
    ``MappedSpec``) where ``mapped`` gives one, else ``"iota"`` where ``iota`` says so, else ``"array"``."""
    iota, mapped = tuple(iota) or (False,) * count, tuple(mapped) or (None,) * count
    return tuple(m if m is not None else "iota" if is_iota else "array" for m, is_iota in zip(mapped, iota))


def leaves(x):
    """The arrays and iotas ``x`` reads, depth first (``x`` itself when it is no :class:`Mapped`)."""
    if isinstance(x, Mapped):
        for inner in x.inputs:
            yield from leaves(inner)
    else:
        yield x


def walk(kinds, prefix: str = ""):
    """``(path, mapped)`` of every mapped input among ``kinds``, depth first (an input before its own inputs).

    ``kinds`` are a primitive's inputs' kinds (``"array"``, ``"iota"``, or a
    :class:`MappedShape` or the compiler's ``MappedSpec``, which have ``kinds``
    of their own); input 1 of input 0 has the path ``"0_1"``. Codegen names
    its operators, and plans write and number their values, in this order.
    """
    for position, kind in enumerate(kinds):
        if kind is not None and not isinstance(kind, str):  # None: an input that is not mapped
            path = f"{prefix}{position}"
            yield path, kind
            yield from walk(kind.kinds, f"{path}_")

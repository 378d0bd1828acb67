"""What ``sort`` means, on the host: a stable sort of items by a key, in NumPy's order.

An item's key is ``key(item)`` (the item itself where no function is
given, :func:`~gpulab.host.item.item`): a bool, an integer or a float. Items
are ordered as ``sorted(range(n), key=keys.__getitem__)`` orders their indices
(stable: equal keys keep the items' order), with NumPy's float order: -0.0 and
0.0 are equal (so they keep their order) and every NaN comes last, in the
items' order. ``descending`` puts the largest key first; equal keys still keep
their order (as ``sorted(..., reverse=True)`` does) and NaN still comes last.
:func:`order` is that permutation; the device is held to it item for item.
"""

from __future__ import annotations

import numpy as np

from .. import conversion, registry
from ..errors import KernelTypeError, LengthMismatchError
from ..iota import Iota
from ..kernel import as_kernel
from ..mapped import Mapped
from .item import item_kernel
from .run import call_signature, element_of, items, map_loop, operator_for

INDEX_DTYPE = np.dtype(np.int64)
"""argsort's indices (NumPy's ``intp``)."""


def order(keys: np.ndarray, descending: bool = False) -> np.ndarray:
    """The stable permutation that sorts ``keys`` (see the module docstring), as int64 indices."""
    if not descending:
        return np.argsort(keys, kind="stable").astype(INDEX_DTYPE)
    n = keys.size
    # An ascending stable sort of the reversed keys, reversed: largest first, equal keys in their order.
    found = (n - 1 - np.argsort(keys[::-1], kind="stable"))[::-1]
    if keys.dtype.kind != "f":
        return found.astype(INDEX_DTYPE)
    nan = np.isnan(keys)
    return np.concatenate([found[~nan[found]], np.flatnonzero(nan)]).astype(INDEX_DTYPE)


def sort_keys(fn, xs, primitive: str = "sort") -> tuple[np.ndarray, np.ndarray]:
    """``(items, keys)``: ``xs``'s items (C order) and ``fn(item)`` of each, typed as a device types them.

    Raises
    ------
    KernelTypeError
        When the keys are not bools, integers or floats (float16: convert it with a key function).
    """
    kernel = as_kernel(fn)
    record = registry.primitive("sort")
    conversion.refuse_iota(record, [xs])
    if isinstance(xs, Mapped):
        raise KernelTypeError(f"{primitive} takes arrays: give a function of the items as key= (sort(xs, key=fn))",
                              kernel.location())
    signature = call_signature(kernel, [xs], "sort")
    values = items(xs, kernel, signature.args[0], "input", signature.args[0])
    operator, uniforms = operator_for(kernel, signature)
    record.check_operator(kernel, signature.args, operator.result)
    keys = np.empty(values.size, operator.result.dtype)
    map_loop(1).run(operator, keys, values, uniforms)
    return values, keys


def run_sort(fn, xs, *, descending: bool = False, widen: bool = False) -> np.ndarray:
    """``xs``'s items in the order of their keys ``fn(x)`` (see the module docstring); ``widen`` changes nothing
    (a sort moves items, it computes none)."""
    values, keys = sort_keys(fn, xs)
    return values[order(keys, descending)]


def key_function(key, xs):
    """``key`` as a kernel, or the item itself (typed as ``xs``'s items: anything with a ``dtype``) where it is
    ``None``.

    Raises
    ------
    KernelTypeError
        For records with no key function, or a key that is no function.
    """
    if key is not None:
        return as_kernel(key)
    element = element_of(xs)
    if element.is_record:
        raise KernelTypeError(f"sorting {element.name} records needs key=, a function giving each record's key (a "
                              "bool, an integer or a float), such as key=lambda r: r.value")
    return item_kernel(element)


def run_sort_by_key(keys, values, *, descending: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, values)`` in the order of the keys: ``values[i]`` moves with ``keys[i]``.

    Raises
    ------
    LengthMismatchError
        When there are not as many values as keys.
    """
    found, key_values = sort_keys(key_function(None, keys), keys, "sort_by_key")
    moved = values_of(values, found.size)
    permutation = order(key_values, descending)
    return found[permutation], moved[permutation]


def values_of(values, n: int) -> np.ndarray:
    """``values`` (any array, or an iota) as n items in C order; as many as the keys."""
    if isinstance(values, Iota):
        moved = np.arange(values.start, values.start + values.size, dtype=Iota.dtype)
    else:
        moved = np.ravel(np.asarray(values), order="C")
    if moved.size != n:
        raise LengthMismatchError(f"sort_by_key takes as many values as keys; got {moved.size} values for {n} keys")
    return moved


def run_argsort(xs, *, key=None, descending: bool = False) -> np.ndarray:
    """The int64 indices that sort ``xs`` by ``key`` (see the module docstring)."""
    _, keys = sort_keys(key_function(key, xs), xs, "argsort")
    return order(keys, descending)

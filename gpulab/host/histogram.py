"""What ``histogram`` means, on the host: counts of items per bin, by NumPy's rules.

An item's *key* is ``fn(item)`` (the item itself where no function is given,
:func:`~gpulab.host.item.item`). Without a range the key is its bin: an
integer, and keys outside ``[0, bins)`` (-1, say) are dropped. With
``range=(low, high)`` keys are binned evenly as ``numpy.histogram(keys, bins,
range)`` bins them: edges ``np.linspace(low, high, bins + 1)`` in NumPy's
type, the last bin closed, NaN and keys outside the range dropped. Counts are
int64, as NumPy's. :func:`even_bins` is the one place the edges are made: the
device plan bins by the same edges.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from .. import conversion, registry
from ..errors import ArgumentError, KernelTypeError
from ..kernel import as_kernel
from .run import call_signature, items, map_loop, operator_for

COUNT_DTYPE = np.dtype(np.int64)
"""The counts' type (NumPy's ``intp``, as ``numpy.histogram`` returns)."""


def bin_count(bins) -> int:
    """``bins`` as a number of bins: a whole number from 1 to 2**31 - 1.

    Raises
    ------
    ArgumentError
        For anything else (NumPy's other forms of ``bins``, edges or a method's name, are not taken).
    """
    try:
        count = operator.index(bins)
    except TypeError:
        raise ArgumentError(f"bins is a number of bins (an integer such as 256), not {bins!r}") from None
    if not 1 <= count <= 2**31 - 1:
        raise ArgumentError(f"bins must be from 1 to 2**31 - 1; got {count}")
    return count


class EvenBins(NamedTuple):
    """Even bins over a range, as NumPy makes them.

    Attributes
    ----------
    first, last : number
        The range, widened by 0.5 on each side where it is empty (NumPy's rule).
    edges : numpy.ndarray
        ``bins + 1`` edges in NumPy's bin type (float32 keys with a range of Python floats keep float32).
    low, high : float
        ``first`` and ``last`` as a key is compared with them (in the type NumPy compares in), as float64.
    """

    first: object
    last: object
    edges: np.ndarray
    low: float
    high: float


def even_bins(range, bins: int, key_dtype: np.dtype) -> EvenBins:  # noqa: A002 - NumPy's name
    """The even bins of ``range`` for keys of ``key_dtype`` (``numpy.histogram``'s ``_get_bin_edges``).

    Raises
    ------
    ArgumentError
        For a range that is not two finite numbers, low <= high, or one too narrow for ``bins`` bins.
    KernelTypeError
        For keys that are not integers or floats (bools: give them as integers).
    """
    key_dtype = np.dtype(key_dtype)
    if key_dtype.kind not in "iuf" or key_dtype == np.float16:
        raise KernelTypeError(f"bins over a range take integer, float32 or float64 keys, not {key_dtype}; "
                              "convert the key (return f32(x) or an integer from the function)")
    try:
        first, last = range
        finite = math.isfinite(first) and math.isfinite(last)
    except (TypeError, ValueError):
        raise ArgumentError(f"range is two numbers (low, high), not {range!r}") from None
    if not finite:
        raise ArgumentError(f"range must be finite; got [{first}, {last}]")
    if first > last:
        raise ArgumentError(f"range must have low <= high; got ({first}, {last})")
    if first == last:
        first, last = first - 0.5, last + 0.5
    bin_type = np.result_type(first, last, np.empty(0, key_dtype))
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, bins + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ArgumentError(f"too many bins ({bins}) for the range [{first}, {last}]: the edges would not increase")
    return EvenBins(first, last, edges, _compared(first, key_dtype), _compared(last, key_dtype))


def _compared(value, key_dtype: np.dtype) -> float:
    """``value`` as NumPy compares a key with it (``keys >= low``), as a float64: integer keys against float64
    (or the integer itself), float keys in their own type unless the value is a wider NumPy scalar."""
    if key_dtype.kind in "iu":
        return float(value)
    return float(np.asarray(value, dtype=np.result_type(key_dtype, value)))


def run_histogram(fn, xs, bins, range=None, *, widen: bool = False) -> np.ndarray:  # noqa: A002
    """Counts per bin of the keys ``fn(x)`` of ``xs`` (see the module docstring); ``widen`` changes nothing
    (counts are integers, and widening a key would move it between bins)."""
    count = bin_count(bins)
    kernel = as_kernel(fn)
    record = registry.primitive("histogram")
    conversion.refuse_iota(record, [xs])
    signature = call_signature(kernel, [xs], "histogram")
    values = items(xs, kernel, signature.args[0], "input", signature.args[0])
    operator_, uniforms = operator_for(kernel, signature)
    record.check_operator(kernel, signature.args, operator_.result)
    require_keys(kernel, operator_.result.dtype, range)
    keys = np.empty(values.size, operator_.result.dtype)
    map_loop(1).run(operator_, keys, values, uniforms)
    if range is None:
        kept = keys[(keys >= 0) & (keys < count)] if keys.dtype.kind != "b" else keys[keys < count]
        return np.bincount(kept.astype(np.int64), minlength=count).astype(COUNT_DTYPE)
    even_bins(range, count, keys.dtype)  # refuses what NumPy would, in gpulab's words
    return np.histogram(keys, count, range)[0].astype(COUNT_DTYPE)


def require_keys(kernel, key_dtype: np.dtype, range) -> None:  # noqa: A002
    """Refuse keys that cannot be binned as asked: without a range a key is its bin (an integer or bool); over
    a range it is a number (not a bool).

    Raises
    ------
    KernelTypeError
        At the function's ``def`` line, saying what to return.
    """
    if range is None and key_dtype.kind not in "biu":
        raise KernelTypeError(f"`{kernel.name}` returns {key_dtype}: without a range its result is the bin, an "
                              "integer; give range=(low, high) to bin its values evenly", kernel.location())
    if range is not None and key_dtype.kind == "b":
        raise KernelTypeError(f"`{kernel.name}` gives bools: bins over a range take numbers (convert them to an "
                              "integer type first)", kernel.location())


def extremes(values) -> tuple:
    """The least and greatest of ``values`` (a NumPy or CuPy array) as NumPy scalars, ``(None, None)`` when empty
    (NaN where there is one, as ``numpy.min`` gives)."""
    if values.size == 0:
        return None, None
    low, high = values.min(), values.max()
    return tuple(np.asarray(v.get() if hasattr(v, "get") else v)[()] for v in (low, high))


def item_key(xs, range):  # noqa: A002
    """The function and range a histogram of host items ``xs`` with no function takes: the item itself, over
    ``range`` or the items' own range."""
    from .item import item_kernel
    from .run import element_of

    element = element_of(xs)
    if range is None:
        range = default_range(*extremes(conversion.host_items(xs, element, "input")))
    return item_kernel(element), range


def default_range(low, high):
    """The range of keys from ``low`` to ``high`` (their least and greatest, NumPy scalars), as
    ``numpy.histogram`` takes it when given none: (0, 1) for no keys.

    Raises
    ------
    ArgumentError
        When the keys hold NaN or an infinity (no finite range to bin them in).
    """
    if low is None:
        return 0, 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ArgumentError(f"the keys' range [{low}, {high}] is not finite (NaN or inf among them): give range= "
                            "to bin the finite ones")
    return low, high

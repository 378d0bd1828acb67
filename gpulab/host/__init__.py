"""The host reference backend: what every primitive means, computed on the CPU in Python's order.

Device results are held to these: integers, bools and records must be
identical; floats are compared with :func:`compare`. A host run stops on
Ctrl-C, and past a :func:`time_limit`, even inside a loop that never ends.
"""

from __future__ import annotations

from . import histogram, run, segments, sort
from .compare import Verification, compare
from .run import float64_reference
from .watch import time_limit

__all__ = ["host_map", "host_reduce", "host_scan", "host_filter", "host_segmented_reduce", "host_reduce_by_key",
           "host_unique_by_key", "host_histogram", "host_sort", "host_sort_by_key", "host_argsort", "compare", "float64_reference", "Verification", "time_limit"]


def host_map(fn, *xs, out=None):
    """``[fn(*t) for t in zip(*xs)]``, as an array.

    Parameters
    ----------
    fn : function or Kernel
        A pure function of one item of each input (1 to 3 inputs). Without
        declared parameter types (annotations or ``types=``) the inputs' own
        types are used.
    *xs : array_like or Iota
        Inputs of equal length; N-d and strided arrays give their items in C
        order. Arrays must hold the declared types; Python values are
        converted only exactly (:mod:`gpulab.conversion`).
    out : numpy.ndarray, optional
        Where to write the results (its own shape; exactly the result type).

    Returns
    -------
    numpy.ndarray
        1-D, of the declared result type, else the type numba-cuda infers for
        ``fn`` (as the device stores).

    Raises
    ------
    LengthMismatchError
        When the inputs (or ``out``) hold different numbers of items.
    ConversionError
        When an input or ``out`` is not of the kernel's type (see :mod:`gpulab.conversion`).
    FrontendError
        When numba-cuda cannot type ``fn`` for these types: the device would refuse it too.
    """
    return run.run_map(fn, *xs, out=out)


def host_reduce(fn, xs, initial, *, out=None, order="sequential"):
    """``functools.reduce(fn, xs, initial)``, left to right; or ``op(initial, fold)`` in the portable tree.

    Parameters
    ----------
    fn : function or Kernel
        ``fn(accumulated, item)``; its result is stored in the element type at each step.
    xs : array_like or Iota
        The items (C order).
    initial : scalar or tuple
        The result for an empty input (a tuple for a record type), converted
        to the element type only exactly (``0.5`` into int32 is refused).
    out : numpy.ndarray, optional
        A one-item array of exactly the element type to write the result to.
    order : {"sequential", "portable", "device"}
        ``"portable"``: the tree every GPU folds with ``order="portable"``, bit for bit
        (:mod:`gpulab.host.portable`); the others left to right.

    Returns
    -------
    numpy.ndarray
        0-d, of the element type (``fn``'s first declared parameter type, else ``xs``'s);
        ``out`` when given.
    """
    return run.run_reduce(fn, xs, initial, out=out, order=order)


def host_scan(fn, xs, initial=None, exclusive=False, *, out=None, order="sequential"):
    """Prefix folds: item i folds ``initial`` (when given) and ``xs[0..i]``, left to right or in the portable tree.

    Parameters
    ----------
    fn : function or Kernel
        ``fn(accumulated, item)``; its result is stored in the element type at each step.
    xs : array_like or Iota
        The items (C order).
    initial : scalar or tuple, optional
        Folded first; required when ``exclusive``; converted only exactly.
    exclusive : bool
        Item 0 is ``initial`` and item i folds ``initial`` and ``xs[0..i-1]``.
    out : numpy.ndarray, optional
        As many items as ``xs``, of exactly the element type, to write the result to.
    order : {"sequential", "portable", "device"}
        As for :func:`host_reduce`: item i is ``op(initial, portable fold of xs[:i + 1])`` (``xs[:i]`` exclusive).

    Returns
    -------
    numpy.ndarray
        As many items as ``xs``, of the element type; ``out`` when given.

    Raises
    ------
    KernelTypeError
        When ``exclusive`` is set without ``initial``.
    """
    return run.run_scan(fn, xs, initial, exclusive, out=out, order=order)


def host_filter(fn, xs):
    """``[x for x in xs if fn(x)]``, order kept.

    Parameters
    ----------
    fn : function or Kernel
        A predicate of one item (any result is taken as true or false, as ``if`` does).
    xs : array_like or Iota
        The items (C order).

    Returns
    -------
    numpy.ndarray
        The kept items, 1-D, of the input element type.
    """
    return run.run_filter(fn, xs)


def host_segmented_reduce(fn, xs, offsets, initial, *, out=None, order="sequential"):
    """One fold per segment: ``[functools.reduce(fn, xs[offsets[k]:offsets[k + 1]], initial) for k in
    range(len(offsets) - 1)]``.

    Parameters
    ----------
    fn : function or Kernel
        ``fn(accumulated, item)``; its result is stored in the element type at each step.
    xs : array_like or mapped
        The items (C order).
    offsets : array_like of int32 or int64
        S + 1 positions in ``xs`` that never decrease (they need not start at 0 or end at ``len(xs)``).
    initial : scalar or tuple
        What each segment's fold starts from, and what an empty segment gives; converted only exactly.
    out : numpy.ndarray, optional
        S items of exactly the element type to write the results to.
    order : {"sequential", "portable", "device"}
        As for :func:`host_reduce`: a segment is ``op(initial, portable fold of its positions)``.

    Returns
    -------
    numpy.ndarray
        S items of the element type; ``out`` when given.

    Raises
    ------
    OffsetsError
        For offsets that decrease or reach outside ``xs``, naming the first bad one.
    """
    return segments.run_segmented_reduce(fn, xs, offsets, initial, out=out, order=order)


def host_reduce_by_key(fn, keys, values, *, order="sequential"):
    """For each run of equal consecutive keys (``itertools.groupby``; keys compared with ``==``, so a NaN
    key is a run of its own), its key and ``functools.reduce(fn, its values)``.

    Parameters
    ----------
    fn : function or Kernel
        ``fn(accumulated, value)``; its result is stored in the element type at each step.
    keys : array_like or mapped
        Numbers or bools (not records), as many as ``values``.
    values : array_like or mapped
        The items folded.
    order : {"sequential", "portable", "device"}
        As for :func:`host_reduce`: a run is the portable fold of its positions.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The runs' keys and their folds, one item per run.
    """
    return segments.run_reduce_by_key(fn, keys, values, order=order)


def host_unique_by_key(keys, values):
    """The key and the first value of each run of equal consecutive keys (``reduce_by_key`` of
    ``lambda a, b: a``)."""
    return segments.run_unique_by_key(keys, values)


def host_histogram(fn, xs, bins, range=None, *, out=None):  # noqa: A002 - NumPy's name
    """Counts per bin of the keys ``fn(x)``: ``fn(x)`` is the bin, or, with ``range``, a value binned evenly.

    Parameters
    ----------
    fn : function, Kernel or None
        A function of one item; ``None``: the item itself, binned over ``range`` (by default the items'
        least and greatest).
    xs : array_like, Iota or Mapped
        The items (C order).
    bins : int
        How many bins.
    range : (number, number), optional
        Bin the keys evenly as ``numpy.histogram(keys, bins, range)`` does: edges
        ``np.linspace(low, high, bins + 1)``, the last bin closed, NaN and keys outside dropped.
        Without it a key is its bin, and keys outside ``[0, bins)`` (-1, say) are dropped.
    out : numpy.ndarray, optional
        ``bins`` int64 items to write the counts to.
        ``bins`` int64 counts.
    """
    if fn is None:
        fn, range = histogram.item_key(xs, range)
    return run._output(out, histogram.run_histogram(fn, xs, bins, range), "histogram")


def host_sort(xs, *, key=None, descending=False):
    """``xs``'s items ordered by ``key(x)`` (the item itself by default), stably, in NumPy's order.

    Parameters
    ----------
    xs : array_like
        The items (C order); records need a ``key``.
    key : function or Kernel, optional
        A function of one item giving a bool, an integer or a float.
    descending : bool
        The largest key first.

    Returns
    -------
    numpy.ndarray
        The items, 1-D, as ``[xs[i] for i in order]``, where ``order`` sorts the indices by key as
        ``sorted`` does (equal keys keep their order: ``reverse=True`` keeps it too), -0.0 equals 0.0 and
        every NaN comes last.
    """
    return sort.run_sort(sort.key_function(key, xs), xs, descending=descending)


def host_sort_by_key(keys, values, *, descending=False):
    """``(sorted keys, values)``: the keys as :func:`host_sort` orders them, each value moved with its key."""
    return sort.run_sort_by_key(keys, values, descending=descending)


def host_argsort(xs, *, key=None, descending=False):
    """The int64 indices that sort ``xs`` as :func:`host_sort` does."""
    return sort.run_argsort(xs, key=key, descending=descending)

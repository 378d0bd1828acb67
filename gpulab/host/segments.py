"""The host reference of the segment primitives, in Python's order.

- ``segmented_reduce(fn, xs, offsets, initial)`` is
  ``[functools.reduce(fn, xs[offsets[k]:offsets[k + 1]], initial) for k in range(len(offsets) - 1)]``.
- ``reduce_by_key(fn, keys, values)`` is, for each run of equal consecutive
  keys (as ``itertools.groupby`` finds them, keys compared with ``==``), the
  key and ``functools.reduce(fn, the run's values)``.
- ``unique_by_key(keys, values)`` is the key and the first value of each run.

Each fold stores every step in the element type, as a device does; the
loops are compiled by numba around the operator (see :mod:`gpulab.host.run`).
With ``order="portable"`` a segment or a run folds its positions in the
portable tree (:mod:`gpulab.host.portable`), as every GPU does.
"""

from __future__ import annotations

import numpy as np

from .. import conversion, registry
from ..errors import ConversionError, KernelTypeError, LengthMismatchError, OffsetsError
from ..mapped import Mapped
from . import portable
from .run import SPANS, Loop, Prepared, element_of, initial_carry, is_portable, pairs_of, prepare_fold, run_map

OFFSET_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
"""What segment offsets may hold, on the host as on a device."""

__all__ = ["OFFSET_TYPES", "check_offset_array", "keep_first", "offsets_problem", "random_runs", "random_segments", "run_reduce_by_key",
           "run_segmented_reduce", "run_unique_by_key", "run_starts"]


def segment_fold(op, starts, ends, out, xs, initial, uniforms):
    """``out[k] = initial[0]``, then ``out[k] = op(out[k], x)`` for each ``x`` of ``xs[starts[k]:ends[k]]``."""
    for k in range(out.shape[0]):
        out[k] = initial[0]
        for i in range(starts[k], ends[k]):
            out[k] = op(out[k], xs[i], *uniforms)


def run_fold(op, starts, ends, out, xs, uniforms):
    """``out[k] = xs[starts[k]]``, then ``out[k] = op(out[k], x)`` for each later ``x`` before ``ends[k]``."""
    for k in range(out.shape[0]):
        out[k] = xs[starts[k]]
        for i in range(starts[k] + 1, ends[k]):
            out[k] = op(out[k], xs[i], *uniforms)


SEGMENT_FOLD = Loop(segment_fold, items=(0, 1, 2))
RUN_FOLD = Loop(run_fold, items=(0, 1, 2))


def keep_first(a, b):
    """The operator of ``unique_by_key``: a run's first value."""
    return a


# --- offsets ---------------------------------------------------------------------
def offsets_problem(k: int, start: int, stop: int, segments: int, n: int) -> str:
    """What is wrong with ``offsets[k] = start`` and ``offsets[k + 1] = stop`` (the first bad pair), for
    ``segments`` segments of an input of ``n`` items; host and device say it in these words. Offsets that
    decrease are named first, then a negative first one, then a last one past ``n``."""
    how = "segment k is xs[offsets[k]:offsets[k + 1]]; build offsets as a running sum of the segments' lengths"
    if stop < start:
        return f"offsets must not decrease, but offsets[{k}] = {start} > offsets[{k + 1}] = {stop} ({how})"
    if k == 0 and start < 0:
        return f"offsets[0] = {start} is negative: offsets are positions in the input, 0 .. {n} ({how})"
    return f"offsets[{segments}] = {stop} is past the input's end ({n} items; {how})"


def check_offset_array(dtype: np.dtype, shape: tuple) -> None:
    """Refuse offsets of another type than int32 or int64, or of another shape than S + 1 positions.

    Raises
    ------
    ConversionError, OffsetsError
        Saying what to pass instead.
    """
    if not any(conversion.same_type(dtype, t) for t in OFFSET_TYPES):
        raise ConversionError(f"offsets hold {dtype}, but they must be int32 or int64: convert them first "
                              "(offsets.astype(np.int64)); gpulab never converts arrays (docs/conversion.md)")
    if len(shape) != 1 or shape[0] == 0:
        raise OffsetsError(f"offsets must be a 1-D array of S + 1 positions for S segments (at least offsets[0]); "
                           f"got shape {tuple(shape)}")


def segment_offsets(offsets, n: int) -> np.ndarray:
    """``offsets`` as a 1-D int64 array, checked: S + 1 positions that never decrease, within ``0 .. n``.

    An array must hold int32 or int64 (never converted); Python integers are taken as they are.

    Raises
    ------
    ConversionError
        For an array of another type, or values that are not integers.
    OffsetsError
        For offsets that decrease or reach outside the input, naming the first bad one.
    """
    array = np.asarray(offsets) if hasattr(offsets, "dtype") else conversion.python_values(offsets, np.int64,
                                                                                            "offsets")
    check_offset_array(array.dtype, array.shape)
    array = array.astype(np.int64)
    segments = array.size - 1
    bad = np.flatnonzero(array[1:] < array[:-1])
    first = [int(bad[0])] if bad.size else []
    if segments and array[0] < 0:
        first.append(0)
    if segments and array[-1] > n:
        first.append(segments - 1)
    if first:
        k = min(first)
        raise OffsetsError(offsets_problem(k, int(array[k]), int(array[k + 1]), segments, n))
    return array


# --- runs ------------------------------------------------------------------------
def key_items(keys, what: str = "keys") -> np.ndarray:
    """The keys' items, 1-D in C order (a mapped input computed), of a type keys may have
    (:meth:`gpulab.registry.Primitive.key_type`)."""
    if isinstance(keys, Mapped):
        keys = run_map(keys.kernel, *keys.inputs)
    element = registry.primitive("reduce_by_key").key_type(element_of(keys).dtype)
    return conversion.host_items(keys, element, what)


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal consecutive keys starts (``==`` as NumPy compares: a NaN equals nothing)."""
    if keys.size == 0:
        return np.zeros(0, np.int64)
    differs = np.empty(keys.size, bool)
    differs[0] = True
    np.not_equal(keys[1:], keys[:-1], out=differs[1:])
    return np.flatnonzero(differs)


# --- primitives ------------------------------------------------------------------
def _portable_folds(prepared: Prepared, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The portable fold of each span of positions ``[starts[k], ends[k])`` (an empty one's item is left unset)."""
    flat, offsets = portable.flat_levels(portable.levels(prepared.items, pairs_of(prepared)))
    folds = np.empty(starts.size, prepared.element.dtype)
    SPANS.run(prepared.operator, starts, ends, folds, flat, offsets, prepared.uniforms)
    return folds


def run_segmented_reduce(fn, xs, offsets, initial, *, out=None, widen: bool = False,
                         order: str = "device") -> np.ndarray:
    """One fold per segment ``xs[offsets[k]:offsets[k + 1]]``, from ``initial`` (see the module docstring), left
    to right or in the portable tree (``op(initial, its fold)``).

    Returns
    -------
    numpy.ndarray
        ``len(offsets) - 1`` items of the element type; ``out`` when given.

    Raises
    ------
    KernelTypeError
        Without ``initial``.
    OffsetsError, ConversionError
        For offsets that decrease, reach outside ``xs``, or are not int32 or int64.
    """
    if initial is None:
        raise KernelTypeError("segmented_reduce needs initial= (what an empty segment gives, and what each "
                              "segment's fold starts from)")
    tree = is_portable(order)
    prepared = prepare_fold(fn, xs, "segmented_reduce", widen)
    bounds = segment_offsets(offsets, prepared.items.size)
    carry = initial_carry(initial, prepared)
    if tree:
        result = np.repeat(carry, bounds.size - 1)
        filled = np.flatnonzero(bounds[:-1] < bounds[1:])
        if filled.size:
            folds = _portable_folds(prepared, bounds[:-1][filled], bounds[1:][filled])
            combined = np.empty_like(folds)
            pairs_of(prepared)(combined, result[filled], folds)
            result[filled] = combined
    else:
        result = np.empty(bounds.size - 1, prepared.element.dtype)
        SEGMENT_FOLD.run(prepared.operator, bounds[:-1], bounds[1:], result, prepared.items, carry,
                         prepared.uniforms)
    if out is None:
        return result
    conversion.check_output(out, result.dtype, result.size, "segmented_reduce")
    out[...] = result.reshape(out.shape)
    return out


def run_reduce_by_key(fn, keys, values, *, widen: bool = False,
                      order: str = "device") -> tuple[np.ndarray, np.ndarray]:
    """The key and the fold of the values of each run of equal consecutive keys (see the module docstring), left
    to right or in the portable tree.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The runs' keys (the keys' type) and their folds (the element type), one item per run.

    Raises
    ------
    LengthMismatchError
        When keys and values hold different numbers of items.
    """
    tree = is_portable(order)
    prepared = prepare_fold(fn, values, "reduce_by_key", widen)
    found = key_items(keys)
    if found.size != prepared.items.size:
        raise LengthMismatchError(f"reduce_by_key takes as many keys as values; got {found.size} keys and "
                                  f"{prepared.items.size} values")
    starts = run_starts(found)
    ends = np.append(starts[1:], found.size)
    if tree:
        return found[starts], _portable_folds(prepared, starts, ends)
    folds = np.empty(starts.size, prepared.element.dtype)
    RUN_FOLD.run(prepared.operator, starts, ends, folds, prepared.items, prepared.uniforms)
    return found[starts], folds


def run_unique_by_key(keys, values) -> tuple[np.ndarray, np.ndarray]:
    """The key and the first value of each run of equal consecutive keys: ``reduce_by_key`` of
    :func:`keep_first`."""
    return run_reduce_by_key(keep_first, keys, values)


# --- random arguments (``--run``, ``bench``) -------------------------------------
def random_segments(types, n: int, rng: np.random.Generator, items) -> list[np.ndarray]:
    """``items(types[0], n)`` (random items) and int64 offsets cutting them into segments of 0 to 2000 items."""
    lengths = rng.integers(0, 2001, n // 1000 + 2)
    offsets = np.minimum(np.concatenate([[0], np.cumsum(lengths)]), n)
    return [items(types[0], n), offsets.astype(np.int64)]


def random_runs(types, n: int, rng: np.random.Generator, items) -> list[np.ndarray]:
    """Random int32 keys in runs of about 16 items, and ``items(types[0], n)`` (random values)."""
    return [np.cumsum(rng.random(n) < 1 / 16).astype(np.int32), items(types[0], n)]

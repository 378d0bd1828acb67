"""The portable fold order on the host: the tree every GPU folds with ``order="portable"``, replayed bit for bit.

The tree is fixed by the items' positions alone. An *aligned block* is a run of
2**k items that starts at a multiple of 2**k; its value is its pairwise tree
(one item, or the value of its first half combined with that of its second).
The items of positions [s, e) split into the fewest aligned blocks (the
largest that fit: sizes rise from s, then fall to e), and the portable fold of
[s, e) combines the blocks' values left to right. Of [0, p) the blocks are
those of p's binary digits, largest first: p = 13 gives [0, 8), [8, 12),
[12, 13), folded as ``((x0..7 op x8..11) op x12)``. So, on every GPU as here:

- ``reduce`` of n items is ``op(initial, fold of [0, n))`` (``initial`` when n is 0);
- item i of an inclusive ``scan`` is the fold of [0, i + 1), with ``initial``
  (when given) combined on its left in the same way; of an exclusive one,
  ``op(initial, fold of [0, i))``, and ``initial`` at item 0;
- a ``segmented_reduce`` segment is ``op(initial, fold of [offsets[k], offsets[k + 1]))``,
  a ``reduce_by_key`` run the fold of its positions.

A reduce is the last item of an inclusive scan. Why the GPU's tiles do not
change these values, ``compiler/templates/order.cu`` says.

The host builds the tree a level at a time: level k + 1 pairs the values of
level k (every pair of a level in one loop, compiled by numba around the
operator), then folds blocks out of the levels, O(n) in all. The functions
here take that loop as ``pairs(out, left, right)`` (``out[i] = op(left[i],
right[i])``); :mod:`gpulab.host.run` passes it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["blocks", "combine_arrays", "combine_pairs", "flat_levels", "fold", "levels", "prefixes", "span_fold",
           "tree"]

Pairs = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def combine_pairs(op, out, left, right, uniforms):
    """``out[i] = op(left[i], right[i])`` for each i (the loop :mod:`gpulab.host.run` compiles)."""
    for i in range(out.shape[0]):
        out[i] = op(left[i], right[i], *uniforms)


def combine_arrays(op, out, left, right, uniforms):
    """``out[:] = op(left, right)``: an interpreted operator called once on whole arrays, as NumPy's element-wise
    arithmetic runs it (float16, which numba cannot compile), each result stored in ``out``'s type as one pair's
    is; anything but an array of ``out``'s shape raises, and the pairs are then combined one by one (an operator
    that branches on its values raises on arrays)."""
    found = op(left, right, *uniforms)
    if not isinstance(found, np.ndarray) or found.shape != out.shape:
        raise TypeError(f"the operator gave {type(found).__name__} for arrays, not their items' results")
    out[:] = found


def span_fold(op, starts, ends, out, flat, offsets, uniforms):
    """``out[k]`` = the portable fold of positions ``[starts[k], ends[k])`` (left as it is when empty), from the
    pairwise levels in ``flat`` (level j's item m at ``flat[offsets[j] + m]``, see :func:`flat_levels`)."""
    for k in range(out.shape[0]):
        p, end, first = starts[k], ends[k], True
        while p < end:
            level = 0  # the largest aligned block that starts at p and fits before end
            while p % (2 << level) == 0 and p + (2 << level) <= end:
                level += 1
            block = flat[offsets[level] + (p >> level)]
            if first:
                out[k] = block
                first = False
            else:
                out[k] = op(out[k], block, *uniforms)
            p += 1 << level


def blocks(start: int, end: int) -> list[tuple[int, int]]:
    """The aligned blocks of positions ``[start, end)``, in order, as ``(first position, size)``."""
    found, p = [], start
    while p < end:
        size = 1
        while p % (2 * size) == 0 and p + 2 * size <= end:
            size *= 2
        found.append((p, size))
        p += size
    return found


def tree(start: int, end: int):
    """The portable fold of positions ``[start, end)`` as nested pairs of positions, ``(left, right)`` for each
    combine (``None`` when empty): what the views draw."""
    def block(first, size):
        return first if size == 1 else (block(first, size // 2), block(first + size // 2, size // 2))

    found = None
    for first, size in blocks(start, end):
        found = block(first, size) if found is None else (found, block(first, size))
    return found


def levels(items: np.ndarray, pairs: Pairs) -> list[np.ndarray]:
    """The pairwise tree's levels: ``items``, then each level's pairs combined (``len(items) >> k`` values at
    level k: value m is the aligned block of 2**k items from position m * 2**k)."""
    found = [items]
    while found[-1].size >= 2:
        below = found[-1]
        half = below.size // 2
        above = np.empty(half, items.dtype)
        pairs(above, below[0:2 * half:2], below[1:2 * half:2])
        found.append(above)
    return found


def flat_levels(tree: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The levels in one array, and where each starts (what :func:`span_fold` reads)."""
    offsets = np.cumsum([0] + [level.size for level in tree[:-1]]).astype(np.int64)
    return np.concatenate(tree), offsets


def fold(tree: list[np.ndarray], pairs: Pairs) -> np.ndarray | None:
    """The portable fold of all ``n`` items of ``tree`` (its levels) as a one-item array; ``None`` when n is 0."""
    n = tree[0].size
    found = None
    for k in reversed(range(len(tree))):
        if n >> k & 1:
            block = tree[k][(n >> k) - 1:(n >> k)]
            if found is None:
                found = block.copy()
            else:
                pairs(found, found.copy(), block)
    return found


def prefixes(tree: list[np.ndarray], pairs: Pairs) -> np.ndarray:
    """``folds[p]``, the portable fold of positions [0, p), for p = 1 .. n (``folds[0]`` is left unset).

    The blocks of [0, p) are those of [0, p - b) and then the one of ``b``, p's
    lowest binary digit: ``folds[p] = op(folds[p - b], that block)``. Levels go
    from the top, so that every ``folds[p - b]`` is there before it is read;
    all p of one level are one loop over strided views.
    """
    n = tree[0].size
    folds = np.empty(n + 1, tree[0].dtype)
    for k in reversed(range(len(tree))):
        step = 1 << k  # the p = step * (2m + 1): m = 0 is the level's first block alone
        if step > n:
            continue
        folds[step] = tree[k][0]
        count = ((n >> k) - 1) // 2
        if count:
            pairs(folds[3 * step::2 * step][:count], folds[2 * step::2 * step][:count], tree[k][2::2][:count])
    return folds

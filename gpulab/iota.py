"""``iota``: the integers ``start .. start + n - 1`` as a primitive's input, never stored."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .errors import ConversionError

_INT64 = np.iinfo(np.int64)


@dataclass(frozen=True)
class Iota:
    """The ``size`` integers from ``start``: item i is ``start + i``, an int64.

    A device computes the items from their index; they are never stored
    (the host reference backend may use ``np.arange``). ``gpulab.iota(n,
    start)`` and ``Iota(size, start)`` check their arguments alike.

    Parameters
    ----------
    size : int
        How many items: 0 to 2**63 - 1 (a size is an int64 too).
    start : int
        The first item.

    Raises
    ------
    ConversionError
        When ``size`` or ``start`` is not a whole number, ``size`` is negative or
        not an int64, or an item would not be an int64.
    """

    size: int
    start: int = 0
    dtype: ClassVar[np.dtype] = np.dtype(np.int64)

    def __post_init__(self):
        size, start = _whole(self.size, "n"), _whole(self.start, "start")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "start", start)
        if size < 0:
            raise ConversionError(f"an iota holds at least 0 items, not {size}")
        if size > _INT64.max:
            raise ConversionError(f"gpulab.iota({size}): an iota holds at most {_INT64.max} (2**63 - 1) items, "
                                  "as many as an int64 counts")
        last = start + max(size, 1) - 1
        if not (_INT64.min <= start and last <= _INT64.max):
            wrong = f"its start {start}" if start < _INT64.min or start > _INT64.max else (
                f"its last item {last} (start {start} + {size} - 1)")
            raise ConversionError(f"gpulab.iota({size}, start={start}): {wrong} is not an int64 (iota's "
                                  f"items are int64: {_INT64.min} .. {_INT64.max}); give a start and a size whose "
                                  "items all fit")

    def __len__(self) -> int:
        return self.size


def _whole(value, name: str) -> int:
    """``value`` as a Python int (an int or a NumPy integer); a :class:`ConversionError` naming ``name`` if not."""
    try:
        return operator.index(value)
    except TypeError:
        raise ConversionError(f"gpulab.iota takes whole numbers; {name}={value!r} is a {type(value).__name__}"
                              + (f" (int({value!r}) if you mean it)" if isinstance(value, float) else "")) from None


def iota(n: int, start: int = 0) -> Iota:
    """Return the integers ``start .. start + n - 1`` as an input that is never stored.

    >>> len(iota(5, start=10))
    5
    """
    return Iota(n, start)

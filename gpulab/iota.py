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
    (the host reference backend may use ``np.arange``).

    Parameters
    ----------
    size : int
        How many items (at least 0).
    start : int
        The first item.

    Raises
    ------
    ConversionError
        When ``size`` is negative or an item would not be an int64.
    """

    size: int
    start: int = 0
    dtype: ClassVar[np.dtype] = np.dtype(np.int64)

    def __post_init__(self):
        if self.size < 0:
            raise ConversionError(f"an iota holds at least 0 items, not {self.size}")
        last = self.start + max(self.size, 1) - 1
        if not (_INT64.min <= self.start and last <= _INT64.max):
            wrong = f"its start {self.start}" if self.start < _INT64.min or self.start > _INT64.max else (
                f"its last item {last} (start {self.start} + {self.size} - 1)")
            raise ConversionError(f"gpulab.iota({self.size}, start={self.start}): {wrong} is not an int64 (iota's "
                                  f"items are int64: {_INT64.min} .. {_INT64.max}); give a start and a size whose "
                                  "items all fit")

    def __len__(self) -> int:
        return self.size


def iota(n: int, start: int = 0) -> Iota:
    """Return the integers ``start .. start + n - 1`` as an input that is never stored.

    >>> len(iota(5, start=10))
    5
    """
    for name, value in (("n", n), ("start", start)):
        try:
            operator.index(value)
        except TypeError:
            raise ConversionError(f"gpulab.iota takes integers; {name}={value!r} is a {type(value).__name__}"
                                  + (f" (int({value!r}) if you mean it)" if isinstance(value, float) else "")) from None
    return Iota(operator.index(n), operator.index(start))

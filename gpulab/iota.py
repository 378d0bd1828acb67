"""``iota``: the integers ``start .. start + n - 1`` as a primitive's input, never stored."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


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
    """

    size: int
    start: int = 0
    dtype: ClassVar[np.dtype] = np.dtype(np.int64)

    def __post_init__(self):
        if self.size < 0:
            raise ValueError(f"an iota holds at least 0 items, not {self.size}")

    def __len__(self) -> int:
        return self.size


def iota(n: int, start: int = 0) -> Iota:
    """Return the integers ``start .. start + n - 1`` as an input that is never stored.

    >>> len(iota(5, start=10))
    5
    """
    return Iota(operator.index(n), operator.index(start))

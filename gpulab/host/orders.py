"""Fold orders side by side: the tree each order folds one input in, its value, and how far that is from exact.

``gpulab.fold_orders(fn, xs, initial)`` reduces ``xs`` on the host left to right
(``"sequential"``) and in the portable tree (``"portable"``, the bits every GPU
gives with ``order="portable"``), beside the float64 reference (the operator in
float64, left to right) and, when given, an exact value (``math.fsum`` of a
sum's items). Its view (``display/order.py``) draws each tree for a small
input: which items combine with which, in which order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import conversion
from ..errors import ArgumentError, described
from ..kernel import as_kernel
from ..shown import Shown
from . import portable
from .run import element_of, float64_reference, run_reduce

ORDERS = ("sequential", "portable")
"""The orders the host folds in: left to right, and the portable tree."""
DRAWN_ITEMS = 64
"""Trees of at most this many items are drawn; larger inputs show their values and errors only."""


@dataclass(frozen=True)
class OrderFold:
    """One order's fold of the items.

    Attributes
    ----------
    order : str
        ``"sequential"`` or ``"portable"``.
    value : numpy.ndarray
        The result, 0-d, of the element type.
    depth : int
        The longest chain of combines the result went through (each rounds once): the tree's height.
    tree : object
        The fold as nested pairs ``(left, right)`` of positions, ``"initial"`` on the left of the whole; ``None``
        for an input of more than :data:`DRAWN_ITEMS` items.
    """

    order: str
    value: np.ndarray
    depth: int
    tree: object


@dataclass(frozen=True)
class FoldOrders(Shown):
    """A reduce of one input in several orders (see :func:`fold_orders`); shows as their trees and errors.

    Attributes
    ----------
    name : str
        The operator's name.
    items : numpy.ndarray
        The items, as the host took them.
    initial : numpy.ndarray
        The initial value, 0-d.
    folds : tuple of OrderFold
        One per order.
    reference : numpy.ndarray
        The float64 reference (the operator in float64, left to right), 0-d; ``None`` for types with no wider
        float (records, integers).
    exact : float or None
        The exact value, where it was given.
    """

    name: str
    items: np.ndarray
    initial: np.ndarray
    folds: tuple[OrderFold, ...]
    reference: np.ndarray | None
    exact: float | None

    def error(self, fold: OrderFold, against: float) -> tuple[float, float] | None:
        """``(|value - against|, the same in units of the last place of the value's type at against)``;
        ``None`` for values that are not floats."""
        if fold.value.dtype.kind != "f":
            return None
        difference = abs(float(fold.value) - float(against))
        return difference, difference / float(np.spacing(np.abs(fold.value.dtype.type(against))))

    def as_dict(self) -> dict:
        """What the view draws, as plain values: the items and each fold's tree, value, depth and errors."""
        def labelled(node):
            if isinstance(node, tuple):
                return [labelled(node[0]), labelled(node[1])]
            return node if isinstance(node, str) else f"x{node}"

        def errors(fold):
            found = {}
            for name, against in (("exact", self.exact), ("float64", self.reference)):
                error = self.error(fold, against) if against is not None else None
                if error is not None:
                    found[name] = {"absolute": error[0], "ulps": error[1]}
            return found

        return {
            "name": self.name, "n": int(self.items.size), "drawn_items": DRAWN_ITEMS, "dtype": str(self.items.dtype),
            "initial": _text(self.initial),
            "items": [_text(x) for x in self.items] if self.items.size <= DRAWN_ITEMS else None,
            "reference": None if self.reference is None else _text(self.reference),
            "exact": None if self.exact is None else repr(self.exact),
            "folds": [{"order": fold.order, "value": _text(fold.value), "depth": fold.depth,
                       "tree": None if fold.tree is None else labelled(fold.tree), "errors": errors(fold)}
                      for fold in self.folds],
        }


def _text(value) -> str:
    return str(value[()] if isinstance(value, np.ndarray) else value)


def _depth(order: str, n: int) -> int:
    """The height of the fold of n items (one more with the initial value on the left of the whole)."""
    if order == "sequential":
        return n
    height = None
    for _, size in portable.blocks(0, n):
        block = size.bit_length() - 1
        height = block if height is None else 1 + max(height, block)
    return 0 if height is None else height + 1


def fold_orders(fn, xs, initial, *, exact: float | None = None, orders=ORDERS) -> FoldOrders:
    """Reduce ``xs`` on the host in each of ``orders`` (``"sequential"``, ``"portable"``) and compare.

    Parameters
    ----------
    fn : function or Kernel
        The operator, as for :func:`gpulab.reduce` (need not be associative: the orders then differ more).
    xs : array_like
        The items (a small input's trees are drawn: at most :data:`DRAWN_ITEMS`).
    initial : scalar or tuple
        As for :func:`gpulab.reduce`: folded first left to right, on the left of the whole tree in the portable
        order.
    exact : float, optional
        The exact result, for the errors: ``math.fsum`` of a sum's items and initial value, say.
    orders : sequence of str
        Which orders, of :data:`ORDERS`.

    Returns
    -------
    FoldOrders
        Each order's value, tree and errors against the float64 reference (the operator in float64, left to
        right) and ``exact``.

    Raises
    ------
    ArgumentError
        For an order the host does not fold in (``"device"``: a build's own, which another target cuts
        otherwise).
    """
    if isinstance(orders, str) or not isinstance(orders, (list, tuple)):
        raise ArgumentError(f"fold_orders takes orders= as a list of {' and '.join(map(repr, ORDERS))}, not "
                            f"{described(orders)}")
    if exact is not None and (isinstance(exact, bool) or not isinstance(exact, (int, float, np.integer, np.floating))):
        raise ArgumentError(f"fold_orders takes exact= as the exact result, a number, not {described(exact)}")
    for order in orders:
        if order not in ORDERS:
            raise ArgumentError(f"fold_orders compares {' and '.join(ORDERS)}, not {order!r}: the device order "
                                "is a build's own (run gpulab.reduce on a GPU to see it)")
    kernel = as_kernel(fn)
    element = kernel.declared.args[0] if kernel.declared else element_of(xs)
    items = conversion.host_items(xs, element, "input", kernel.name)
    folds = tuple(OrderFold(order, run_reduce(kernel, items, initial, order=order), _depth(order, items.size),
                            _tree(order, items.size)) for order in orders)
    reference = float64_reference("reduce", kernel, items, initial) if element.dtype.kind in "fc" else None
    return FoldOrders(kernel.name, items, np.array(conversion.scalar(initial, element), element.dtype), folds,
                      reference, exact)


def _tree(order: str, n: int):
    """The drawn tree of n items and the initial value (``None`` past :data:`DRAWN_ITEMS`): left to right from
    the initial value, or the initial value on the left of the portable tree."""
    if n > DRAWN_ITEMS:
        return None
    if order == "sequential":
        found = "initial"
        for position in range(n):
            found = (found, position)
        return found
    found = portable.tree(0, n)
    return "initial" if found is None else ("initial", found)

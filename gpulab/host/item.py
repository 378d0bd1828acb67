"""The key a sort or a histogram takes of each item when given no function: the item itself."""

import functools

from ..kernel import Kernel, Signature
from ..types import ElementType


def item(x):
    return x


@functools.lru_cache(maxsize=64)
def item_kernel(element: ElementType) -> Kernel:
    """:func:`item` as a kernel of ``element`` items returning them (its result declared, so a build can
    write the kernel's C++ before numba has typed it)."""
    return Kernel(item, types=Signature((element,), element))

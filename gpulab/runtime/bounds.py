"""Where a bounds-checked read of a captured array records that it failed, and reading that after a launch.

A slot is a claim word in device memory and a record in pinned host memory
that the device writes through (``struct BoundsCheck`` of the generated
code; :mod:`gpulab.compiler.frontends.numba_cuda.reads` writes it). The first read outside its
array claims the word with a compare-and-swap and writes the record; every
other read out of bounds loads nothing and goes on. So that the primitive
that read out of bounds is the one that raises, a call with checked reads
waits for its stream and reads the record's first word from host memory:
no copy is launched, and the wait is what any host value of the result
costs. One slot per device and thread: a thread's calls each wait for
their launch before the next, so they never share a slot at once.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ..captures import RECORD_FIELDS

RECORD_BYTES = 8 * len(RECORD_FIELDS)


class BoundsSlot:
    """One claim word (device memory) and one record (host memory the device writes through).

    Parameters
    ----------
    device : Device
        Where it is read from (its context is made current here).
    """

    def __init__(self, device):
        import cupy
        from cuda.bindings import driver

        from .module import _check, activate

        activate(device)
        self._claim = cupy.zeros(1, np.uint32)
        flags = driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE
        host = _check(driver.cuMemHostAlloc(RECORD_BYTES, flags))
        self._finalizer = weakref.finalize(self, _free_host, host)
        self.record = np.frombuffer((ctypes.c_int64 * len(RECORD_FIELDS)).from_address(int(host)), np.int64)
        self.record[:] = 0
        self.fields = (self._claim.data.ptr, int(_check(driver.cuMemHostGetDevicePointer(host, 0))))
        """``(claimed, record)``: the ``BoundsCheck`` a launch passes."""

    def failure(self, stream: int) -> dict | None:
        """Wait for ``stream``; the record of the first read out of bounds since the last call, or ``None``.

        A failure is cleared before this returns, so that the next launch, on any stream, starts clean.
        """
        import cupy

        cupy.cuda.runtime.streamSynchronize(stream)
        if not self.record[0]:
            return None
        found = dict(zip(RECORD_FIELDS, self.record.tolist()))
        self.record[:] = 0
        cupy.cuda.runtime.memsetAsync(self._claim.data.ptr, 0, 4, stream)
        cupy.cuda.runtime.streamSynchronize(stream)
        return found


def _free_host(pointer) -> None:
    from cuda.bindings import driver

    driver.cuMemFreeHost(pointer)


_SLOTS = threading.local()


def slot(device) -> BoundsSlot:
    """This thread's :class:`BoundsSlot` on ``device`` (made on first use)."""
    slots = getattr(_SLOTS, "slots", None)
    if slots is None:
        slots = _SLOTS.slots = {}
    found = slots.get(device.ordinal)
    if found is None:
        found = slots[device.ordinal] = BoundsSlot(device)
    return found

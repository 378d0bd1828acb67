"""Zeroed device buffers a plan keeps for itself, one per stream, so that a call allocates nothing.

A buffer is zeroed once, in order on its stream, when it is allocated (or
grown); kernels that use it leave it as they need to find it (the reduce's
block counter wraps back to 0, look-back status words carry an epoch).
"""

from __future__ import annotations

import threading

import numpy as np

PER_THREAD_STREAM = 2  # CU_STREAM_PER_THREAD: one handle, a different stream in every thread


class StreamScratch:
    """A zeroed buffer per stream, grown (to at least twice its size) when a call needs more."""

    def __init__(self):
        self._buffers: dict[object, tuple[int, int, object]] = {}
        self._lock = threading.Lock()

    def get(self, nbytes: int, stream: int) -> tuple[int, int]:
        """``(address, size in bytes)`` of this stream's buffer, at least ``nbytes`` long."""
        key = (stream, threading.get_ident()) if stream == PER_THREAD_STREAM else stream
        found = self._buffers.get(key)
        if found is None or found[1] < nbytes:
            found = self._grow(key, nbytes, stream)
        return found[0], found[1]

    def _grow(self, key, nbytes: int, stream: int):
        import cupy

        with self._lock:
            found = self._buffers.get(key)
            if found is not None and found[1] >= nbytes:
                return found
            size = max(nbytes, 2 * found[1] if found else 0, 16)
            with cupy.cuda.ExternalStream(stream):  # zeroed in order with the launches on it
                buffer = cupy.zeros(size, np.uint8)
            found = self._buffers[key] = (buffer.data.ptr, size, buffer)
            return found

"""Tile status storage for the single-pass (decoupled look-back) kernels.

Layout of the temporary storage: the tile counter, then per tile a status
word, an aggregate and an inclusive prefix (values of at most 4 bytes are
packed into 64-bit status words instead). Status words carry the launch's
epoch, so the storage is zeroed once, when allocated, never between launches.
The layout is cut for as many tiles as the *buffer* holds, not for one
launch: status words then always live at the same place, and a value written
by one launch can never be read as a status word by a later, larger one.
"""

from __future__ import annotations

import functools
import threading

from ..compiler.codegen import PACKED_STATUS_BYTES
from ..runtime.arrays import device_array
from ..runtime.scratch import StreamScratch
from .params import TileStatusValue
from .plan import DevicePlan, index_bits_of




def _align(n: int) -> int:
    return -(-n // 16) * 16


def _packed(value_size: int) -> bool:
    return value_size <= PACKED_STATUS_BYTES


def _word_bytes(value_size: int) -> int:
    return 8 if _packed(value_size) else 4


def _values_bytes(tiles: int, value_size: int) -> int:
    """The aggregate and inclusive arrays (none when values are packed into the status words)."""
    return 0 if _packed(value_size) else 2 * _align(value_size * tiles)


def status_bytes(tiles: int, value_size: int) -> int:
    """Bytes of tile status for ``tiles`` tiles of values of ``value_size`` bytes."""
    return 16 + _align(_word_bytes(value_size) * tiles) + _values_bytes(tiles, value_size)


def capacity(nbytes: int, value_size: int) -> int:
    """How many tiles' status a buffer of ``nbytes`` holds."""
    per_tile = _word_bytes(value_size) + (0 if _packed(value_size) else 2 * value_size)
    tiles = max(0, (nbytes - 16) // per_tile)
    while tiles and status_bytes(tiles, value_size) > nbytes:
        tiles -= 1
    return tiles


class StatusStorage:
    """Zeroed status buffers (one per stream) and each buffer's launch epoch."""

    def __init__(self):
        self._own = StreamScratch()
        self._epochs: dict[int, int] = {}
        self._lock = threading.Lock()

    def acquire(self, temp_storage, nbytes: int, stream: int) -> tuple[int, int, int]:
        """Return ``(address, size in bytes, epoch)`` for a launch needing ``nbytes`` on ``stream``.

        ``temp_storage``, when given, must have been zero-filled before its first use.
        """
        if temp_storage is None:
            address, size = self._own.get(nbytes, stream)
        else:
            view = device_array(temp_storage, name="temp_storage")
            address, size = view.pointer, view.size * view.dtype.itemsize
            if size < nbytes:
                raise ValueError(f"temp_storage has {size} bytes; this run needs {nbytes}")
        with self._lock:
            epoch = self._epochs.get(address, 0) % (2**30 - 1) + 1
            self._epochs[address] = epoch
        return address, size, epoch


@functools.lru_cache(maxsize=64)
def status_value(address: int, nbytes: int, value_size: int) -> TileStatusValue:
    """The ``TileStatus`` of the ``nbytes`` at ``address``."""
    tiles = capacity(nbytes, value_size)
    flags = address + 16
    aggregate = flags + _align(_word_bytes(value_size) * tiles)
    inclusive = aggregate + _align(value_size * tiles)  # both unused when values are packed
    return TileStatusValue(flags, aggregate, inclusive, address)


class LookBackPlan(DevicePlan):
    """A plan whose kernel walks tiles with decoupled look-back (scan, filter).

    Subclasses say how many bytes a tile's status value takes
    (:meth:`status_value_size`); the tile count, the temporary storage and
    its epochs are kept here.
    """

    def __init__(self, primitive: str, kernel, types, device, **options):
        super().__init__(primitive, kernel, types, device, **options)
        self._status = StatusStorage()

    def status_value_size(self, prepared) -> int:
        """Bytes of one tile's aggregate (the element for scan, an index for filter)."""
        raise NotImplementedError

    def tiles(self, n: int, prepared) -> int:
        """How many tiles (one block each) cover ``n`` items."""
        return -(-n // prepared.build.geometry.scan_tile)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of tile status for ``n`` items (zero-fill them before first use)."""
        prepared = self.prepared(index_bits_of(n), self.uniform_values())
        return status_bytes(self.tiles(n, prepared), self.status_value_size(prepared))

    def acquire_status(self, n: int, prepared, temp_storage, stream: int) -> tuple[int, TileStatusValue, int]:
        """Return ``(tiles, TileStatus fields, epoch)`` for a launch over ``n`` items on ``stream``."""
        tiles, size = self.tiles(n, prepared), self.status_value_size(prepared)
        address, nbytes, epoch = self._status.acquire(temp_storage, status_bytes(tiles, size), stream)
        return tiles, status_value(address, nbytes, size), epoch

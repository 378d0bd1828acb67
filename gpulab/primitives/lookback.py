"""Tile status storage for the single-pass (look-back) kernels.

Layout of the temporary storage: per tile its aggregate's words, then per
tile its inclusive prefix's words (lookback.cu): a value of ``b`` bytes takes
``ceil(b / 4)`` 64-bit words, 32 value bits beside the launch's epoch. The
epoch tells this launch's words from older ones, so the storage is zeroed
when allocated and again only once in :data:`EPOCHS` launches, when the
epochs start again. Epochs are counted per storage address for the whole
process, so two plans given the same ``temp_storage`` never stamp their words
with the same epoch. The layout is cut for as many
tiles as the *buffer* holds, not for one launch: the words then always live
at the same place, and a word written by one launch can never be read as
another kind of word by a later, larger one.
"""

from __future__ import annotations

import functools
import threading

from ..errors import ArgumentError
from ..options import BuildOptions
from ..runtime.arrays import device_array
from ..runtime.scratch import StreamScratch
from .params import TileStatusValue
from .plan import DevicePlan, index_bits_of


def _tile_bytes(value_size: int) -> int:
    """Bytes of one tile's value in one of the two arrays."""
    return 8 * -(-value_size // 4)


def status_bytes(tiles: int, value_size: int) -> int:
    """Bytes of tile status for ``tiles`` tiles of values of ``value_size`` bytes."""
    return 2 * tiles * _tile_bytes(value_size)


def capacity(nbytes: int, value_size: int) -> int:
    """How many tiles' status a buffer of ``nbytes`` holds."""
    return max(0, nbytes) // (2 * _tile_bytes(value_size))


EPOCHS = 2**30 - 1
"""Launch epochs go 1, 2, ..., EPOCHS, then 1 again; 0 is the zeroed words' (lookback.cu)."""

_epochs: dict[int, int] = {}  # storage address -> the epoch of its last launch, for every plan
_epochs_lock = threading.Lock()


class StatusStorage:
    """Zeroed status buffers (one per stream), and the launch epoch of any storage."""

    def __init__(self):
        self._own = StreamScratch()

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
                raise ArgumentError(f"temp_storage has {size} bytes; this run needs {nbytes}")
        with _epochs_lock:
            last = _epochs.get(address, 0)
            epoch = _epochs[address] = last % EPOCHS + 1
        if last == EPOCHS:
            # A word a larger launch left EPOCHS launches ago could carry this epoch and be read as this
            # launch's: clear them all, in order with the launches on the stream.
            import cupy

            cupy.cuda.runtime.memsetAsync(address, 0, size, stream)
        return address, size, epoch


@functools.lru_cache(maxsize=64)
def status_value(address: int, nbytes: int, value_size: int) -> TileStatusValue:
    """The ``TileStatus`` of the ``nbytes`` at ``address``."""
    return TileStatusValue(address, address + capacity(nbytes, value_size) * _tile_bytes(value_size))


class LookBackPlan(DevicePlan):
    """A plan whose kernel walks tiles with decoupled look-back (scan, filter).

    Subclasses say how many bytes a tile's status value takes
    (:meth:`status_value_size`); the tile count, the temporary storage and
    its epochs are kept here.
    """

    replays = False  # every launch passes a new epoch

    def __init__(self, primitive: str, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=(),
                 keys=None):
        super().__init__(primitive, kernel, types, device, options, mapped, keys)
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

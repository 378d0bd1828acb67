"""Filter on a device: stream compaction that keeps the input's order."""

from __future__ import annotations

import numpy as np

from ..runtime.arrays import device_array
from ..runtime.module import launch
from ..runtime.streams import stream_handle
from . import params
from .lookback import StatusStorage, status_bytes, status_value
from .plan import DevicePlan, index_bits_for


class FilterPlan(DevicePlan):
    """Reusable device filter (see :func:`gpulab.make_filter`)."""

    def __init__(self, kernel, types, device, **options):
        super().__init__("filter", kernel, types, device, **options)
        self.element = self.types[0]
        self._status = StatusStorage()

    def kernel_fields(self, build, index_bits, uniforms):
        array = params.array_struct(index_bits)
        return {"gpulab_filter": [("in", array), ("n", params.index_dtype(index_bits)), ("out", array),
                                  ("kept_total", params.POINTER), ("status", params.TILE_STATUS),
                                  ("epoch", np.uint32), ("u", uniforms)]}

    def _tiles(self, n: int, prepared) -> int:
        return -(-n // prepared.build.geometry.scan_tile)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of tile status for ``n`` items (zero-fill them before first use)."""
        prepared = self.prepared(32 if n <= 2**31 - 1 else 64, self.uniform_values())
        return status_bytes(self._tiles(n, prepared), 8)

    def __call__(self, xs, *, out=None, kept=None, temp_storage=None, stream=None):
        """Write the kept items of ``xs`` to the front of ``out``, and their number to ``kept``.

        Returns
        -------
        (out, kept)
            ``out`` has ``len(xs)`` items, of which the first ``int(kept)`` were kept;
            ``kept`` is a 0-d device array (reading it waits for the stream).
        """
        import cupy

        array = device_array(xs, name="input")
        n = array.size
        if out is None:
            out = cupy.empty(n, dtype=self.element.dtype)
        if kept is None:
            kept = cupy.zeros((), dtype=np.int64)
        destination = device_array(out, name="output")
        uniform_values = self.uniform_values()
        prepared = self.prepared(index_bits_for(n, [array, destination]), uniform_values)
        index_bits = prepared.build.options.index_bits
        kept_view = device_array(kept, name="kept")
        if kept_view.dtype != np.int64:
            raise ValueError("kept must be an int64 0-d device array")
        if n == 0:
            kept.fill(0)
            return out, kept
        tiles = self._tiles(n, prepared)
        handle = stream_handle(stream)
        size = params.index_dtype(index_bits).itemsize
        address, nbytes, epoch = self._status.acquire(temp_storage, status_bytes(tiles, size), handle)
        pack = prepared.pack("gpulab_filter")
        pack["in"], pack["n"], pack["out"] = params.array_value(array), n, params.array_value(destination)
        pack["kept_total"] = kept_view.pointer
        pack["status"] = status_value(address, nbytes, size)
        pack["epoch"] = epoch
        prepared.write_uniforms(pack, uniform_values)
        launch(prepared.module.functions["gpulab_filter"], tiles, prepared.build.geometry.block_threads, handle, pack)
        return out, kept

"""Filter on a device: stream compaction that keeps the input's order."""

from __future__ import annotations

import numpy as np

from ..runtime.arrays import device_array
from ..runtime.module import launch
from ..runtime.streams import stream_handle
from . import params
from .lookback import LookBackPlan
from .plan import index_bits_for, require


class FilterPlan(LookBackPlan):
    """Reusable device filter (see :func:`gpulab.make_filter`)."""

    def __init__(self, kernel, types, device, **options):
        super().__init__("filter", kernel, types, device, **options)
        self.element = self.types[0]

    def status_value_size(self, prepared) -> int:
        """A tile's aggregate is a count of kept items: an ``index_t``."""
        return prepared.build.options.index_bits // 8

    def finish(self, output, *, stream=None):
        """The kept items of ``(out, kept)`` (this waits for the count)."""
        import cupy

        out, kept = output
        if stream is not None and not hasattr(stream, "ptr"):
            stream = cupy.cuda.ExternalStream(stream_handle(stream))
        return out[: int(kept.get(stream=stream))]

    def __call__(self, xs, *, out=None, kept=None, temp_storage=None, stream=None):
        """Write the kept items of ``xs`` to the front of ``out``, and their number to ``kept``.

        Returns
        -------
        (out, kept)
            ``out`` has ``len(xs)`` items, of which the first ``int(kept)`` were kept;
            ``kept`` is a 0-d device array (reading it waits for the stream).
        """
        import cupy

        array = require(device_array(xs, name="input"), self.element.dtype, "input")
        n = array.size
        if out is None:
            out = cupy.empty(n, dtype=self.element.dtype)
        if kept is None:
            kept = cupy.zeros((), dtype=np.int64)
        destination = require(device_array(out, name="output"), self.element.dtype, "output", n)
        uniform_values = self.uniform_values()
        prepared = self.prepared(index_bits_for(n, [array, destination]), uniform_values)
        kept_view = require(device_array(kept, name="kept"), np.dtype(np.int64), "kept count", 1)
        if n == 0:
            kept.fill(0)
            return out, kept
        handle = stream_handle(stream)
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, handle)
        pack = prepared.pack("gpulab_filter")
        pack["in"], pack["n"], pack["out"] = params.array_value(array), n, params.array_value(destination)
        pack["kept_total"] = kept_view.pointer
        pack["status"] = status
        pack["epoch"] = epoch
        prepared.write_uniforms(pack, uniform_values)
        launch(prepared.kernels["gpulab_filter"], tiles, prepared.build.geometry.block_threads, handle, pack)
        return out, kept
